"""Poison values: what a kernel computes where the PTX ISA leaves the result unspecified.

Real kernels compute such values and never use them: CuTe DSL's grouped GEMM divides by a tile
count of 0 for a tile past every group (`div.s32`, 9.7.1.8: "division by zero ... unspecified"),
CuTe's cluster-launch-control tutorials `mapa` to a rank outside the cluster, a scheduler reads
`get_first_ctaid` of a failed `clusterlaunchcontrol.try_cancel` (9.7.12.16: "undefined") before
testing `is_canceled`, Triton's pipelined persistent matmul computes the next tile's coordinates
past the last tile (`rem.s32` by a group size of 0) and prefetches from them with a cp.async that
reads nothing. The hardware returns some bits and nothing goes wrong. ptxsim therefore does not
stop where such a value is produced: the destination gets the H200's bits
(tests/data/hardware/poison) and becomes *poison* for the threads concerned, remembering the
instruction that produced it.

Poison flows through register-to-register instructions (the base arithmetic / logic / compare /
convert set, mov, the video instructions, cvta / mapa / getctarank / isspacep, and the hints with
no effect on memory or results: prefetch, fences, createpolicy, ...): a destination is poison for
a thread when any source (or the guard predicate) is. The cross-lane instructions (shfl, vote,
match, redux, warp-level mma, movmatrix) poison the destinations of every executing lane of a
warp in which some lane's source is poison.

Memory reads through a poison address (9.7.9.8 ld / ldu, 9.7.14.5.15 ldmatrix, 9.7.9.23 cp.async):
  * a thread that reads no byte is no use: a guard that is false, a cp.async whose src-size is 0
    or whose ignore-src is true (the H200 reads nothing and faults on nothing there, even for a
    null or unmapped source);
  * where a byte would lie outside memory, PoisonValueError (with the hardware's bits the access
    faults);
  * else the read runs with the hardware's bits and its data is poison in turn: the destination
    registers of ld / ldu, every destination of the warp for ldmatrix (its rows go to other
    lanes), the shared-memory bytes a cp.async copies (`SharedMemory.poison`, per byte; read
    back into registers by ld / ldmatrix, cleared by the next write of the byte). The sanitizer
    (when on) reports a `poison-address` warning naming the producing and the reading line.
Any other instruction that reads a poison register — an address of a store or atomic, a branch
or guard, a value stored to memory, an operand of an asynchronous, barrier or Tensor Memory
operation — or an atomic on poison shared memory raises `PoisonValueError` naming the line that
produced the value, the lines it passed through (a load through it) and the line that used it.
Not followed: poison data in shared memory read by the asynchronous proxy (wgmma, tcgen05.mma /
cp, TMA and bulk stores): the warning at the cp.async that put it there is the report.
Writing a clean value to a register clears its poison.

The state is one array per poison register (`wave.poison[name]`: per thread of the wave the
index of its origin in `wave.poison_origins`, -1 when clean); an origin is (instruction, why,
parent origin or -1). A wave without poison pays one dict test per step (`wrap`; readers of
shared memory one attribute test more).
"""
from __future__ import annotations

import numpy as np

from ptxsim.errors import MemoryAccessError, MisalignedAddress, PoisonValueError
from ptxsim.isa import matrix as mx
from ptxsim.machine.grid import WARP_SIZE
from ptxsim.machine.operands import (cp_async_src_bytes, shared_part, space_of, type_of,
                                     vec_of)
from ptxsim.machine.program import TYPE_BYTES
from ptxsim.machine.sanitizer.findings import Access
from ptxsim.ptx.instruction import Address, Register, RegisterPair, Vector

PURE, CROSS_LANE, EFFECT = "pure", "cross-lane", "effect"
LOADS = ("ld", "ldu")
# the readers whose data carries the poison of their address on
READERS = LOADS + ("ldmatrix", "cp.async")


