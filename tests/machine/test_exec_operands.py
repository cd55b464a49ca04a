"""The executor's compiled operand path (docs/executor.md "Performance", fourth pass):
`Wave.reader` / `writer` / `addresser` decide an operand's kind once per instruction and must
give exactly `Wave.read` / `write` / `addr`; `Memory.load_direct` / `store_direct` exactly
`load` / `store` (or decline); a base instruction calls its fast kernel without the dtype guard
only when every operand dtype is the kernel's. Expected values: the general functions (a
separate code path), hand-derived bits, and whole kernels run with every fast path switched off.
"""
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from ptxsim.machine.handlers import arith
from ptxsim.machine.executor import Launch, Wave, launch
from ptxsim.machine.memory import GlobalMemory, Memory
from ptxsim.ptx.instruction import Address, Immediate, Label, Register, SpecialRegister

KERNEL = """
.version 8.7
.target sm_100a
.address_size 64
.global .align 8 .b64 gsym[4];
.visible .entry k(.param .u64 out)
{
    .reg .b16 %h<3>;
    .reg .b32 %r<3>;
    .reg .b64 %rd<3>;
    .reg .pred %p<3>;
    .reg .f32 %f<2>;
    ret;
}
"""


def _wave(n_threads=64):
    run = Launch(KERNEL, "k", 1, n_threads, args=[np.zeros(4, np.uint64)])
    w = Wave(run, np.array([0]))
    rng = np.random.default_rng(7)
    for name in ("%h1", "%r1", "%r2", "%rd1", "%p1", "%f1"):
        r = w.reg(name)
        r[:] = (rng.integers(0, 2, r.size) if r.dtype == np.bool_ else
                rng.integers(0, np.iinfo(r.dtype).max, r.size, dtype=r.dtype, endpoint=True))
    return w


def _index_sets(w):
    span = np.arange(w.N)
    span.setflags(write=False)
    sub = np.array([1, 5, 6, 40, 63])
    return span, sub


def _as_step(w, idx):
    """Make idx the current step's index array (as Wave.run does)."""
    if int(idx[-1]) - int(idx[0]) + 1 == idx.size:
        w._span_idx, w._span = idx, slice(int(idx[0]), int(idx[-1]) + 1)
    else:
        w._span_idx = None


OPERANDS = [
    (Register("%r1"), 32, None), (Register("%h1"), 16, None), (Register("%rd1"), 64, None),
    (Register("%p1"), 1, None), (Register("%p1", negated=True), 1, None),
    (Register("%f1"), 32, ".f32"), (Register("%r0"), 32, None),           # never written
    (Register("gsym"), 64, None),                                          # a symbol's address
    (SpecialRegister("%tid", ".x"), 32, None), (SpecialRegister("%ctaid", ".x"), 32, None),
    (Immediate(-1, "-1"), 16, None), (Immediate(5, "5"), 32, None),
    (Immediate(7, "7"), 1, None), (Immediate(2 ** 40 + 3, str(2 ** 40 + 3)), 64, None),
    (Immediate(1.5, "1.5", is_float=True), 16, ".f16"),
    (Immediate(1.0, "0f3F800000", is_float=True, raw=0x3F800000, width=32), 32, ".f32"),
    (Immediate(1.0, "0f3F800000", is_float=True, raw=0x3F800000, width=32), 64, ".f64"),
    (Label("gsym", 8), 64, None),
]


@pytest.mark.parametrize("op,width,ftype", OPERANDS, ids=[f"{o}/{w}" for o, w, _ in OPERANDS])
def test_reader_is_read(op, width, ftype):
    w = _wave()
    rd, dt = w.reader(op, width, ftype)
    for idx in _index_sets(w):
        _as_step(w, idx)
        got, want = rd(idx), w.read(op, idx, width, ftype)
        assert got.dtype == want.dtype and (dt is None or got.dtype == dt)
        np.testing.assert_array_equal(got, want)
        got[:] = 0                                  # a fresh array: the register is untouched
        np.testing.assert_array_equal(rd(idx), want)


def test_immediate_bits_by_hand():
    w = _wave()
    idx = np.arange(3)
    cases = [(Immediate(-1, "-1"), 16, None, np.uint16, 0xFFFF),
             (Immediate(1.5, "1.5", is_float=True), 16, ".f16", np.uint16, 0x3E00),  # f16 1.5
             (Immediate(1.5, "1.5", is_float=True), 32, ".f32", np.uint32, 0x3FC00000),
             (Immediate(1, "1"), 1, None, np.uint64, 1)]                  # width 1: uint64
    for op, width, ftype, dt, bits in cases:
        got = w.reader(op, width, ftype)[0](idx)
        assert got.dtype == dt and got.tolist() == [bits] * 3


