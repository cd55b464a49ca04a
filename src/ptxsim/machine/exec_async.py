"""Executor handlers for the asynchronous world: tcgen05.* (9.7.16), TMA / bulk copies
(cp.async.bulk{.tensor}, 9.7.9.25), cp.async (9.7.9.23), ldmatrix / stmatrix (9.7.14.5.15-16),
tensormap.replace, elect-free warp-level helpers.

tcgen05.mma / cp / shift and the TMA / bulk copies go through the wave's `AsyncProxy`: issued
now with the issuing thread's register values captured, performed later (in issue order) when
the scheduler has nothing runnable or a wait names them; tcgen05.commit queues an mbarrier
arrive behind them. tcgen05.ld / st are performed at issue (their results are then already
there at tcgen05.wait::ld / ::st, which is allowed: the wait only bounds completion).
"""
from __future__ import annotations

import numpy as np

from ptxsim.errors import UndefinedBehavior, UnsupportedFeature
from ptxsim.machine.grid import WARP_SIZE
from ptxsim.ptx.instruction import Address, Immediate, Register, Vector

UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _cta_group(inst) -> int:
    v = inst.value(".cta_group")
    return int(v) if v else 1


def _space(inst, default="generic"):
    from ptxsim.machine.exec_ops import _space as sp
    return sp(inst, default)


def _tcgen05_notes(wave, inst) -> None:
    """The PTX ISA / Target ISA notes of a tcgen05 Tensor Memory instruction (its row in the isa
    module's one table: isa/tmem.py, tmem_ldst.py, tmem_cp.py FORMS) against the launch target and
    the module's .version, once per instruction when its handler is built (both are fixed for the
    launch): e.g. tcgen05.alloc on sm_90a or tcgen05.ld.red on sm_100a is refused here, as ptxas
    refuses it (docs/legality.md)."""
    from ptxsim.isa import tmem, tmem_cp, tmem_ldst
    from ptxsim.isa.legality import check_notes
    op = inst.opcode
    key = "tcgen05.ld.red" if op == "tcgen05.ld" and inst.has(".red") else op
    for forms in (tmem.FORMS, tmem_ldst.FORMS, tmem_cp.FORMS):
        if key in forms:
            check_notes(forms[key], wave.launch.target, getattr(wave.launch, "ptx_version", None))
            return


def handler(wave, pc, inst):
    op = inst.opcode
    if op.startswith("tcgen05.") and op != "tcgen05.mma":
        _tcgen05_notes(wave, inst)
    if op in ("tcgen05.alloc", "tcgen05.dealloc", "tcgen05.relinquish_alloc_permit"):
        return _alloc(wave, inst)
    if op in ("tcgen05.ld", "tcgen05.st"):
        return _ldst(wave, inst)
    if op == "tcgen05.wait":
        return lambda idx: _adv(wave, idx)
    if op == "tcgen05.mma":
        return _mma(wave, inst)
    if op == "tcgen05.commit":
        return _commit(wave, inst)
    if op == "tcgen05.cp":
        return _cp(wave, inst)
    if op == "tcgen05.shift":
        return _shift(wave, inst)
    if op == "cp.async.bulk.tensor":
        return _tma(wave, inst)
    if op == "cp.async.bulk":
        return _bulk(wave, inst)
    if op in ("cp.async.bulk.commit_group", "cp.async.commit_group"):
        fam = "bulk" if "bulk" in op else "cp_async"

        def cg(idx):
            for t in idx:
                wave.proxy.commit_group(int(t), fam)
            _adv(wave, idx)
        return cg
    if op in ("cp.async.bulk.wait_group", "cp.async.wait_group", "cp.async.wait_all"):
        fam = "bulk" if "bulk" in op else "cp_async"
        n = int(inst.operands[0].value) if inst.operands else 0

        def wg(idx):
            for t in idx:
                if op == "cp.async.wait_all":
                    wave.proxy.commit_group(int(t), fam)
                wave.proxy.wait_group(int(t), fam, n)
            _adv(wave, idx)
        return wg
    if op == "cp.async":
        return _cp_async(wave, inst)
    if op == "cp.async.mbarrier.arrive":
        return _cp_async_arrive(wave, inst)
    if op == "clusterlaunchcontrol.try_cancel":
        return _clc_try_cancel(wave, inst)
    if op == "clusterlaunchcontrol.query_cancel":
        return _clc_query(wave, inst)
    if op == "tensormap.replace":
        return _tensormap_replace(wave, inst)
    if op == "ldmatrix":
        return _ldmatrix(wave, inst)
    if op == "stmatrix":
        return _stmatrix(wave, inst)
    return None


