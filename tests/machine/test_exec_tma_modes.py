"""cp.reduce.async.bulk{.tensor}, TMA .tile::gather4 / .tile::scatter4 and .im2col
(machine/tma_modes.py, issue #18): hand-written kernels ptxas 13.5 accepts (tests/ptxas135.py),
results against numpy references built from the PTX ISA's definitions (5.5.3.4, 5.5.4,
9.7.9.25.4.2, 9.7.9.25.5.2)."""
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from ptxsim.errors import UnsupportedFeature
from ptxsim.machine.coverage import unexecutable
from ptxsim.machine.executor import launch
from ptxsim.machine.tensormap import TensorMap

sys.path.insert(0, str(Path(__file__).parents[1]))
import ptxas135  # noqa: E402

HEAD = ".version 8.6\n.target sm_100a\n.address_size 64\n"

# ---------------------------------------------------------------------- cp.reduce.async.bulk
# 32 threads stage 16 bytes each (512 bytes) in shared memory, fence the generic proxy, then
# thread 0 reduces them into global memory and waits for its bulk group.
REDUCE = HEAD + """
.visible .entry k(.param .u64 dst, .param .u64 src)
{{
    .reg .b32 %r<6>;
    .reg .b64 %rd<8>;
    .reg .pred %p<2>;
    .shared .align 128 .b8 buf[512];
    ld.param.u64 %rd1, [dst];
    ld.param.u64 %rd2, [src];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 16;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.v4.u32 {{%r2, %r3, %r4, %r5}}, [%rd4];
    mov.u32 %r0, buf;
    cvt.u64.u32 %rd5, %r0;
    add.s64 %rd6, %rd5, %rd3;
    cvt.u32.u64 %r0, %rd6;
    st.shared.v4.u32 [%r0], {{%r2, %r3, %r4, %r5}};
    fence.proxy.async.shared::cta;
    bar.sync 0;
    setp.eq.u32 %p1, %r1, 0;
    @!%p1 bra $L_end;
    cp.reduce.async.bulk.global.shared::cta.bulk_group.{op} [%rd1], [buf], 512;
    cp.async.bulk.commit_group;
    cp.async.bulk.wait_group 0;
$L_end:
    ret;
}}
"""

rng = np.random.default_rng(7)


def _f(dt, n):
    return (rng.standard_normal(n) * 4).astype(dt)


def _ref_add_f(dt):
    return lambda a, b: (a.astype(np.float64) + b.astype(np.float64)).astype(dt)


REDUCTIONS = {
    # op qualifiers: (numpy dtype, operands maker, reference)
    "add.u32": (np.uint32, lambda n: rng.integers(0, 2**32, n, np.uint64).astype(np.uint32),
                lambda a, b: a + b),
    "add.u64": (np.uint64, lambda n: rng.integers(0, 2**63, n, np.uint64), lambda a, b: a + b),
    "min.s32": (np.int32, lambda n: rng.integers(-2**31, 2**31, n).astype(np.int32), np.minimum),
    "max.u32": (np.uint32, lambda n: rng.integers(0, 2**32, n, np.uint64).astype(np.uint32),
                np.maximum),
    "max.s64": (np.int64, lambda n: rng.integers(-2**62, 2**62, n), np.maximum),
    "xor.b32": (np.uint32, lambda n: rng.integers(0, 2**32, n, np.uint64).astype(np.uint32),
                np.bitwise_xor),
    "and.b64": (np.uint64, lambda n: rng.integers(0, 2**63, n, np.uint64), np.bitwise_and),
    "inc.u32": (np.uint32, lambda n: rng.integers(0, 40, n).astype(np.uint32),
                lambda a, b: np.where(a >= b, 0, a + 1).astype(np.uint32)),
    "dec.u32": (np.uint32, lambda n: rng.integers(0, 40, n).astype(np.uint32),
                lambda a, b: np.where((a == 0) | (a > b), b, a - 1).astype(np.uint32)),
    "add.f32": (np.float32, lambda n: _f(np.float32, n), _ref_add_f(np.float32)),
    "add.f64": (np.float64, lambda n: _f(np.float64, n),
                lambda a, b: a + b),
    "add.noftz.f16": (np.float16, lambda n: _f(np.float16, n), _ref_add_f(np.float16)),
    "add.noftz.bf16": (ml_dtypes.bfloat16, lambda n: _f(ml_dtypes.bfloat16, n),
                       _ref_add_f(ml_dtypes.bfloat16)),
    "min.f16": (np.float16, lambda n: _f(np.float16, n), np.minimum),
    "max.bf16": (ml_dtypes.bfloat16, lambda n: _f(ml_dtypes.bfloat16, n), np.maximum),
}


