"""Memory handlers: ld / ldu / st (every state space, vectors, sign extension, per-thread call
`.param`s; st.async with complete-tx on the mbarrier), atom / red (integer operations, float add,
half-type min / max, .v2/.v4/.v8 per element, .b128 cas / exch, red.async), cvta, isspacep, mapa
and getctarank, all through `machine.memory.Memory`.
"""
from __future__ import annotations

import numpy as np

from ptxsim.errors import MbarrierError, MisalignedAddress, OperandError, UnsupportedFeature
from ptxsim.isa import base as isa_base
from ptxsim.machine import poison
from ptxsim.machine.handlers.common import (UINT, callparam, elements_of, san_shared,
                                            shared_part, shared_target, space_of, type_of,
                                            vec_of)
from ptxsim.machine.memory import (CLUSTER_OFFSET_MASK, CLUSTER_RANK_SHIFT, WINDOW_SIZE,
                                   WINDOWS)
from ptxsim.machine.program import TYPE_BYTES, reg_dtype
from ptxsim.ptx.instruction import Register


# ------------------------------------------------------------------------------- memory
def _extend(vals: np.ndarray, size: int, signed: bool, reg_dtype) -> np.ndarray:
    """ld of a narrow type into a wider register: sign- or zero-extension (9.7.9.8)."""
    if reg_dtype is None or reg_dtype == np.bool_ or np.dtype(reg_dtype).itemsize <= size:
        return vals
    if signed:
        bits = 8 * size
        v = vals.astype(np.int64)
        v = np.where(v >= (1 << (bits - 1)), v - (1 << bits), v)
        return v.view(np.uint64)
    return vals


_SHARED_WINDOW = np.uint64(WINDOWS["shared"])


def _check_mbarrier_bytes(wave, inst, space: str, addr, idx, nbytes: int) -> None:
    """A plain ld / st whose bytes overlap a valid mbarrier object is undefined (9.7.13.15: the
    object is accessed through mbarrier instructions only, until mbarrier.inval): MbarrierError
    naming the line. Checked once the wave has initialised an mbarrier, on the shared part of
    the access (shared::cta, shared::cluster, generic addresses in the shared window)."""
    if not wave.mbar_live or space not in ("shared::cta", "shared::cluster", "generic"):
        return
    addr = np.asarray(addr, np.uint64)
    cta = wave.cta_of[idx]
    if space == "generic":
        sel = (addr >= _SHARED_WINDOW) & (addr < _SHARED_WINDOW + np.uint64(WINDOW_SIZE))
        if not sel.any():
            return
        addr, cta, space = addr[sel] - _SHARED_WINDOW, cta[sel], "shared::cluster"
    if space == "shared::cta":
        cta, off = wave.memory.shared.resolve_own(addr, cta)
    else:
        cta, off = wave.memory.shared.resolve_cluster(addr, cta)
    try:
        wave.mbar.check_plain_access(cta, off, nbytes)
    except MbarrierError as e:
        raise MbarrierError(f"line {inst.loc.line}: {inst}: {e.why}", e.address, e.cta) from None


# memory-model strength (9.7.9.8): .relaxed / .acquire / .release / .volatile accesses are
# morally strong: the sanitizer treats them as synchronisation, not as data to race-check
_STRONG = (".relaxed", ".acquire", ".release", ".volatile", ".acq_rel")


def _san(wave):
    """The wave's sanitizer when its checks are on, else None (decided when a handler is
    built)."""
    s = wave.san
    return s if s is not None and s.enabled else None


def _san_strong(san, wave, inst, space, addr, idx, nbytes, acquire, release):
    """A morally strong ld / st / atom: release / acquire on its words (sanitizer)."""
    got = shared_part(wave, space, addr, idx)
    if got is not None:
        sel, cta, off = got
        san.atomic_sync("s", np.asarray(cta, np.int64) * san.SW + (np.asarray(off) >> 2),
                        idx if sel is None else idx[sel], acquire, release)
        if sel is None:
            return
        rest = np.ones(idx.size, bool)
        rest[sel] = False
        addr, idx = np.asarray(addr)[rest], idx[rest]
    if space in ("global", "generic") and idx.size:
        san.atomic_sync("g", (np.asarray(addr, np.uint64) >> np.uint64(2)).astype(np.int64),
                        idx, acquire, release)