def _adv(wave, idx):
    wave.advance(idx)


def _warps(idx):
    """Executing warps (global warp numbers) and, per warp, its first executing thread."""
    w = idx // WARP_SIZE
    warps, first = np.unique(w, return_index=True)
    return warps, idx[first]


# --------------------------------------------------------------------------- tcgen05 state
def cta_state(wave, cta: int):
    st = wave.tstate.get(cta)
    if st is None:
        from ptxsim.isa.cta import CtaState
        from ptxsim.isa.tmem import TensorMemory
        rank = cta % wave.launch.geometry.cluster_size
        st = CtaState(smem=wave.memory.shared.cta_view(cta), tmem=TensorMemory(cta_rank=rank),
                      rank=rank)
        wave.tstate[cta] = st
    return st


def pair_state(wave, cta: int):
    from ptxsim.isa.cta import CtaPairState
    even = cta - (cta % wave.launch.geometry.cluster_size) % 2
    key = ("pair", even)
    st = wave.tstate.get(key)
    if st is None:
        st = CtaPairState(cta_state(wave, even), cta_state(wave, even + 1))
        wave.tstate[key] = st
    return st


def _alloc(wave, inst):
    op = inst.opcode
    cg = _cta_group(inst)
    ops = inst.operands

    def run(idx):
        warps, first = _warps(idx)
        done_pairs = set()
        for t in first:
            cta = int(wave.cta_of[t])
            if cg == 2:
                pst = pair_state(wave, cta)
                if id(pst) in done_pairs:
                    continue
                done_pairs.add(id(pst))
                pair = pst.tmem_pair
            tm = cta_state(wave, cta).tmem
            ti = np.array([t])
            if op == "tcgen05.alloc":
                _, off = _smem_addr(wave, inst, ops[0], ti)
                n = int(wave.read(ops[1], ti, 32)[0])
                if cg == 2:
                    pair.alloc(n, smem=(pst.even.smem, pst.odd.smem), dst=int(off[0]))
                else:
                    tm.alloc(n, smem=wave.memory.shared.cta_view(cta), dst=int(off[0]))
            elif op == "tcgen05.dealloc":
                taddr = int(wave.read(ops[0], ti, 32)[0])
                n = int(wave.read(ops[1], ti, 32)[0])
                (pair.dealloc(taddr, n) if cg == 2 else tm.dealloc(taddr, n))
            else:
                (pair.relinquish_alloc_permit() if cg == 2 else tm.relinquish_alloc_permit())
        _adv(wave, idx)
    return run


def _smem_addr(wave, inst, op, idx):
    from ptxsim.machine.exec_ops import shared_target
    return shared_target(wave, inst, op, idx, "generic")


