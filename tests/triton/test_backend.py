"""ptxsim.triton with our own small @triton.jit kernels: what a Triton user does on a GPU, on CPU
tensors. Oracles: torch / numpy on the CPU, ptxsim.numerics on the logical matrices (the tensor
core's bits, validated against MMA-Sim elsewhere), Triton's NVIDIA driver source (driver.c) for
how scalars are packed, and the kernel's own source file for the line a fault names."""
import subprocess
import sys
import warnings
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

import ptxsim.triton as pt
from ptxsim.errors import KernelFault, MemoryAccessError, OperandError
from ptxsim.numerics import mma


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


def test_backend_is_registered_and_active_without_a_gpu():
    # a fresh process with no GPU and no use(): installing ptxsim is enough
    code = ("import triton; from triton.backends import backends; d = triton.runtime.driver.active;"
            "print('ptxsim' in backends, type(d).__name__, d.get_current_target())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split()[:2] == ["True", "PtxsimDriver"]
    assert "arch=100" in out.stdout
    # PTXSIM_TRITON=0: not active by itself (Triton then finds no driver at all here)
    off = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**__import__("os").environ, "PTXSIM_TRITON": "0"})
    assert off.returncode != 0 and "0 active drivers" in off.stderr


def test_vector_add_on_cpu_tensors(sm100):
    x, y = torch.rand(1000), torch.rand(1000)
    out = torch.empty(1000)
    compiled = add_kernel[(triton.cdiv(1000, 256),)](x, y, out, 1000, BLOCK=256)
    assert torch.equal(out, x + y)
    assert 0 < compiled.n_regs <= 255                   # ptxas -v, as the CUDA driver reports
    rec = pt.last_launch()
    assert rec.kernel == "add_kernel" and rec.grid == (4, 1, 1) and rec.block == 128
    assert ".target sm_100a" in rec.ptx and rec.launch.steps > 0


def test_numpy_arrays_and_bf16(sm100):
    x = np.arange(300, dtype=np.float32)
    y = np.full(300, 0.5, np.float32)
    out = np.zeros(300, np.float32)
    add_kernel[(3,)](x, y, out, 300, BLOCK=128)
    np.testing.assert_array_equal(out, x + 0.5)
    xb = (np.arange(256) / 7).astype(ml_dtypes.bfloat16)
    ob = np.zeros(256, ml_dtypes.bfloat16)
    add_kernel[(2,)](xb, xb, ob, 256, BLOCK=128)
    np.testing.assert_array_equal(ob.view(np.uint16), (xb.astype(np.float32) * 2).astype(
        ml_dtypes.bfloat16).view(np.uint16))


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn, BM: tl.constexpr,
                  BN: tl.constexpr, BK: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    om = pm * BM + tl.arange(0, BM)
    on = pn * BN + tl.arange(0, BN)
    ok = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptr + om[:, None] * sam + (k * BK + ok)[None, :] * sak)
        b = tl.load(b_ptr + (k * BK + ok)[:, None] * sbk + on[None, :] * sbn)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + om[:, None] * scm + on[None, :] * scn, acc)


