"""Asynchronous copies (9.7.9.23-27): cp.async.bulk.tensor tile loads / stores (multicast,
.cta_group::2), cp.async.bulk, cp.async (non-bulk), the async-group commit / wait of both
families, cp.async.mbarrier.arrive, tensormap.replace and tensormap.cp_fenceproxy. The copies are queued on the wave's
`AsyncProxy` and performed through `machine.tensormap` / `machine.memory`.
"""
from __future__ import annotations

import numpy as np

from ptxsim.errors import UndefinedBehavior, UnsupportedFeature
from ptxsim.machine import tensormap as tmod
from ptxsim.machine.handlers import tma_modes
from ptxsim.machine.handlers.common import (SPACE_QUALS, UINT, byte_words, chunk_words,
                                            cp_async_src_bytes, cta_group_of, san_async,
                                            shared_target)
from ptxsim.machine.memory import CLUSTER_OFFSET_MASK
from ptxsim.machine.tensormap import TensorMap
from ptxsim.ptx.instruction import Address, Immediate


# ------------------------------------------------------------------------------------- TMA
def _tensormap_at(wave, t, op, a=None):
    """The TensorMap at operand `op` of thread t (`a`: its address, when already read)."""
    ti = np.array([t])
    if a is None:
        a = int(wave.addr(op, ti)[0]) if isinstance(op, Address) else \
            int(wave.read(op, ti, 64)[0])
    blob = wave.memory.read_block(_tensormap_space(wave, op), a, 128, thread=t)
    tm = TensorMap.from_bytes(blob)
    return tm


def _tensormap_space(wave, op) -> str:
    base = op.base if isinstance(op, Address) else getattr(op, "name", None)
    sym = wave.launch.symbols.get(base) if base else None
    if sym is not None and wave.program.registers.get(base) is None:
        return sym.space
    return "generic"


_SAME_FOR_ALL = ("param", "const", "global")


def _tensormaps(wave, op, addrs: np.ndarray, idx: np.ndarray):
    """[(TensorMap, positions in idx)] of the maps the issuing threads name: each distinct map
    read and decoded once (per address; per CTA for maps in shared memory, per thread in local
    memory, whose bytes differ between them)."""
    space = _tensormap_space(wave, op)
    owner = np.zeros(idx.size, np.int64)                 # who else sees the same bytes
    if space == "generic":
        kinds = wave.memory.classify(addrs)
        shared = kinds == "shared"
        local = kinds == "local"
        owner[shared] = wave.cta_of[idx[shared]] + 1
        owner[local] = -(idx[local] + 1)
    elif space not in _SAME_FOR_ALL:
        owner = wave.cta_of[idx] + 1 if space.startswith("shared") else -(idx + 1)
    keys = np.stack([addrs.astype(np.uint64), owner.astype(np.uint64)])
    if (keys == keys[:, :1]).all():
        groups = [(0, np.arange(idx.size))]
    else:
        _, first, inv = np.unique(keys, axis=1, return_index=True, return_inverse=True)
        inv = inv.reshape(-1)
        groups = [(int(f), np.flatnonzero(inv == g)) for g, f in enumerate(first.tolist())]
    out = []
    for f, sel in groups:
        blob = wave.memory.read_block(space, int(addrs[f]), 128, thread=int(idx[f]))
        out.append((TensorMap.from_bytes(blob), sel))
    return out


def _san(wave):
    """The wave's sanitizer when its checks are on, else None."""
    s = wave.san
    return s if s is not None and s.enabled else None


def _san_tma_store(san, inst, idx, cta, src, maps, shared, store):
    """TMA tile stores of threads idx for the sanitizer: each box's shared-memory chunks read
    and its global rows written until the issuing thread's bulk async-group completes."""
    per_cta = shared.data.shape[1] // 16
    copy, words, gcopy, gstart, glen = [], [], [], [], []
    for tm, sel, c in maps:
        k, w = chunk_words(san, tmod._box_chunks(tm, shared, cta[sel], src[sel]), per_cta,
                           ordered=True)
        copy.append(sel[k])
        words.append(w)
        b, s_, n_ = tmod.tiles_global_rows(tm, c)
        gcopy.append(sel[b])
        gstart.append(s_)
        glen.append(n_)
    store, _ = san_async(san, inst, "tma_store", "tma", idx, store, None,
                         rwords=(np.concatenate(copy), np.concatenate(words)),
                         gwrite=(np.concatenate(gcopy), np.concatenate(gstart),
                                 np.concatenate(glen)),
                         trace=lambda sel: {"smem": int(src[sel[0]]), "cta": int(cta[sel[0]])})
    return store