def new_origin(wave, inst, why: str, parent: int = -1) -> int:
    """A new origin (the instruction that made a value unspecified, why, and the origin it
    inherited it from, -1 for none): its index in wave.poison_origins."""
    wave.poison_origins.append((inst, why, int(parent)))
    return len(wave.poison_origins) - 1


def chain(wave, origin: int) -> list:
    """[(instruction, why)] from the producer of an unspecified value to `origin`."""
    out = []
    o = int(origin)
    while o >= 0:
        inst, why, parent = wave.poison_origins[o]
        out.append((inst, why))
        o = parent
    return out[::-1]


def _mark(wave, names, threads, origin) -> None:
    for name in names:
        arr = wave.poison.get(name)
        if arr is None:
            arr = wave.poison[name] = np.full(wave.N, -1, np.int32)
        arr[threads] = origin


def produce(wave, dst, threads, inst, why: str) -> None:
    """Mark register operand `dst` (a Register, or a Vector / RegisterPair of them) poison for
    the wave's threads `threads`, produced by `inst` because of `why`."""
    threads = np.asarray(threads, np.int64)
    if not threads.size:
        return
    _mark(wave, _names(dst), threads, new_origin(wave, inst, why))


def _names(op) -> list[str]:
    if isinstance(op, Register):
        return [] if op.name == "_" else [op.name]
    if isinstance(op, RegisterPair):
        return _names(op.first) + _names(op.second)
    if isinstance(op, Vector):
        return [n for e in op.elements for n in _names(e)]
    return []


def _has_register_dst(inst) -> bool:
    """Whether operand 0 is written (a register destination) rather than read."""
    if not inst.operands or isinstance(inst.operands[0], Address):
        return False
    return inst.opcode not in ("bra", "brx", "call", "st", "red", "tcgen05.st", "stmatrix",
                               "mbarrier.init", "mbarrier.inval", "mbarrier.expect_tx",
                               "mbarrier.complete_tx") and not inst.opcode.startswith("cp.")


def operands_of(inst) -> tuple[list, list]:
    """([(register name, how it is read, operand index)], [destination register names]); `how`
    is "address", "guard" or "operand"."""
    ops = list(inst.operands)
    dsts: list[str] = []
    first = 0
    if _has_register_dst(inst):
        dsts = _names(ops[0])
        first = 1
    srcs: list[tuple[str, str, int]] = []
    for i in range(first, len(ops)):
        op = ops[i]
        if isinstance(op, Address):
            if op.base is not None:
                srcs.append((op.base, "address", i))
            if op.vector is not None:
                srcs += [(n, "address", i) for n in _names(op.vector)]
        else:
            srcs += [(n, "operand", i) for n in _names(op)]
    if inst.predicate is not None:
        srcs.append((inst.predicate.name, "guard", -1))
    return srcs, dsts


def _use(inst, how: str) -> str:
    op = inst.opcode
    if how == "guard":
        return "the branch condition" if op in ("bra", "brx") else \
            f"the guard predicate of {inst.mnemonic}"
    if how == "address":
        return f"an address of {inst.mnemonic}"
    if how == "data":
        return f"the shared memory {inst.mnemonic} operates on"
    if op in ("bra", "brx"):
        return "a branch target"
    if op in ("st", "red", "atom", "st.async", "red.async", "stmatrix", "tcgen05.st"):
        return f"a value {inst.mnemonic} stores"
    return f"an operand of {inst.mnemonic}"


def _thread_name(wave, t: int) -> str:
    s = wave.sregs
    try:
        ctaid = tuple(int(s[f"%ctaid.{c}"][t]) for c in "xyz")
        tid = tuple(int(s[f"%tid.{c}"][t]) for c in "xyz")
        return f"CTA {ctaid}, thread {tid}"
    except KeyError:
        return f"thread {t}"