def test_tl_dot_matmul_bits_sm100(sm100):
    # 2 x 2 CTAs of 128 x 128, K = 192 in blocks of 64 (cp.async pipelined): each K block is four
    # tcgen05.mma kind::f16 of K = 16 accumulating in f32 from +0; the result's bits are the
    # numerics model stepped over the same logical matrices (and close to float64)
    M, N, K = 256, 256, 192
    g = torch.Generator().manual_seed(5)
    a = torch.randn(M, K, generator=g).to(torch.float16)
    b = torch.randn(K, N, generator=g).to(torch.float16)
    c = torch.empty(M, N)
    matmul_kernel[(2, 2)](a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(), BM=128, BN=128,
                          BK=64)
    assert "tcgen05.mma" in pt.last_launch().ptx
    ab, bb = a.view(torch.uint16).numpy(), b.view(torch.uint16).numpy()
    want = np.zeros((M, N), np.uint32)
    for k in range(0, K, 16):
        want = mma(ab[:, k:k + 16], bb[k:k + 16], want, arch="sm_100", kind="f16", atype="f16",
                   btype="f16", ctype="f32", dtype="f32")
    np.testing.assert_array_equal(c.numpy().view(np.uint32), want)
    ref = a.double() @ b.double()
    assert torch.allclose(c.double(), ref, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("target,arch,dtype,instr", [("sm_90a", "sm_90", "bfloat16", "wgmma"),
                                                     ("sm_120a", "sm_120", "float16", "mma.sync")])
def test_tl_dot_matmul_bits_other_targets(target, arch, dtype, instr):
    # the same kernel for Hopper (wgmma.mma_async) and consumer Blackwell (warp-level mma.sync):
    # bits equal to the numerics model of that architecture stepped over K in steps of 16
    M, N, K = 128, 128, 64
    g = torch.Generator().manual_seed(7)
    a = torch.randn(M, K, generator=g).to(getattr(torch, dtype))
    b = torch.randn(K, N, generator=g).to(getattr(torch, dtype))
    c = torch.empty(M, N)
    try:
        pt.use(target)
        matmul_kernel[(1, 1)](a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(), BM=128,
                              BN=128, BK=64)
        assert instr in pt.last_launch().ptx
    finally:
        pt.use(None)
    kind = {"float16": "f16", "bfloat16": "bf16"}[dtype]
    ab, bb = a.view(torch.uint16).numpy(), b.view(torch.uint16).numpy()
    want = np.zeros((M, N), np.uint32)
    for k in range(0, K, 16):
        want = mma(ab[:, k:k + 16], bb[k:k + 16], want, arch=arch, kind="f16", atype=kind,
                   btype=kind, ctype="f32", dtype="f32")
    np.testing.assert_array_equal(c.numpy().view(np.uint32), want)


@triton.jit
def device_desc_kernel(a_ptr, b_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    pm, pn = tl.program_id(0), tl.program_id(1)
    b_desc.store([pm * BM, pn * BN], a_desc.load([pm * BM, pn * BN]) + 1)


def test_device_tensor_descriptors(sm100):
    # tl.make_tensor_descriptor: the kernel writes a CUtensorMap (tensormap.replace on a zeroed
    # map in the driver's byte format) into global scratch from triton.set_allocator
    a = torch.randn(64, 96, dtype=torch.float16)
    b = torch.zeros_like(a)
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8))
    try:
        device_desc_kernel[(2, 3)](a, b, 64, 96, BM=32, BN=32)
    finally:
        from triton.runtime._allocation import NullAllocator
        triton.set_allocator(NullAllocator())
    assert torch.equal(b, a + 1)
    assert "tensormap.replace" in pt.last_launch().ptx


@triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=2),
                          triton.Config({"BLOCK": 256}, num_warps=4)], key=["n"])
@triton.jit
def scale_kernel(x_ptr, out_ptr, n, s, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * s, mask=m)


def test_autotune_runs_every_config_and_keeps_the_cheapest(sm100):
    x = torch.rand(1000)
    out = torch.empty(1000)
    scale_kernel[lambda meta: (triton.cdiv(1000, meta["BLOCK"]),)](x, out, 1000, 2.5)
    assert torch.equal(out, x * 2.5)
    ran = pt.launches()[-3:]                        # one run per configuration, then the chosen
    assert {r.block for r in ran} == {64, 128}           # both configurations ran (2, 4 warps)
    costs = {c.kwargs["BLOCK"]: t[0] for c, t in scale_kernel.configs_timings.items()}
    assert scale_kernel.best_config.kwargs["BLOCK"] == min(costs, key=costs.get)
    assert ran[-1].block == (64 if scale_kernel.best_config.kwargs["BLOCK"] == 64 else 128)