def _ld(wave, inst):
    t = type_of(inst)
    size = TYPE_BYTES[t]
    vec = vec_of(inst)
    space = space_of(inst)
    dst, a = inst.operands[0], inst.operands[1]
    elems = elements_of(dst)
    signed = t.startswith(".s")
    mem = wave.memory
    san = _san(wave)
    strong = any(inst.has(q) for q in _STRONG)
    if size == 16:
        def ld128(idx):                                   # .b128 registers: (N, 2) uint64
            addr = wave.addr(a, idx)
            vals = mem.load(space, addr, 16, vec=vec, thread=idx)
            _check_mbarrier_bytes(wave, inst, space, addr, idx, 16 * vec)
            if san is not None:
                san_shared(wave, inst, space, addr, idx, 16 * vec, False)
            for k, e in enumerate(elems):
                wave.write(e, idx, vals[:, k, :])
            wave.advance(idx)
        return ld128

    addr_of = wave.addresser(a)
    direct = mem.direct_ok(space, size, vec)
    has_cp = space in ("param", "generic")
    puts = [_ld_put(wave, e, size, signed) for e in elems]
    advance = wave.advance

    def run(idx):
        cp = callparam(wave, a) if has_cp else None
        if cp is not None:
            raw = cp[idx, a.offset:a.offset + size * vec]
            vals = raw.copy().view(f"<u{size}").reshape(idx.size, vec)
        else:
            addr = addr_of(idx)
            vals = mem.load_direct(space, addr, size, vec, idx) if direct else None
            if vals is None:
                vals = mem.load(space, addr, size, vec=vec, thread=idx)
            _check_mbarrier_bytes(wave, inst, space, addr, idx, size * vec)
            if san is not None:
                if strong:
                    _san_strong(san, wave, inst, space, addr, idx, size * vec, True, False)
                else:
                    san_shared(wave, inst, space, addr, idx, size * vec, False)
                if space in ("global", "generic"):
                    if san.gasync:
                        san.global_access(inst, idx, addr, size * vec, False)
                    if san.full and not strong:
                        _san_global(san, wave, space, inst, idx, addr, size * vec, False)
        for k, put in enumerate(puts):
            if put is not None:
                put(idx, vals[:, k])
        advance(idx)
    return run


def _ld_put(wave, e, size: int, signed: bool):
    """function (idx, loaded (n,) uintN) writing one destination of ld: predicates get
    `!= 0`, wider registers the sign- or zero-extension (9.7.9.8); None for the sink `_`."""
    if isinstance(e, Register) and e.name == "_":
        return None
    dt = reg_dtype(wave.declared(e.name)) if isinstance(e, Register) else None
    if dt is None or dt == np.bool_:
        def general(idx, v):
            r = wave.reg(e.name)
            if r.dtype == np.bool_:
                wave.write(e, idx, v != 0)
                return
            wave.write(e, idx, _extend(v, size, signed, r.dtype))
        return general
    w = wave.writer(e)
    if signed and np.dtype(dt).itemsize > size:
        return lambda idx, v: w(idx, _extend(v, size, signed, dt))
    return w


