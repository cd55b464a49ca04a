"""cp.reduce.async.bulk{.tensor} and the TMA load / store modes other than .tile
(machine/tma_modes.py has the copies): `.tile::gather4` / `.tile::scatter4` (sm_100a / sm_100f)
and `.im2col` loads; `handlers/tma.py` hands those modes of cp.async.bulk.tensor here. Each
issuing thread's operation is queued on the wave's asynchronous proxy, as tile copies are: a load
signals complete-tx on its mbarrier, a store or reduction into global memory joins the thread's
bulk async-group, a reduction into shared::cluster signals complete-tx.
"""
from __future__ import annotations

import numpy as np

from ptxsim.errors import OperandError, PtxsimError, UnsupportedFeature
from ptxsim.machine import tensormap as tmod
from ptxsim.machine import tma_modes
from ptxsim.machine.handlers.common import SPACE_QUALS, cta_group_of, san_bulk
from ptxsim.ptx.instruction import Address

def _san(wave):
    """The wave's sanitizer when its checks are on, else None."""
    s = wave.san
    return s if s is not None and s.enabled else None


_TYPES = ("f16", "bf16", "f32", "f64", "b32", "u32", "s32", "b64", "u64", "s64")
# modes of cp.async.bulk.tensor / cp.reduce.async.bulk.tensor that are named, not executed
UNMODELLED_MODES = {".im2col::w": "the .im2col::w load mode",
                    ".im2col::w::128": "the .im2col::w::128 load mode",
                    ".im2col_no_offs": "the .im2col_no_offs store / reduction mode"}


def _red_op(inst) -> str:
    ops = [q[1:] for q in inst.qualifiers if q[1:] in tma_modes.REDUCE_OPS]
    if len(ops) != 1:
        raise OperandError(f"{inst.mnemonic}: needs exactly one reduction operation "
                           f"({', '.join(tma_modes.REDUCE_OPS)})")
    return ops[0]


def _red_type(inst) -> str:
    ts = [q[1:] for q in inst.qualifiers if q[1:] in _TYPES]
    if len(ts) != 1:
        raise OperandError(f"{inst.mnemonic}: needs exactly one element type")
    t = ts[0]
    return {"b32": "u32", "b64": "u64"}.get(t, t)


def reduce_bulk(wave, inst):
    """cp.reduce.async.bulk.dst.src.completion.redOp.type [dstMem], [srcMem], size{, [mbar]}
    (9.7.9.25.4.2): .global <- .shared::cta with .bulk_group, .shared::cluster <- .shared::cta
    with .mbarrier::complete_tx::bytes."""
    op, t = _red_op(inst), _red_type(inst)
    tma_modes.reducer(op, t)                  # the pair exists (an error now, not at issue)
    dst_space = SPACE_QUALS.get(inst.qualifiers[0]) if inst.qualifiers else None
    ops = inst.operands
    text = f"line {inst.loc.line}: {inst}"
    sh = wave.memory.shared
    san = _san(wave)

    def run(idx):
        dsts = wave.addr(ops[0], idx).tolist()
        # a shared::cta source carries the CTA's rank in bits 24+ (memory.py): its offset
        srcs = sh.resolve_own(wave.addr(ops[1], idx), wave.cta_of[idx])[1].tolist()
        sizes = wave.read(ops[2], idx, 32).tolist()
        for k, t_ in enumerate(idx.tolist()):
            cta = int(wave.cta_of[t_])
            dst, src, size = int(dsts[k]), int(srcs[k]), int(sizes[k])
            if dst_space == "global":
                perform = (lambda d=dst, s=src, n=size, c=cta: tma_modes.reduce_shared_to_global(
                    sh.cta_view(c), s, wave.memory.global_, d, n, op, t))
                if san is not None:
                    perform, _ = san_bulk(san, inst, t_, (cta, np.arange(src, src + size)),
                                          None, None, None, None, perform, None,
                                          global_dst=(dst, size))
                wave.proxy.issue(t_, "bulk", perform=perform, what=text)
            else:
                ti = np.array([t_])
                (dc,), (do,) = sh.resolve_cluster([dst], [cta])
                (mc_,), (mo,) = sh.resolve_cluster([int(wave.addr(ops[3], ti)[0])], [cta])
                perform = (lambda dc=dc, do=do, s=src, n=size, c=cta:
                           tma_modes.reduce_shared_to_shared(
                               sh.cta_view(c), s, sh.cta_view(int(dc)), int(do), n, op, t))
                signal = (lambda c=mc_, o=mo, n=size: wave.mbar.complete_tx(int(c), int(o), n))
                if san is not None:
                    perform, signal = san_bulk(san, inst, t_, (cta, np.arange(src, src + size)),
                                               int(dc), np.arange(int(do), int(do) + size),
                                               int(mc_), int(mo), perform, signal)
                wave.proxy.issue(t_, "bulk", perform=perform, signal=signal, what=text)
        wave.advance(idx)
    return run