def test_immediate_arrays_are_fresh_for_every_size():
    w = _wave()
    rd, _ = w.reader(Immediate(9, "9"), 32)
    a = rd(np.arange(4))
    a[:] = 1
    assert rd(np.arange(4)).tolist() == [9] * 4           # the cached template is not handed out
    assert rd(np.arange(7)).tolist() == [9] * 7


def test_reader_sees_a_replaced_register_and_creates_none_early():
    w = _wave()
    rd, _ = w.reader(Register("%r2"), 32)
    wr = w.writer(Register("%rd2"))
    assert "%rd2" not in w.regs                         # compiling creates no register
    w.regs["%r2"] = np.arange(w.N, dtype=np.uint32)      # as ptxsim.execute installs the caller's
    assert rd(np.array([3, 9])).tolist() == [3, 9]
    wr(np.array([2]), np.array([11], np.uint64))
    assert w.regs["%rd2"][2] == 11


def test_clock_is_read_at_each_step():
    w = _wave()
    rd, dt = w.reader(SpecialRegister("%clock64"), 64)
    assert dt is None
    w.launch.steps = 5
    assert rd(np.arange(2)).tolist() == [5, 5]
    w.launch.steps = 9
    assert rd(np.arange(2)).tolist() == [9, 9]


VALUES = [np.array([3, 0, 70000, 1], np.uint32), np.array([-1, 2, -300, 0], np.int64),
          np.array([True, False, True, False]), np.array([2 ** 40, 5, 1, 0], np.uint64),
          np.array([1, 2, 3, 4], np.uint16)]


@pytest.mark.parametrize("name", ["%h1", "%r1", "%rd1", "%p1"])
@pytest.mark.parametrize("k", range(len(VALUES)))
def test_writer_is_write(name, k):
    a, b = _wave(), _wave()
    idx = np.array([0, 2, 5, 63])
    a.writer(Register(name))(idx, VALUES[k])
    b.write(Register(name), idx, VALUES[k])
    np.testing.assert_array_equal(a.reg(name), b.reg(name))


def test_writer_by_hand_and_sink():
    w = _wave()
    w.writer(Register("%h1"))(np.array([0, 1]), np.array([-1, 0x12345], np.int64))
    assert w.reg("%h1")[:2].tolist() == [0xFFFF, 0x2345]        # low 16 bits
    w.writer(Register("%p1"))(np.array([0, 1]), np.array([0, 7], np.uint32))
    assert w.reg("%p1")[:2].tolist() == [False, True]
    w.writer(Register("_"))(np.array([0]), np.array([1]))          # the sink: nothing


@pytest.mark.parametrize("op", [Address("%rd1", 8), Address("%rd1", -8), Address(None, 256),
                                Address("gsym", 16), Address("%r1", 4)])
def test_addresser_is_addr(op):
    w = _wave()
    f = w.addresser(op)
    for idx in _index_sets(w):
        _as_step(w, idx)
        np.testing.assert_array_equal(f(idx), w.addr(op, idx))


def test_fast_kernel_dtypes():
    """add.s32 / setp.lt.u32 work on 32-bit containers (9.7.1, 9.7.4): the kernel's operand
    dtypes are two uint32; a form without a fast kernel has none."""
    from ptxsim.isa import base
    assert arith._kernel_dtypes("add.s32", base.semantics("add.s32")) == \
        (np.dtype(np.uint32),) * 2
    assert arith._kernel_dtypes("add.s64", base.semantics("add.s64")) == \
        (np.dtype(np.uint64),) * 2
    assert arith._kernel_dtypes("bfe.u32", base.semantics("bfe.u32")) is None


# ------------------------------------------------------------------------- memory direct path
def _memory(*arrays, n_ctas=2, threads=64, dynamic_shared=4096):
    g = GlobalMemory()
    bases = [g.map(a) for a in arrays]
    return Memory(n_ctas=n_ctas, threads_per_cta=threads, dynamic_shared=dynamic_shared,
                  global_memory=g), bases


@pytest.mark.parametrize("size,vec", [(1, 1), (2, 1), (2, 4), (4, 1), (4, 2), (4, 4), (8, 1),
                                      (8, 2), (4, 8)])