def _st(wave, inst):
    t = type_of(inst)
    size = TYPE_BYTES[t]
    vec = vec_of(inst)
    space = space_of(inst)
    a, src = inst.operands[0], inst.operands[1]
    # st.async ... [a], b, [mbar] (9.7.9.12): the store, then complete-tx of its bytes on the
    # mbarrier (performed at once: any completion time is allowed)
    mbar = inst.operands[2] if inst.has(".async") and len(inst.operands) > 2 else None
    elems = elements_of(src)
    mem = wave.memory
    ftype = t if t in (".f32", ".f64", ".f16", ".bf16") else None
    san = _san(wave)
    strong = any(inst.has(q) for q in _STRONG)
    if size == 16:
        def st128(idx):
            vals = np.stack([wave.reg(e.name)[idx] for e in elems], 1)    # (n, vec, 2)
            addr = wave.addr(a, idx)
            mem.store(space, addr, vals, 16, vec=vec, thread=idx)
            _check_mbarrier_bytes(wave, inst, space, addr, idx, 16 * vec)
            if san is not None:
                if mbar is not None:
                    _san_st_async(san, wave, inst, space, addr, mbar, idx, 16 * vec)
                else:
                    san_shared(wave, inst, space, addr, idx, 16 * vec, True)
            if mbar is not None:                 # st.async .b128 (PTX ISA 9.2)
                _async_complete_tx(wave, inst, mbar, idx, 16 * vec)
                if san is not None:
                    cta, off = shared_target(wave, inst, mbar, idx, "shared::cluster")
                    san.mb_sync(cta, off)
            wave.advance(idx)
        return st128

    readers = [wave.reader(e, 8 * size, ftype)[0] for e in elems]
    addr_of = wave.addresser(a)
    direct = mem.direct_ok(space, size, vec)
    has_cp = space in ("param", "generic")
    mask = np.uint64((1 << 8 * size) - 1 if size < 8 else (1 << 64) - 1)

    def run(idx):
        vals = np.empty((idx.size, vec), UINT[size])
        for k, rd in enumerate(readers):
            v = rd(idx)
            if v.dtype.kind in "ub":        # register bits: the cast keeps the low 8*size bits
                vals[:, k] = v
            else:
                vals[:, k] = (v.astype(np.uint64) & mask).astype(UINT[size])
        cp = callparam(wave, a) if has_cp else None
        if cp is not None:
            cp[idx, a.offset:a.offset + size * vec] = vals.view(np.uint8).reshape(idx.size, -1)
            wave.advance(idx)
            return
        addr = addr_of(idx)
        if not (direct and mem.store_direct(space, addr, vals, size, vec, idx)):
            mem.store(space, addr, vals, size, vec=vec, thread=idx)
        _check_mbarrier_bytes(wave, inst, space, addr, idx, size * vec)
        if san is not None:
            if mbar is not None:                # st.async: a write completed through mbar
                _san_st_async(san, wave, inst, space, addr, mbar, idx, size * vec)
            elif strong:
                _san_strong(san, wave, inst, space, addr, idx, size * vec, False, True)
            else:
                san_shared(wave, inst, space, addr, idx, size * vec, True, vals)
            if space in ("global", "generic"):
                if san.gasync:
                    san.global_access(inst, idx, addr, size * vec, True)
                if san.full and not strong and mbar is None:
                    _san_global(san, wave, space, inst, idx, addr, size * vec, True, vals)
        if mbar is not None:
            _async_complete_tx(wave, inst, mbar, idx, size * vec)
            if san is not None:
                cta, off = shared_target(wave, inst, mbar, idx, "shared::cluster")
                san.mb_sync(cta, off)
        wave.advance(idx)
    return run


ATOM_INT = {"add", "and", "or", "xor", "exch", "inc", "dec", "cas", "min", "max"}