@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def heuristic_kernel(x_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(x_ptr + offs, offs)
    else:
        tl.store(x_ptr + offs, -offs, mask=offs < n)


def test_heuristics(sm100):
    y = torch.zeros(256, dtype=torch.int32)
    heuristic_kernel[(2,)](y, 256, BLOCK=128)
    assert torch.equal(y, torch.arange(256, dtype=torch.int32))
    y = torch.zeros(250, dtype=torch.int32)
    heuristic_kernel[(2,)](y, 250, BLOCK=128)
    assert torch.equal(y, -torch.arange(250, dtype=torch.int32))


@triton.jit
def twice_kernel(in_desc, out_desc, BM: tl.constexpr, BN: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    out_desc.store([pm * BM, pn * BN], in_desc.load([pm * BM, pn * BN]) * 2)


def test_host_tensor_descriptors(sm100):
    a = torch.randn(64, 96, dtype=torch.float16)
    b = torch.zeros(64, 96, dtype=torch.float16)
    twice_kernel[(2, 3)](TensorDescriptor.from_tensor(a, [32, 32]),
                         TensorDescriptor.from_tensor(b, [32, 32]), BM=32, BN=32)
    assert torch.equal(b, a * 2)
    rec = pt.last_launch()
    assert "cp.async.bulk.tensor" in rec.ptx
    assert [t for _, t, _ in rec.params][:1] == ["nvTmaDesc"]


@triton.jit
def unmasked_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs)  # FAULT-LINE: reads past the end when x is short
    tl.store(out_ptr + offs, v + 1)


def test_fault_names_the_ptx_line_and_the_triton_line(sm100):
    x = torch.zeros(100)
    out = torch.zeros(128)
    with pytest.raises(KernelFault) as info:
        unmasked_kernel[(1,)](x, out, BLOCK=128)
    e = info.value
    src = Path(__file__).read_text().splitlines()
    line = next(i + 1 for i, t in enumerate(src) if "FAULT-LINE" in t and "tl.load" in t)
    assert isinstance(e.cause, MemoryAccessError)
    # the file is the one the PTX's .file names: Triton's kernel cache keys a kernel by its source
    # text and first line, not its path, so a copy of this file elsewhere may name this one
    assert Path(e.source[0]).name == "test_backend.py" and e.source[1] == line
    assert f"test_backend.py:{line}:" in str(e) and "v = tl.load(x_ptr + offs)" in str(e)
    assert "ld.global" in str(e).split("PTX line")[1].splitlines()[0]
    assert "buffer 'x_ptr'" in str(e)
    assert "CTA (0, 0, 0), thread (" in str(e)          # the executor's fault location
    # the same launch with a long enough x runs
    unmasked_kernel[(1,)](torch.arange(128.0), out, BLOCK=128)
    assert torch.equal(out, torch.arange(128.0) + 1)


@triton.jit
def racy_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    # every thread of every warp stores to the first word of shared memory, no barrier between
    # the warps: a write-write race a GPU hides (the value is never read back)
    y = tl.inline_asm_elementwise(  # RACE-LINE
        "st.shared.b32 [global_smem], $1; mov.b32 $0, $1;", "=r,r", [x], dtype=tl.int32,
        is_pure=False, pack=1)
    tl.store(out_ptr, tl.sum(y, axis=0))        # a cross-warp sum: the kernel has shared memory


def test_sanitizer_findings_reach_the_triton_caller(sm100):
    # the sanitizer is on by default (docs/sanitizer.md): a clean kernel reports nothing, an
    # error finding is a FindingWarning naming the kind, the PTX line and the Triton line
    x = torch.arange(128, dtype=torch.int32)
    out = torch.zeros(1, dtype=torch.int32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", pt.FindingWarning)
        add_kernel[(1,)](torch.ones(64), torch.ones(64), torch.zeros(64), 64, BLOCK=64)
    assert pt.last_launch().sanitize == "default" and len(pt.last_launch().findings) == 0
    with pytest.warns(pt.FindingWarning) as rec:
        racy_kernel[(1,)](x, out, BLOCK=128, num_warps=4)
    assert out.item() == 128 * 127 // 2                      # the numbers are right all the same
    findings = pt.last_launch().findings
    # the stores race with each other, and the sum's own shared-memory store races with them
    assert set(findings.kinds()) == {"race-shared"} and len(findings.errors) == 2
    f = findings.errors[0]
    ptx_line = pt.last_launch().ptx.splitlines()[f.line - 1]
    assert "st.shared.b32 [global_smem]" in ptx_line
    src = Path(__file__).read_text().splitlines()
    line = next(i + 1 for i, t in enumerate(src) if "RACE-LINE" in t and "y = " in t)
    msg = str(rec[0].message)
    assert "[race-shared]" in msg and f"test_backend.py:{line}:" in msg
    # sanitize="none": no checks, no warning; a bad mode is refused by name
    pt.use("sm_100a", sanitize="none")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pt.FindingWarning)
            racy_kernel[(1,)](x, out, BLOCK=128, num_warps=4)
        assert len(pt.last_launch().findings) == 0 and pt.last_launch().sanitize == "none"
    finally:
        pt.use("sm_100a", sanitize="default")
    with pytest.raises(OperandError, match="sanitize='most'"):
        pt.use("sm_100a", sanitize="most")


@triton.jit
def strided_copy(x_ptr, out_ptr, stride, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * stride))