def _tma(wave, inst):
    """cp.async.bulk.tensor.Nd.dst.src{.load_mode}.completion{.multicast}{.cta_group}
    (9.7.9.25.5.1): tile mode loads (global -> shared::cluster, complete-tx on an mbarrier,
    multicast) and stores (shared::cta -> global, bulk async-group). The copies the threads of
    one step issue are one asynchronous operation: each distinct tensor map read once, the
    boxes of one map copied together (`tensormap.tma_load_tiles` / `tma_store_tiles`), the
    complete-tx signals one vectorised update, all in thread order."""
    ops = inst.operands
    spaces = [q for q in inst.qualifiers if q in (".global", ".shared::cluster", ".shared::cta")]
    load = bool(spaces) and spaces[0] != ".global"        # .dst.src: shared <- global
    if any(q.startswith((".im2col", ".tile::")) for q in inst.qualifiers):
        return tma_modes.tensor_mode(wave, inst, _tensormap_at)    # gather4 / scatter4 / im2col
    mc = inst.has(".multicast::cluster")
    cg = cta_group_of(inst)
    text = f"line {inst.loc.line}: {inst}"

    tens = ops[1] if load else ops[0]
    tens_at = Address(tens.base, tens.offset)
    cs = wave.launch.geometry.cluster_size
    shared = wave.memory.shared
    san = _san(wave)

    def run(idx):
        # every operand of all issuing threads read at once (registers do not change while
        # the step issues)
        idx = np.array(idx, np.int64)
        cta = wave.cta_of[idx]
        taddr = wave.addr(tens_at, idx)
        coords = np.stack([wave.read(c, idx, 32).astype(np.uint32).view(np.int32)
                           .astype(np.int64) for c in tens.vector.elements], 1)
        maps = []
        for tm, sel in _tensormaps(wave, tens_at, taddr, idx):
            # the packed sub-byte types' restrictions (9.7.9.25.5.1), named at the issue
            tmod.check_packed_copy(tm, coords[sel], store=not load, target=wave.launch.target)
            maps.append((tm, sel, coords[sel]))
        if not load:
            _, src = shared.resolve_own(wave.addr(ops[1], idx), cta)
            src = np.asarray(src, np.int64)

            def store():
                for tm, sel, c in maps:
                    tmod.tma_store_tiles(tm, c, wave.memory.global_, shared, cta[sel], src[sel])
            if san is not None:
                store = _san_tma_store(san, inst, idx, cta, src, maps, shared, store)
            wave.proxy.issue(int(idx[0]), "bulk", perform=store, what=text, threads=idx)
            wave.advance(idx)
            return
        dst = wave.addr(ops[0], idx)
        mbar = wave.addr(ops[2], idx)
        dcta, doff = shared.resolve_cluster(dst, cta)
        mcta, moff = shared.resolve_cluster(mbar, cta)
        dcta, doff = np.asarray(dcta, np.int64), np.asarray(doff, np.int64)
        mcta, moff = np.asarray(mcta, np.int64), np.asarray(moff, np.int64)
        member = np.arange(idx.size)
        if mc:
            masks = wave.read(ops[3], idx, 16).astype(np.int64)
            if mc and cg == 1 and (mcta != dcta).any():
                raise UndefinedBehavior("cp.async.bulk.tensor .cta_group::1: the mbarrier must "
                                        "be in the same CTA as the shared-memory destination")
            for m in masks.tolist():                      # the named errors of multicast_ranks
                if m >> cs:
                    tmod.multicast_ranks(m, cs)
            hit = (masks[:, None] >> np.arange(cs)[None, :]) & 1 != 0
            member, r = np.nonzero(hit)                   # thread order, then rank order
            first = cta[member] - cta[member] % cs
            data_cta = first + r
            sig_cta = (first + r) if cg == 1 else first + ((r & ~1) | (mcta[member] % cs & 1))
            doff, moff = doff[member], moff[member]
        else:
            data_cta, sig_cta = dcta, mcta
        of_map = np.empty(idx.size, np.int64)
        for k, (_, sel, _) in enumerate(maps):
            of_map[sel] = k
        of_map = of_map[member]
        box = np.array([tm.box_bytes for tm, _, _ in maps], np.int64)[of_map]
        copies = []
        for k, (tm, sel, c) in enumerate(maps):
            pick = np.flatnonzero(of_map == k)
            pos = np.searchsorted(sel, member[pick])      # each copy's row of c
            copies.append((tm, c[pos], data_cta[pick], doff[pick]))

        def perform():
            for tm, c, dc, do in copies:
                tmod.tma_load_tiles(tm, c, wave.memory.global_, shared, dc, do)

        def signal():
            wave.mbar.complete_tx(sig_cta, moff, box)
        if san is not None:
            per_cta = shared.data.shape[1] // 16
            parts = [(np.flatnonzero(of_map == k), tm) for k, (tm, _, _) in enumerate(maps)]
            cw = [chunk_words(san, tmod._box_chunks(tm, shared, data_cta[pk], doff[pk]),
                              per_cta) for pk, tm in parts]
            perform, signal = san_async(
                san, inst, "tma", "tma", idx[member], perform, signal,
                wwords=(np.concatenate([pk[c] for (pk, _), (c, _) in zip(parts, cw)]),
                        np.concatenate([w for _, w in cw])),
                mbar=(sig_cta, moff),
                trace=lambda sel: {"smem": int(doff[sel[0]]), "cta": int(data_cta[sel[0]])})
        wave.proxy.issue(int(idx[0]), "bulk", perform=perform, signal=signal, what=text,
                         threads=idx)
        wave.advance(idx)
    return run