def _atom(wave, inst):
    t = type_of(inst)
    size = TYPE_BYTES[t]
    space = space_of(inst)
    is_red = inst.opcode == "red"
    ops = inst.operands
    mbar = None
    if is_red:
        a, srcs, dst = ops[0], ops[1:], None
        if inst.has(".async") and len(ops) > 2:           # red.async ... [a], b, [mbar]
            srcs, mbar = ops[1:2], ops[2]
    else:
        dst, a, srcs = ops[0], ops[1], ops[2:]
    opname = next((q[1:] for q in inst.qualifiers if q[1:] in ATOM_INT), None)
    if opname is None:
        raise UnsupportedFeature(f"atomic operation of '{inst.mnemonic}' is not modelled")
    if size == 16:
        return _atom128(wave, inst, opname, space, dst, a, srcs)
    vec = vec_of(inst)
    if t.startswith(".f") or t.startswith(".bf"):
        # float add (f32, f64, f16, bf16, packed x2), and min / max of the half types — ptxas
        # 13.0 accepts the latter only as vectors (atom.global.v2.f16.min.noftz ...); each
        # element follows min / max of 9.7.3 (a NaN input yields the other operand)
        if opname == "add":
            f = isa_base.semantics(f"add.rn{t}")
        elif opname in ("min", "max") and t in (".f16", ".bf16", ".f16x2", ".bf16x2"):
            f = isa_base.semantics(f"{opname}{t}")
        else:
            raise UnsupportedFeature(f"floating-point atom.{opname}{t} is not modelled")
        fn = lambda old, b, f=f: f(old, b)  # noqa: E731
    elif opname in ("min", "max"):
        fn = f"{opname}.{'s' if t.startswith('.s') else 'u'}"
    else:
        fn = opname
    mem = wave.memory

    if vec > 1:
        # atom / red .v2/.v4/.v8 (9.7.13.5): one atomic operation per element, element k at
        # a + k * size (the vector as a whole is not one atomic access)
        if mbar is not None:
            raise UnsupportedFeature("vector red.async is not modelled")
        src_els = elements_of(srcs[0])
        dst_els = elements_of(dst) if dst is not None else None
        if len(src_els) != vec or (dst_els is not None and len(dst_els) != vec):
            raise OperandError(f"{inst.opcode}.v{vec} needs {vec}-element vector operands")

        def run_vec(idx):
            addr = wave.addr(a, idx)
            mis = (addr % np.uint64(size * vec)) != 0
            if mis.any():
                i = int(np.argmax(mis))
                raise MisalignedAddress(f"{inst.opcode}.v{vec} address not aligned to "
                                        f"{size * vec} bytes", address=int(addr[i]),
                                        space=space, thread=int(idx[i]))
            for k in range(vec):
                v = wave.read(src_els[k], idx, 8 * size)
                old = mem.atomic(space, addr + np.uint64(k * size), size, fn, [v], thread=idx)
                if dst_els is not None:
                    wave.write(dst_els[k], idx, old)
            wave.advance(idx)
        return run_vec

    san = _san(wave)

    def run(idx):
        addr = wave.addr(a, idx)
        vals = [wave.read(s, idx, 8 * size) for s in srcs]
        old = mem.atomic(space, addr, size, fn, vals, thread=idx)
        if san is not None:
            _san_atomic(san, wave, inst, space, addr, idx, size)
        if dst is not None:
            wave.write(dst, idx, old)
        if mbar is not None:
            _async_complete_tx(wave, inst, mbar, idx, size)
            if san is not None:
                cta, off = shared_target(wave, inst, mbar, idx, "shared::cluster")
                san.mb_sync(cta, off)
        wave.advance(idx)
    return run


def _san_atomic(san, wave, inst, space, addr, idx, size) -> None:
    """atom / red for the sanitizer: a read-modify-write of initialised memory that orders
    like a release + acquire on its word (lock words, flags), and no race record."""
    got = shared_part(wave, space, addr, idx)
    if got is not None:
        sel, cta, off = got
        san.shared_atomic(inst, idx if sel is None else idx[sel], cta, off, size)
    _san_strong(san, wave, inst, space, addr, idx, size, True, True)


def _atom128(wave, inst, opname, space, dst, a, srcs):
    """atom{.space}.cas.b128 d, [a], b, c / atom{.space}.exch.b128 d, [a], b (9.7.13.5; the
    only .b128 operations besides mov / ld / st that ptxas 13.0 accepts for sm_100a). Registers
    are (threads, 2) uint64. Threads that hit the same address are applied in thread order:
    each round performs the first remaining thread of every address, vectorised."""
    if opname not in ("cas", "exch") or dst is None:
        raise OperandError(f"{inst.mnemonic}: .b128 exists only for atom.cas and atom.exch")
    mem = wave.memory

    def run(idx):
        addr = wave.addr(a, idx)
        b = wave.reg(srcs[0].name)[idx]
        c = wave.reg(srcs[1].name)[idx] if opname == "cas" else None
        old = np.zeros((idx.size, 2), np.uint64)
        todo = np.arange(idx.size)
        while todo.size:
            _, first = np.unique(addr[todo], return_index=True)
            now = todo[first]
            cur = mem.load(space, addr[now], 16, thread=idx[now])[:, 0, :]
            old[now] = cur
            if opname == "exch":
                new = b[now]
            else:
                hit = (cur == b[now]).all(1)
                new = np.where(hit[:, None], c[now], cur)
            mem.store(space, addr[now], new[:, None, :], 16, thread=idx[now])
            todo = np.setdiff1d(todo, now, assume_unique=True)
        wave.write(dst, idx, old)
        wave.advance(idx)
    return run