def _entry_params(ptx: str) -> int:
    head = ptx.split(".entry", 1)[1].split(")", 1)[0]
    return head.count(".param")


def test_specialisation_as_on_a_gpu(sm100):
    # ints equal to 1 become constexprs (one .param fewer); 16-byte aligned pointers are
    # specialised as divisible by 16 (vector loads), a misaligned view is not
    x = torch.arange(2048.0)
    out = torch.zeros(512)
    strided_copy[(1,)](x, out, 2, BLOCK=512)
    assert torch.equal(out, x[:1024:2])
    with_stride = pt.last_launch().ptx
    strided_copy[(1,)](x, out, 1, BLOCK=512)
    assert torch.equal(out, x[:512])
    unit = pt.last_launch().ptx
    assert _entry_params(with_stride) == _entry_params(unit) + 1
    assert "ld.global.v4.b32" in unit
    strided_copy[(1,)](x[1:], out, 1, BLOCK=512)
    assert torch.equal(out, x[1:513])
    assert "ld.global.v4" not in pt.last_launch().ptx


@triton.jit
def scalars_kernel(out_ptr, h: tl.float16, bf: tl.bfloat16, f: tl.float32, flag: tl.int1,
                   big: tl.int64):
    tl.store(out_ptr + 0, h.to(tl.float32))
    tl.store(out_ptr + 1, bf.to(tl.float32))
    tl.store(out_ptr + 2, f)
    tl.store(out_ptr + 3, flag.to(tl.float32))
    tl.store(out_ptr + 4, (big - 4294967296).to(tl.float32))


def test_scalars_packed_like_the_nvidia_driver(sm100):
    # driver.c: fp16 by PyFloat_Pack2 (nearest even), bf16 by truncating the f32 bits, fp32 by
    # (float)double; annotated scalars keep their Triton types
    h = 1 + 2 ** -11 + 2 ** -13            # f16: between 1 and 1 + 2^-10, nearer the upper
    bf = 1 + 2 ** -8 + 2 ** -9              # bf16 truncation keeps 1.0 (nearest even: 1 + 2^-7)
    out = torch.zeros(5)
    scalars_kernel[(1,)](out, h, bf, 0.1, True, 4294967296 + 7)
    assert out[0].item() == 1 + 2 ** -10
    assert out[1].item() == 1.0
    assert out[2].item() == float(np.float32(0.1))
    assert out[3].item() == 1.0 and out[4].item() == 7.0


@triton.jit
def ids_kernel(out_ptr):
    i, j, k = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    n0, n1 = tl.num_programs(0), tl.num_programs(1)
    tl.store(out_ptr + (k * n1 + j) * n0 + i, i * 100 + j * 10 + k)


def test_grids_tuple_and_lambda_and_launch_options(sm100):
    out = torch.full((2, 3, 4), -1, dtype=torch.int32)
    ids_kernel[(4, 3, 2)](out)
    want = torch.tensor([[[i * 100 + j * 10 + k for i in range(4)] for j in range(3)]
                         for k in range(2)], dtype=torch.int32)
    assert torch.equal(out, want)
    out.fill_(-1)
    ids_kernel[lambda meta: (4, 3, 2)](out, num_warps=8, maxnreg=128)
    assert torch.equal(out, want)
    rec = pt.last_launch()
    assert rec.block == 256 and ".maxnreg 128" in rec.ptx