def _reduce_tensor(wave, inst):
    """cp.reduce.async.bulk.tensor (handlers/tma_modes.py)."""
    return tma_modes.reduce_tensor(wave, inst, _tensormap_at)


def _bulk(wave, inst):
    """cp.async.bulk (non-tensor, 9.7.9.25.4.1): global -> shared::cluster with complete-tx;
    shared::cta -> global with a bulk async-group; shared::cta -> shared::cluster. The copies of
    one step are one asynchronous operation (`_bulk_copies`: all bytes in one gather and one
    scatter), their complete-tx one vectorised update, in thread order."""
    q = inst.qualifiers
    ops = inst.operands
    if inst.has(".ignore_oob") or inst.has(".cp_mask"):
        # PTX ISA 9.2 / 8.6 forms with extra operands (ignoreBytesLeft / Right, byteMask) whose
        # ISA text ptxsim does not have: named, not guessed
        raise UnsupportedFeature(f"{inst.mnemonic}: .ignore_oob / .cp_mask are not modelled")
    dst_space = SPACE_QUALS.get(q[0]) if q else None
    text = f"line {inst.loc.line}: {inst}"
    mode = ("g2s" if dst_space == "shared::cluster" and inst.has(".global") else
            "s2g" if dst_space == "global" else "s2s")
    san = _san(wave)

    def run(idx):
        idx = np.array(idx, np.int64)
        cta = wave.cta_of[idx]
        dst = wave.addr(ops[0], idx).astype(np.int64)
        src = wave.addr(ops[1], idx).astype(np.int64)
        size = wave.read(ops[2], idx, 32).astype(np.int64)
        sh = wave.memory.shared
        if mode != "g2s":                     # a shared::cta source of the executing CTA
            src = np.asarray(sh.resolve_own(src.astype(np.uint64), cta)[1], np.int64)
        signal = None
        if mode != "s2g":
            dc, do = sh.resolve_cluster(dst.astype(np.uint64), cta)
            mc_, mo = sh.resolve_cluster(wave.addr(ops[3], idx), cta)

            def signal(c=np.asarray(mc_, np.int64), o=np.asarray(mo, np.int64), n=size):
                wave.mbar.complete_tx(c, o, n)
        else:
            dc, do = None, dst

        def perform():
            _bulk_copies(wave, mode, cta, src, np.asarray(dc) if dc is not None else None,
                         np.asarray(do, np.int64), size)
        if san is not None:
            perform, signal = san_async(
                san, inst, "bulk", "bulk", idx, perform, signal,
                rwords=byte_words(san, cta, src, size) if mode != "g2s" else None,
                wwords=byte_words(san, dc, do, size) if mode != "s2g" else None,
                mbar=(mc_, mo) if mode != "s2g" else None,
                gwrite=(np.arange(idx.size), dst, size) if mode == "s2g" else None)
        wave.proxy.issue(int(idx[0]), "bulk", perform=perform, signal=signal, what=text,
                         threads=idx)
        wave.advance(idx)
    return run