def _ldst(wave, inst):
    from ptxsim.isa import tmem_ldst
    is_ld = inst.opcode == "tcgen05.ld"
    shape = next(q[1:] for q in inst.qualifiers if q[1:] in tmem_ldst.SHAPES)
    num = int(next(q[2:] for q in inst.qualifiers if q.startswith(".x") and q[2:].isdigit()))
    pack = inst.has(".pack::16b") or inst.has(".unpack::16b")
    ops = inst.operands
    red = is_ld and inst.has(".red")                     # tcgen05.ld.red r, redval, [taddr]
    red_op = next((q[1:] for q in inst.qualifiers if q in (".min", ".max")), None)
    red_t = next((q[1:] for q in inst.qualifiers if q in (".f32", ".u32", ".s32")), None)
    if red:
        regs_op, redval, addr_op, rest = ops[0], ops[1], ops[2], ops[3:]
    elif is_ld:
        regs_op, addr_op, rest = ops[0], ops[1], ops[2:]
    else:
        addr_op = ops[0]
        rest = ops[1:-1]
        regs_op = ops[-1]
    names = list(regs_op.elements) if isinstance(regs_op, Vector) else [regs_op]

    def run(idx):
        warps, first = _warps(idx)
        ctas = wave.cta_of[first]
        groups = []                                      # per CTA: warps, their first threads
        for cta in np.unique(ctas):
            sel = ctas == cta
            ws = warps[sel]
            groups.append((int(cta), ws, first[sel],
                           (ws[:, None] * WARP_SIZE + np.arange(WARP_SIZE)).reshape(-1)))
        # registers are read once for every CTA's threads (st writes no register) and written
        # once after every CTA's Tensor Memory was read (the CTAs' threads are disjoint)
        all_t = np.concatenate([g[3] for g in groups])
        if not is_ld:
            all_vals = np.stack([wave.read(e, all_t, 32).astype(np.uint32) for e in names], 1)
        outs, red_outs, pos = [], [], 0
        for cta, ws, firsts, tidx in groups:
            taddr = wave.addr(addr_op, firsts).astype(np.int64)
            wid = ws - cta * wave.wpc
            split = int(rest[0].value) if rest else None
            tm = cta_state(wave, cta).tmem
            if red:
                r, rv = tmem_ldst.tcgen05_ld_red(tm, shape, num, red_op, red_t, taddr,
                                                 warp_ids=wid, abs=inst.has(".abs"),
                                                 nan=inst.has(".NaN"), split=split)
                outs.append(r)
                red_outs.append(rv)
            elif is_ld:
                outs.append(tmem_ldst.tcgen05_ld(tm, shape, num, taddr, warp_ids=wid, pack=pack,
                                                 split=split))
            else:
                tmem_ldst.tcgen05_st(tm, shape, num, taddr, all_vals[pos:pos + tidx.size],
                                     warp_ids=wid, unpack=pack, split=split)
            pos += tidx.size
        if is_ld:
            r = np.concatenate(outs)
            if red:
                wave.write(redval, all_t, np.concatenate(red_outs))
            for k, e in enumerate(names):
                wave.write(e, all_t, r[:, k])
        _adv(wave, idx)
    return run


def _reg_names(inst):
    out = []
    for o in inst.operands:
        for e in (o.elements if isinstance(o, Vector) else (o,)):
            if isinstance(e, Address):
                if e.base:
                    out.append(e.base)
            elif isinstance(e, Register):
                out.append(e.name)
    return out


def _captured(wave, inst, t):
    """The issuing thread's register values (ints) at issue time."""
    return _captured_all(wave, inst, np.array([t], np.int64))[0]


def _captured_all(wave, inst, idx):
    """`_captured` of every thread of idx (a dict per thread, in idx's order): each register
    gathered once for all of them; values are Python ints (predicates 0 / 1), as int() gives."""
    names = list(dict.fromkeys(_reg_names(inst)))        # the order a dict built per name has
    cols = {}
    for name in names:
        if wave.program.registers.get(name) is None:
            sym = wave.launch.symbols.get(name)
            cols[name] = [sym.address if sym else 0] * len(idx)
        else:
            v = wave.reg(name)[idx]
            cols[name] = (v.astype(np.uint8) if v.dtype == np.bool_ else v).tolist()
    return [{name: cols[name][k] for name in names} for k in range(len(idx))]


class _MmaBatch:
    """The tcgen05.mma of one instruction issued by the threads of different CTAs in one
    scheduler step (the CTAs of a wave run in step).  They are independent (disjoint CTAs, so
    none reads what another writes), so when the first of them completes, the operands of all
    still pending are read and their numerics run as one batched call
    (`isa.tcgen05_mma.execute_parsed_batch`); each then writes its D when it completes itself,
    in the queue's order, as before.  Reading a pending MMA's operands early is within what
    the hardware may do (it reads them at some point between issue and completion), and the
    program may not change them before the completion it waits for (9.7.16.6)."""

    def __init__(self, inst, target, ptx_version=None):
        self.inst, self.target, self.ptx_version = inst, target, ptx_version
        self.members = []            # (state, captured registers)
        self.finish = {}             # member -> finish() once its operands were read

    def add(self, st, vals):
        i = len(self.members)
        self.members.append((st, vals))
        return lambda: self.perform(i)

    def perform(self, i):
        from ptxsim.isa.tcgen05_mma import execute_parsed_batch
        if i not in self.finish:
            todo = [j for j in range(len(self.members)) if j not in self.finish]
            items = [(st, self.inst, vals.__getitem__) for st, vals in
                     (self.members[j] for j in todo)]
            self.finish.update(zip(todo, execute_parsed_batch(items, self.target,
                                                              self.ptx_version)))
        return self.finish.pop(i)()