def _story(steps) -> str:
    pinst, why = steps[0]
    text = f"produced at line {pinst.loc.line} ({pinst}: {why})"
    for sinst, swhy in steps[1:]:
        text += f", then at line {sinst.loc.line} ({sinst}: {swhy})"
    return text


def poison_error(wave, inst, name: str, how: str, t: int, origin: int,
                 extra: str = "") -> PoisonValueError:
    steps = chain(wave, origin)
    pinst = steps[0][0]
    use = _use(inst, how)
    msg = (f"{use} is {name}, a value the PTX ISA leaves unspecified for "
           f"{_thread_name(wave, t)}: {_story(steps)}{extra}")
    return PoisonValueError(msg, produced_line=pinst.loc.line, produced=str(pinst),
                            used_line=inst.loc.line, used=str(inst), use=use, thread=t,
                            chain=tuple((s.loc.line, str(s), w) for s, w in steps))


def _report(wave, inst, t: int, origin: int, name: str, what: str) -> None:
    """The sanitizer's `poison-address` warning (when its checks are on)."""
    san = wave.san
    if san is None or not san.enabled:
        return
    steps = chain(wave, origin)
    pinst, why = steps[0]
    msg = (f"{inst.mnemonic} reads through {name}, an address computed from a value the PTX "
           f"ISA leaves unspecified ({_story(steps)}); every byte it reads is in bounds, so it "
           f"runs with the hardware's bits and {what} is unspecified too: ptxsim follows it "
           "and stops where it is used")
    san.report("poison-address", inst, t, msg,
               earlier=Access(pinst.loc.line, str(pinst), f"produced the value: {why}",
                              getattr(pinst.loc, "file", None)))


def _exec_mask(wave, inst, idx):
    """Which threads of idx execute `inst` (its guard, as the body reads it)."""
    pred = inst.predicate
    if pred is None:
        return np.ones(idx.size, bool)
    g = wave.reg(pred.name)[idx].astype(bool)
    return ~g if pred.negated else g


def _load_shape(inst) -> tuple[str, int, int]:
    return space_of(inst), TYPE_BYTES[type_of(inst)], vec_of(inst)


def _matrix_rows(inst) -> int:
    """How many lanes of a warp supply an ldmatrix row address (.m8n8: 8 per matrix; the
    8-bit shapes: every lane, conservatively)."""
    form = mx.form_of(inst)
    return WARP_SIZE if mx.is_byte_form(form) else 8 * form.num


