"""The mutant suite (issue #19): one-line mutants of real kernels, one per bug class the hardware
hides — the bundled demo GEMMs (src/ptxsim/data/kernels/tcgen05_demo.ptx, nvcc 13.0), Triton
3.9's matmul kernels and CuTe DSL 4.8.1's GEMMs (tests/data/ptx) — each reported by the sanitizer
with its kind and the PTX line of the faulty access (and the line of the earlier access it
conflicts with); the unmutated kernels report nothing (tests/machine/test_exec_triton.py,
test_exec_cute.py and below). The expected lines are read off the PTX text (the line of the
instruction that makes the faulty access), so the oracle is the kernel source, not the code under
test.
"""
import re
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from ptxsim.errors import AsyncProxyError, TmemLeakError
from ptxsim.machine.demos import kernel_ptx
from ptxsim.machine.executor import launch
from ptxsim.machine.tensormap import TensorMap
from ptxsim.ptx import parse_module

DATA = Path(__file__).parents[1] / "data" / "ptx"
sys.path.insert(0, str(Path(__file__).parents[1] / "machine"))
from test_exec_cute import fastdivmod  # noqa: E402  (CuTe's FastDivmod parameter struct)
DEMO = kernel_ptx()
TRITON_BF16 = (DATA / "triton" / "matmul_bf16.ptx").read_text()


# ---------------------------------------------------------------------------------- helpers
def lines_of(text: str, pattern: str, lo: int = 1, hi: int = 10 ** 9) -> list[int]:
    """1-based numbers of the lines in [lo, hi] that match `pattern` (a regex)."""
    return [i for i, line in enumerate(text.split("\n"), 1)
            if lo <= i <= hi and re.search(pattern, line)]


def entry_range(text: str, name: str) -> tuple[int, int]:
    """The line range of `.entry name` (to the next entry or the end of the file)."""
    lines = text.split("\n")
    lo = next(i for i, line in enumerate(lines, 1) if f".entry {name}(" in line)
    hi = next((i for i, line in enumerate(lines, 1) if i > lo and ".entry " in line),
              len(lines))
    return lo, hi


def findings_of(fn, *args, **kw):
    """The findings of a run, also when it ends in an error (they travel with it)."""
    try:
        return fn(*args, **kw).findings
    except Exception as e:  # noqa: BLE001 -- every ptxsim error carries the findings so far
        if not hasattr(e, "findings"):
            raise
        return e.findings


def mutate(text: str, line: int, new: str | None) -> str:
    """The PTX with line `line` replaced by `new` (None: removed, as a comment)."""
    lines = text.split("\n")
    lines[line - 1] = "// mutant: " + lines[line - 1].strip() if new is None else new
    return "\n".join(lines)


def move(text: str, line: int, after: int) -> str:
    """The PTX with line `line` moved to just after line `after` (after < line)."""
    lines = text.split("\n")
    moved = lines[line - 1]
    lines[line - 1] = "// mutant: moved up"
    lines.insert(after, moved)
    return "\n".join(lines)


def kinds(findings) -> set:
    return {(f.kind, f.line) for f in findings}


# ------------------------------------------------------------------------- demo kernels
def run_dense(ptx, sanitize="default"):
    rng = np.random.default_rng(0)
    K = 64
    A = rng.standard_normal((128, K)).astype(ml_dtypes.bfloat16)
    B = rng.standard_normal((64, K)).astype(ml_dtypes.bfloat16)
    D = np.zeros((128, 64), np.float32)
    return launch(ptx, "dense_bf16_gemm", 1, 128, args=[A.view(np.uint16), B.view(np.uint16), D,
                                                        K],
                  dynamic_shared=(128 + 64) * K * 2 + 16, sanitize=sanitize)


def run_mxf8(ptx, sanitize="default"):
    rng = np.random.default_rng(0)
    K = 128
    A = rng.standard_normal((128, K)).astype(ml_dtypes.float8_e4m3fn)
    B = rng.standard_normal((64, K)).astype(ml_dtypes.float8_e4m3fn)
    SA = rng.integers(120, 135, (128, 4)).astype(np.uint8)
    SB = rng.integers(120, 135, (64, 4)).astype(np.uint8)
    D = np.zeros((128, 64), np.float32)
    return launch(ptx, "mxf8_gemm", 1, 128,
                  args=[A.view(np.uint8), B.view(np.uint8), SA.view("<u4").ravel(),
                        SB.view("<u4").ravel(), D], dynamic_shared=192 * K + 16,
                  sanitize=sanitize)


