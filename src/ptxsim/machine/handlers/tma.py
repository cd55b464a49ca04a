"""Asynchronous copies (9.7.9.23-27): cp.async.bulk.tensor tile loads / stores (multicast,
.cta_group::2), cp.async.bulk, cp.async (non-bulk), the async-group commit / wait of both
families, cp.async.mbarrier.arrive, tensormap.replace and tensormap.cp_fenceproxy. The copies are queued on the wave's
`AsyncProxy` and performed through `machine.tensormap` / `machine.memory`.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ptxsim.errors import UndefinedBehavior, UnsupportedFeature
from ptxsim.machine import tensormap as tmod
from ptxsim.machine.handlers import tma_modes
from ptxsim.machine.handlers.common import SPACE_QUALS, UINT, cta_group_of, shared_target
from ptxsim.machine.tensormap import TensorMap
from ptxsim.ptx.instruction import Address, Immediate


# ------------------------------------------------------------------------------------- TMA
def _tensormap_at(wave, t, op, a=None):
    """The TensorMap at operand `op` of thread t (`a`: its address, when already read)."""
    ti = np.array([t])
    if a is None:
        a = int(wave.addr(op, ti)[0]) if isinstance(op, Address) else \
            int(wave.read(op, ti, 64)[0])
    base = op.base if isinstance(op, Address) else getattr(op, "name", None)
    sym = wave.launch.symbols.get(base) if base else None
    space = "generic"
    if sym is not None and wave.program.registers.get(base) is None:
        space = sym.space
    blob = wave.memory.read_block(space, a, 128, thread=t)
    tm = TensorMap.from_bytes(blob)
    return tm


def _packed_as_bytes(tm, coords):
    """CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B (16 packed 4-bit values per 8 bytes, no gaps): the
    same copy as a uint8 map over the packed bytes, dimension 0 and its coordinate halved (the
    inner coordinate of an aligned box is even). Other packed types stay unsupported."""
    if tm.dtype != "16u4_align8b":
        return tm, coords
    if coords[0] % 2 or tm.global_dim[0] % 2 or tm.box_dim[0] % 2:
        raise UnsupportedFeature("16U4_ALIGN8B tensor map with an odd inner coordinate or size")
    tm = dataclasses.replace(tm, dtype="uint8",
                             global_dim=(tm.global_dim[0] // 2,) + tuple(tm.global_dim[1:]),
                             box_dim=(tm.box_dim[0] // 2,) + tuple(tm.box_dim[1:]))
    return tm, [coords[0] // 2] + list(coords[1:])


def _tma(wave, inst):
    """cp.async.bulk.tensor.Nd.dst.src{.load_mode}.completion{.multicast}{.cta_group}
    (9.7.9.25.5.1): tile mode loads (global -> shared::cluster, complete-tx on an mbarrier,
    multicast) and stores (shared::cta -> global, bulk async-group)."""
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

    def run(idx):
        # every operand of all issuing threads read at once (registers do not change while
        # the step issues); the tensor map itself is read per thread, at its issue
        tmaps = wave.addr(tens_at, idx).tolist()
        cvals = [wave.read(c, idx, 32) for c in tens.vector.elements]
        if load:
            dsts = wave.addr(ops[0], idx).tolist()
            mbars = wave.addr(ops[2], idx).tolist()
            masks = wave.read(ops[3], idx, 16) if mc else None
        else:
            srcs = wave.addr(ops[1], idx).tolist()
        for k, (t, cta) in enumerate(zip(idx.tolist(), wave.cta_of[idx].tolist())):
            if load:
                dst = dsts[k]
                tm = _tensormap_at(wave, t, tens_at, tmaps[k])
                coords = [int(np.int64(np.int32(np.uint32(v[k])))) for v in cvals]
                mbar = mbars[k]
                mask = int(masks[k]) if mc else None
                tm, coords = _packed_as_bytes(tm, coords)
                tmod.issue_tma_load(wave.proxy, t, tm, coords, wave.memory, wave.mbar, cta=cta,
                                    dst=dst, mbar=mbar, cta_mask=mask, cta_group=cg, what=text)
            else:
                tm = _tensormap_at(wave, t, tens_at, tmaps[k])
                coords = [int(np.int64(np.int32(np.uint32(v[k])))) for v in cvals]
                (_,), (src,) = wave.memory.shared.resolve_own([srcs[k]], [cta])
                src = int(src)
                smem = wave.memory.shared.cta_view(cta)
                tm, coords = _packed_as_bytes(tm, coords)
                wave.proxy.issue(t, "bulk", perform=lambda tm=tm, c=coords, s=src, sm=smem:
                                 tmod.tma_store_tile(tm, c, wave.memory.global_, sm, s),
                                 what=text)
        wave.advance(idx)
    return run


def _reduce_tensor(wave, inst):
    """cp.reduce.async.bulk.tensor (handlers/tma_modes.py)."""
    return tma_modes.reduce_tensor(wave, inst, _tensormap_at, _packed_as_bytes)


def _bulk(wave, inst):
    """cp.async.bulk (non-tensor, 9.7.9.25.4.1): global -> shared::cluster with complete-tx;
    shared::cta -> global with a bulk async-group; shared::cta -> shared::cluster."""
    q = inst.qualifiers
    ops = inst.operands
    if inst.has(".ignore_oob") or inst.has(".cp_mask"):
        # PTX ISA 9.2 / 8.6 forms with extra operands (ignoreBytesLeft / Right, byteMask) whose
        # ISA text ptxsim does not have: named, not guessed
        raise UnsupportedFeature(f"{inst.mnemonic}: .ignore_oob / .cp_mask are not modelled")
    dst_space = SPACE_QUALS.get(q[0]) if q else None
    text = f"line {inst.loc.line}: {inst}"

    def run(idx):
        for t in idx:
            t = int(t)
            ti = np.array([t])
            cta = int(wave.cta_of[t])
            dst = int(wave.addr(ops[0], ti)[0])
            src = int(wave.addr(ops[1], ti)[0])
            size = int(wave.read(ops[2], ti, 32)[0])
            sh = wave.memory.shared
            if dst_space == "shared::cluster" and inst.has(".global"):
                (dc,), (do,) = sh.resolve_cluster([dst], [cta])
                (mc_,), (mo,) = sh.resolve_cluster([int(wave.addr(ops[3], ti)[0])], [cta])
                wave.proxy.issue(t, "bulk", perform=lambda dc=dc, do=do, s=src, n=size:
                                 tmod.bulk_global_to_shared(wave.memory.global_, s,
                                                            sh.cta_view(int(dc)), int(do), n),
                                 signal=lambda c=mc_, o=mo, n=size:
                                 wave.mbar.complete_tx(int(c), int(o), n), what=text)
            elif dst_space == "global":
                (_,), (src,) = sh.resolve_own([src], [cta])
                src = int(src)
                wave.proxy.issue(t, "bulk", perform=lambda d=dst, s=src, n=size, c=cta:
                                 tmod.bulk_shared_to_global(sh.cta_view(c), s,
                                                            wave.memory.global_, d, n), what=text)
            else:
                (dc,), (do,) = sh.resolve_cluster([dst], [cta])
                (mc_,), (mo,) = sh.resolve_cluster([int(wave.addr(ops[3], ti)[0])], [cta])
                (_,), (src,) = sh.resolve_own([src], [cta])
                src = int(src)
                wave.proxy.issue(t, "bulk", perform=lambda dc=dc, do=do, s=src, n=size, c=cta:
                                 tmod.bulk_shared_to_shared(sh.cta_view(c), s,
                                                            sh.cta_view(int(dc)), int(do), n),
                                 signal=lambda c=mc_, o=mo, n=size:
                                 wave.mbar.complete_tx(int(c), int(o), n), what=text)
        wave.advance(idx)
    return run


def _commit_group(wave, inst):
    """cp.async.bulk.commit_group / cp.async.commit_group: each executing thread's uncommitted
    operations of that family become a new async-group (one vectorised update)."""
    fam = "bulk" if "bulk" in inst.opcode else "cp_async"

    def cg(idx):
        wave.proxy.commit_groups(idx, fam)
        wave.advance(idx)
    return cg


def _wait_group(wave, inst):
    """cp.async.bulk.wait_group N / cp.async.wait_group N / cp.async.wait_all: complete all but the
    N most recent groups of each executing thread (wait_all: commit, then wait for all)."""
    op = inst.opcode
    fam = "bulk" if "bulk" in op else "cp_async"
    n = int(inst.operands[0].value) if inst.operands else 0
    wait_all = op == "cp.async.wait_all"

    def wg(idx):
        if wait_all:
            wave.proxy.commit_groups(idx, fam)
        wave.proxy.wait_groups(idx, fam, n)
        wave.advance(idx)
    return wg


def _cp_async(wave, inst):
    """cp.async.{ca,cg}.shared{::cta}.global [dst], [src], cp-size{, src-size} (9.7.9.23):
    queued as one cp_async operation for all executing threads (global read at completion),
    zero-filled beyond src-size."""
    ops = inst.operands
    size = int(ops[2].value)
    text = f"line {inst.loc.line}: {inst}"
    el = 4 if size % 4 == 0 else 1

    def run(idx):
        dst = wave.addr(ops[0], idx).astype(np.int64)
        src = wave.addr(ops[1], idx)
        srcsize = (wave.read(ops[3], idx, 32).astype(np.int64) if len(ops) > 3 else
                   np.full(idx.size, size, np.int64))
        mem = wave.memory
        idx_c = np.array(idx, np.int64)

        def perform():
            data = np.zeros((idx_c.size, size), np.uint8)
            full = srcsize >= size
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
        wave.proxy.issue(int(idx[0]), "cp_async", perform=perform, what=text, threads=idx_c)
        wave.advance(idx)
    return run


def _cp_async_arrive(wave, inst):
    """cp.async.mbarrier.arrive{.noinc}{.shared{::cta}}.b64 [mbar] (9.7.9.23.x): arrive-on the
    mbarrier once the thread's prior cp.async complete. ptxsim completes those copies now (an
    allowed completion time), so the form without .noinc (pending count +1, then the arrive)
    has no net effect on the phase, and .noinc is one arrive now."""
    noinc = inst.has(".noinc")

    def run(idx):
        wave.proxy.complete_family(idx, "cp_async")
        if noinc:
            cta, off = shared_target(wave, inst, inst.operands[0], idx)
            wave.mbar.arrive(cta, off, 1)
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
    H200); `.rank` takes rank - 1 (the ISA: "ones less than the desired tensor rank")."""
    field = next((q[1:] for q in inst.qualifiers
                  if q[1:] in TM_FIELDS_NATURAL or q[1:] in TM_FIELDS_CODED), None)
    if field is None:
        raise UnsupportedFeature(f"{inst.mnemonic}: field not modelled (modelled: "
                                 f"{', '.join(TM_FIELDS_NATURAL + TM_FIELDS_CODED)})")
    space = next((q for q in (".global", ".shared::cta") if inst.has(q)), None)
    ops = inst.operands
    has_ord = field in ("box_dim", "global_dim", "global_stride", "element_stride")
    mem = wave.memory

    def run(idx):
        for t in idx:
            t = int(t)
            ti = np.array([t])
            addr = int(wave.addr(ops[0], ti)[0])
            value = int(wave.read(ops[-1], ti, 64 if field in ("global_address",
                                                                "global_stride") else 32)[0])
            ordinal = int(ops[1].value) if has_ord else None
            sp = {".global": "global", ".shared::cta": "shared::cta"}.get(space, "generic")
            blob = mem.read_block(sp, addr, 128, thread=t)
            new = tmod.replace_field(bytes(np.asarray(blob, np.uint8)), field, value, ordinal)
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