def _mma(wave, inst):
    from ptxsim.isa.tcgen05_mma import execute_parsed
    cg = _cta_group(inst)
    target = wave.launch.target
    ptx = getattr(wave.launch, "ptx_version", None)
    text = f"line {inst.loc.line}: {inst}"

    def run(idx):
        batch, used = (_MmaBatch(inst, target, ptx), set()) if len(idx) > 1 else (None, None)
        for t, cta, vals in zip(idx.tolist(), wave.cta_of[idx].tolist(),
                                _captured_all(wave, inst, idx)):
            st = pair_state(wave, cta) if cg == 2 else cta_state(wave, cta)
            if batch is not None and id(st) not in used:     # one MMA per CTA (pair) a batch
                used.add(id(st))
                perform = batch.add(st, vals)
            else:
                perform = (lambda st=st, vals=vals: execute_parsed(st, inst, vals.__getitem__,
                                                                   target, ptx))
            wave.proxy.issue(t, "mma", perform=perform, cta_group=cg, what=text)
        _adv(wave, idx)
    return run


def _commit(wave, inst):
    """tcgen05.commit.cta_group::N.mbarrier::arrive::one{.shared::cluster}{.multicast::cluster}
    .b64 [mbar]{, ctaMask} (9.7.16.12.1): arrive-on (count 1) once the prior asynchronous
    tcgen05 operations completed; with .multicast::cluster on the mbarrier at the same offset
    in every CTA of ctaMask."""
    cg = _cta_group(inst)
    mc = inst.has(".multicast::cluster")
    ops = inst.operands
    cs = wave.launch.geometry.cluster_size
    text = f"line {inst.loc.line}: {inst}"

    def run(idx):
        # the mbarrier addresses (and masks) of all issuing threads at once; issued per thread
        ctas, offs = _smem_addr(wave, inst, ops[0], idx)
        masks = wave.read(ops[1], idx, 16).tolist() if mc else None
        for k, (t, cta, off) in enumerate(zip(idx.tolist(), np.asarray(ctas).tolist(),
                                             np.asarray(offs).tolist())):
            if mc:
                mask = int(masks[k])
                base = cta - cta % cs
                targets = [base + r for r in range(cs) if mask >> r & 1]
            else:
                targets = [cta]
            wave.proxy.commit(int(t), cg, signal=lambda ts=targets, o=off: [
                wave.mbar.arrive(c, o, 1) for c in ts], what=text)
        _adv(wave, idx)
    return run


def _cp(wave, inst):
    """tcgen05.cp.cta_group::N.shape{.multicast}{.b8x16.src_fmt} [taddr], s-desc."""
    from ptxsim.isa import tmem_cp
    cg = _cta_group(inst)
    shape = next(q[1:] for q in inst.qualifiers if q[1:] in tmem_cp.CP_SHAPES)
    mcast = next((q[1:] for q in inst.qualifiers if q.startswith(".warpx")), None)
    fmt = next((q[1:] for q in inst.qualifiers if q in (".b6x16_p32", ".b4x16_p64")), None)
    ops = inst.operands
    text = f"line {inst.loc.line}: {inst}"

    def run(idx):
        for t, cta, vals in zip(idx.tolist(), wave.cta_of[idx].tolist(),
                                _captured_all(wave, inst, idx)):
            taddr = (vals[ops[0].base] if ops[0].base else 0) + ops[0].offset
            desc = vals.get(ops[1].name) if isinstance(ops[1], Register) else int(ops[1].value)
            if cg == 2:
                pst = pair_state(wave, cta)
                tmem, smems = pst.tmem_pair, (pst.even.smem, pst.odd.smem)
            else:
                tmem, smems = cta_state(wave, cta).tmem, (wave.memory.shared.cta_view(cta),)

            def perform(tmem=tmem, smems=smems, taddr=taddr, desc=desc):
                rows = [tmem_cp.cp_rows_from_smem(s, desc, shape) for s in smems]
                src = rows[0] if cg == 1 else np.stack(rows)
                tmem_cp.tcgen05_cp(tmem, shape, taddr, src, mcast, fmt, cg)
            wave.proxy.issue(t, "cp", perform=perform, cta_group=cg, what=text)
        _adv(wave, idx)
    return run