def reduce_tensor(wave, inst, tensormap_at):
    """cp.reduce.async.bulk.tensor.Nd.global.shared::cta.redOp{.tile}.bulk_group
    [tensorMap, coords], [srcMem] (9.7.9.25.5.2). `tensormap_at`: handlers/tma.py's reader of
    the map an operand names."""
    for q, what in UNMODELLED_MODES.items():
        if inst.has(q):
            raise UnsupportedFeature(f"{inst.mnemonic}: {what} is not modelled")
    op = _red_op(inst)
    ops = inst.operands
    tens = ops[0]
    tens_at = Address(tens.base, tens.offset)
    text = f"line {inst.loc.line}: {inst}"
    san = _san(wave)

    def run(idx):
        tmaps = wave.addr(tens_at, idx).tolist()
        cvals = [wave.read(c, idx, 32) for c in tens.vector.elements]
        srcs = wave.memory.shared.resolve_own(wave.addr(ops[1], idx),
                                              wave.cta_of[idx])[1].tolist()
        for k, (t_, cta) in enumerate(zip(idx.tolist(), wave.cta_of[idx].tolist())):
            tm = tensormap_at(wave, t_, tens_at, tmaps[k])
            coords = [int(np.int64(np.int32(np.uint32(v[k])))) for v in cvals]
            tmod.check_packed_copy(tm, reduce=True)      # no packed type (9.7.9.25.5.1)
            smem = wave.memory.shared.cta_view(cta)
            perform = (lambda tm=tm, c=coords, s=srcs[k], sm=smem:
                       tma_modes.reduce_tensor_tile(tm, c, wave.memory.global_, sm, int(s), op))
            if san is not None:
                try:
                    rows = tmod.tile_global_rows(tm, coords, wave.memory.global_)
                except PtxsimError:
                    rows = None                    # the copy reports its bad coordinates
                perform, _ = san_bulk(san, inst, t_, None, None, None, None, None, perform,
                                      None, global_rows=rows, src_chunks=(
                                          cta, tmod.tile_smem_chunks(tm, int(srcs[k]))))
            wave.proxy.issue(t_, "bulk", perform=perform, what=text)
        wave.advance(idx)
    return run