DENSE = entry_range(DEMO, "dense_bf16_gemm")
MXF8 = entry_range(DEMO, "mxf8_gemm")
DENSE_MMA = lines_of(DEMO, r"tcgen05\.mma", *DENSE)
MXF8_MMA = lines_of(DEMO, r"tcgen05\.mma", *MXF8)


@pytest.mark.parametrize("mode", ["default", "full"])
def test_demo_kernels_run_clean(mode):
    assert not run_dense(DEMO, mode).findings
    assert not run_mxf8(DEMO, mode).findings


def test_demo_missing_fence_proxy_async():
    (fence,) = lines_of(DEMO, r"fence\.proxy\.async", *DENSE)
    run = run_dense(mutate(DEMO, fence, None))
    assert {k for k, _ in kinds(run.findings)} == {"missing-proxy-fence"}
    f = run.findings[0]
    assert f.line == DENSE_MMA[0]                  # the first MMA reads the unfenced operand
    assert f.earlier.line in lines_of(DEMO, r"st\.shared", *DENSE)


def test_demo_missing_barrier_before_the_mma():
    # __syncthreads between filling shared memory (every warp) and the MMA (warp 0) removed
    bar = lines_of(DEMO, r"bar\.sync", *DENSE)[0]
    run = run_dense(mutate(DEMO, bar, None))
    races = {f.line: f for f in run.findings if f.kind == "race-shared"}
    # warps 1-3 read the Tensor Memory address warp 0's tcgen05.alloc wrote ...
    (taddr,) = lines_of(DEMO, r"ld\.shared\.u32", bar, DENSE_MMA[0])
    assert races[taddr].earlier.line == lines_of(DEMO, r"tcgen05\.alloc", *DENSE)[0]
    # ... and the MMAs (warp 0) read operands warps 1-3 stored
    mma = [races[line] for line in DENSE_MMA if line in races]
    assert mma and all(f.earlier.line in lines_of(DEMO, r"st\.shared", *DENSE) for f in mma)
    assert all("warp 0 " not in f.earlier.what for f in mma)


def test_demo_accumulator_read_before_the_commit_completes():
    # the wait on the commit's mbarrier becomes "done": tcgen05.ld reads D while the MMAs are in
    # flight (silently wrong zeros on hardware); the kernel then exits with them in flight
    (wait,) = lines_of(DEMO, r"mbarrier\.try_wait", *DENSE)
    with pytest.raises(AsyncProxyError) as e:
        run_dense(mutate(DEMO, wait, "mov.pred done, 1;"))
    first_ld = lines_of(DEMO, r"tcgen05\.ld", *DENSE)[0]
    fs = [f for f in e.value.findings if f.kind == "tmem-read-before-complete"]
    assert fs and fs[0].line == first_ld and all(f.earlier.line in DENSE_MMA for f in fs)


def test_demo_tensor_memory_leak():
    (dealloc,) = lines_of(DEMO, r"tcgen05\.dealloc", *DENSE)
    with pytest.raises(TmemLeakError) as e:
        run_dense(mutate(DEMO, dealloc, None))
    assert "columns [0, 64)" in str(e.value)


def test_demo_missing_barrier_before_dealloc():
    # __syncthreads between every warp's tcgen05.ld and warp 0's dealloc removed: the columns
    # are freed while other warps' loads may still read them
    (dealloc,) = lines_of(DEMO, r"tcgen05\.dealloc", *DENSE)
    bar = lines_of(DEMO, r"bar\.sync", DENSE[0], dealloc)[-1]
    run = run_dense(mutate(DEMO, bar, None))
    fs = [f for f in run.findings if f.kind == "tmem-dealloc-in-flight"]
    assert fs and fs[0].line == dealloc
    assert fs[0].earlier.line in lines_of(DEMO, r"tcgen05\.ld", *DENSE)