def test_direct_global_load_store_are_load_store(size, vec):
    rng = np.random.default_rng(size + 10 * vec)
    buf = rng.integers(0, 256, 4096, dtype=np.uint8)
    mem, (base,) = _memory(buf)
    n = 96
    thread = np.arange(n)
    addr = base + (rng.integers(0, 4096 // (size * vec), n) * size * vec).astype(np.uint64)
    assert Memory.direct_ok("global", size, vec)
    got = mem.load_direct("global", addr, size, vec, thread)
    np.testing.assert_array_equal(got, mem.load("global", addr, size, vec=vec, thread=thread))
    # stores with repeated addresses: the byte image equals `store`'s (last thread wins)
    vals = rng.integers(0, 2 ** (8 * size), (n, vec), dtype=f"u{size}", endpoint=False)
    addr[5] = addr[9] = addr[40]
    ref = buf.copy()
    mem_ref, (base_ref,) = _memory(ref)
    assert mem.store_direct("global", addr, vals, size, vec, thread)
    mem_ref.store("global", addr - np.uint64(base) + np.uint64(base_ref), vals, size, vec=vec,
                  thread=thread)
    np.testing.assert_array_equal(buf, ref)


def test_direct_global_declines_what_load_must_decide():
    a, b = np.zeros(64, np.uint8), np.zeros(64, np.uint8)
    mem, (ba, bb) = _memory(a, b)
    t = np.arange(2)
    assert mem.load_direct("global", np.array([ba + 4, ba + 2], np.uint64), 4, 1, t) is None
    assert mem.load_direct("global", np.array([ba, bb], np.uint64), 4, 1, t) is None
    assert mem.load_direct("global", np.array([ba, ba + 64], np.uint64), 4, 1, t) is None
    assert not mem.store_direct("global", np.array([ba + 62], np.uint64),
                                np.zeros((1, 1), np.uint32), 4, 1, t[:1])
    assert not Memory.direct_ok("generic", 4, 1) and not Memory.direct_ok("shared::cta", 16, 1)
    assert not Memory.direct_ok("shared::cta", 8, 4)         # 256-bit: .global only (9.7.9.8)


@pytest.mark.parametrize("dynamic_shared", [4096, 4094])
def test_direct_shared_is_load_store(dynamic_shared):
    mem, _ = _memory(np.zeros(4, np.uint8), n_ctas=2, threads=64, dynamic_shared=dynamic_shared)
    rng = np.random.default_rng(3)
    mem.shared.data[:] = rng.integers(0, 256, mem.shared.data.shape, dtype=np.uint8)
    thread = np.array([0, 3, 63, 64, 100, 127])                   # both CTAs
    addr = (rng.integers(0, 1000, thread.size) * 4).astype(np.uint64)
    got = mem.load_direct("shared::cta", addr, 4, 1, thread)
    want = mem.load("shared::cta", addr, 4, thread=thread)
    if dynamic_shared % 4:
        assert got is None                                       # the byte path decides
    else:
        np.testing.assert_array_equal(got, want)
        # by hand: CTA c's bytes are row c of shared memory
        row = mem.shared.data[thread // 64]
        words = [int.from_bytes(bytes(r[a:a + 4]), "little") for r, a in zip(row, addr)]
        assert got[:, 0].tolist() == words
    assert mem.load_direct("shared::cta", np.array([4096], np.uint64), 4, 1,
                           np.array([0])) is None                  # past the end: `load` raises


# ------------------------------------------------------- whole kernels, fast paths switched off
def _general_only(monkeypatch):
    """Every compiled operand through Wave.read / write / addr, memory through load / store,
    base instructions through the guarded semantics."""
    monkeypatch.setattr(Wave, "reader", lambda self, op, width=32, ftype=None: (
        lambda idx: self.read(op, idx, width, ftype), None))
    monkeypatch.setattr(Wave, "writer", lambda self, op: (
        lambda idx, v: self.write(op, idx, v)))
    monkeypatch.setattr(Wave, "addresser", lambda self, op: (lambda idx: self.addr(op, idx)))
    monkeypatch.setattr(Memory, "direct_ok", staticmethod(lambda space, size, vec: False))
    monkeypatch.setattr(arith, "_kernel_dtypes", lambda mnemonic, fn: None)


TRITON = Path(__file__).parents[1] / "data" / "ptx" / "triton" / "matmul_bf16.ptx"


def _triton(n=256):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
    c = np.zeros((n, n), np.float32)
    run = launch(TRITON.read_text(), "matmul_kernel", (n // 128, n // 128), 128,
                 args=[a.view(np.uint16), b.view(np.uint16), c, n, n, n, n, 1, n, 1, n, 1,
                       np.zeros(64, np.uint8), np.zeros(64, np.uint8)],
                 dynamic_shared=160 * 1024)
    return c.view(np.uint32).copy(), run.steps


def test_triton_matmul_bits_equal_the_general_path(monkeypatch):
    fast, steps = _triton()
    _general_only(monkeypatch)
    slow, steps_slow = _triton()
    assert steps == steps_slow
    np.testing.assert_array_equal(fast, slow)


BASIC = Path(__file__).parent / "data" / "exec" / "basic.ptx"


def test_basic_kernels_equal_the_general_path(monkeypatch):
    """Every kernel of basic.ptx whose parameters are (out pointer, ...) scalars: run with random
    input buffers both ways."""
    from ptxsim.ptx import parse_module
    mod = parse_module(BASIC.read_text())

    def run_all():
        outs = {}
        for f in mod.functions:
            if not f.is_entry:
                continue
            args = []
            rng = np.random.default_rng(len(f.name))
            for p in f.params:
                if p.type in (".u64", ".b64") or ".ptr" in p.attrs:
                    args.append(rng.integers(0, 2 ** 16, 4096, dtype=np.uint32))
                else:
                    args.append(int(rng.integers(1, 8)))
            try:
                launch(mod, f.name, 2, 64, args=args)
            except Exception as e:                          # the same error both ways
                outs[f.name] = type(e).__name__
                continue
            outs[f.name] = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        return outs

    fast = run_all()
    _general_only(monkeypatch)
    slow = run_all()
    assert fast.keys() == slow.keys()
    assert sum(not isinstance(v, str) for v in fast.values()) >= 4      # ran to the end
    for k in fast:
        if isinstance(fast[k], str):
            assert fast[k] == slow[k]
        else:
            for x, y in zip(fast[k], slow[k]):
                np.testing.assert_array_equal(x, y)


# ------------------------------------------------- asynchronous proxy: per-issuer completion
def test_wait_and_wait_group_complete_what_the_queue_scan_completes():
    """`wait` / `wait_group` find their operations through each issuer's own list and the
    per-thread group arrays; a reference proxy with per-thread Python lists of groups and the
    original whole-queue scan (`_complete_where`, one waited-for operation at a time, in issue
    order) must complete the same operations in the same order, over random programs of 4
    issuers (with operations issued for two threads at once, as handlers.tma's cp.async issues
    one operation for all executing threads)."""
    from collections import deque

    from ptxsim.machine.async_proxy import AsyncProxy

    class Scan(AsyncProxy):
        def __init__(self):
            super().__init__()
            self.unc, self.com = {}, {}

        def issue(self, issuer, kind, perform=None, *, threads=None, **kw):
            op = super().issue(issuer, kind, perform, threads=threads, **kw)
            if kind == "bulk":
                for t in ([issuer] if threads is None else list(threads)):
                    self.unc.setdefault(t, []).append(op)
            return op

        def wait(self, issuer, kind):
            return self._complete_where(lambda op: op.issuer == issuer and op.kind == kind)

        def commit_group(self, issuer, family):
            self.com.setdefault(issuer, deque()).append(self.unc.pop(issuer, []))

        def wait_group(self, issuer, family, n):
            g = self.com.setdefault(issuer, deque())
            ops = []
            while len(g) > n:
                ops += g.popleft()
            # each waited-for operation in issue order, with its issuer's earlier ones
            return sum(self._complete_where(lambda op, x=x: op is x) for x in ops)

    for seed in range(20):
        logs, counts = [], []
        for cls in (AsyncProxy, Scan):
            rng = np.random.default_rng(seed)
            px, log, cnt = cls(), [], []
            for step in range(300):
                who = int(rng.integers(0, 4))
                r = rng.random()
                if r < 0.35:
                    kind = ["bulk", "ld", "st", "mma"][int(rng.integers(0, 4))]
                    both = kind == "bulk" and rng.random() < 0.2   # also in another's group
                    px.issue(who, kind, perform=lambda s=step: log.append(s),
                             cta_group=1 if kind == "mma" else None,
                             threads=[who, (who + 1) % 4] if both else None)
                elif r < 0.55:
                    px.commit_group(who, "bulk")
                elif r < 0.75:
                    cnt.append(px.wait_group(who, "bulk", int(rng.integers(0, 3))))
                elif r < 0.9:
                    cnt.append(px.wait(who, ["ld", "st"][int(rng.integers(0, 2))]))
                else:
                    cnt.append(px.progress(int(rng.integers(1, 4))))
            px.progress()
            logs.append(log)
            counts.append(cnt)
        assert logs[0] == logs[1] and counts[0] == counts[1]
        assert sorted(logs[0]) == sorted(set(logs[0]))          # each operation once


# ------------------------------------------------------------ TMA memos (tensormap.py)
def test_tensormap_decode_memo_follows_the_bytes():
    from ptxsim.errors import UndefinedBehavior
    from ptxsim.machine.tensormap import TensorMap
    tm = TensorMap.encode_tiled("float16", 2, 0x7F00_0000_1000, (64, 32), (128,), (64, 8),
                                (1, 1), swizzle="128B")
    blob = tm.to_bytes()
    assert TensorMap.from_bytes(blob) == tm and TensorMap.from_bytes(blob) == tm
    t2 = tm.replaced("global_dim", 100, ordinal=1)           # tensormap.replace: new bytes
    assert TensorMap.from_bytes(t2.to_bytes()).global_dim == (64, 100)
    assert TensorMap.from_bytes(blob).global_dim == (64, 32)
    bad = bytes([0] * 8 + [0x80, 0x07]) + bytes(118)         # element type code 15
    for _ in range(2):                                        # a bad image raises every time
        with pytest.raises(UndefinedBehavior):
            TensorMap.from_bytes(bad)


def test_row_plans_are_dropped_when_a_buffer_is_mapped_and_errors_repeat():
    from ptxsim.errors import MemoryAccessError
    from ptxsim.machine import tensormap as tmod
    g = GlobalMemory()
    A = np.arange(16 * 64, dtype=np.uint16).reshape(16, 64)
    tm = tmod.TensorMap.for_array(A, (64, 8), swizzle="128B").bind(g, "A")
    p1 = tmod._row_plan(tm, (0, 8), g)
    want = tmod._make_row_plan(tm, [0, 8], g)
    for x, y in zip(p1, want):
        np.testing.assert_array_equal(x, y)
        assert not x.flags.writeable                          # shared plans are read-only
    assert tmod._row_plan(tm, (0, 8), g) is p1                # memoised
    # by hand: row r of the box is A's row 8 + r, at byte offset (8 + r) * 128 of buffer 0
    assert p1[1].tolist() == [(8 + r) * 128 for r in range(8)]
    g.map(np.zeros(16, np.uint8), "later")                    # the buffer list changed
    assert tmod._row_plan(tm, (0, 8), g) is not p1
    # a box row spanning two buffers: raised on every call (no plan is kept)
    g2 = GlobalMemory()
    g2.map(np.zeros(100, np.uint8), "X")
    bad = tmod.TensorMap.encode_tiled("uint8", 1, g2.buffers[0].base, (4096,), (), (256,), (1,))
    for _ in range(2):
        with pytest.raises(MemoryAccessError):
            tmod._row_plan(bad, (0,), g2)


def test_chunk_index_memo_is_the_swizzled_chunks():
    """128B swizzle (cuda.h: 16-byte chunk x of 128-byte row y at (y % 8) ^ x): the memoised
    chunk numbers equal the uncached ones and the hand-derived table, and are read-only."""
    from ptxsim.machine import tensormap as tmod
    g = GlobalMemory()
    A = np.zeros((16, 64), np.uint16)
    tm = tmod.TensorMap.for_array(A, (64, 8), swizzle="128B").bind(g, "A")
    got = tmod._chunk_index(tm, 1024, 8)
    np.testing.assert_array_equal(got, tmod._make_chunk_index(tm, 1024, 8))
    want = [[(1024 + y * 128) // 16 + ((y % 8) ^ x) for x in range(8)] for y in range(8)]
    assert got.tolist() == want and not got.flags.writeable
    assert tmod._chunk_index(tm, 1024, 8) is got


# --------------------------------------------------- garbage collector during a launch
def test_launch_sets_earlier_objects_aside_and_restores_the_collector():
    import gc
    from ptxsim.errors import DeadlockError
    seen = []
    orig = Wave.run

    def spy(self):
        seen.append(gc.get_freeze_count())
        return orig(self)
    text = BASIC.read_text()
    try:
        Wave.run = spy
        assert gc.get_freeze_count() == 0
        launch(text, "vadd", 1, 32, args=[np.zeros(64, np.uint32)] * 3 + [32])
        assert seen[-1] > 0 and gc.get_freeze_count() == 0       # frozen while it ran
        with pytest.raises(DeadlockError):                         # an error restores it too
            launch(text, "hang", 1, 64, args=[np.zeros(64, np.uint32)])
        assert gc.get_freeze_count() == 0
        gc.freeze()                                                # the caller's own freeze
        mine = gc.get_freeze_count()
        launch(text, "vadd", 1, 32, args=[np.zeros(64, np.uint32)] * 3 + [32])
        # left frozen as the caller had it (objects that died meanwhile leave the count)
        assert mine - 100 < gc.get_freeze_count() <= mine
    finally:
        Wave.run = orig
        gc.unfreeze()
