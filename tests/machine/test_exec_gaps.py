"""Executor gaps closed (issues 8 and 10): stack instructions in kernels and in ptxsim.execute,
vprintf, and the smaller gaps. Kernels: tests/machine/data/exec/gaps.cu (nvcc 13.0 -arch=sm_100a
-ptx -> gaps.ptx) and stack_hand.ptx (hand-written, ptxas 13.0 accepts it). Expected values are
derived by hand in each test (stack model: H200-measured initial sp 0xFFFDC0, 1024-byte stack,
sp = (sp - size) & ~(align - 1), align = max(immAlign, 8); docs/hardware.md) or, for printf, the
text glibc's printf prints for the same format and arguments (recorded below)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ptxsim
from ptxsim.errors import StackOverflowError, UndefinedBehavior
from ptxsim.isa.stack import Stack

DATA = Path(__file__).parent / "data" / "exec"
GAPS = (DATA / "gaps.ptx").read_text()
HAND = (DATA / "stack_hand.ptx").read_text()
SP0 = 0xFFFDC0                                     # H200: initial stack pointer (no frame)


# ------------------------------------------------------------------------------------ stack
def test_nvcc_alloca_kernel():
    """nvcc's alloca(): a per-thread buffer of n + (t & 3) ints, filled and read back in a
    permuted order; the sums computed here in Python."""
    n, T = 5, 64
    out = np.zeros(T, np.int32)
    ptxsim.launch(GAPS, "vla", grid=2, block=T, args=[out, n])
    exp = []
    for t in range(T):
        m = n + (t & 3)
        buf = [t * 100 + i for i in range(m)]
        exp.append(sum(buf[(i * 7) % m] * (i + 1) for i in range(m)))
    assert out.tolist() == exp


def test_nvcc_alloca_beyond_the_stack_overflows():
    """n = 300 ints (1200 bytes) do not fit in the 1024-byte stack: the H200 faults (the store
    below the stack; docs/hardware.md), ptxsim names the overflow at the alloca."""
    out = np.zeros(32, np.int32)
    with pytest.raises(StackOverflowError):
        ptxsim.launch(GAPS, "vla", grid=1, block=32, args=[out, 300])


def test_stacksave_alloca_stackrestore_loop():
    """Four iterations of save / alloca(16(i+1), 32) / st / ld / restore: the memory is reused
    (no false use-after-restore), the pointer returns to the first save, and the last alloca
    (64 bytes, align 32) is (0xFFFDC0 - 64) & ~31 = 0xFFFD80."""
    out = np.zeros(96, np.uint32)
    ptxsim.launch(HAND, "loop", grid=1, block=32, args=[out])
    t = np.arange(32)
    assert out[:32].tolist() == (40 * t + 16).tolist()   # sum_i (10t + i) + (i + 1)
    assert out[32:64].tolist() == [0] * 32
    assert out[64:].tolist() == [0xFFFD80] * 32


def test_alloca_u32_form():
    """alloca.u32 of 8 bytes aligned 64: (0xFFFDC0 - 8) & ~63 = 0xFFFD80; stacksave.u32 reads it."""
    out = np.zeros(64, np.uint32)
    ptxsim.launch(HAND, "u32form", grid=1, block=32, args=[out])
    assert out.tolist() == [0xFFFD80] * 64


def test_kernel_overflow_names_the_thread():
    with pytest.raises(StackOverflowError) as e:
        ptxsim.launch(HAND, "overflow", grid=1, block=32, args=[np.zeros(1, np.uint32)])
    assert e.value.thread == 5


def test_kernel_use_after_restore_is_undefined():
    with pytest.raises(UndefinedBehavior, match="released by stackrestore"):
        ptxsim.launch(HAND, "stale", grid=1, block=32, args=[np.zeros(1, np.uint32)])


def test_execute_shares_a_stack_across_calls():
    """ptxsim.execute(..., state=Stack): alloca, st.local, ld.local and stacksave act on the
    caller's stack. Thread t allocates t + 1 bytes aligned 16: 0xFFFDC0 - (t + 1) rounds down to
    0xFFFDB0 for t < 16 and 0xFFFDA0 for t >= 16."""
    st = Stack(32)
    size = np.arange(1, 33, dtype=np.uint64)
    p = ptxsim.execute("alloca.u64 %rd1, %rd2, 16;", {"%rd2": size}, state=st)["%rd1"]
    assert p.tolist() == [0xFFFDB0] * 16 + [0xFFFDA0] * 16
    vals = (np.arange(32) * 3 + 7).astype(np.uint32)
    ptxsim.execute("st.local.u32 [%rd1], %r1;", {"%rd1": p, "%r1": vals}, state=st)
    back = ptxsim.execute("ld.local.u32 %r2, [%rd1];", {"%rd1": p}, state=st)["%r2"]
    assert back.tolist() == vals.tolist()
    sp = ptxsim.execute("stacksave.u32 %r3;", {}, warps=1, state=st)["%r3"]
    assert sp.tolist() == p.tolist()
    ptxsim.execute("stackrestore.u64 %rd4;", {"%rd4": np.full(32, SP0, np.uint64)}, state=st)
    with pytest.raises(UndefinedBehavior, match="released by stackrestore"):
        ptxsim.execute("ld.local.u32 %r2, [%rd1];", {"%rd1": p}, state=st)


def test_execute_without_state_uses_a_fresh_stack():
    """alloca(8) with the default alignment 8 on a fresh stack: 0xFFFDC0 - 8 = 0xFFFDB8."""
    r = ptxsim.execute("alloca.u64 %rd1, 8;", {}, warps=1)["%rd1"]
    assert r.tolist() == [0xFFFDB8] * 32


# ---------------------------------------------------------------------------------- vprintf
# glibc 2.x printf of the same formats and arguments (host C program, recorded here)
GLIBC = """t=0 b=0 x=0.000000 h=0 s=ok
[0   | 1.50|1099511627776|A|%|1.500000e+10|0.5|0|0000BEEF]
t=1 b=0 x=1.500000 h=ff s=ok
[1   | 1.50|1099511627777|B|%|1.500000e+10|0.5|4294967295|0000BEEF]
t=2 b=0 x=3.000000 h=1fe s=ok
[2   | 1.50|1099511627778|C|%|1.500000e+10|0.5|4294967294|0000BEEF]
""".splitlines(keepends=True)


def test_nvcc_printf_kernel(capsys):
    out = np.zeros(6, np.int32)
    run = ptxsim.launch(GAPS, "pf", grid=1, block=3, args=[out, np.float32(1.5), 1 << 40])
    first, second = GLIBC[0::2], GLIBC[1::2]
    # one call at a time for all threads: lanes in order within each call
    assert [p.text for p in run.printf] == first + second
    assert capsys.readouterr().out == "".join(first + second)
    assert [p.tid for p in run.printf[:3]] == [(0, 0, 0), (1, 0, 0), (2, 0, 0)]
    # printf returns the number of arguments parsed: 5 and 8
    assert out.tolist() == [5, 8] * 3


def test_printf_names_the_block(capsys):
    out = np.zeros(8, np.int32)
    run = ptxsim.launch(GAPS, "pf", grid=2, block=1, args=[out, np.float32(2.0), 0])
    lines = [p.text for p in run.printf if p.text.startswith("t=")]
    assert lines == ["t=0 b=0 x=0.000000 h=0 s=ok\n", "t=0 b=1 x=0.000000 h=0 s=ok\n"]
    assert [p.ctaid for p in run.printf if p.text.startswith("t=")] == [(0, 0, 0), (1, 0, 0)]
    capsys.readouterr()


# ---------------------------------------------------------------------------------- bar.red
def test_bar_red_popc_and_or():
    """bar.red.popc / barrier.red.and / bar.red.or, and barrier.cta.red.popc.aligned with a
    thread count and a negated predicate (tests/machine/data/exec/bar_red.ptx): over a CTA of T
    threads, popc(tid odd) = T // 2, and(tid < 1000) = 1, or(tid == 5) = 1, popc(!(tid < 3))
    = T - 3; every thread of both CTAs receives its CTA's result."""
    ptx = (DATA / "bar_red.ptx").read_text()
    for T in (64, 100):                       # 100: the last warp is partial
        out = np.zeros(4 * T, np.uint32)
        ptxsim.launch(ptx, "red", grid=2, block=T, args=[out])
        assert out[:T].tolist() == [T // 2] * T
        assert out[T:2 * T].tolist() == [1] * T
        assert out[2 * T:3 * T].tolist() == [1] * T
        assert out[3 * T:].tolist() == [T - 3] * T


def test_bar_red_reduces_per_phase():
    """Two phases on one barrier: popc over a predicate true in 32 threads, then in 1 thread."""
    ptx = """.version 8.7
.target sm_100a
.address_size 64
.visible .entry k(.param .u64 out)
{
	.reg .b32 %r<5>;
	.reg .b64 %rd<3>;
	.reg .pred %p<3>;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %tid.x;
	setp.lt.u32 %p1, %r1, 32;
	bar.red.popc.u32 %r2, 0, %p1;
	setp.eq.u32 %p2, %r1, 7;
	bar.red.popc.u32 %r3, 0, %p2;
	mad.lo.u32 %r4, %r2, 1000, %r3;
	mul.wide.u32 %rd2, %r1, 4;
	add.u64 %rd2, %rd1, %rd2;
	st.global.u32 [%rd2], %r4;
	ret;
}
"""
    out = np.zeros(96, np.uint32)
    ptxsim.launch(ptx, "k", grid=1, block=96, args=[out])
    assert out.tolist() == [32 * 1000 + 1] * 96


# ---------------------------------------------------------------- vector and float atomics
def test_vector_half_min_max_f32_add_bf16x2_max():
    """atom.global.v2.f16.min/max.noftz, red.global.v4.f32.add, atom.global.v2.bf16x2.max.noftz
    from 64 threads onto one location each (tests/machine/data/exec/atom_vec.ptx). Expected:
    numpy fmin / fmax (PTX min / max: a NaN operand yields the other one) and float32 sums in
    thread order (ptxsim applies same-address atomics in thread order; docs/executor.md)."""
    import ml_dtypes
    ptx = (DATA / "atom_vec.ptx").read_text()
    T = 64
    rng = np.random.default_rng(7)
    x = rng.uniform(-100, 100, (T, 2)).astype(np.float16)
    x[5, 0] = np.nan                                   # ignored by min / max
    acc = np.array([np.inf, np.inf, -np.inf, -np.inf], np.float16)
    old = np.zeros((T, 4), np.float16)
    f = rng.uniform(-1, 1, (T, 4)).astype(np.float32)
    facc = np.zeros(4, np.float32)
    p = rng.uniform(-50, 50, (T, 2)).astype(ml_dtypes.bfloat16)
    bacc = np.full(4, -np.inf, ml_dtypes.bfloat16)
    ptxsim.launch(ptx, "atomv", grid=1, block=T,
                  args=[x.view(np.uint16), acc.view(np.uint16), old.view(np.uint16), f, facc,
                        p.view(np.uint16), bacc.view(np.uint16)])
    xs = x.astype(np.float64)
    assert acc[0] == np.fmin.reduce(xs[:, 0]) and acc[1] == np.fmin.reduce(xs[:, 1])
    assert acc[2] == np.fmax.reduce(xs[:, 0]) and acc[3] == np.fmax.reduce(xs[:, 1])
    # old values: the running min / max before each thread (thread order)
    run_min = np.fmin.accumulate(np.vstack([[np.inf, np.inf], xs[:-1]]), axis=0)
    run_max = np.fmax.accumulate(np.vstack([[-np.inf, -np.inf], xs[:-1]]), axis=0)
    assert (old[:, :2].astype(np.float64) == run_min).all()
    assert (old[:, 2:].astype(np.float64) == run_max).all()
    s = np.zeros(4, np.float32)
    for t in range(T):
        s = (s + f[t]).astype(np.float32)
    assert facc.view(np.uint32).tolist() == s.view(np.uint32).tolist()
    ps = p.astype(np.float64)
    assert bacc.astype(np.float64).tolist() == [ps[:, 0].max(), ps[:, 1].max()] * 2


# -------------------------------------------------------------------------------- recursion
def _fib(n):
    return n if n < 2 else _fib(n - 1) + _fib(n - 2)


def _ref_even(n, acc, even=True):
    if n == 0:
        return acc
    return _ref_even(n - 1, acc + (2 if even else 3) * n, not even)


def test_nvcc_recursive_and_mutually_recursive_calls():
    """nvcc keeps the self-calls of a __noinline__ fib and the even_sum / odd_sum pair
    (gaps.cu); the threads recurse to different depths at once. Expected: the same recursion
    in Python."""
    out = np.zeros(64, np.int32)
    ptxsim.launch(GAPS, "recur", grid=1, block=32, args=[out])
    assert out[:32].tolist() == [_fib(t % 12) for t in range(32)]
    assert out[32:].tolist() == [_ref_even(t % 9, t) for t in range(32)]


# ------------------------------------------------------------------------------ .b128 atomics
def test_atom_b128_exch_and_cas_in_thread_order():
    """atom.global.exch.b128 / atom.global.cas.b128 (atom128.ptx), 32 threads on one 16-byte
    slot each, applied in thread order: the exchange chain hands thread t the value of thread
    t - 1 (thread 0 the initial one); every CAS finds its predecessor's value and succeeds."""
    ptx = (DATA / "atom128.ptx").read_text()
    M = (1 << 64) - 1
    slot = np.array([7, 8, M, 999], np.uint64)
    old = np.zeros((32, 4), np.uint64)
    ptxsim.launch(ptx, "a128", grid=1, block=32, args=[slot, old])
    assert slot.tolist() == [31, 1031, 31, 1031]
    exp = [[7, 8, M, 999]] + [[t - 1, 999 + t, t - 1, 999 + t] for t in range(1, 32)]
    assert old.tolist() == exp


def test_atom_b128_cas_failure_keeps_memory():
    """A CAS whose compare value differs returns the old value and stores nothing."""
    ptx = (DATA / "atom128.ptx").read_text()
    slot = np.array([0, 0, 5, 5], np.uint64)           # slot[1] matches no thread's compare
    old = np.zeros((32, 4), np.uint64)
    ptxsim.launch(ptx, "a128", grid=1, block=32, args=[slot, old])
    assert slot[2:].tolist() == [5, 5]
    assert old[:, 2:].tolist() == [[5, 5]] * 32


# ------------------------------------------------------------------ tensormap.replace .field3
def _tm_kernel(replace_lines: str) -> str:
    """The kernel of tests/machine/test_exec_tensormap.py with other replace lines: copy the
    grid-constant map to scratch, replace, TMA-load the 16 x 8 f32 box at (0, 0), write it out."""
    copy = "\n".join(f"    ld.param.v4.b32 {{%r3, %r4, %r5, %r6}}, [tmap+{16 * k}];\n"
                     f"    st.global.v4.b32 [%rd1+{16 * k}], {{%r3, %r4, %r5, %r6}};"
                     for k in range(8))
    out = "\n".join(f"    ld.shared.v4.b32 {{%r3, %r4, %r5, %r6}}, [tile+{16 * k}];\n"
                    f"    st.global.v4.b32 [%rd5+{16 * k}], {{%r3, %r4, %r5, %r6}};"
                    for k in range(32))
    return f""".version 8.8
.target sm_100a
.address_size 64
.visible .entry tm_replace(.param .align 64 .b8 tmap[128], .param .u64 scratch, .param .u64 out)
{{
    .reg .b32 %r<12>;
    .reg .b64 %rd<8>;
    .reg .pred %p<4>;
    .shared .align 128 .b8 tile[512];
    .shared .align 8 .b64 bar;
    mov.u32 %r1, %tid.x;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra $L_done;
    ld.param.u64 %rd1, [scratch];
    ld.param.u64 %rd5, [out];
{copy}
{replace_lines}
    fence.proxy.tensormap::generic.release.gpu;
    mbarrier.init.shared::cta.b64 [bar], 1;
    mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 512;
    mov.u32 %r7, 0;
    cp.async.bulk.tensor.2d.shared::cta.global.mbarrier::complete_tx::bytes [tile], [%rd1, {{%r7, %r7}}], [bar];
$L_wait:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0;
    @!%p2 bra $L_wait;
{out}
$L_done:
    ret;
}}
"""


def _run_tm(lines, first):
    from ptxsim.machine.tensormap import TensorMap
    tm = TensorMap.for_array(first, (16, 8))
    scratch = np.zeros(128, np.uint8)
    out = np.zeros((8, 16), np.uint32)
    ptxsim.launch(_tm_kernel(lines), "tm_replace", 1, 32, args=[tm, scratch, out])
    return TensorMap.from_bytes(scratch.tobytes()), out


def test_tensormap_replace_fill_mode_nan():
    """fill_mode 1 (OOB NaN fill; Triton lowers fill_mode = 1 to this code) on a 4-row tensor
    read with an 8-row box: rows 4..7 are filled with the H200-measured f32 NaN 0x7FF77FF7
    (docs/executor.md); with the default fill (code 0) they are zero."""
    first = np.arange(64, dtype=np.float32).reshape(4, 16)
    tm, out = _run_tm("    tensormap.replace.tile.fill_mode.global.b1024.b32 [%rd1], 1;", first)
    assert tm.oob_fill == "nan_request_zero_fma"
    assert (out[:4] == first.view(np.uint32)).all()
    assert (out[4:] == 0x7FF77FF7).all()
    _, out0 = _run_tm("    tensormap.replace.tile.fill_mode.global.b1024.b32 [%rd1], 0;", first)
    assert (out0[4:] == 0).all()


def test_tensormap_replace_elemtype_codes():
    """elemtype codes as the H200 writes them (hardware/tensormap replace records): 2 = u32,
    3 = s32 — same 4-byte elements, so the load is unchanged — 8 = f32.ftz, 9 = f64, 10 = bf16
    (not cuda.h's order), 11 / 12 = tf32 / tf32.ftz (the f32 / f32.ftz code plus the tf32
    bit). The bits themselves are checked against the records in tests/cuda."""
    first = np.arange(128, dtype=np.float32).reshape(8, 16)
    tm, out = _run_tm("    tensormap.replace.tile.elemtype.global.b1024.b32 [%rd1], 3;", first)
    assert tm.dtype == "int32" and (out == first.view(np.uint32)).all()
    for code, name in ((8, "float32_ftz"), (11, "tfloat32"), (12, "tfloat32_ftz")):
        line = f"    tensormap.replace.tile.elemtype.global.b1024.b32 [%rd1], {code};"
        tm, out = _run_tm(line, first)              # 4-byte elements: the same box loads
        assert tm.dtype == name and (out == first.view(np.uint32)).all()


@pytest.mark.parametrize("line, what", [
    ("tensormap.replace.tile.swizzle_mode.global.b1024.b32 [%rd1], 4;", "swizzle_mode code 4"),
])
def test_tensormap_replace_unknown_codes_are_named(line, what):
    from ptxsim.errors import UnsupportedFeature
    with pytest.raises(UnsupportedFeature, match=what):
        _run_tm("    " + line, np.zeros((8, 16), np.float32))