def _bulk_copies(wave, mode, cta, src, dcta, dst, size) -> None:
    """The bulk copies of one step, in thread order: each member's `size` bytes (a later copy's
    bytes win where copies overlap). When a check fails (size, alignment, a shared-memory window
    or a global buffer), the copies run one by one, so the error is the one of the first bad
    copy, as the per-copy functions raise it."""
    sh, gm = wave.memory.shared, wave.memory.global_
    S = sh.data.shape[1]
    sm_src = src if mode != "g2s" else None
    ok = ((size > 0) & (size % 16 == 0) & (src % 16 == 0) & (dst % 16 == 0)).all()
    if ok and sm_src is not None:
        ok = ((sm_src >= 0) & (sm_src + size <= S)).all()
    if ok and mode != "s2g":
        ok = ((dst >= 0) & (dst + size <= S)).all()
    total = int(size.sum())
    if ok:
        start = np.cumsum(size) - size
        member = np.repeat(np.arange(size.size), size)
        byte = np.arange(total) - np.repeat(start, size)
        if mode == "g2s":
            b, _ = gm._one_buffer(src, 1)
            b_hi, _ = gm._one_buffer(src + size - 1, 1)
            ok = b is not None and b is b_hi
    if not ok:
        for k in range(size.size):
            s_, d_, n_, c_ = int(src[k]), int(dst[k]), int(size[k]), int(cta[k])
            if mode == "g2s":
                tmod.bulk_global_to_shared(gm, s_, sh.cta_view(int(dcta[k])), d_, n_)
            elif mode == "s2g":
                tmod.bulk_shared_to_global(sh.cta_view(c_), s_, gm, d_, n_)
            else:
                tmod.bulk_shared_to_shared(sh.cta_view(c_), s_, sh.cta_view(int(dcta[k])), d_,
                                           n_)
        return
    flat = sh.data.reshape(-1)
    if mode == "g2s":
        data = gm.read((src[member] + byte).astype(np.uint64), 1)[:, 0]
    else:
        data = flat[cta[member] * S + src[member] + byte]
    if mode == "s2g":
        gm.write((dst[member] + byte).astype(np.uint64), data[:, None])
    else:
        flat[dcta[member] * S + dst[member] + byte] = data


def _commit_group(wave, inst):
    """cp.async.bulk.commit_group / cp.async.commit_group: each executing thread's uncommitted
    operations of that family become a new async-group (one vectorised update)."""
    fam = "bulk" if "bulk" in inst.opcode else "cp_async"
    san = _san(wave)

    def cg(idx):
        wave.proxy.commit_groups(idx, fam)
        if san is not None:
            san.group_commit(idx, fam)
        wave.advance(idx)
    return cg


def _wait_group(wave, inst):
    """cp.async.bulk.wait_group N / cp.async.wait_group N / cp.async.wait_all: complete all but the
    N most recent groups of each executing thread (wait_all: commit, then wait for all)."""
    op = inst.opcode
    fam = "bulk" if "bulk" in op else "cp_async"
    n = int(inst.operands[0].value) if inst.operands else 0
    wait_all = op == "cp.async.wait_all"
    san = _san(wave)

    def wg(idx):
        if wait_all:
            wave.proxy.commit_groups(idx, fam)
        wave.proxy.wait_groups(idx, fam, n)
        if san is not None:
            if wait_all:
                san.group_commit(idx, fam)
            san.group_wait(idx, fam, n)
        wave.advance(idx)
    return wg