@pytest.mark.parametrize("op", sorted(REDUCTIONS))
def test_bulk_reduce_into_global(op):
    dt, make, ref = REDUCTIONS[op]
    n = 512 // np.dtype(dt).itemsize
    old, new = make(n), make(n)
    dst = old.copy()
    ptx = REDUCE.format(op=op)
    launch(ptx, "k", 1, 32, args=[dst.view(np.uint8), new.view(np.uint8)])
    assert np.array_equal(dst.view(np.uint8), ref(old, new).astype(dt).view(np.uint8)), op


@pytest.mark.parametrize("op", sorted(REDUCTIONS))
def test_bulk_reduce_kernels_are_accepted_by_ptxas(op):
    ok, msg = ptxas135.verdict(REDUCE.format(op=op))
    assert ok, msg


CLUSTER_REDUCE = HEAD + """
.visible .entry k(.param .u64 out)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    .reg .pred %p<3>;
    .shared .align 128 .b8 buf[128];
    .shared .align 128 .b8 acc[128];
    .shared .align 8 .b64 bar;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %cluster_ctarank;
    mov.u32 %r3, buf;
    mov.u32 %r4, acc;
    shl.b32 %r5, %r1, 2;
    add.u32 %r6, %r3, %r5;
    add.u32 %r7, %r2, 10;
    st.shared.u32 [%r6], %r7;
    add.u32 %r6, %r4, %r5;
    st.shared.u32 [%r6], %r1;
    setp.eq.u32 %p1, %r1, 0;
    setp.eq.u32 %p2, %r2, 0;
    and.pred %p2, %p2, %p1;
    @%p2 mbarrier.init.shared::cta.b64 [bar], 1;
    @%p2 mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 64;
    fence.proxy.async.shared::cta;
    barrier.cluster.arrive;
    barrier.cluster.wait;
    setp.eq.u32 %p2, %r2, 1;
    and.pred %p2, %p2, %p1;
    mapa.shared::cluster.u32 %r5, %r4, 0;
    mov.u32 %r6, bar;
    mapa.shared::cluster.u32 %r7, %r6, 0;
    @%p2 cp.reduce.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes.add.u32 [%r5], [buf], 64, [%r7];
    setp.eq.u32 %p2, %r2, 0;
    @!%p2 bra $L_done;
    mov.u32 %r3, 0;
$L_wait:
    mbarrier.try_wait.parity.shared::cta.b64 %p1, [bar], %r3;
    @!%p1 bra $L_wait;
    setp.lt.u32 %p1, %r1, 16;
    @!%p1 bra $L_done;
    shl.b32 %r5, %r1, 2;
    add.u32 %r6, %r4, %r5;
    ld.shared.u32 %r7, [%r6];
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r7;
$L_done:
    barrier.cluster.arrive;
    barrier.cluster.wait;
    ret;
}
"""


def test_bulk_reduce_into_a_peer_ctas_shared_memory():
    out = np.zeros(16, np.uint32)
    launch(CLUSTER_REDUCE, "k", 2, 32, cluster=2, args=[out])
    # CTA 0's acc[i] = i, plus CTA 1's buf[i] = 11
    assert out.tolist() == [i + 11 for i in range(16)]
    ok, msg = ptxas135.verdict(CLUSTER_REDUCE)
    assert ok, msg


