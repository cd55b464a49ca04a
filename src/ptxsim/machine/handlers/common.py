"""Helpers every handler family uses: the operand and qualifier readers (type, width, state space,
vector length, CTA group), the per-thread call `.param` bytes and the resolution of a
shared-memory address operand to (CTA, offset).
"""
from __future__ import annotations

import warnings

import numpy as np

from ptxsim.errors import SpecDeviationWarning
from ptxsim.machine.grid import WARP_SIZE
from ptxsim.machine.operands import (_SHARED_HI, _SHARED_LO, SPACE_QUALS,  # noqa: F401
                                     cp_async_src_bytes, shared_part, space_of, type_of,
                                     vec_of)
from ptxsim.machine.program import TYPE_BYTES
from ptxsim.ptx.instruction import Address, Vector


UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def width_of(t: str | None) -> int:
    if t is None:
        return 32
    return 8 * TYPE_BYTES.get(t, 4)


# ---------------------------------------------------------------------------------- mov
def elements_of(op):
    return op.elements if isinstance(op, Vector) else (op,)


def cta_group_of(inst) -> int:
    v = inst.value(".cta_group")
    return int(v) if v else 1


def warps_of(idx):
    """Executing warps (global warp numbers) and, per warp, its first executing thread."""
    w = idx // WARP_SIZE
    warps, first = np.unique(w, return_index=True)
    return warps, idx[first]


def callparam(wave, a):
    """The per-thread byte array of a call-site / formal .param (None for other addresses)."""
    if a.base is None or a.base not in wave.program.call_params:
        return None
    arr = wave.callparams.get(a.base)
    if arr is None:
        arr = wave.callparams[a.base] = np.zeros((wave.N, max(wave.program.call_params[a.base],
                                                              1)), np.uint8)
    return arr


# -------------------------------------------------------------------------------- mbarrier
def shared_target(wave, inst, op, idx, default="generic"):
    """(cta index, offset) of a shared-memory address operand."""
    space = space_of(inst, default)
    a = wave.addr(op, idx) if isinstance(op, Address) else wave.read(op, idx, 64).astype(
        np.uint64)
    cta = wave.cta_of[idx]
    if space == "generic":
        a = wave.memory.cvta_from_generic("shared::cluster", a)
        space = "shared::cluster"
    elif (a >= _SHARED_LO).any() and ((a >= _SHARED_LO) & (a < _SHARED_HI)).all():
        a = _generic_as_shared(wave, inst, a)
    if space == "shared::cta":
        return wave.memory.shared.resolve_own(a, cta)
    return wave.memory.shared.resolve_cluster(a, cta)


_warned: set = set()


def _generic_as_shared(wave, inst, a):
    """A generic address of the shared window given to an instruction with an explicit
    .shared::cta / .shared::cluster operand: undefined in the PTX ISA, but ThunderKittens'
    B200 kernels pass `cvta.shared` results to tcgen05.alloc.shared::cta and run on the
    hardware, whose generic shared window is 4 GiB aligned, so the address's low 32 bits are
    the shared address. ptxsim's window is 4 GiB aligned too: the same 32 bits are used, with a
    SpecDeviationWarning once per instruction."""
    key = (id(wave.program), inst.loc.line)
    if key not in _warned:
        _warned.add(key)
        warnings.warn(SpecDeviationWarning(
            f"line {inst.loc.line}: {inst}: a generic address is used as a shared-space "
            "address (undefined in the PTX ISA); its low 32 bits are taken, as the hardware "
            "does (ThunderKittens' B200 kernels rely on it)"), stacklevel=2)
    return a - _SHARED_LO


# ------------------------------------------------------------------------------- sanitizer
def san_shared(wave, inst, space: str, addr, idx, nbytes: int, write: bool,
               data=None) -> None:
    """Report a generic ld / st of `nbytes` per thread to the sanitizer (its shared part;
    `data`: the stored values, (n, ...) raw bits)."""
    got = shared_part(wave, space, addr, idx)
    if got is None:
        return
    sel, cta, off = got
    if data is not None:
        data = np.ascontiguousarray(data).view(np.uint8).reshape(idx.size, -1)
        if sel is not None:
            data = data[sel]
    wave.san.shared_access(inst, idx if sel is None else idx[sel], cta, off, nbytes, write,
                           data)