def _shift(wave, inst):
    from ptxsim.isa import tmem_cp
    cg = _cta_group(inst)
    ops = inst.operands

    def run(idx):
        for t, cta, vals in zip(idx.tolist(), wave.cta_of[idx].tolist(),
                                _captured_all(wave, inst, idx)):
            taddr = (vals[ops[0].base] if ops[0].base else 0) + ops[0].offset
            tmem = pair_state(wave, cta).tmem_pair if cg == 2 else cta_state(wave, cta).tmem
            wave.proxy.issue(t, "shift", perform=lambda tm=tmem, a=taddr:
                             tmem_cp.tcgen05_shift_down(tm, a, cg), cta_group=cg)
        _adv(wave, idx)
    return run


# ------------------------------------------------------------------------------------- TMA
def _tensormap_at(wave, t, op, a=None):
    """The TensorMap at operand `op` of thread t (`a`: its address, when already read)."""
    from ptxsim.machine.tensormap import TensorMap
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
    import dataclasses
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
    from ptxsim.machine import tensormap as tmod
    ops = inst.operands
    spaces = [q for q in inst.qualifiers if q in (".global", ".shared::cluster", ".shared::cta")]
    load = bool(spaces) and spaces[0] != ".global"        # .dst.src: shared <- global
    if inst.has(".im2col") or inst.has(".gather4") or inst.has(".scatter4") or \
            inst.has(".im2col::w") or inst.has(".im2col::w::128"):
        raise UnsupportedFeature(f"{inst.mnemonic}: only tile mode is modelled")
    mc = inst.has(".multicast::cluster")
    cg = _cta_group(inst)
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
                if cg == 2 and mbar >> 24 == 0:
                    # Deviation (docs/executor.md): on the hardware a shared::cta address carries
                    # the CTA rank in bit 24 and CUTLASS clears it (Sm100MmaPeerBitMask) to name
                    # the even CTA's mbarrier; ptxsim's shared::cta addresses carry no rank, so an
                    # own-CTA mbarrier of a .cta_group::2 load means the pair's even CTA.
                    rank = cta % wave.launch.geometry.cluster_size
                    mbar = int(wave.memory.shared.mapa(np.array([mbar], np.uint64),
                                                       rank & ~1, cta)[0])
                mask = int(masks[k]) if mc else None
                tm, coords = _packed_as_bytes(tm, coords)
                tmod.issue_tma_load(wave.proxy, t, tm, coords, wave.memory, wave.mbar, cta=cta,
                                    dst=dst, mbar=mbar, cta_mask=mask, cta_group=cg, what=text)
            else:
                tm = _tensormap_at(wave, t, tens_at, tmaps[k])
                coords = [int(np.int64(np.int32(np.uint32(v[k])))) for v in cvals]
                src = srcs[k]
                smem = wave.memory.shared.cta_view(cta)
                tm, coords = _packed_as_bytes(tm, coords)
                wave.proxy.issue(t, "bulk", perform=lambda tm=tm, c=coords, s=src, sm=smem:
                                 tmod.tma_store_tile(tm, c, wave.memory.global_, sm, s),
                                 what=text)
        _adv(wave, idx)
    return run


def _bulk(wave, inst):
    """cp.async.bulk (non-tensor, 9.7.9.25.4.1): global -> shared::cluster with complete-tx;
    shared::cta -> global with a bulk async-group; shared::cta -> shared::cluster."""
    from ptxsim.machine import tensormap as tmod
    q = inst.qualifiers
    ops = inst.operands
    dst_space = SPACE_OF(q[0]) if q else None
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
                wave.proxy.issue(t, "bulk", perform=lambda d=dst, s=src, n=size, c=cta:
                                 tmod.bulk_shared_to_global(sh.cta_view(c), s,
                                                            wave.memory.global_, d, n), what=text)
            else:
                (dc,), (do,) = sh.resolve_cluster([dst], [cta])
                (mc_,), (mo,) = sh.resolve_cluster([int(wave.addr(ops[3], ti)[0])], [cta])
                wave.proxy.issue(t, "bulk", perform=lambda dc=dc, do=do, s=src, n=size, c=cta:
                                 tmod.bulk_shared_to_shared(sh.cta_view(c), s,
                                                            sh.cta_view(int(dc)), int(do), n),
                                 signal=lambda c=mc_, o=mo, n=size:
                                 wave.mbar.complete_tx(int(c), int(o), n), what=text)
        _adv(wave, idx)
    return run


def SPACE_OF(q):
    from ptxsim.machine.exec_ops import SPACE_QUALS
    return SPACE_QUALS.get(q)