def test_demo_accumulate_into_uninitialised_tensor_memory():
    # enable-input-d forced true: the first MMA accumulates into D no one wrote
    setp = lines_of(DEMO, r"setp\.ne\.b32 p, ", *DENSE)[0]
    reg = re.search(r"setp\.ne\.b32 p, (%r\d+), 0;", DEMO.split("\n")[setp - 1]).group(1)
    run = run_dense(mutate(DEMO, setp, f"setp.eq.b32 p, {reg}, {reg};"))
    assert ("uninit-tmem", DENSE_MMA[0]) in kinds(run.findings)


def test_demo_mma_reads_shared_memory_no_one_wrote():
    # one store of the B fill loop removed: the MMA reads never-written operand bytes
    store = lines_of(DEMO, r"st\.shared", *DENSE)[-1]
    run = run_dense(mutate(DEMO, store, None))
    assert ("uninit-shared", DENSE_MMA[0]) in kinds(run.findings)


def test_demo_divergent_barrier():
    # bar.sync guarded by a per-lane predicate (tid != 0): lane 0 of warp 0 skips the .aligned
    # barrier; the others wait for it forever
    bar = lines_of(DEMO, r"bar\.sync", *DENSE)[0]
    setp = lines_of(DEMO, r"setp\.ne\.s32\s+%p\d+, %r\d+, 0;", *DENSE)[0]
    pred = re.search(r"(%p\d+)", DEMO.split("\n")[setp - 1]).group(1)
    found = findings_of(run_dense, mutate(DEMO, bar, f"@{pred} bar.sync 0;"))
    assert ("divergent-aligned", bar) in kinds(found)


def test_demo_missing_tcgen05_wait_st():
    # the scale factors every warp stores with tcgen05.st are read by the MMA before
    # tcgen05.wait::st
    (wait,) = lines_of(DEMO, r"tcgen05\.wait::st", *MXF8)
    run = run_mxf8(mutate(DEMO, wait, None))
    assert ("tmem-read-before-complete", MXF8_MMA[0]) in kinds(run.findings)
    f = next(f for f in run.findings if f.kind == "tmem-read-before-complete")
    assert f.earlier.line in lines_of(DEMO, r"tcgen05\.st\.", *MXF8)


@pytest.mark.parametrize("which", ["before", "after"])
def test_demo_missing_tcgen05_thread_sync_fence(which):
    # the fences around the __syncthreads between every warp's tcgen05.st and warp 0's MMA
    # (PTX ISA 9.7.16.6.4.4): full mode checks the canonical patterns
    (wait,) = lines_of(DEMO, r"tcgen05\.wait::st", *MXF8)
    fence = lines_of(DEMO, rf"tcgen05\.fence::{which}_thread_sync", wait, MXF8[1])[0]
    mutant = mutate(DEMO, fence, None)
    assert not run_mxf8(mutant, "default").findings          # default mode: not required
    run = run_mxf8(mutant, "full")
    assert {f.kind for f in run.findings} == {f"tcgen05-missing-fence-{which}"}
    assert run.findings[0].line == MXF8_MMA[0]
    assert all(f.severity == "warning" for f in run.findings)


# ----------------------------------------------------------------------- Triton matmul_bf16
def run_triton(ptx, K=256, sanitize="default"):
    rng = np.random.default_rng(1)
    M = N = 128
    a = rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((K, N)).astype(ml_dtypes.bfloat16)
    c = np.zeros((M, N), np.float32)
    return launch(ptx, "matmul_kernel", (1, 1), 128,
                  args=[a.view(np.uint16), b.view(np.uint16), c, M, N, K, K, 1, N, 1, N, 1,
                        np.zeros(64, np.uint8), np.zeros(64, np.uint8)],
                  dynamic_shared=160 * 1024, sanitize=sanitize)


T_MMA = lines_of(TRITON_BF16, r"tcgen05\.mma")
T_WAITS = lines_of(TRITON_BF16, r"mbarrier\.try_wait")


def test_triton_runs_clean_full():
    assert not run_triton(TRITON_BF16, sanitize="full").findings.errors


def test_triton_stage_overwritten_while_the_mma_reads_it():
    # the K loop's wait for the previous stage's MMA (its commit's mbarrier) removed: the next
    # ld.global -> st.shared refill overwrites an operand the MMA may still be reading
    loop_wait = T_WAITS[0]
    found = findings_of(run_triton, mutate(TRITON_BF16, loop_wait, "mov.pred complete, 1;"))
    fs = [f for f in found if f.kind == "async-source-overwritten"]
    assert fs, found
    assert fs[0].line in lines_of(TRITON_BF16, r"st\.shared", loop_wait)
    assert fs[0].earlier.line in T_MMA