def san_bulk(san, inst, t, src, dcta, dst_bytes, mcta, moff, perform, signal,
             global_dst=None, src_chunks=None, global_rows=None):
    """One bulk copy of thread `t` for the sanitizer (the TMA modes of handlers/tma_modes.py):
    `src` (CTA, shared bytes) or `src_chunks` (CTA, 16-byte chunks) read, `dst_bytes` of CTA
    `dcta` written (or global memory: `global_dst` (address, size), `global_rows` (addresses,
    sizes)), completion through the mbarrier (mcta, moff) or the bulk async-group
    (`san_async`). Returns the (perform, signal) to issue."""
    sw = san.SW
    reads = []
    if src is not None:
        reads.append(src[0] * sw + np.asarray(src[1], np.int64) // 4)
    if src_chunks is not None:
        reads.append((src_chunks[0] * sw + 4 * np.asarray(src_chunks[1], np.int64)[:, None]
                      + np.arange(4)).reshape(-1))
    rw = np.unique(np.concatenate(reads)) if reads else None
    ww = np.unique(dcta * sw + np.asarray(dst_bytes, np.int64) // 4) if dcta is not None \
        else None
    gw = ([global_dst[0]], [global_dst[1]]) if global_dst is not None else global_rows
    th = np.array([t], np.int64)
    return san_async(san, inst, "bulk", "bulk", th, perform, signal,
                     rwords=(np.zeros(rw.size, np.int64), rw) if rw is not None else None,
                     wwords=(np.zeros(ww.size, np.int64), ww) if ww is not None else None,
                     mbar=(np.array([mcta]), np.array([moff])) if signal is not None else None,
                     gwrite=(np.zeros(len(gw[0]), np.int64), np.asarray(gw[0], np.int64),
                             np.asarray(gw[1], np.int64)) if gw is not None else None)


def byte_words(san, cta, start, size):
    """(copy index, flat shared-memory word) of copies of `size[k]` bytes at byte offset
    `start[k]` of CTA `cta[k]` (the sanitizer's word numbering)."""
    cta, start = np.asarray(cta, np.int64), np.asarray(start, np.int64)
    size = np.broadcast_to(np.asarray(size, np.int64), cta.shape)
    if size.size and not ((size | start) & 3).any():       # whole words: one entry a word
        if (size == size[0]).all():
            n = int(size[0]) // 4
            member = np.repeat(np.arange(cta.size), n)
            w = (cta * san.SW + start // 4)[:, None] + np.arange(n)
            return member, w.reshape(-1)
        nw = size // 4
        member = np.repeat(np.arange(cta.size), nw)
        k = np.arange(int(nw.sum())) - np.repeat(np.cumsum(nw) - nw, nw)
        return member, cta[member] * san.SW + start[member] // 4 + k
    total = int(size.sum())
    member = np.repeat(np.arange(cta.size), size)
    byte = np.arange(total) - np.repeat(np.cumsum(size) - size, size)
    return member, cta[member] * san.SW + (start[member] + byte) // 4


def chunk_words(san, chunks, per_cta: int, ordered: bool = False):
    """(copy index, flat word) of 16-byte chunk numbers (B, ...) of shared.data viewed as
    (-1, 16) (per_cta chunks a CTA), one row of chunks per copy. ordered: each copy's words
    ascending (its chunks sorted: a swizzled box permutes chunks within rows), so that
    san_async's words_of finds the copies of disjoint boxes in order and needs no sort of
    all words (4x the elements)."""
    chunks = np.asarray(chunks, np.int64).reshape(chunks.shape[0], -1)
    if ordered:
        chunks = np.sort(chunks, axis=1)
    w = ((chunks // per_cta) * san.SW + 4 * (chunks % per_cta))[:, :, None] + np.arange(4)
    return np.repeat(np.arange(chunks.shape[0]), w[0].size), w.reshape(-1)


def _san_async_merged(san, inst, kind, unit, threads, cta, perform, signal, wwords, mbar,
                      family):
    """san_async for copies into the issuing CTAs' own shared memory without clusters: one
    record for the copies of every CTA of the step, each CTA's part observed by its own warps
    (WaveSanitizer.merge_ok, `known`): the per-CTA records' checks at the cost of one."""
    rec = san.new_rec(kind, inst, int(threads[0]), unit)
    ctas = cta[np.r_[True, cta[1:] != cta[:-1]]] if (cta[1:] >= cta[:-1]).all() \
        else np.unique(cta)
    per = san.wave.P // WARP_SIZE
    rec.ctas = ctas
    rec.allw = (ctas[:, None] * per + np.arange(per)).ravel()
    ci = np.asarray(wwords[0], np.int64)
    words = np.asarray(wwords[1], np.int64)
    san.async_words_multi([rec], inst, [words], write=True, issuers=[threads[ci]])
    perform = san.wrap_all([(rec, None)], perform, lambda: san.async_words_done(words))
    if mbar is None:
        san.group_add(rec, threads, family)
        return perform, signal
    mc, mo = np.asarray(mbar[0], np.int64), np.asarray(mbar[1], np.int64)
    pairs = sorted(set(zip(mc.tolist(), mo.tolist())))
    base = signal

    def sig():
        for c, o in pairs:
            san.mb_signal(rec, c, o)
        base()
        san.mb_sync(mc, mo)
    return perform, sig


def san_async(san, inst, kind: str, unit: str, threads, perform, signal, *, rwords=None,
              wwords=None, mbar=None, gwrite=None, trace=None, family: str = "bulk"):
    """The asynchronous copies of one queued operation (issued by `threads`, one per copy) for
    the sanitizer: one record per issuing CTA, in array operations over the copies (a loop
    over CTAs only); each word is checked with the clock of the thread whose copy touches it
    (two warps of a CTA issuing in one step need not be ordered with each other's earlier
    accesses, e.g. FlashAttention-4's per-warpgroup TMA stores). rwords / wwords: (copy index, flat shared-memory word) arrays it reads /
    writes; mbar: (CTA, offset) arrays per copy whose complete-tx its completion is observed
    through, or None (the issuing threads' async-groups of `family`); gwrite: (copy index, start,
    length) arrays of global runs it writes; trace(copies) -> span arguments, or None.
    Returns the (perform, signal) to issue."""
    threads = np.asarray(threads, np.int64)
    cta = san.wave.cta_of[threads]
    if san.merge_ok and rwords is None and gwrite is None and wwords is not None and \
            cta.size > 1 and cta[0] != cta[-1]:
        return _san_async_merged(san, inst, kind, unit, threads, cta, perform, signal,
                                 wwords, mbar, family)
    order = np.argsort(cta, kind="stable")
    cut = np.flatnonzero(np.r_[True, cta[order][1:] != cta[order][:-1]])
    groups = np.split(order, cut[1:])                     # copies of each issuing CTA
    grp = np.empty(threads.size, np.int64)
    for g, sel in enumerate(groups):
        grp[sel] = g
    recs = []
    for sel in groups:
        rec = san.new_rec(kind, inst, int(threads[sel[0]]), unit)
        if trace is not None:
            rec.trace_args = trace(sel)
        recs.append(rec)

    def words_of(pairs):
        """Each record's words, sorted and distinct (one sort of all (record, word) pairs), and
        the issuing thread of each (of the first copy touching it)."""
        if pairs is None:
            return None, None
        ci = np.asarray(pairs[0], np.int64)
        g, w, th = grp[ci], np.asarray(pairs[1], np.int64), threads[ci]
        key = g * nw + w
        if key.size > 1 and not (key[1:] > key[:-1]).all():      # else sorted, distinct
            # one sort of (key, thread) packed in an int64 (np.sort: faster than argsort, and
            # np.unique hashes); each word keeps its lowest issuing thread
            nt = np.int64(san.wave.cta_of.size)
            k2 = np.sort(key * nt + th)
            key = k2 // nt
            first = np.r_[True, key[1:] != key[:-1]]
            key, th = key[first], (k2 % nt)[first]
            g, w = key // nw, key % nw
        b = np.searchsorted(g, np.arange(len(recs) + 1)).tolist()
        return ([w[b[k]:b[k + 1]] for k in range(len(recs))],
                [th[b[k]:b[k + 1]] for k in range(len(recs))])
    nw = np.int64(san.sw.size)
    (rw, rth), (ww, wth) = words_of(rwords), words_of(wwords)
    if rw is not None:
        san.async_words_multi(recs, inst, rw, write=False, issuers=rth)
    if ww is not None:
        san.async_words_multi(recs, inst, ww, write=True, issuers=wth)
    if gwrite is not None:
        g = grp[gwrite[0]]
        for k, rec in enumerate(recs):
            san.global_async_write(rec, gwrite[1][g == k], gwrite[2][g == k])
    perform = san.wrap_all([(rec, None) for rec in recs], perform,
                           (lambda: san.async_words_done(np.concatenate(ww))) if ww is not None
                           else None)
    if mbar is None:
        for rec, sel in zip(recs, groups):
            san.group_add(rec, threads[sel], family)
        return perform, signal
    mc, mo = np.asarray(mbar[0], np.int64), np.asarray(mbar[1], np.int64)
    pairs = [sorted(set(zip(mc[sel].tolist(), mo[sel].tolist()))) for sel in groups]
    base = signal

    def sig():
        for rec, ps in zip(recs, pairs):
            for c, o in ps:
                san.mb_signal(rec, c, o)
        base()
        san.mb_sync(mc, mo)
    return perform, sig