def _cp_async(wave, inst):
    """cp.async.{ca,cg}.shared{::cta}.global [dst], [src], cp-size{, src-size} (9.7.9.23):
    queued as a cp_async operation (global read at completion), zero-filled beyond src-size."""
    ops = inst.operands
    size = int(ops[2].value)
    text = f"line {inst.loc.line}: {inst}"

    def run(idx):
        dst = wave.addr(ops[0], idx).astype(np.int64)
        src = wave.addr(ops[1], idx)
        srcsize = (wave.read(ops[3], idx, 32).astype(np.int64) if len(ops) > 3 and
                   not isinstance(ops[3], Immediate) or len(ops) > 3 else
                   np.full(idx.size, size, np.int64))
        mem = wave.memory
        # one operation per instruction: all threads' copies complete together
        idx_c, dst_c, src_c, ss_c = idx.copy(), dst, src.copy(), srcsize

        def perform():
            data = np.zeros((idx_c.size, size), np.uint8)
            full = ss_c >= size
            if full.any():
                data[full] = mem.load_bytes("global", src_c[full], size, thread=idx_c[full])
            for i in np.flatnonzero(~full):
                n = int(ss_c[i])
                if n:
                    data[i, :n] = mem.load_bytes("global", src_c[i:i + 1], 1, vec=1,
                                                 thread=idx_c[i:i + 1]).reshape(-1)[:n] \
                        if n == 1 else _bytes(mem, int(src_c[i]), n, int(idx_c[i]))
            mem.store("shared::cta", dst_c.astype(np.uint64), data.view(np.uint8),
                      1, vec=1, thread=idx_c) if size == 1 else _store_rows(mem, dst_c, data,
                                                                            idx_c)
        wave.proxy.issue(int(idx[0]), "cp_async", perform=perform, what=text)
        # every thread's later commit_group picks up the op through the first thread; make
        # the other threads' groups see it too
        for t in idx[1:]:
            wave.proxy._family(int(t), "cp_async").uncommitted.append(
                wave.proxy.queue[-1])
        _adv(wave, idx)
    return run


def _cp_async_arrive(wave, inst):
    """cp.async.mbarrier.arrive{.noinc}{.shared{::cta}}.b64 [mbar] (9.7.9.23.x): arrive-on the
    mbarrier once the thread's prior cp.async complete. ptxsim completes those copies now (an
    allowed completion time), so the form without .noinc (pending count +1, then the arrive)
    has no net effect on the phase, and .noinc is one arrive now."""
    noinc = inst.has(".noinc")

    def run(idx):
        wave.proxy._complete_where(lambda op: op.kind == "cp_async")
        if noinc:
            cta, off = _smem_addr(wave, inst, inst.operands[0], idx)
            wave.mbar.arrive(cta, off, 1)
        _adv(wave, idx)
    return run


def _bytes(mem, addr, n, t):
    return np.concatenate([mem.load_bytes("global", np.array([addr + k], np.uint64), 1,
                                          thread=np.array([t])).reshape(-1) for k in range(n)])