def tensor_mode(wave, inst, tensormap_at):
    """cp.async.bulk.tensor with .tile::gather4 / .tile::scatter4 / .im2col (the builder
    handlers/tma.py `_tma` hands these to, with its reader of tensor maps)."""
    for q, what in UNMODELLED_MODES.items():
        if inst.has(q):
            raise UnsupportedFeature(f"{inst.mnemonic}: {what} is not modelled")
    if inst.has(".multicast::cluster") or cta_group_of(inst) != 1:
        raise UnsupportedFeature(f"{inst.mnemonic}: .multicast::cluster / .cta_group::2 with "
                                 "the gather4 / im2col modes are not modelled")
    ops = inst.operands
    spaces = [q for q in inst.qualifiers if q in (".global", ".shared::cluster", ".shared::cta")]
    load = bool(spaces) and spaces[0] != ".global"
    mode = "gather4" if inst.has(".tile::gather4") else "scatter4" if \
        inst.has(".tile::scatter4") else "im2col"
    if (mode == "scatter4") == load or (mode == "im2col" and not load):
        raise OperandError(f"{inst.mnemonic}: .tile::{mode} is a "
                           f"{'store' if mode == 'scatter4' else 'load'} mode")
    tens = ops[1] if load else ops[0]
    tens_at = Address(tens.base, tens.offset)
    n_coords = len(tens.vector.elements)
    text = f"line {inst.loc.line}: {inst}"
    sh = wave.memory.shared
    info = ops[3] if mode == "im2col" and len(ops) > 3 else None   # {offsets}, 16-bit each
    san = _san(wave)

    def run(idx):
        tmaps = wave.addr(tens_at, idx).tolist()
        cvals = [wave.read(c, idx, 32) for c in tens.vector.elements]
        other = wave.addr(ops[0] if load else ops[1], idx)
        if not load:                          # a shared::cta source: its offset (rank bits off)
            other = sh.resolve_own(other, wave.cta_of[idx])[1]
        other = other.tolist()
        mbars = wave.addr(ops[2], idx).tolist() if load else None
        offs = ([wave.read(e, idx, 16) for e in info.elements] if info is not None else [])
        for k, (t_, cta) in enumerate(zip(idx.tolist(), wave.cta_of[idx].tolist())):
            tm = tensormap_at(wave, t_, tens_at, tmaps[k])
            coords = [int(np.int64(np.int32(np.uint32(v[k])))) for v in cvals]
            if mode == "im2col":
                if tm.mode != "im2col":
                    raise OperandError(f"{text}: .im2col with a tensor map of mode {tm.mode}")
                o = [int(v[k]) for v in offs]
                if not o and tm.rank > 2:
                    o = [0] * (tm.rank - 2)
            elif n_coords != 5:
                raise OperandError(f"{text}: .tile::{mode} takes 5 coordinates (dimension 0, "
                                   "then four rows)")
            # the packed sub-byte types' restrictions (9.7.9.25.5.1), named at the issue
            tmod.check_packed_copy(tm, [coords] if mode == "im2col" else
                                   [[coords[0], r] for r in coords[1:5]] if tm.rank == 2 else
                                   None, store=not load, target=wave.launch.target)
            if not load:
                smem = sh.cta_view(cta)
                perform = (lambda tm=tm, c=coords, s=int(other[k]), sm=smem:
                           tma_modes.scatter4_store(tm, c, wave.memory.global_, sm, s))
                if san is not None:                # four rows of box[0] elements read
                    s = int(other[k])
                    n = 4 * tm.smem_row_bytes
                    perform, _ = san_bulk(san, inst, t_, (cta, np.arange(s, s + n)), None, None,
                                          None, None, perform, None)
                wave.proxy.issue(t_, "bulk", perform=perform, what=text)
                continue
            (dc,), (do,) = sh.resolve_cluster([int(other[k])], [cta])
            (mc_,), (mo,) = sh.resolve_cluster([int(mbars[k])], [cta])
            if mode == "gather4":
                nbytes = 4 * tm.box_elements[0] * tm.element_bits // 8
                sbytes = 4 * tm.smem_row_bytes          # shared-memory bytes (packed: padded)
                perform = (lambda tm=tm, c=coords, dc=dc, do=do: tma_modes.gather4_load(
                    tm, c, wave.memory.global_, sh.cta_view(int(dc)), int(do)))
            else:
                nbytes = tm.pixels_per_column * tm.channels_per_pixel * tm.element_bits // 8
                sbytes = tm.pixels_per_column * tm.smem_row_bytes
                perform = (lambda tm=tm, c=coords, o=o, dc=dc, do=do: tma_modes.im2col_load(
                    tm, c, o, wave.memory.global_, sh.cta_view(int(dc)), int(do)))
            signal = (lambda c=mc_, mo=mo, n=nbytes: wave.mbar.complete_tx(int(c), int(mo), n))
            if san is not None:
                perform, signal = san_bulk(san, inst, t_, None, int(dc),
                                           np.arange(int(do), int(do) + sbytes), int(mc_),
                                           int(mo), perform, signal)
            wave.proxy.issue(t_, "bulk", perform=perform, signal=signal, what=text)
        wave.advance(idx)
    return run