def _san_global(san, wave, space, inst, idx, addr, nbytes, write, data=None) -> None:
    """The global part of a generic access for the sanitizer's full-mode race check."""
    a = np.asarray(addr, np.uint64)
    if data is not None:
        data = np.ascontiguousarray(data).view(np.uint8).reshape(idx.size, -1)
    if space == "generic":
        sel = wave.memory.classify(a) == "global"
        if not sel.any():
            return
        if not sel.all():
            a, idx = a[sel], idx[sel]
            data = data[sel] if data is not None else None
    san.global_race(inst, idx, a, nbytes, write, data)


def _san_st_async(san, wave, inst, space, addr, mbar, idx, nbytes) -> None:
    """st.async / red.async for the sanitizer: a remote write whose completion the reader
    learns through the mbarrier's complete-tx (one operation per instruction)."""
    got = shared_part(wave, space, addr, idx)
    if got is None:
        return
    sel, cta, off = got
    mcta, moff = shared_target(wave, inst, mbar, idx, "shared::cluster")
    rec = san.new_rec("st.async", inst, int(idx[0]), "bulk")
    flat = np.asarray(cta, np.int64) * san.SW * 4 + np.asarray(off, np.int64)
    san.async_smem_flat(rec, inst, flat, nbytes, write=True)
    san.async_smem_flat_done(flat, nbytes)
    san.rec_done(rec)
    for c, o in set(zip(np.atleast_1d(mcta).tolist(), np.atleast_1d(moff).tolist())):
        san.mb_signal(rec, c, o)


def _async_complete_tx(wave, inst, mbar, idx, nbytes: int) -> None:
    """complete-tx of `nbytes` per thread on the mbarrier operand (a shared::cluster address)
    of st.async / red.async."""
    cta, off = shared_target(wave, inst, mbar, idx, "shared::cluster")
    wave.mbar.complete_tx(cta, off, np.full(idx.size, nbytes, np.int64))


def _cvta(wave, inst):
    to = inst.has(".to")
    space = space_of(inst)
    dst, src = inst.operands
    mem = wave.memory

    rd, put, advance = wave.reader(src, 64)[0], wave.writer(dst), wave.advance
    conv = mem.cvta_from_generic if to else mem.cvta_to_generic

    def run(idx):
        put(idx, conv(space, rd(idx).astype(np.uint64)))
        advance(idx)
    return run


def _isspacep(wave, inst):
    space = space_of(inst)
    dst, src = inst.operands

    def run(idx):
        v = wave.read(src, idx, 64).astype(np.uint64)
        wave.write(dst, idx, wave.memory.isspacep(space, v, wave.cta_of[idx]))
        wave.advance(idx)
    return run


def _mapa(wave, inst):
    space = space_of(inst, "generic")
    ops = inst.operands
    sh = wave.memory.shared

    def run(idx):
        v = wave.read(ops[1], idx, 64).astype(np.uint64)
        generic = space == "generic"
        if generic:
            v = wave.memory.cvta_from_generic("shared::cluster", v)
        outside = None
        if inst.opcode == "mapa":
            rank = wave.read(ops[2], idx, 32).astype(np.int64)
            # a rank outside the cluster: the ISA defines no result (9.7.9.21); CuTe's
            # cluster-launch-control code computes such addresses and never uses them, so the
            # destination is poison (machine/poison.py) rather than an error here
            outside = (rank < 0) | (rank >= sh.cluster_size)
            if outside.any():
                # the H200's bits: the rank goes into bits 24+ of the shared::cluster address
                # like any other (ranks 0-31 measured, tests/data/hardware/poison)
                far = ((v & np.uint64(CLUSTER_OFFSET_MASK))
                       | (rank.astype(np.uint64) << np.uint64(CLUSTER_RANK_SHIFT))) \
                    & np.uint64(0xFFFFFFFF)
                rank = np.where(outside, 0, rank)
            else:
                outside = None
            r = sh.mapa(v, rank, wave.cta_of[idx])
            if outside is not None:
                r = np.where(outside, far, r)
            if generic:
                r = wave.memory.cvta_to_generic("shared::cluster", r)
        else:
            r = sh.getctarank(v, wave.cta_of[idx])
        wave.write(ops[0], idx, r)
        if outside is not None:
            poison.produce(wave, ops[0], np.asarray(idx)[outside], inst,
                           f"mapa to a CTA rank outside the cluster of {sh.cluster_size}")
        wave.advance(idx)
    return run