# ----------------------------------------------------------------- cp.reduce.async.bulk.tensor
TENSOR_REDUCE = HEAD + """
.visible .entry k(.param .align 64 .b8 tmap[128], .param .u64 src, .param .u32 c0,
                  .param .u32 c1)
{{
    .reg .b32 %r<10>;
    .reg .b64 %rd<8>;
    .reg .pred %p<2>;
    .shared .align 1024 .b8 buf[8192];
    ld.param.u64 %rd1, [src];
    ld.param.u32 %r6, [c0];
    ld.param.u32 %r7, [c1];
    mov.u32 %r1, %tid.x;
    mov.u32 %r0, buf;
$L_copy:
    mul.wide.u32 %rd3, %r1, 16;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.v4.u32 {{%r2, %r3, %r4, %r5}}, [%rd4];
    shl.b32 %r8, %r1, 4;
    add.u32 %r8, %r8, %r0;
    st.shared.v4.u32 [%r8], {{%r2, %r3, %r4, %r5}};
    add.u32 %r1, %r1, 128;
    setp.lt.u32 %p1, %r1, 512;
    @%p1 bra $L_copy;
    fence.proxy.async.shared::cta;
    bar.sync 0;
    mov.u32 %r1, %tid.x;
    setp.eq.u32 %p1, %r1, 0;
    @!%p1 bra $L_end;
    mov.u64 %rd5, tmap;
    cvta.param.u64 %rd5, %rd5;
    cp.reduce.async.bulk.tensor.2d.global.shared::cta.{op}.tile.bulk_group [%rd5, {{%r6, %r7}}], [buf];
    cp.async.bulk.commit_group;
    cp.async.bulk.wait_group 0;
$L_end:
    ret;
}}
"""


