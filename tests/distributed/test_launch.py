"""`ptxsim.launch(..., workers=N)`: the grid's waves split across forked worker processes give the
one-process bits (and, for the GEMMs, the bits of ptxsim.numerics stepped over the logical
matrices), or a named error where they cannot."""
import os
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import ptxsim
from ptxsim.distributed import resolve_workers
from ptxsim.distributed.parts import split
from ptxsim.errors import (MemoryAccessError, MergeConflict, OneWorkerWarning, OperandError,
                           WorkerError)
from ptxsim.machine.tensormap import TensorMap
from ptxsim.numerics import mma
from ptxsim.ptx import parse_module

TESTS = Path(__file__).parents[1]
TRITON = TESTS / "data" / "ptx" / "triton"
CUTE = TESTS / "data" / "ptx" / "cute"
BASIC = (TESTS / "machine" / "data" / "exec" / "basic.ptx").read_text()

# hand-written, accepted by ptxas 13.0 (tests/distributed/data/small.ptx; test_small_ptx_is_legal)
SMALL = (Path(__file__).parent / "data" / "small.ptx").read_text()


def _stepped(a_bits, b_bits, k_step, **kw):
    d = np.zeros((a_bits.shape[0], b_bits.shape[1]), np.uint32)
    for k in range(0, a_bits.shape[1], k_step):
        d = mma(a_bits[:, k:k + k_step], b_bits[k:k + k_step], d, arch="sm_100", **kw)
    return d