def test_triton_accumulator_read_before_the_commit_completes():
    final_wait = T_WAITS[1]
    with pytest.raises(AsyncProxyError) as e:
        run_triton(mutate(TRITON_BF16, final_wait, "mov.pred complete, 1;"))
    ld = lines_of(TRITON_BF16, r"tcgen05\.ld")[0]
    assert ("tmem-read-before-complete", ld) in kinds(e.value.findings)


def test_triton_missing_fence_proxy_async():
    fence = lines_of(TRITON_BF16, r"fence\.proxy\.async")[0]
    run = run_triton(mutate(TRITON_BF16, fence, None))
    assert ("missing-proxy-fence", T_MMA[0]) in kinds(run.findings)


def test_triton_epilogue_race_on_the_staging_buffer():
    # the bar.sync between the epilogue's st.shared staging and the ldmatrix re-read removed:
    # warps read rows other warps write
    ldm = lines_of(TRITON_BF16, r"ldmatrix")[0]
    bar = lines_of(TRITON_BF16, r"bar\.sync", 1, ldm)[-1]
    run = run_triton(mutate(TRITON_BF16, bar, None))
    races = [f for f in run.findings if f.kind == "race-shared"]
    assert races and races[0].line in lines_of(TRITON_BF16, r"ldmatrix")
    assert races[0].earlier.line in lines_of(TRITON_BF16, r"st\.shared\.v4", 1, ldm)


def test_triton_dealloc_before_the_loads_complete():
    # the dealloc moved up to just after the tcgen05.ld: the columns are freed while the load
    # may still read them (the wait::ld and the register uses come after)
    ld = lines_of(TRITON_BF16, r"tcgen05\.ld")[0]
    (dealloc,) = lines_of(TRITON_BF16, r"tcgen05\.dealloc")
    run = run_triton(move(TRITON_BF16, dealloc, ld))
    fs = [f for f in run.findings if f.kind == "tmem-dealloc-in-flight"]
    assert fs and fs[0].line == ld + 1 and fs[0].earlier.line == ld


# -------------------------------------------------------------------------------- CuTe DSL
def run_cute_dense(text, sanitize="default"):
    M = N = 128
    K = 128
    rng = np.random.default_rng(1)
    a = rng.standard_normal((M, K)).astype(np.float16).view(np.uint16)
    b = rng.standard_normal((N, K)).astype(np.float16).view(np.uint16)
    c = np.zeros((M, N), np.uint16)
    ta = TensorMap.for_array(a, (64, 128), swizzle="128B", dtype="float16")
    tb = TensorMap.for_array(b, (64, 128), swizzle="128B", dtype="float16")
    tc = TensorMap.for_array(c, (32, 128), swizzle="64B", dtype="float16")
    m = parse_module(text)
    return launch(m, m.entries[0].name, (1, 1, 1), 128, args=[bytes(32), ta, tb, tc],
                  dynamic_shared=227 * 1024, sanitize=sanitize)


CUTE_DENSE = (DATA / "cute" / "cute_dense_gemm_f16_1cta.ptx").read_text()


def test_cute_mma_reads_the_tma_destination_before_its_mbarrier():
    # the MMA warp's wait on the stage's full barrier removed: the MMAs read shared memory the
    # TMA loads have not (known to have) delivered
    mma = lines_of(CUTE_DENSE, r"tcgen05\.mma")
    wait = lines_of(CUTE_DENSE, r"mbarrier\.try_wait", 1, mma[0])[-1]
    mutant = mutate(CUTE_DENSE, wait, "\tmov.pred P1, 1;")
    run = run_cute_dense(mutant)
    fs = [f for f in run.findings if f.kind == "async-read-before-complete"]
    assert fs and fs[0].line == mma[0]
    assert fs[0].earlier.line in lines_of(CUTE_DENSE, r"cp\.async\.bulk\.tensor")
    assert not run_cute_dense(CUTE_DENSE).findings