def _warp_lanes(idx, threads):
    """The threads of idx in the warps of `threads`."""
    return idx[np.isin(idx // WARP_SIZE, np.unique(threads // WARP_SIZE))]


def _shared_flat(wave, space, addr, threads):
    """(selector into threads, flat byte offsets into shared.data) of the accesses that land in
    shared memory, or None."""
    got = shared_part(wave, space, addr, threads)
    if got is None:
        return None
    sel, cta, off = got
    sh = wave.memory.shared
    return (np.arange(threads.size) if sel is None else sel,
            np.asarray(cta, np.int64) * sh.size + np.asarray(off, np.int64))


def _first(o: np.ndarray) -> np.ndarray:
    """Per row of origins (n, k): the first that is not -1, else -1."""
    hit = o >= 0
    k = np.argmax(hit, axis=1)
    return np.where(hit.any(1), o[np.arange(o.shape[0]), k], -1)


def wrap(wave, inst, body, kind: str):
    """`body` (a compiled instruction, guard included) made poison-aware; `kind` is PURE,
    CROSS_LANE or EFFECT (what `machine.handlers.poison_kind` says of the opcode)."""
    # what an instruction reads and writes is known once per program (each wave compiles its
    # instructions again: working it out per wave cost ~7% of a 2-wave Triton GEMM)
    cache = wave.program.__dict__.setdefault("_poison_static", {})
    st = cache.get(id(inst))
    if st is None:
        srcs, dsts = operands_of(inst)
        op = inst.opcode
        space = None
        if op in LOADS or op == "ldmatrix" or op in ("atom", "red"):
            space = space_of(inst, "generic")
        # instructions that may read shared memory as data (the data may be poison)
        smem = space in ("shared::cta", "shared::cluster", "generic")
        names = frozenset({n for n, _, _ in srcs} | set(dsts))
        st = cache[id(inst)] = (inst, srcs, dsts, space, smem, names)
    _, srcs, dsts, space, smem, names = st
    if not names and not smem:
        return body
    P = wave.poison
    sh = wave.memory.shared
    slow = []

    def run(idx):
        if (not P or names.isdisjoint(P)) and (not smem or sh.poison is None):
            body(idx)
            return
        if not slow:
            slow.append(_slow_path(wave, inst, body, kind, srcs, dsts, space, smem))
        slow[0](idx)
    return run


def _slow_path(wave, inst, body, kind, srcs, dsts, space, smem):
    """`wrap`'s path for a step where some operand or shared memory is poison."""
    op = inst.opcode
    reader = op if op in READERS else None
    P = wave.poison
    sh = wave.memory.shared
    pred = inst.predicate
    issued = [0]                # the proxy's sequence number of the operation body queues

    def _slow(idx):
        idx = np.asarray(idx)
        # the threads for which the instruction executes (the guard holds) or may (it is poison)
        if pred is not None:
            g = wave.reg(pred.name)[idx].astype(bool)
            if pred.negated:
                g = ~g
            gp = P.get(pred.name)
            if gp is not None:
                g = g | (gp[idx] >= 0)
        else:
            g = None
        orig = np.full(idx.size, -1, np.int32)
        via = np.full(idx.size, -1, np.int32)        # origin of a poison address read through
        via_name = ""
        for n, how, opi in srcs:
            a = P.get(n)
            if a is None:
                continue
            o = a[idx]
            bad = o >= 0
            if how != "guard" and g is not None:
                bad &= g                       # a guard-false thread does not read it
            if not bad.any():
                continue
            if how == "address" and reader is not None and (reader != "cp.async" or opi == 1):
                via = np.where(bad & (via < 0), o, via)
                via_name = via_name or n
                continue
            if kind == EFFECT or (how == "guard" and inst.opcode in ("bra", "brx")):
                k = int(np.argmax(bad))
                raise poison_error(wave, inst, n, how, int(idx[k]), int(o[k]))
            orig = np.where(bad & (orig < 0), o, orig)
        nread = None
        if (via >= 0).any():
            via, nread = _reads_through(idx, via, via_name)
        if smem and sh.poison is not None and op in ("atom", "red"):
            _atomic_data(idx)
        if kind == CROSS_LANE and (orig >= 0).any():
            warp = idx // WARP_SIZE
            bad = orig >= 0
            uw, first = np.unique(warp[bad], return_index=True)
            pos = np.minimum(np.searchsorted(uw, warp), uw.size - 1)
            orig = np.where(uw[pos] == warp, orig[bad][first][pos], -1).astype(np.int32)
        # the threads whose destinations this execution defines: the guard holds or is poison
        if g is not None:
            defined = idx[g]
            dorig = orig[g]
        else:
            defined, dorig = idx, orig
        for d in dsts:
            a = P.get(d)
            if a is not None:
                a[defined] = -1                   # a producer in `body` may mark it again
        issued[0] = wave.proxy._seq
        body(idx)
        hit = dorig >= 0
        for d in dsts:
            a = P.get(d)
            if hit.any():
                if a is None:
                    a = P[d] = np.full(wave.N, -1, np.int32)
                cur = a[defined]
                a[defined] = np.where(hit, dorig, cur)
            elif a is not None and not (a >= 0).any():
                del P[d]
        if (via >= 0).any():
            _data_through(idx, via, via_name, nread)
        if smem and sh.poison is not None and op in LOADS + ("ldmatrix",):
            _shared_data(idx)

    def _reads_through(idx, via, name):
        """The threads that read memory through a poison address (cp.async: those that read
        a byte); raises PoisonValueError where a read would leave memory. -> (via, bytes read
        per thread for cp.async)."""
        mem = wave.memory
        ex = _exec_mask(wave, inst, idx)
        via = np.where(ex, via, -1)
        nread = None
        if reader == "cp.async":
            nread = cp_async_src_bytes(wave, inst, idx)
            via = np.where(nread > 0, via, -1)       # src-size 0 / ignore-src: reads nothing
        sel = np.flatnonzero(via >= 0)
        if not sel.size:
            return via, nread
        th = idx[sel]
        try:
            if reader == "cp.async":
                addr = wave.addr(inst.operands[1], th)
                for nb in np.unique(nread[sel]):
                    s = nread[sel] == nb
                    mem.global_.locate(addr[s], int(nb))
            elif reader == "ldmatrix":
                lanes = th[th % WARP_SIZE < _matrix_rows(inst)]
                if lanes.size:
                    mem.load_bytes(space, wave.addr(inst.operands[1], lanes), 16, thread=lanes)
            else:
                sp, size, vec = _load_shape(inst)
                mem.load_bytes(sp, wave.addr(inst.operands[1], th), size, vec=vec, thread=th)
        except (MemoryAccessError, MisalignedAddress) as e:
            t = e.thread if getattr(e, "thread", None) in set(th.tolist()) else int(th[0])
            k = int(np.flatnonzero(idx == t)[0])
            raise poison_error(wave, inst, name, "address", t, int(via[k]),
                               extra=f"; with the hardware's bits the access leaves memory: "
                                     f"{e}") from e
        if reader == "ldmatrix":                    # a lane that supplies no row reads nothing
            lane = idx % WARP_SIZE
            via = np.where(lane < _matrix_rows(inst), via, -1)
        return via, nread

    def _data_through(idx, via, name, nread):
        """The data read through a poison address is poison (new origins, one per parent)."""
        for parent in np.unique(via[via >= 0]):
            sel = via == parent
            th = idx[sel]
            what = {"cp.async": "the data it copies into shared memory",
                    "ldmatrix": "the matrix fragment of every lane of its warp"}.get(
                        reader, "the value it loads")
            o = new_origin(wave, inst, f"reads through {name}: {what} is unspecified",
                           int(parent))
            if reader == "cp.async":
                _poison_copy(th, nread[sel], o)
            elif reader == "ldmatrix":
                _mark(wave, dsts, _warp_lanes(idx, th), o)
            else:
                _mark(wave, dsts, th, o)
            _report(wave, inst, int(th[0]), int(parent), name, what)

    def _poison_copy(th, nread, o):
        """cp.async of threads th through a poison source: the bytes they copy (the first
        nread; the rest is zero fill) are poison in shared memory once the copy lands (the
        operation this execution just queued: marked after its effect)."""
        mem = wave.memory
        dst = wave.addr(inst.operands[0], th)
        cta, off = mem.shared.resolve_own(dst, wave.cta_of[th])
        flat = np.asarray(cta, np.int64) * mem.shared.size + np.asarray(off, np.int64)
        nread = np.minimum(nread, int(inst.operands[2].value))

        def mark():
            data = mem.shared.data.reshape(-1)
            for nb in np.unique(nread):
                s = nread == nb
                f = flat[s][:, None] + np.arange(int(nb))
                mem.shared.mark_poison(f, data[f], np.full(int(s.sum()), o, np.int32))
        q = wave.proxy.queue
        aop = q[-1] if q else None
        if aop is None or aop.done or aop.kind != "cp_async" or aop.seq != issued[0]:
            mark()                                   # already performed (eager completion)
            return
        perform = aop.perform

        def perform_then_mark():
            if perform is not None:
                perform()
            mark()
        aop.perform = perform_then_mark

    def _shared_data(idx):
        """ld / ldu / ldmatrix of shared memory that holds poison: the destinations that get
        those bytes are poison (one new origin per origin read)."""
        ex = idx[_exec_mask(wave, inst, idx)]
        if not ex.size:
            return
        if op == "ldmatrix":
            return _matrix_data(idx, ex)
        sp, size, vec = _load_shape(inst)
        got = _shared_flat(wave, sp, wave.addr(inst.operands[1], ex), ex)
        if got is None:
            return
        sel, flat = got
        th = ex[sel]
        total = size * vec
        o = sh.poison_of(flat[:, None] + np.arange(total))          # (n, total)
        if not (o >= 0).any():
            return
        elems = list(inst.operands[0].elements) if isinstance(inst.operands[0], Vector) \
            else [inst.operands[0]]
        per = total // len(elems)
        for k, e in enumerate(elems):
            ok = _first(o[:, k * per:(k + 1) * per])
            if (ok >= 0).any():
                _mark_loaded(_names(e), th, ok)

    def _mark_loaded(names, th, ok):
        for parent in np.unique(ok[ok >= 0]):
            o = new_origin(wave, inst, "loads it from shared memory", int(parent))
            _mark(wave, names, th[ok == parent], o)

    def _matrix_data(idx, ex):
        form = mx.form_of(inst)
        warps = np.unique(ex // WARP_SIZE)
        full = (warps[:, None] * WARP_SIZE + np.arange(WARP_SIZE)).reshape(-1)
        W = warps.size
        addr = wave.addr(inst.operands[1], full).reshape(W, WARP_SIZE)
        if mx.is_byte_form(form):
            rows = mx.byte_row_addresses(form, addr)                 # (W, R)
            th = np.repeat(warps * WARP_SIZE, rows.shape[1])
            got = _shared_flat(wave, space, rows.reshape(-1), th)
            if got is None:
                return
            sel, flat = got
            o = np.full(th.size, -1, np.int32)
            o[sel] = _first(sh.poison_of(flat[:, None] + np.arange(16)))
            ow = _first(o.reshape(W, -1))                            # per warp
            ok = np.repeat(ow, WARP_SIZE)
            _mark_loaded(dsts, full, ok)
            return
        ea = mx.element_addresses(form, addr)                        # (num, W, 32, 2)
        th = np.broadcast_to(full.reshape(W, WARP_SIZE)[None, :, :, None], ea.shape)
        got = _shared_flat(wave, space, ea.reshape(-1), th.reshape(-1))
        if got is None:
            return
        sel, flat = got
        o = np.full(ea.size, -1, np.int32)
        o[sel] = _first(sh.poison_of(flat[:, None] + np.arange(2)))
        o = _first(o.reshape(form.num, W * WARP_SIZE, 2).reshape(-1, 2)).reshape(form.num, -1)
        elems = list(inst.operands[0].elements)
        for i, e in enumerate(elems):
            if (o[i] >= 0).any():
                _mark_loaded(_names(e), full, o[i])

    def _atomic_data(idx):
        """An atomic on shared bytes that hold poison: its result and what it writes back
        would be unspecified: PoisonValueError (not followed)."""
        ex = idx[_exec_mask(wave, inst, idx)]
        if not ex.size:
            return
        size = TYPE_BYTES.get(type_of(inst), 4) * vec_of(inst)
        a = inst.operands[1] if op == "atom" else inst.operands[0]
        got = _shared_flat(wave, space, wave.addr(a, ex), ex)
        if got is None:
            return
        sel, flat = got
        o = _first(sh.poison_of(flat[:, None] + np.arange(size)))
        if (o >= 0).any():
            k = int(np.argmax(o >= 0))
            raise poison_error(wave, inst, str(a), "data", int(ex[sel][k]), int(o[k]))
    return _slow