def triton_gemm(workers, M=256, N=256, K=64, **kw):
    """Triton 3.9 matmul_kernel (bf16, 128x128 tiles, tcgen05.mma): 4 CTAs, 2 waves of 2."""
    rng = np.random.default_rng(M + K)
    a = rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16).view(np.uint16)
    b = rng.standard_normal((K, N)).astype(ml_dtypes.bfloat16).view(np.uint16)
    c = np.zeros((M, N), np.float32)
    run = ptxsim.launch((TRITON / "matmul_bf16.ptx").read_text(), "matmul_kernel",
                        (M // 128, N // 128), 128,
                        args=[a, b, c, M, N, K, K, 1, N, 1, N, 1, np.zeros(64, np.uint8),
                              np.zeros(64, np.uint8)], dynamic_shared=160 * 1024,
                        max_resident_ctas=2, workers=workers, **kw)
    return run, a, b, c


def cute_gemm(workers, M=256, N=256, K=128, **kw):
    """CuTe DSL DenseGemmKernel, 2-CTA clusters (tcgen05 cta_group::2, TMA load and store):
    2 clusters, one per wave."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((M, K)).astype(np.float16).view(np.uint16)
    b = rng.standard_normal((N, K)).astype(np.float16).view(np.uint16)
    c = np.zeros((M, N), np.uint16)
    ta = TensorMap.for_array(a, (64, 128), swizzle="128B", dtype="float16")
    tb = TensorMap.for_array(b, (64, 64), swizzle="128B", dtype="float16")
    tc = TensorMap.for_array(c, (32, 128), swizzle="64B", dtype="float16")
    m = parse_module((CUTE / "cute_dense_gemm_f16_2cta.ptx").read_text())
    run = ptxsim.launch(m, m.entries[0].name, (M // 128, N // 128, 1), 128, cluster=(2, 1, 1),
                        args=[bytes(64), ta, tb, tc], dynamic_shared=227 * 1024,
                        max_resident_ctas=2, workers=workers, **kw)
    return run, a, b, c


def test_triton_gemm_two_workers_equals_one_process_and_the_numerics():
    one, a, b, c1 = triton_gemm(None)
    two, _, _, c2 = triton_gemm(2)
    assert two.distribution.backend == "local" and two.distribution.workers == 2
    assert [p.waves for p in two.distribution.parts] == [(0,), (1,)]
    assert np.array_equal(c2.view(np.uint32), c1.view(np.uint32))
    want = _stepped(a, b, 16, kind="f16", atype="bf16", btype="bf16", ctype="f32", dtype="f32")
    assert np.array_equal(c2.view(np.uint32), want)
    assert two.steps == one.steps                  # every wave ran once, in one worker


def test_cute_2cta_gemm_two_workers_equals_one_process_and_the_numerics():
    _, a, b, c1 = cute_gemm(None)
    two, _, _, c2 = cute_gemm(2)
    assert two.distribution.workers == 2
    assert np.array_equal(c2, c1)
    d = _stepped(a, b.T, 16, kind="f16", atype="f16", btype="f16", ctype="f32", dtype="f32")
    assert np.array_equal(c2, d.view(np.float32).astype(np.float16).view(np.uint16))


def test_small_kernels_equal_one_process_in_the_callers_arrays():
    rng = np.random.default_rng(1)
    n = 1000
    x, y = rng.random(n, np.float32), rng.random(n, np.float32)
    z1, z3 = np.full(n + 8, -7, np.float32), np.full(n + 8, -7, np.float32)
    ptxsim.launch(BASIC, "vadd", 4, 256, args=[x, y, z1, n], max_resident_ctas=1)
    run = ptxsim.launch(BASIC, "vadd", 4, 256, args=[x, y, z3, n], max_resident_ctas=1,
                        workers=3)
    assert [p.waves for p in run.distribution.parts] == [(0, 1), (2,), (3,)]
    assert np.array_equal(z3, z1) and np.array_equal(z3[:n], x + y) and (z3[n:] == -7).all()


def test_printf_lines_and_steps_come_back_in_launch_order():
    one = ptxsim.launch(SMALL, "hello", 6, 32, max_resident_ctas=2)
    two = ptxsim.launch(SMALL, "hello", 6, 32, max_resident_ctas=2, workers=2)
    assert [p.text for p in two.printf] == [p.text for p in one.printf]
    assert [p.text for p in one.printf][:2] == ["cta 0\n", "cta 1\n"]
    assert two.steps == one.steps


def test_two_workers_writing_one_byte_differently_is_a_merge_conflict():
    out = np.zeros(4, np.uint32)
    with pytest.raises(MergeConflict) as e:
        ptxsim.launch(SMALL, "race", 4, 32, args=[out], max_resident_ctas=2, workers=2)
    err = e.value
    assert err.buffer == "param0" and err.offset == 0 and err.workers == (0, 1)
    assert "worker 0 (wave 0, 2 CTAs) and worker 1 (wave 1, 2 CTAs)" in str(err)
    assert "allow_order_dependent" in str(err)


def test_allowing_order_dependence_takes_the_later_wave_as_one_process_does():
    one, two = np.zeros(4, np.uint32), np.zeros(4, np.uint32)
    ptxsim.launch(SMALL, "race", 4, 32, args=[one], max_resident_ctas=2)
    ptxsim.launch(SMALL, "race", 4, 32, args=[two], max_resident_ctas=2, workers=2,
                  allow_order_dependent=True)
    assert one[0] == 3 and np.array_equal(two, one)     # CTA 3 ran last


def test_the_same_value_from_two_workers_merges():
    out = np.zeros(4, np.uint32)
    ptxsim.launch(SMALL, "same", 4, 32, args=[out], max_resident_ctas=2, workers=2)
    assert out.tolist() == [7, 0, 0, 0]


def test_atomics_on_one_address_in_two_workers_are_a_merge_conflict():
    x = np.arange(3000, dtype=np.int32)
    out = np.zeros(1, np.int32)
    with pytest.raises(MergeConflict) as e:
        ptxsim.launch(BASIC, "block_sum", 12, 256, args=[x, out, 3000], max_resident_ctas=6,
                      workers=2)
    assert "used global atomics on address" in str(e.value) and e.value.workers == (0, 1)
    assert out[0] == 0                                   # nothing merged


def test_atomics_on_separate_addresses_merge():
    # atom_each: CTA c adds its tid to counter[c] (one address per CTA)
    one, two = np.zeros(4, np.uint32), np.zeros(4, np.uint32)
    ptxsim.launch(SMALL, "atom_each", 4, 64, args=[one], max_resident_ctas=1)
    ptxsim.launch(SMALL, "atom_each", 4, 64, args=[two], max_resident_ctas=1, workers=2)
    assert np.array_equal(two, one) and (one == sum(range(64))).all()


def test_a_fault_in_a_worker_is_raised_with_what_one_process_leaves():
    # fault: CTA c stores c+1 at out[64 * c]; out holds 3 * 64 words, so CTA 3 faults
    one, two = np.zeros(192, np.uint32), np.zeros(192, np.uint32)
    with pytest.raises(MemoryAccessError) as e1:
        ptxsim.launch(SMALL, "fault", 4, 32, args=[one], max_resident_ctas=1)
    with pytest.raises(MemoryAccessError) as e2:
        ptxsim.launch(SMALL, "fault", 4, 32, args=[two], max_resident_ctas=1, workers=4)
    assert str(e2.value) == str(e1.value) and e2.value.address == e1.value.address
    assert "raised in worker 3 (wave 3, 1 CTAs)" in "".join(e2.value.__notes__)
    assert np.array_equal(two, one) and two[[0, 64, 128]].tolist() == [1, 2, 3]


def test_the_first_part_runs_in_the_driver_and_its_fault_is_the_one_process_error():
    # out holds 64 words, so CTA 1 faults: in the first of 2 parts, which the driver runs
    # itself (distributed/local.py); the error is the original exception, memory as one
    # process leaves it (CTA 0's store, nothing of the later part)
    one, two = np.zeros(64, np.uint32), np.zeros(64, np.uint32)
    with pytest.raises(MemoryAccessError) as e1:
        ptxsim.launch(SMALL, "fault", 4, 32, args=[one], max_resident_ctas=1)
    with pytest.raises(MemoryAccessError) as e2:
        ptxsim.launch(SMALL, "fault", 4, 32, args=[two], max_resident_ctas=1, workers=2)
    assert str(e2.value) == str(e1.value) and e2.value.address == e1.value.address
    assert not any("raised in worker" in n for n in getattr(e2.value, "__notes__", []))
    assert np.array_equal(two, one) and two[0] == 1 and not two[1:].any()


def test_local_parts_processes_and_returned_bytes():
    # 4 parts: the driver runs the first, 3 forked processes the others; only theirs travel
    out = np.zeros(4 * 64, np.uint32)
    run = ptxsim.launch(SMALL, "fault", 4, 32, args=[out], max_resident_ctas=1, workers=4)
    pids = run.distribution.part_pids
    assert pids[0] == os.getpid() and len(set(pids)) == 4
    assert out[[0, 64, 128, 192]].tolist() == [1, 2, 3, 4]
    # each part changed one word (its low byte: 1 bit of mask + 1 byte); three came back
    assert run.distribution.returned_bytes == 3 * 2


def test_changed_bytes_travel_in_the_shared_area_and_the_rest_pickled():
    import pickle

    from ptxsim.distributed import local
    from ptxsim.distributed.parts import BufferDiff, Part, PartResult
    rng = np.random.default_rng(3)
    diffs = [BufferDiff(0x1000 * k, f"b{k}", 100, 0, 80, rng.integers(0, 256, 10, np.uint8),
                        rng.integers(0, 256, n, np.uint8)) for k, n in enumerate((30, 50, 70))]
    want = [(d.bits.copy(), d.data.copy()) for d in diffs]
    import mmap
    area = mmap.mmap(-1, 100)                  # room for the first (40 B) and second (60 B)
    r = PartResult(Part(1, (1,), 1), diffs)
    local._to_area(r, area)
    assert [d.area is not None for d in r.diffs] == [True, True, False]
    r2 = pickle.loads(pickle.dumps(r))          # what crosses the pipe
    local._from_area(r2, area)
    for d, (bits, data) in zip(r2.diffs, want):
        assert np.array_equal(d.bits, bits) and np.array_equal(d.data, data)


def test_clusterlaunchcontrol_runs_in_one_worker():
    import importlib.util
    spec = importlib.util.spec_from_file_location("clc", TESTS / "machine" / "test_exec_clc.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    CLC = mod.PTX
    out, who = np.zeros(40, np.uint32), np.full(40, 99, np.uint32)
    with pytest.warns(OneWorkerWarning, match="clusterlaunchcontrol.try_cancel"):
        run = ptxsim.launch(CLC, "clc", 40, 32, args=[out, who], max_resident_ctas=4,
                            workers=2)
    assert run.distribution.backend == "one process"
    assert np.array_equal(out, 1000 + np.arange(40)) and set(who.tolist()) <= {0, 1, 2, 3}


def test_clock_readers_run_in_one_worker():
    out = np.zeros(4, np.uint64)
    with pytest.warns(OneWorkerWarning, match="%clock64"):
        ptxsim.launch(SMALL, "read_clock", 4, 32, args=[out], max_resident_ctas=1, workers=2)


def test_a_worker_that_dies_is_a_worker_error(monkeypatch):
    import ptxsim.distributed.local as local

    real = local.run_part

    def die(launch, part, *a, **k):
        if part.index == 0:           # the first part runs in the driver itself
            return real(launch, part, *a, **k)
        os._exit(3)
    monkeypatch.setattr(local, "run_part", die)
    with pytest.raises(WorkerError, match="exit code 3"):
        ptxsim.launch(SMALL, "same", 4, 32, args=[np.zeros(4, np.uint32)],
                      max_resident_ctas=2, workers=2, keep_workers=False)


def _vadd(workers=3, **kw):
    rng = np.random.default_rng(5)
    n = 1000
    x, y = rng.random(n, np.float32), rng.random(n, np.float32)
    z = np.full(n + 8, -7, np.float32)
    run = ptxsim.launch(BASIC, "vadd", 4, 256, args=[x, y, z, n], max_resident_ctas=1,
                        workers=workers, **kw)
    assert np.array_equal(z[:n], x + y) and (z[n:] == -7).all()
    return run


def test_kept_workers_serve_later_launches():
    from ptxsim.distributed import close_pool, kept_pids
    close_pool()
    first = _vadd().distribution
    second = _vadd().distribution
    assert first.kept_workers and second.kept_workers
    assert first.part_pids[0] == second.part_pids[0] == os.getpid()
    assert second.part_pids[1:] == first.part_pids[1:]           # the same processes again
    assert sorted(kept_pids()) == sorted(first.part_pids[1:])
    forked = _vadd(keep_workers=False).distribution               # forked for one launch
    assert not forked.kept_workers and not set(forked.part_pids[1:]) & set(kept_pids())
    close_pool()
    assert kept_pids() == []
    third = _vadd().distribution                                   # new ones after close_pool
    assert third.kept_workers and not set(third.part_pids[1:]) & set(first.part_pids[1:])


SPIN = """.version 8.0
.target sm_90
.address_size 64
.visible .entry spin(.param .u64 out, .param .u32 n)
{
 .reg .pred %p;
 .reg .b32 %r<4>;
 .reg .b64 %rd<4>;
 ld.param.u64 %rd1, [out];
 ld.param.u32 %r1, [n];
 mov.u32 %r3, %ctaid.x;
 setp.eq.u32 %p, %r3, 0;
 selp.u32 %r1, 1, %r1, %p;
 mov.u32 %r2, 0;
LOOP:
 add.u32 %r2, %r2, 1;
 setp.lt.u32 %p, %r2, %r1;
 @%p bra LOOP;
 mov.u32 %r3, %ctaid.x;
 mul.wide.u32 %rd2, %r3, 4;
 add.u64 %rd3, %rd1, %rd2;
 st.global.u32 [%rd3], %r2;
 ret;
}
"""


def _spin(n=200_000, **kw):
    """2 CTAs of one warp, one wave each: CTA 0 (the driver's part) counts to 1, CTA 1 (the
    worker's) to n (n = 200,000: seconds)."""
    out = np.zeros(2, np.uint32)
    run = ptxsim.launch(SPIN, "spin", 2, 32, args=[out, n], max_resident_ctas=1, workers=2,
                        **kw)
    assert out.tolist() == [1, n]
    return run


def test_a_kept_worker_that_dies_is_a_worker_error_and_is_replaced(monkeypatch):
    import signal

    import ptxsim.distributed.local as local
    from ptxsim.distributed import kept_pids
    _spin(10)
    victim = kept_pids()[0]
    real = local.run_part

    def kill_then_run(launch, part, *a, **k):
        # the driver's part starts once the worker has its job and is counting (seconds)
        os.kill(victim, signal.SIGKILL)
        return real(launch, part, *a, **k)
    monkeypatch.setattr(local, "run_part", kill_then_run)
    with pytest.raises(WorkerError, match=r"worker 1 \(wave 1.*kept worker, exit code -9"):
        _spin()
    monkeypatch.setattr(local, "run_part", real)
    assert victim not in kept_pids()
    again = _spin(10).distribution                    # a new kept worker takes its place
    assert again.kept_workers and victim not in again.part_pids


def test_a_kept_worker_that_ends_before_its_job_sends_the_launch_to_forked_workers(monkeypatch):
    import signal
    import time

    from ptxsim.distributed import kept_pids, pool
    _spin(10)
    victim = kept_pids()[0]
    real = pool._POOL.take

    def take_then_kill(*a, **k):                      # taken alive, dead when the job is sent
        got = real(*a, **k)
        os.kill(victim, signal.SIGKILL)
        stat = Path(f"/proc/{victim}/stat")
        while stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z":
            time.sleep(0.005)                         # until it has ended (a zombie)
        return got
    monkeypatch.setattr(pool._POOL, "take", take_then_kill)
    run = _spin(10)
    assert not run.distribution.kept_workers and victim not in run.distribution.part_pids
    monkeypatch.undo()
    assert victim not in kept_pids() and _spin(10).distribution.kept_workers


def test_an_idle_kept_worker_that_ended_is_replaced_silently():
    import signal

    from ptxsim.distributed import kept_pids
    _vadd(workers=2)
    victim = kept_pids()[0]
    os.kill(victim, signal.SIGKILL)
    import time
    for _ in range(100):                              # until the kernel has ended it
        if victim not in kept_pids():
            break
        time.sleep(0.01)
    run = _vadd(workers=2)
    assert run.distribution.kept_workers and victim not in run.distribution.part_pids


def test_a_launch_a_kept_worker_rebuilds_differently_runs_in_forked_workers(monkeypatch):
    from ptxsim.distributed import pool
    _vadd(workers=2)                                  # the kept worker exists before the patch
    real = pool._layout
    monkeypatch.setattr(pool, "_layout", lambda launch: real(launch) + [(0, 1)])
    run = _vadd(workers=2)
    assert not run.distribution.kept_workers          # refused by the worker: forked instead


def test_parsed_modules_and_random_schedules_fork_their_workers():
    from ptxsim.distributed import pool
    assert not pool.usable({"ptx": parse_module(BASIC), "options": {}})
    assert not pool.usable({"ptx": BASIC, "options": {"schedule": "random:1"}})
    assert pool.usable({"ptx": BASIC, "options": {"schedule": None}})
    run, *_ = cute_gemm(2)                            # a parsed Module
    assert not run.distribution.kept_workers


def test_a_forked_process_does_not_inherit_the_kept_workers():
    from ptxsim.distributed import kept_pids
    _vadd(workers=2)
    assert kept_pids()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                                      # the child: no kept workers of its own
        try:
            os.write(w, b"%d" % len(kept_pids()))
        finally:
            os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    assert os.read(r, 16) == b"0"
    os.close(r)


def test_one_wave_runs_in_one_process():
    out = np.zeros(4, np.uint32)
    run = ptxsim.launch(SMALL, "same", 4, 32, args=[out], workers=2)
    assert run.distribution.backend == "one process"
    assert run.distribution.reason == "the grid has one wave"


@pytest.mark.parametrize("bad", [0, -2, "two", 2.5, "ray_x"])
def test_bad_workers_values_are_named(bad):
    with pytest.raises(OperandError, match="workers="):
        resolve_workers(bad)


def test_workers_values():
    assert resolve_workers(None) == ("one process", 1, None)
    assert resolve_workers(1) == ("one process", 1, None)
    assert resolve_workers(3) == ("local", 3, None)
    assert resolve_workers("ray") == ("ray", None, None)
    assert resolve_workers("ray:auto") == ("ray", None, "auto")
    assert resolve_workers(True)[0] == "local"


def test_split_is_contiguous_and_balanced():
    waves = [np.arange(4)] * 5 + [np.arange(1)]
    parts = split(waves, 2)
    assert [p.waves for p in parts] == [(0, 1, 2), (3, 4, 5)]
    assert [p.n_ctas for p in parts] == [12, 9]
    assert [p.waves for p in split(waves, 10)] == [(i,) for i in range(6)]
    assert [p.waves for p in split(waves[:3], 3)] == [(0,), (1,), (2,)]


def test_small_ptx_is_legal():
    import shutil
    import subprocess
    ptxas = shutil.which("ptxas") or "/usr/local/bin/ptxas"
    if not Path(ptxas).exists():
        pytest.skip("ptxas is not installed")
    r = subprocess.run([ptxas, "-arch=sm_100a", str(Path(__file__).parent / "data" /
                                                    "small.ptx"), "-o", os.devnull],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_reading_what_an_earlier_workers_cta_wrote_is_not_detected():
    # docs/distributed.md "Not detected": relay's CTA c reads out[c - 1], written by CTA c - 1.
    # One process runs the waves in order (42, 43, 44, 45); the second worker starts from the
    # bytes before the launch, so its CTAs read 0 — different bits, no error.
    one, two = np.zeros(4, np.uint32), np.zeros(4, np.uint32)
    ptxsim.launch(SMALL, "relay", 4, 32, args=[one], max_resident_ctas=1)
    ptxsim.launch(SMALL, "relay", 4, 32, args=[two], max_resident_ctas=1, workers=2)
    assert one.tolist() == [42, 43, 44, 45]
    assert two.tolist() == [42, 43, 1, 2]


def test_an_unknown_launch_option_is_named():
    with pytest.raises(OperandError, match="launch option 'colour' is not known"):
        ptxsim.launch(SMALL, "same", 4, 32, args=[np.zeros(4, np.uint32)], workers=2,
                      colour="red")


def test_allowing_order_dependence_over_atomics_keeps_the_later_workers_count():
    # docs/distributed.md: with allow_order_dependent an atomic counter updated in two workers
    # keeps the later worker's value — block_sum's CTA c adds x[256 c : 256 (c + 1)] to out[0]
    x = np.arange(3000, dtype=np.int32)
    out = np.zeros(1, np.int32)
    ptxsim.launch(BASIC, "block_sum", 12, 256, args=[x, out, 3000], max_resident_ctas=6,
                  workers=2, allow_order_dependent=True)
    assert out[0] == x[6 * 256:].sum() != x.sum()


@pytest.mark.parametrize("block", [8, 64, 1 << 20])
def test_byte_diff_by_blocks_is_the_whole_buffer_mask(monkeypatch, block):
    # parts.byte_diff walks the buffers in blocks; what it returns is, by definition, the span
    # [first changed byte, last changed byte], numpy.packbits of the span's changed mask and the
    # changed bytes in order, as one whole-buffer comparison gives them
    from ptxsim.distributed import parts
    monkeypatch.setattr(parts, "_BLOCK", block)
    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(0, 300))
        before = rng.integers(0, 3, n, dtype=np.uint8)
        after = before.copy()
        for _ in range(int(rng.integers(0, 4))):
            i, j = sorted(int(x) for x in rng.integers(0, n + 1, 2))
            after[i:j] = rng.integers(0, 3, j - i, dtype=np.uint8)
        d = parts.byte_diff(before, after, 0x1000, "x")
        changed = before != after
        if not changed.any():
            assert d is None
            continue
        idx = np.flatnonzero(changed)
        lo, hi = int(idx[0]), int(idx[-1]) + 1
        assert (d.lo, d.span, d.nbytes) == (lo, hi - lo, n)
        assert np.array_equal(d.bits, np.packbits(changed[lo:hi]))
        assert np.array_equal(d.data, after[idx])
        assert np.array_equal(d.mask(), changed[lo:hi])


@pytest.mark.parametrize("block", [8, 1 << 20])
def test_merge_of_overlapping_and_disjoint_parts(monkeypatch, block):
    # merge writes each part's changed bytes in launch order; where two parts changed one byte
    # the values must agree (else MergeConflict). Checked against a byte-by-byte replay.
    from types import SimpleNamespace

    from ptxsim.distributed import parts
    monkeypatch.setattr(parts, "_BLOCK", block)
    rng = np.random.default_rng(11)
    for trial in range(60):
        n = int(rng.integers(1, 200))
        start = rng.integers(0, 4, n, dtype=np.uint8)
        afters, ok = [], True
        for k in range(3):
            a = start.copy()
            i, j = sorted(int(x) for x in rng.integers(0, n + 1, 2))
            a[i:j] = rng.integers(0, 4, j - i, dtype=np.uint8)
            afters.append(a)
        # the one-process answer: later parts win; a conflict where two parts changed a byte
        # to different values
        want = start.copy()
        changed_by = {}
        for k, a in enumerate(afters):
            for x in np.flatnonzero(a != start):
                if x in changed_by and afters[changed_by[x]][x] != a[x]:
                    ok = False
                changed_by[x] = k
                want[x] = a[x]
        buf = SimpleNamespace(base=0x100, name="out", nbytes=n, u8=start.copy())
        launch = SimpleNamespace(gmem=SimpleNamespace(buffers=[buf]), steps=0, printf=[])
        res = [parts.PartResult(parts.Part(k, (k,), 1),
                                [d] if (d := parts.byte_diff(start, a, 0x100, "out")) else [])
               for k, a in enumerate(afters)]
        if ok:
            parts.merge(launch, res)
            assert np.array_equal(buf.u8, want)
        else:
            with pytest.raises(MergeConflict):
                parts.merge(launch, res)


def test_inputs_that_do_not_fit_a_kept_workers_area_fork_their_workers(monkeypatch):
    from ptxsim.distributed import close_pool, pool
    close_pool()
    monkeypatch.setattr(pool, "_area_bytes", lambda: 4096)     # smaller than vadd's 12 KB
    try:
        run = _vadd(workers=2)
        assert not run.distribution.kept_workers
    finally:
        close_pool()                                  # no small-area worker for later tests
    monkeypatch.undo()
    assert _vadd(workers=2).distribution.kept_workers


def test_a_kept_worker_runs_with_the_drivers_numerics_backend(monkeypatch):
    import importlib

    from ptxsim.numerics import backend
    if len(backend.available()) < 2:
        pytest.skip("only the numpy backend is built here")
    dlaunch = importlib.import_module("ptxsim.distributed.launch")
    got = {}
    real = dlaunch.run_local

    def spy(*a, **k):
        got["results"] = real(*a, **k)
        return got["results"]
    monkeypatch.setattr(dlaunch, "run_local", spy)
    for name in backend.available():
        with backend.use(name):
            run, *_ = triton_gemm(2)
        assert run.distribution.kept_workers
        assert [r.numerics for r in got["results"]] == [name, name]


UNINIT = """.version 8.0
.target sm_90
.address_size 64
.visible .entry late_uninit(.param .u64 out)
{
 .shared .align 4 .b8 buf[128];
 .reg .pred %p;
 .reg .b32 %r<3>;
 .reg .b64 %rd<4>;
 ld.param.u64 %rd1, [out];
 mov.u32 %r1, %ctaid.x;
 mov.u32 %r2, 0;
 setp.ge.u32 %p, %r1, 2;
 @%p ld.shared.u32 %r2, [buf];
 mul.wide.u32 %rd2, %r1, 4;
 add.u64 %rd3, %rd1, %rd2;
 st.global.u32 [%rd3], %r2;
 ret;
}
"""


def test_a_finding_in_a_kept_workers_part_comes_back_as_one_process_reports_it():
    # CTAs 2 and 3 (the second part, a kept worker's) read shared memory no one wrote
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one = ptxsim.launch(UNINIT, "late_uninit", 4, 32, args=[np.zeros(4, np.uint32)],
                            max_resident_ctas=1)
        two = ptxsim.launch(UNINIT, "late_uninit", 4, 32, args=[np.zeros(4, np.uint32)],
                            max_resident_ctas=1, workers=2)
    assert two.distribution.kept_workers
    assert [f.kind for f in one.findings] == ["uninit-shared"]
    assert [str(f) for f in two.findings] == [str(f) for f in one.findings]
    line = 1 + UNINIT.splitlines().index(" @%p ld.shared.u32 %r2, [buf];")
    f = two.findings[0]
    assert f.line == line and f.cta == (2, 0, 0) and f.count == 64    # CTAs 2 and 3, 32 lanes


@pytest.mark.parametrize("ending", ["returns", "os._exit"])
def test_kept_workers_end_with_the_driver(tmp_path, ending):
    # a driver that returns normally (atexit) or ends abruptly (its pipes close) leaves no
    # kept worker behind
    import subprocess
    import sys
    import time
    (tmp_path / "small.ptx").write_text(SMALL)
    pids_file = tmp_path / "pids"
    script = tmp_path / "driver.py"
    script.write_text(f"""
import os, numpy as np, ptxsim
from ptxsim.distributed import kept_pids
out = np.zeros(4 * 64, np.uint32)
ptxsim.launch(open({str(tmp_path / 'small.ptx')!r}).read(), "fault", 4, 32, args=[out],
              max_resident_ctas=1, workers=3)
open({str(pids_file)!r}, "w").write(" ".join(map(str, kept_pids())))
{"os._exit(0)" if ending == "os._exit" else ""}
""")
    # no pipes to the driver: a worker left behind would hold them open, not end the test
    with open(tmp_path / "err", "w") as err:
        got = subprocess.run([sys.executable, str(script)], stdout=subprocess.DEVNULL,
                             stderr=err, timeout=120)
    assert got.returncode == 0, (tmp_path / "err").read_text()
    pids = [int(p) for p in pids_file.read_text().split()]
    assert len(pids) == 2

    def alive():
        out = []
        for p in pids:
            try:
                state = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state != "Z":
                out.append(p)
        return out
    deadline = time.time() + 10
    while alive() and time.time() < deadline:
        time.sleep(0.05)
    left = alive()
    for p in left:
        os.kill(p, 9)
    assert not left, f"kept workers {left} outlived their driver"