def _store_rows(mem, dst, data, idx):
    size = data.shape[1]
    el = 4 if size % 4 == 0 else 1
    vals = data.view(UINT[el]).reshape(idx.size, size // el)
    for k in range(size // el):
        mem.store("shared::cta", (dst + k * el).astype(np.uint64), vals[:, k:k + 1], el,
                  thread=idx)


# ----------------------------------------------------------------------- ldmatrix / stmatrix
def _matrix_shape(inst):
    shape = next((q[1:] for q in inst.qualifiers if q in (".m8n8", ".m16n16", ".m8n16",
                                                          ".m16n8")), None)
    if shape != "m8n8" or not inst.has(".b16"):
        raise UnsupportedFeature(f"{inst.mnemonic}: only .m8n8 .b16 is modelled")
    n = int(next(q[2:] for q in inst.qualifiers if q in (".x1", ".x2", ".x4")))
    return n, inst.has(".trans")


def _ldmatrix(wave, inst):
    """ldmatrix.sync.aligned.m8n8.xN{.trans}.shared.b16 (9.7.14.5.15): thread 8i+r gives the
    address of row r of matrix i; thread t receives in register i the elements
    (row t/4, cols 2(t%4), 2(t%4)+1) of matrix i (.trans: the transposed matrix)."""
    n, trans = _matrix_shape(inst)
    dst, a = inst.operands
    space = _space(inst, "generic")

    def run(idx):
        warps, _ = _warps(idx)
        full = (warps[:, None] * WARP_SIZE + np.arange(WARP_SIZE)).reshape(-1)
        if not np.array_equal(np.sort(idx), full):
            raise UndefinedBehavior(f"line {inst.loc.line}: ldmatrix.sync.aligned executed by "
                                    "part of a warp")
        W = warps.size
        addr = wave.addr(a, full).reshape(W, WARP_SIZE)
        rows = np.zeros((W, n, 8, 8), np.uint16)            # [warp, matrix, row, col]
        for i in range(n):
            ra = addr[:, 8 * i:8 * i + 8].reshape(-1)
            th = full.reshape(W, WARP_SIZE)[:, 8 * i:8 * i + 8].reshape(-1)
            v = _load16(wave, space, ra, th)
            rows[:, i] = v.reshape(W, 8, 8)
        if trans:
            rows = rows.transpose(0, 1, 3, 2)
        lane = np.arange(WARP_SIZE)
        r, c = lane // 4, 2 * (lane % 4)
        lo = rows[:, :, r, c].astype(np.uint32)              # (W, n, 32)
        hi = rows[:, :, r, c + 1].astype(np.uint32)
        val = lo | (hi << 16)
        for i, e in enumerate(dst.elements):
            wave.write(e, full, val[:, i, :].reshape(-1))
        _adv(wave, idx)
    return run


def _load16(wave, space, addr, th):
    """8 consecutive b16 per address (one 16-byte row)."""
    raw = wave.memory.load_bytes(space, addr, 16, thread=th)        # (k, 16) bytes
    return raw.view("<u2").reshape(-1, 8)


def _stmatrix(wave, inst):
    """stmatrix.sync.aligned.m8n8.xN{.trans}.shared.b16 [a], {r...} (9.7.14.5.16): the
    inverse of ldmatrix's fragment layout."""
    n, trans = _matrix_shape(inst)
    a, src = inst.operands
    space = _space(inst, "generic")

    def run(idx):
        warps, _ = _warps(idx)
        full = (warps[:, None] * WARP_SIZE + np.arange(WARP_SIZE)).reshape(-1)
        W = warps.size
        vals = np.stack([wave.read(e, full, 32).astype(np.uint32).reshape(W, WARP_SIZE)
                         for e in src.elements], 1)            # (W, n, 32)
        lane = np.arange(WARP_SIZE)
        r, c = lane // 4, 2 * (lane % 4)
        rows = np.zeros((W, n, 8, 8), np.uint16)
        rows[:, :, r, c] = (vals & 0xFFFF).astype(np.uint16)
        rows[:, :, r, c + 1] = (vals >> 16).astype(np.uint16)
        if trans:
            rows = rows.transpose(0, 1, 3, 2)
        addr = wave.addr(a, full).reshape(W, WARP_SIZE)
        for i in range(n):
            ra = addr[:, 8 * i:8 * i + 8].reshape(-1)
            th = full.reshape(W, WARP_SIZE)[:, 8 * i:8 * i + 8].reshape(-1)
            data = np.ascontiguousarray(rows[:, i]).reshape(-1, 8).view("<u4")  # (k, 4)
            wave.memory.store(space, ra, data, 4, vec=4, thread=th)
        _adv(wave, idx)
    return run


# ------------------------------------------------------------------------- tensormap.replace
TM_FIELDS_NATURAL = ("global_address", "rank", "box_dim", "global_dim", "global_stride",
                     "element_stride")
TM_FIELDS_CODED = ("elemtype", "interleave_layout", "swizzle_mode", "swizzle_atomicity",
                   "fill_mode")


def _tensormap_replace(wave, inst):
    """tensormap.replace.tile.field{.ss}.b1024.type [addr], {ord,} new_val (PTX 9.7.9.x): one
    field of the 128-byte tensor map at addr (.global or .shared::cta, generic by default)
    replaced; `.rank` takes rank - 1 (the ISA: "ones less than the desired tensor rank").
    The .field3 forms (elemtype, interleave_layout, swizzle_mode, fill_mode) take codes
    decoded by machine/tensormap_codes.py (those with public evidence; swizzle_atomicity and
    the others: UnsupportedFeature)."""
    from ptxsim.machine import tensormap_codes
    from ptxsim.machine.tensormap import TensorMap
    field = next((q[1:] for q in inst.qualifiers
                  if q[1:] in TM_FIELDS_NATURAL or q[1:] in TM_FIELDS_CODED), None)
    if field is None:
        raise UnsupportedFeature(f"{inst.mnemonic}: field not modelled (modelled: "
                                 f"{', '.join(TM_FIELDS_NATURAL + TM_FIELDS_CODED)})")
    if field == "swizzle_atomicity":
        tensormap_codes.decode(field, 0)                  # UnsupportedFeature, named
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
            tm = TensorMap.from_bytes(blob)
            if field == "rank":
                value += 1
            elif field in TM_FIELDS_CODED:
                value = tensormap_codes.decode(field, value)
            new = tm.replaced(field, value, ordinal).to_bytes()
            _store_block(mem, sp, addr, new, t)
        _adv(wave, idx)
    return run


def _store_block(mem, space, addr, data: bytes, t):
    words = np.frombuffer(data, "<u4")
    for k in range(0, words.size, 4):
        mem.store(space, np.array([addr + 4 * k], np.uint64), words[k:k + 4].reshape(1, 4), 4,
                  vec=4, thread=np.array([t]))


# ----------------------------------------------------------------------- clusterlaunchcontrol
# ptxsim's 16-byte response (opaque in the ISA): word 0 = 1 when a cluster was canceled, words
# 1..3 = %ctaid.x/.y/.z of the canceled cluster's first CTA.
def _clc_try_cancel(wave, inst):
    """clusterlaunchcontrol.try_cancel.async{.shared::cta}.mbarrier::complete_tx::bytes
    {.multicast::cluster::all}.b128 [addr], [mbar] (9.7.12.x): cancels the next cluster that has
    not started (a later wave of this launch, in launch order) — or fails when all have started
    — and writes the response asynchronously, complete-tx 16 bytes on mbar (each CTA of the
    cluster with .multicast::cluster::all)."""
    mc = inst.has(".multicast::cluster::all")
    ops = inst.operands
    cs = wave.launch.geometry.cluster_size
    text = f"line {inst.loc.line}: {inst}"

    def run(idx):
        for t in idx:
            t = int(t)
            ti = np.array([t])
            cta, off = _smem_addr(wave, inst, ops[0], ti)
            mcta, moff = _smem_addr(wave, inst, ops[1], ti)
            got = wave.launch.try_cancel()
            resp = np.zeros(4, np.uint32)
            if got is not None:
                resp[:] = (1,) + got
            first = int(cta[0]) - int(cta[0]) % cs
            targets = range(first, first + cs) if mc else [int(cta[0])]

            def perform(targets=targets, off=int(off[0]), resp=resp):
                for c in targets:
                    wave.memory.shared.cta_view(c)[off:off + 16] = resp.view(np.uint8)

            def signal(targets=targets, moff=int(moff[0])):
                for c in targets:
                    wave.mbar.complete_tx(c, moff, 16)
            wave.proxy.issue(t, "bulk", perform=perform, signal=signal, what=text)
        _adv(wave, idx)
    return run


def _clc_query(wave, inst):
    """clusterlaunchcontrol.query_cancel.is_canceled.pred.b128 p, handle;
    ...get_first_ctaid.v4.b32.b128 {x, y, z, _}, handle; ...get_first_ctaid::{x,y,z}.b32.b128
    d, handle. The ctaid of a failed request is undefined: UndefinedBehavior."""
    ops = inst.operands
    dst, handle = ops[0], ops[1]
    is_canceled = inst.has(".is_canceled")
    dim = inst.value(".get_first_ctaid")                 # "x" / "y" / "z", or None (.v4)

    def run(idx):
        h = wave.reg(handle.name)[idx]                     # (n, 2) uint64
        words = np.stack([h[:, 0] & np.uint64(0xFFFFFFFF), h[:, 0] >> np.uint64(32),
                          h[:, 1] & np.uint64(0xFFFFFFFF), h[:, 1] >> np.uint64(32)], 1)
        ok = words[:, 0] != 0
        if is_canceled:
            wave.write(dst, idx, ok)
        else:
            if not ok.all():
                raise UndefinedBehavior(f"line {inst.loc.line}: get_first_ctaid of a response "
                                        "whose try_cancel failed (the ISA leaves it undefined)")
            if dim is not None:
                wave.write(dst, idx, words[:, 1 + "xyz".index(dim)].astype(np.uint32))
            else:
                for k, e in enumerate(dst.elements[:3]):
                    wave.write(e, idx, words[:, 1 + k].astype(np.uint32))
        _adv(wave, idx)
    return run