def run_cute_persistent(text):
    M, N, K = 512, 256, 512
    rng = np.random.default_rng(5)
    a = rng.standard_normal((M, K)).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    b = rng.standard_normal((N, K)).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    c = np.zeros((M, N), np.uint16)
    ta = TensorMap.for_array(a, (128, 128), swizzle="128B", dtype="uint8")
    tb = TensorMap.for_array(b, (128, 256), swizzle="128B", dtype="uint8")
    tc = TensorMap.for_array(c, (32, 128), swizzle="64B", dtype="bfloat16")
    m = parse_module(text)
    return launch(m, m.entries[0].name, (1, 1, 2), 192, cluster=(1, 1, 1),
                  args=[bytes(32), ta, tb, tc, fastdivmod(M // 128), fastdivmod(N // 256),
                        fastdivmod(1), fastdivmod(1)], dynamic_shared=227 * 1024)


def test_cute_epilogue_reads_the_accumulator_before_the_mma():
    # the epilogue warps' wait on the accumulator's full barrier removed (CuTe DSL
    # PersistentDenseGemmKernel): the first tcgen05.ld reads D before any MMA wrote it
    text = (DATA / "cute" / "cute_persistent_gemm_fp8_1cta.ptx").read_text()
    ld = lines_of(text, r"tcgen05\.ld")[0]
    wait = lines_of(text, r"mbarrier\.try_wait", 1, ld)[-1]
    found = findings_of(run_cute_persistent, mutate(text, wait, "\tmov.pred P1, 1;"))
    assert ("uninit-tmem", ld) in kinds(found)


def test_cute_blockscaled_gemm_in_full_mode(monkeypatch):
    # CuTe DSL's block-scaled GEMM re-fills the scale factors with tcgen05.cp right after the
    # MMAs that read them (mma -> cp is not a pipelined pair, PTX ISA 9.7.16.6.2) and reads the
    # accumulator after an mbarrier wait with no tcgen05.fence::after_thread_sync: full mode's
    # warnings, no error; and the test's own bit-exact check still holds under full mode
    import test_exec_cute
    from ptxsim.machine.sanitizer import Findings
    got, real = [], test_exec_cute.launch

    def full(*args, **kw):
        run = real(*args, **dict(kw, sanitize="full"))
        got.append(run.findings)
        return type("Run", (), {"findings": Findings()})()
    monkeypatch.setattr(test_exec_cute, "launch", full)
    test_exec_cute.test_cute_blockscaled_persistent_mxf8_gemm()
    (found,) = got
    assert not found.errors
    assert {f.kind for f in found} == {"tcgen05-not-pipelined", "tcgen05-missing-fence-after"}
    cps = lines_of((DATA / "cute" / "cute_blockscaled_mxf8_1cta.ptx").read_text(),
                   r"tcgen05\.cp")
    assert {f.line for f in found if f.kind == "tcgen05-not-pipelined"} <= set(cps)


# ------------------------------------------------- TMA gather4 / scatter4 (handlers/tma_modes)
from test_exec_tma_modes import GATHER  # noqa: E402  (gather4 load, then scatter4 store)


def _gather(ptx):
    a = np.arange(72 * 256, dtype=np.uint32).astype(np.uint16).reshape(72, 256)
    back = np.zeros((72, 256), np.uint16)
    tin = TensorMap.for_array(a, (64, 1), swizzle="128B", dtype="bfloat16")
    tout = TensorMap.for_array(back, (64, 1), swizzle="128B", dtype="bfloat16")
    return launch(ptx, "k", 1, 32, args=[tin, tout, np.zeros(512, np.uint8), 64, 5, 0, 33, 2])


def test_gather4_load_and_scatter4_store():
    # the kernel as written runs clean: its reads of the gathered rows follow the mbarrier
    assert not _gather(GATHER).findings
    no_wait = GATHER.replace("@!%p2 bra $L_wait;", "")
    assert ("async-read-before-complete", lines_of(no_wait, r"ld\.shared\.v4")[0]) in kinds(
        findings_of(_gather, no_wait))
    # buf overwritten while the scatter4 store still reads it (before its wait_group)
    early = GATHER.replace("    @%p1 cp.async.bulk.commit_group;",
                           "    @%p1 st.shared.u32 [buf], 0;\n    @%p1 cp.async.bulk.commit_group;")
    assert ("async-source-overwritten", lines_of(early, r"st\.shared\.u32 \[buf\]")[0]) in \
        kinds(findings_of(_gather, early))