def test_num_ctas_launches_clusters(sm100):
    x, y = torch.rand(4096), torch.rand(4096)
    out = torch.empty(4096)
    add_kernel[(4,)](x, y, out, 4096, BLOCK=1024, num_ctas=2)
    assert torch.equal(out, x + y)
    rec = pt.last_launch()
    assert rec.cluster == (2, 1, 1) and rec.grid == (8, 1, 1)


def test_other_targets_and_bad_target():
    x, y = torch.rand(300), torch.rand(300)
    out = torch.empty(300)
    try:
        for target in ("sm_90a", "sm_120a", "sm_103a"):
            pt.use(target)
            add_kernel[(3,)](x, y, out, 300, BLOCK=128)
            assert torch.equal(out, x + y)
            assert f".target {target}" in pt.last_launch().ptx and pt.target() == target
        with pytest.raises(OperandError, match="sm_101"):
            pt.use("sm_101")
    finally:
        pt.use(None)


@triton.jit
def gather_rows_kernel(ptrs, out_ptr, BLOCK: tl.constexpr):
    # a table of addresses written by host code (as a grouped GEMM passes its operands)
    i = tl.program_id(0)
    p = tl.load(ptrs + i).to(tl.pointer_type(tl.float32))
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + i * BLOCK + offs, tl.load(p + offs))


def test_pointer_tables_reach_tensors_not_passed(sm100):
    rows = [torch.full((64,), float(i)) for i in range(3)]
    table = torch.tensor([r.data_ptr() for r in rows], dtype=torch.int64)
    out = torch.zeros(3, 64)
    gather_rows_kernel[(3,)](table, out, BLOCK=64)
    assert torch.equal(out, torch.stack(rows))