@pytest.mark.parametrize("op,coords", [("add", (32, 8)), ("add", (96, 60))])
def test_tensor_reduce_f32_tile_with_swizzle_and_clipping(op, coords):
    # 64 x 128 f32 tensor; box 32 x 32 (128-byte rows, SWIZZLE_128B: 8 KB in shared memory)
    g = _f(np.float32, 64 * 128).reshape(64, 128)
    dst = g.copy()
    tm = TensorMap.for_array(dst, (32, 32), swizzle="128B")
    src = rng.integers(0, 2**32, 2048, np.uint64).astype(np.uint32)
    src = np.where(np.isfinite(src.view(np.float32)), src, 0).astype(np.uint32)
    launch(TENSOR_REDUCE.format(op=op), "k", 1, 128, args=[tm, src, *coords],
           dynamic_shared=0)
    smem = src.view(np.uint8)
    # un-swizzle (128B: 16-byte chunk j of row r sits at chunk j ^ (r % 8)) -> the 32 x 32 box
    box = np.empty((32, 32), np.float32)
    for r in range(32):
        for j in range(8):
            box[r, 4 * j:4 * j + 4] = smem[r * 128 + 16 * (j ^ (r % 8)):][:16].view(np.float32)
    want = g.copy()
    c0, c1 = coords
    rows = slice(c1, min(c1 + 32, 64))
    cols = slice(c0, min(c0 + 32, 128))
    sub = box[: rows.stop - rows.start, : cols.stop - cols.start]
    want[rows, cols] = (want[rows, cols] + sub) if op == "add" else np.maximum(want[rows, cols],
                                                                               sub)
    assert np.array_equal(dst.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("op", ["min", "max"])
def test_tensor_min_max_of_a_float32_map_is_an_illegal_instruction(op):
    """The H200 faults on .min with a FLOAT32 map (tests/data/hardware/tma_modes/
    tensor_reduce_sm90.npz meta log); ptxas refuses .min.f32 / .max.f32 in the non-tensor form."""
    from ptxsim.errors import IllegalInstructionError
    g = np.zeros((64, 128), np.float32)
    tm = TensorMap.for_array(g, (32, 32), swizzle="128B")
    with pytest.raises(IllegalInstructionError, match="illegal-instruction"):
        launch(TENSOR_REDUCE.format(op=op), "k", 1, 128,
               args=[tm, np.zeros(2048, np.uint32), 0, 0], dynamic_shared=0)


def test_tensor_reduce_kernel_is_accepted_by_ptxas():
    for op in ("add", "max"):
        ok, msg = ptxas135.verdict(TENSOR_REDUCE.format(op=op))
        assert ok, msg


# ------------------------------------------------------------------ .tile::gather4 / scatter4
GATHER = HEAD + """
.visible .entry k(.param .align 64 .b8 tin[128], .param .align 64 .b8 tout[128],
                  .param .u64 out, .param .u32 col, .param .u32 r0, .param .u32 r1,
                  .param .u32 r2, .param .u32 r3)
{
    .reg .b32 %r<12>;
    .reg .b64 %rd<8>;
    .reg .pred %p<3>;
    .shared .align 1024 .b8 buf[1024];
    .shared .align 8 .b64 bar;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r2, [col];
    ld.param.u32 %r3, [r0];
    ld.param.u32 %r4, [r1];
    ld.param.u32 %r5, [r2];
    ld.param.u32 %r6, [r3];
    mov.u32 %r1, %tid.x;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 mbarrier.init.shared::cta.b64 [bar], 1;
    bar.sync 0;
    @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 512;
    mov.u64 %rd4, tin;
    cvta.param.u64 %rd4, %rd4;
    mov.u64 %rd5, tout;
    cvta.param.u64 %rd5, %rd5;
    @%p1 cp.async.bulk.tensor.2d.shared::cluster.global.tile::gather4.mbarrier::complete_tx::bytes [buf], [%rd4, {%r2, %r3, %r4, %r5, %r6}], [bar];
    mov.u32 %r7, 0;
$L_wait:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], %r7;
    @!%p2 bra $L_wait;
    mov.u32 %r8, buf;
    shl.b32 %r9, %r1, 4;
    add.u32 %r8, %r8, %r9;
    ld.shared.v4.u32 {%r7, %r9, %r10, %r11}, [%r8];
    mul.wide.u32 %rd2, %r1, 16;
    add.s64 %rd3, %rd1, %rd2;
    st.global.v4.u32 [%rd3], {%r7, %r9, %r10, %r11};
    @%p1 cp.async.bulk.tensor.2d.global.shared::cta.tile::scatter4.bulk_group [%rd5, {%r2, %r6, %r5, %r4, %r3}], [buf];
    @%p1 cp.async.bulk.commit_group;
    @%p1 cp.async.bulk.wait_group 0;
    ret;
}
"""


@pytest.mark.parametrize("swizzle", ["none", "128B"])
@pytest.mark.parametrize("col,rows", [(64, (5, 0, 33, 2)), (192, (70, 71, 7, 9))])
def test_gather4_and_scatter4(swizzle, col, rows):
    # 2-D bf16 tensor of 72 rows x 256 columns, box 64 x 1: four rows of 128 bytes
    a = rng.integers(0, 2**16, (72, 256), np.uint64).astype(np.uint16)
    back = np.full((72, 256), 0xDEAD, np.uint16)
    tin = TensorMap.for_array(a, (64, 1), swizzle=swizzle, dtype="bfloat16")
    tout = TensorMap.for_array(back, (64, 1), swizzle=swizzle, dtype="bfloat16")
    out = np.zeros(512, np.uint8)
    launch(GATHER, "k", 1, 32, args=[tin, tout, out, col, *rows])
    want = np.zeros((4, 64), np.uint16)
    for k, r in enumerate(rows):
        if r < 72:
            n = min(64, 256 - col)
            want[k, :n] = a[r, col:col + n]
    smem = out.reshape(4, 8, 16)
    if swizzle == "128B":                      # chunk j of row r at chunk j ^ (r % 8)
        smem = np.stack([smem[r][[j ^ r for j in range(8)]] for r in range(4)])
    assert np.array_equal(smem.reshape(4, 64 * 2).view(np.uint16), want)
    # scatter4 {col, r3, r2, r1, r0} wrote box row k to row rows[3 - k]
    exp = np.full((72, 256), 0xDEAD, np.uint16)
    for k, r in enumerate(rows[::-1]):
        if r < 72:
            n = min(64, 256 - col)
            exp[r, col:col + n] = want[k, :n]
    assert np.array_equal(back, exp)


def test_gather4_kernel_is_accepted_by_ptxas():
    ok, msg = ptxas135.verdict(GATHER)
    assert ok, msg


# ------------------------------------------------------------------------------------ .im2col
IM2COL = """.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .align 64 .b8 tmap[128], .param .u64 out, .param .u32 c,
                  .param .u32 w, .param .u32 h, .param .u32 n, .param .u32 ow, .param .u32 oh,
                  .param .u32 nbytes)
{
    .reg .b32 %r<16>;
    .reg .b16 %hs<2>;
    .reg .b64 %rd<6>;
    .reg .pred %p<3>;
    .shared .align 1024 .b8 buf[8192];
    .shared .align 8 .b64 bar;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r2, [c];
    ld.param.u32 %r3, [w];
    ld.param.u32 %r4, [h];
    ld.param.u32 %r5, [n];
    ld.param.u32 %r6, [ow];
    ld.param.u32 %r7, [oh];
    ld.param.u32 %r12, [nbytes];
    cvt.u16.u32 %hs0, %r6;
    cvt.u16.u32 %hs1, %r7;
    mov.u32 %r1, %tid.x;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 mbarrier.init.shared::cta.b64 [bar], 1;
    bar.sync 0;
    @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], %r12;
    mov.u64 %rd4, tmap;
    cvta.param.u64 %rd4, %rd4;
    @%p1 cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [buf], [%rd4, {%r2, %r3, %r4, %r5}], [bar], {%hs0, %hs1};
    mov.u32 %r8, 0;
$L_wait:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], %r8;
    @!%p2 bra $L_wait;
    mov.u32 %r9, %r1;
$L_copy:
    mov.u32 %r8, buf;
    shl.b32 %r10, %r9, 4;
    add.u32 %r8, %r8, %r10;
    ld.shared.v4.u32 {%r10, %r11, %r13, %r14}, [%r8];
    mul.wide.u32 %rd2, %r9, 16;
    add.s64 %rd3, %rd1, %rd2;
    st.global.v4.u32 [%rd3], {%r10, %r11, %r13, %r14};
    add.u32 %r9, %r9, 32;
    setp.lt.u32 %p2, %r9, 512;
    @%p2 bra $L_copy;
    ret;
}
"""


def _im2col_reference(x, lower, upper, strides, ppc, cpp, coords, offsets):
    """The PTX ISA 5.5.4 walk, written out with loops: x is (N, H, W, C)."""
    N, H, W, C = x.shape
    c0, w0, h0, n0 = coords
    sw, sh = strides
    ws = list(range(lower[0], W - 1 + upper[0] + 1, sw))
    hs = list(range(lower[1], H - 1 + upper[1] + 1, sh))
    walk = [(n, h, w) for n in range(10 * N) for h in hs for w in ws]
    start = walk.index((n0, h0, w0))
    out = np.zeros((ppc, cpp), x.dtype)
    for p in range(ppc):
        n, h, w = walk[start + p]
        h, w = h + offsets[1], w + offsets[0]
        for ch in range(cpp):
            cc = c0 + ch
            if 0 <= n < N and 0 <= h < H and 0 <= w < W and 0 <= cc < C:
                out[p, ch] = x[n, h, w, cc]
    return out


IM2COL_CASES = {
    # name: (lower (w, h), upper (w, h), strides (w, h), ppc, cpp, coords (c, w, h, n), offsets)
    "example1": ((-1, -1), (-1, -1), (1, 1), 64, 8, (8, 7, 4, 0), (0, 0)),
    "offsets": ((0, 0), (-2, -2), (1, 1), 64, 8, (0, 3, 4, 0), (2, 2)),
    "stride2": ((-1, -1), (-1, -1), (2, 2), 32, 16, (16, 5, 5, 0), (1, 1)),
    "next_n": ((0, 0), (0, 0), (1, 1), 128, 8, (0, 6, 13, 0), (0, 0)),
}


@pytest.mark.parametrize("case", sorted(IM2COL_CASES))
def test_im2col_load(case):
    lower, upper, strides, ppc, cpp, coords, offsets = IM2COL_CASES[case]
    x = rng.integers(1, 2**16, (3, 14, 9, 64), np.uint64).astype(np.uint16)     # N H W C
    tm = TensorMap.encode_im2col("float16", 4, x, (64, 9, 14, 3),
                                 (x.strides[2], x.strides[1], x.strides[0]), lower, upper, cpp,
                                 ppc, element_strides=(1, strides[0], strides[1], 1))
    out = np.zeros(8192, np.uint8)
    launch(IM2COL, "k", 1, 32, args=[tm, out, *coords, *offsets, ppc * cpp * 2],
           target="sm_90a")
    want = _im2col_reference(x, lower, upper, strides, ppc, cpp, coords, offsets)
    got = out[: ppc * cpp * 2].view(np.uint16).reshape(ppc, cpp)
    assert np.array_equal(got, want)


def test_im2col_kernel_is_accepted_by_ptxas():
    ok, msg = ptxas135.verdict(IM2COL, "sm_90a")
    assert ok, msg


# --------------------------------------------------------------------- what stays unmodelled
@pytest.mark.parametrize("mode", ["im2col::w", "im2col::w::128"])
def test_unmodelled_modes_are_named(mode):
    ptx = IM2COL.replace(".version 8.0\n.target sm_90a", ".version 8.6\n.target sm_100a") \
        .replace(".global.im2col.", f".global.{mode}.")
    ok, _ = ptxas135.verdict(ptx)
    gaps = unexecutable(ptx)
    assert [g.line for g in gaps] == [ptx.splitlines().index(next(
        l for l in ptx.splitlines() if mode in l)) + 1]
    assert f"the .{mode} load mode" in gaps[0].reason
    with pytest.raises(UnsupportedFeature, match=mode):
        launch(ptx, "k", 1, 32, args=[TensorMap.encode_im2col(
            "float16", 4, np.zeros((1, 4, 4, 64), np.uint16), (64, 4, 4, 1), (128, 512, 2048),
            (0, 0), (0, 0), 8, 16), np.zeros(8192, np.uint8), 0, 0, 0, 0, 0, 0, 256])


# ------------------------------------------------------------- PTX ISA 9.2: st.async .b128
ST_ASYNC_128 = """.version 9.2
.target sm_100a
.address_size 64
.visible .entry k(.param .u64 p)
{
.reg .b32 %r<4>; .reg .b64 %rd<4>; .reg .b128 %q<2>; .reg .pred %p<2>;
.shared .align 16 .b8 buf[256];
.shared .align 8 .b64 bar;
ld.param.u64 %rd1, [p];
mov.u32 %r1, buf;
mov.u32 %r2, bar;
mbarrier.init.shared::cta.b64 [bar], 1;
ld.global.v2.u64 {%rd2, %rd3}, [%rd1];
mov.b128 %q1, {%rd2, %rd3};
mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 16;
st.async.shared::cluster.mbarrier::complete_tx::bytes.b128 [%r1], %q1, [%r2];
mov.u32 %r3, 0;
$w:
mbarrier.try_wait.parity.shared::cta.b64 %p1, [bar], %r3;
@!%p1 bra $w;
ld.shared.v2.u64 {%rd2, %rd3}, [buf];
st.global.v2.u64 [%rd1+16], {%rd2, %rd3};
ret;
}
"""


def test_st_async_b128_stores_and_completes_its_16_bytes():
    ok, msg = ptxas135.verdict(ST_ASYNC_128)
    assert ok, msg
    a = np.array([0x1111, 0x2222, 0, 0], np.uint64)
    launch(ST_ASYNC_128, "k", 1, 1, args=[a])        # deadlocks without the complete-tx
    assert a.tolist() == [0x1111, 0x2222, 0x1111, 0x2222]


def test_ignore_oob_is_named_not_guessed():
    ptx = ST_ASYNC_128.replace(
        "st.async.shared::cluster.mbarrier::complete_tx::bytes.b128 [%r1], %q1, [%r2];",
        "cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes.ignore_oob [%r1], "
        "[%rd1], 16, 0, 0, [%r2];")
    ok, msg = ptxas135.verdict(ptx)
    assert ok, msg
    gaps = unexecutable(ptx)
    assert len(gaps) == 1 and ".ignore_oob" in gaps[0].reason