def _cp_async(wave, inst):
    """cp.async.{ca,cg}.shared{::cta}.global [dst], [src], cp-size{, src-size | ignore-src}
    {, cache-policy} (9.7.9.23): queued as one cp_async operation for all executing threads
    (global read at completion), zero-filled beyond src-size (all of it where ignore-src)."""
    ops = inst.operands
    size = int(ops[2].value)
    text = f"line {inst.loc.line}: {inst}"
    el = 4 if size % 4 == 0 else 1
    san = _san(wave)

    def run(idx):
        dst = wave.addr(ops[0], idx).astype(np.int64)
        src = wave.addr(ops[1], idx)
        srcsize = cp_async_src_bytes(wave, inst, idx)     # src-size / ignore-src
        mem = wave.memory
        idx_c = np.array(idx, np.int64)

        def perform():
            full = srcsize >= size
            if full.all() and mem.direct_ok("global", el, size // el) and \
                    not (src % np.uint64(size)).any() and not (dst % size).any():
                # whole copies, aligned: one typed gather and one typed scatter (the direct
                # paths decline anything unusual, then the byte path below decides)
                vals = mem.load_direct("global", src, el, size // el, idx_c)
                if vals is not None and mem.store_direct("shared::cta", dst.astype(np.uint64),
                                                         vals, el, size // el, idx_c):
                    return
            data = np.zeros((idx_c.size, size), np.uint8)
            if full.all():
                data[:] = mem.load_bytes("global", src, size, thread=idx_c)
            else:
                if full.any():
                    data[full] = mem.load_bytes("global", src[full], size, thread=idx_c[full])
                # partial copies: byte k of every thread whose src-size exceeds k (at most
                # cp-size rounds, vectorised over the threads)
                for k in range(size):
                    part = np.flatnonzero(~full & (srcsize > k))
                    if not part.size:
                        break
                    data[part, k] = mem.load_bytes("global", src[part] + np.uint64(k), 1,
                                                   thread=idx_c[part]).reshape(-1)
            vals = data.view(UINT[el]).reshape(idx_c.size, size // el)
            for k in range(size // el):           # one store per element of the copy
                mem.store("shared::cta", (dst + k * el).astype(np.uint64), vals[:, k:k + 1], el,
                          thread=idx_c)
        if san is not None:
            perform = _san_cp_async(san, wave, inst, idx, dst, size, perform)
        wave.proxy.issue(int(idx[0]), "cp_async", perform=perform, what=text, threads=idx_c)
        wave.advance(idx)
    return run


def _san_cp_async(san, wave, inst, idx, dst, size, perform):
    """cp.async of threads idx for the sanitizer: per CTA one record writing `size` bytes at
    each of its threads' shared offsets, completed through their async-groups or
    cp.async.mbarrier.arrive."""
    off = np.asarray(dst, np.int64) & CLUSTER_OFFSET_MASK    # the shared::cta rank bits off
    perform, _ = san_async(san, inst, "cp.async", "cp.async", idx, perform, None,
                           wwords=byte_words(san, wave.cta_of[idx], off, size),
                           family="cp_async")
    return perform


def _cp_async_arrive(wave, inst):
    """cp.async.mbarrier.arrive{.noinc}{.shared{::cta}}.b64 [mbar] (9.7.9.23.x): arrive-on the
    mbarrier once the thread's prior cp.async complete. ptxsim completes those copies now (an
    allowed completion time), so the form without .noinc (pending count +1, then the arrive)
    has no net effect on the phase, and .noinc is one arrive now."""
    noinc = inst.has(".noinc")
    san = _san(wave)

    def run(idx):
        wave.proxy.complete_family(idx, "cp_async")
        if san is not None:
            cta, off = shared_target(wave, inst, inst.operands[0], idx)
            san.cp_async_arrive(idx, cta, off)
        if noinc:
            cta, off = shared_target(wave, inst, inst.operands[0], idx)
            wave.mbar.arrive(cta, off, 1)
            if san is not None:
                san.mb_sync(cta, off)
        wave.advance(idx)
    return run


# ------------------------------------------------------------------------- tensormap.replace
TM_FIELDS_NATURAL = ("global_address", "rank", "box_dim", "global_dim", "global_stride",
                     "element_stride")


TM_FIELDS_CODED = ("elemtype", "interleave_layout", "swizzle_mode", "swizzle_atomicity",
                   "fill_mode")


def _tensormap_replace(wave, inst):
    """tensormap.replace.tile.field{.ss}.b1024.type [addr], {ord,} new_val (PTX 9.7.9.x): one
    field of the 128-byte tensor map at addr (.global or .shared::cta, generic by default)
    written exactly as the GPU writes it (machine/tensormap.py replace_field, measured on an
    H200); `.rank` takes rank - 1 (the ISA: "ones less than the desired tensor rank"). The
    threads of one step: each distinct map (address, and CTA / thread where the bytes differ
    between them) read, edited and written once; a field several threads replace holds the last
    one's value (the write sets the field's bits whatever they held), every distinct code of a
    coded field still checked in thread order."""
    field = next((q[1:] for q in inst.qualifiers
                  if q[1:] in TM_FIELDS_NATURAL or q[1:] in TM_FIELDS_CODED), None)
    if field is None:
        raise UnsupportedFeature(f"{inst.mnemonic}: field not modelled (modelled: "
                                 f"{', '.join(TM_FIELDS_NATURAL + TM_FIELDS_CODED)})")
    space = next((q for q in (".global", ".shared::cta") if inst.has(q)), None)
    ops = inst.operands
    has_ord = field in ("box_dim", "global_dim", "global_stride", "element_stride")
    mem = wave.memory
    sp = {".global": "global", ".shared::cta": "shared::cta"}.get(space, "generic")
    width = 64 if field in ("global_address", "global_stride") else 32

    def run(idx):
        idx = np.array(idx, np.int64)
        addrs = wave.addr(ops[0], idx)
        values = wave.read(ops[-1], idx, width).astype(np.uint64)
        ordinal = int(ops[1].value) if has_ord else None
        owner = np.zeros(idx.size, np.int64)             # whose bytes the address names
        kinds = mem.classify(addrs) if sp == "generic" else None
        if sp == "shared::cta" or (kinds is not None and (kinds == "shared").any()):
            sel = slice(None) if sp == "shared::cta" else kinds == "shared"
            owner[sel] = wave.cta_of[idx[sel]] + 1
        if kinds is not None and (kinds == "local").any():
            owner[kinds == "local"] = -(idx[kinds == "local"] + 1)
        keys = np.stack([addrs.astype(np.uint64), owner.astype(np.uint64)])
        _, first, inv = np.unique(keys, axis=1, return_index=True, return_inverse=True)
        inv = inv.reshape(-1)
        for g in np.argsort(first).tolist():             # maps in order of their first thread
            mine = np.flatnonzero(inv == g)
            t, addr = int(idx[mine[0]]), int(addrs[mine[0]])
            blob = bytes(np.asarray(mem.read_block(sp, addr, 128, thread=t), np.uint8))
            vals = values[mine]
            if field in TM_FIELDS_CODED:                 # each distinct code checked, in order
                u, at = np.unique(vals, return_index=True)
                for v in u[np.argsort(at)].tolist():
                    tmod.replace_field(blob, field, v, ordinal)
            new = tmod.replace_field(blob, field, int(vals[-1]), ordinal)
            _store_block(mem, sp, addr, new, t)
        wave.advance(idx)
    return run


def _tensormap_cp_fenceproxy(wave, inst):
    """tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.scope.sync.aligned
    [dst], [src], 128: the warp copies the 128-byte map from shared to global memory (fused
    with the proxy fence, which needs no action here: the copy is visible at once). The H200
    writes exactly the 128 bytes (hardware/tensormap, tma record 0). .aligned: every thread of
    the warp names the same addresses; distinct ones are undefined."""
    from ptxsim.machine.grid import WARP_SIZE
    ops = inst.operands
    size = int(ops[2].value) if len(ops) > 2 and hasattr(ops[2], "value") else 128
    mem = wave.memory
    text = f"line {inst.loc.line}: {inst}"

    def run(idx):
        dst = wave.addr(ops[0], idx).astype(np.uint64)
        src = wave.addr(ops[1], idx).astype(np.uint64)
        warp = idx // WARP_SIZE
        for w in np.unique(warp):
            sel = warp == w
            d, s_ = np.unique(dst[sel]), np.unique(src[sel])
            if d.size != 1 or s_.size != 1:
                raise UndefinedBehavior(f"{text}: the threads of warp {int(w)} name different "
                                        "addresses of a .sync.aligned tensormap.cp_fenceproxy")
            t = int(idx[sel][0])
            blob = mem.read_block("shared::cta", int(s_[0]), size, thread=t)
            _store_block(mem, "global", int(d[0]), bytes(np.asarray(blob, np.uint8)), t)
        wave.advance(idx)
    return run


def _store_block(mem, space, addr, data: bytes, t):
    words = np.frombuffer(data, "<u4")
    for k in range(0, words.size, 4):
        mem.store(space, np.array([addr + 4 * k], np.uint64), words[k:k + 4].reshape(1, 4), 4,
                  vec=4, thread=np.array([t]))