def test_launch_record_reruns_and_writes_a_ptxsim_run_command(sm100, tmp_path):
    x, y = torch.rand(300), torch.rand(300)
    out = torch.empty(300)
    add_kernel[(3,)](x, y, out, 300, BLOCK=128)
    rec = pt.last_launch()
    out.zero_()
    rec.rerun()
    assert torch.equal(out, x + y)
    cmd = rec.run_command(tmp_path)
    assert cmd[:3] == ["ptxsim", "run", str(tmp_path / "kernel.ptx")]
    res = subprocess.run([sys.executable, "-m", "ptxsim", *cmd[1:], "--out",
                          str(tmp_path / "out")], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    got = np.load(tmp_path / "out" / "arg2.npy").view(np.float32)
    np.testing.assert_array_equal(got[:300], (x + y).numpy())


def test_ptxas_refusing_the_ptx_raises_as_on_a_gpu():
    from triton.runtime.errors import PTXASError

    from ptxsim.triton.backend.compiler import ptxas_info
    info = ptxas_info(pt.last_launch().ptx if pt.launches() else _tiny_ptx(), 100)
    assert info["n_regs"] > 0
    with pytest.raises(PTXASError):
        ptxas_info(_tiny_ptx().replace("ret;", "not_an_instruction;"), 100)


def _tiny_ptx():
    return (".version 8.7\n.target sm_100a\n.address_size 64\n"
            ".visible .entry k(.param .u64 p)\n{\n.reg .b64 %rd<2>;\n"
            "ld.param.u64 %rd1, [p];\nret;\n}\n")


def test_do_bench_measures_the_simulation(sm100):
    x, y = torch.rand(256), torch.rand(256)
    out = torch.empty(256)
    ms = triton.testing.do_bench(lambda: add_kernel[(2,)](x, y, out, 256, BLOCK=128), warmup=1,
                                 rep=1)
    assert ms > 0 and torch.equal(out, x + y)


@triton.jit
def mx_matmul_kernel(a_ptr, b_ptr, c_ptr, sa_ptr, sb_ptr, M, N, K, BM: tl.constexpr,
                     BN: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr):
    # scales in the tcgen05 scale-factor layout: per 128 rows and 4 scale columns (128 K
    # elements) one 512-byte chunk [32][4][4], loaded 2-D and reshaped; Triton copies them into
    # Tensor Memory with tcgen05.cp, pipelined with the block-scaled tcgen05.mma
    pm, pn = tl.program_id(0), tl.program_id(1)
    om = pm * BM + tl.arange(0, BM)
    on = pn * BN + tl.arange(0, BN)
    ok = tl.arange(0, BK)
    CH: tl.constexpr = (BK // 128) * 512
    kb = K // 128
    sa_rows = pm * (BM // 128) + tl.arange(0, BM // 128)
    sb_rows = pn * (BN // 128) + tl.arange(0, BN // 128)
    oc = tl.arange(0, CH)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in tl.range(0, K // BK, num_stages=STAGES):
        a = tl.load(a_ptr + om[:, None] * K + (k * BK + ok)[None, :])
        b = tl.load(b_ptr + (k * BK + ok)[:, None] * N + on[None, :])
        sa = tl.load(sa_ptr + sa_rows[:, None] * (kb * 512) + k * CH + oc[None, :])
        sb = tl.load(sb_ptr + sb_rows[:, None] * (kb * 512) + k * CH + oc[None, :])
        sa = sa.reshape(BM // 128, BK // 128, 32, 4, 4).trans(0, 3, 2, 1, 4).reshape(BM, BK // 32)
        sb = sb.reshape(BN // 128, BK // 128, 32, 4, 4).trans(0, 3, 2, 1, 4).reshape(BN, BK // 32)
        acc = tl.dot_scaled(a, sa, "e5m2", b, sb, "e5m2", acc)
    tl.store(c_ptr + om[:, None] * N + on[None, :], acc)


def test_pipelined_block_scaled_mma_on_many_ctas(sm100):
    # Regression: with 8 CTAs in one wave, the tcgen05.mma of one step were batched across CTAs
    # and read the scale factors / accumulator of the other CTAs while their earlier tcgen05.cp
    # and MMA were still pending: every CTA but the first got wrong tiles. Oracle: float64.
    M, N, K = 512, 256, 256
    torch.manual_seed(3)
    a = torch.randint(20, 40, (M, K), dtype=torch.uint8).view(torch.float8_e5m2)
    b = torch.randint(20, 40, (K, N), dtype=torch.uint8).view(torch.float8_e5m2)
    sa = torch.randint(120, 134, (M // 128, K // 128, 32, 4, 4), dtype=torch.uint8)
    sb = torch.randint(120, 134, (N // 128, K // 128, 32, 4, 4), dtype=torch.uint8)
    c = torch.zeros(M, N)
    k = mx_matmul_kernel[(M // 128, N // 128)](a, b, c, sa, sb, M, N, K, BM=128, BN=128, BK=128,
                                                STAGES=2, num_warps=8)
    assert "tcgen05.cp" in k.asm["ptx"] and "block_scale" in k.asm["ptx"]

    def unshuffle(s):                          # [rows // 128, K // 128, 32, 4, 4] -> [rows, K // 32]
        return s.permute(0, 3, 2, 1, 4).reshape(s.shape[0] * 128, s.shape[1] * 4)
    fa = a.float().double() * (2.0 ** (unshuffle(sa).double() - 127)).repeat_interleave(32, 1)
    fb = b.float().double() * (2.0 ** (unshuffle(sb).double() - 127)).repeat_interleave(32, 1).T
    ref = fa @ fb
    assert torch.allclose(c.double(), ref, rtol=1e-5, atol=1e-6 * ref.abs().max())


def test_kernel_loaded_under_use_runs_after_use_none():
    # a compiled kernel keeps the handle it was loaded with; the driver Triton falls back to
    # after use(None) (here also ptxsim's: no GPU) must still find it
    x, y = torch.rand(100), torch.rand(100)
    out = torch.empty(100)
    pt.use("sm_100a")
    add_kernel[(1,)](x, y, out, 100, BLOCK=128)
    pt.use(None)
    out.zero_()
    add_kernel[(1,)](x, y, out, 100, BLOCK=128)
    assert torch.equal(out, x + y)
