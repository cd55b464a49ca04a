"""tcgen05 handlers (9.7.16): alloc / dealloc / relinquish_alloc_permit (.cta_group::1 and CTA
pairs), ld / st / ld.red (performed at issue), wait, mma (every kind via
`isa.tcgen05_mma.execute_parsed`, batched across the CTAs of one step), commit (multicast), cp
and shift.

tcgen05.mma / cp / shift go through the wave's `AsyncProxy`: issued now with the issuing
thread's register values captured, performed later (in issue order) when the scheduler has
nothing runnable or a wait names them; tcgen05.commit queues an mbarrier arrive behind them.
tcgen05.ld / st are performed at issue (their results are then already there at
tcgen05.wait::ld / ::st, which is allowed: the wait only bounds completion).
"""
from __future__ import annotations

import numpy as np

from ptxsim.errors import TmemAllocBlocked, TmemLeakError, UndefinedBehavior
from ptxsim.isa import tmem, tmem_cp, tmem_ldst
from ptxsim.isa.cta import CtaPairState, CtaState
from ptxsim.isa.legality import check_notes
from ptxsim.isa.tcgen05_mma import execute_parsed, execute_parsed_batch
from ptxsim.isa.tmem import TensorMemory, write_address
from ptxsim.machine.grid import WARP_SIZE
from ptxsim.machine.handlers.common import cta_group_of, shared_target, warps_of
from ptxsim.machine.watchdog import BLOCKED, NO_WAIT, RUN, WAIT_PEER
from ptxsim.ptx.instruction import Address, Register, Vector


def _tcgen05_notes(wave, inst) -> None:
    """The PTX ISA / Target ISA notes of a tcgen05 Tensor Memory instruction (its row in the isa
    module's one table: isa/tmem.py, tmem_ldst.py, tmem_cp.py FORMS) against the launch target and
    the module's .version, once per instruction when its handler is built (both are fixed for the
    launch): e.g. tcgen05.alloc on sm_90a or tcgen05.ld.red on sm_100a is refused here, as ptxas
    refuses it (docs/legality.md)."""
    op = inst.opcode
    key = "tcgen05.ld.red" if op == "tcgen05.ld" and inst.has(".red") else op
    for forms in (tmem.FORMS, tmem_ldst.FORMS, tmem_cp.FORMS):
        if key in forms:
            check_notes(forms[key], wave.launch.target, getattr(wave.launch, "ptx_version", None))
            return


# --------------------------------------------------------------------------- tcgen05 state
def cta_state(wave, cta: int):
    st = wave.tstate.get(cta)
    if st is None:
        rank = cta % wave.launch.geometry.cluster_size
        st = CtaState(smem=wave.memory.shared.cta_view(cta), tmem=TensorMemory(cta_rank=rank),
                      rank=rank, exited=cta in wave.exited_ctas)
        wave.tstate[cta] = st
    return st


def pair_state(wave, cta: int):
    even = cta - (cta % wave.launch.geometry.cluster_size) % 2
    key = ("pair", even)
    st = wave.tstate.get(key)
    if st is None:
        st = CtaPairState(cta_state(wave, even), cta_state(wave, even + 1))
        wave.tstate[key] = st
    return st


def _alloc(wave, inst):
    """tcgen05.alloc / dealloc / relinquish_alloc_permit, once per executing warp. An alloc that
    finds no free columns blocks (9.7.16.7.1: "the instruction blocks until ... available"): its
    warp is suspended (WAIT_TMEM) and retries the instruction after a dealloc; if no warp ever
    deallocates, the launch ends in a DeadlockError naming it.

    With .cta_group::2, alloc and dealloc are collective: "one warp from each of the peer CTAs
    must collectively perform the allocation and de-allocation" (9.7.16.7.1). The warp that
    issues first waits (WAIT_PEER) until the peer CTA's warp issues the same instruction, at
    whatever later time; then the columns are allocated (the same in both Tensor Memories, the
    address stored at each warp's own `dst`) or freed once, and both warps go on. CUTLASS's
    2-SM kernels issue the two deallocs at different points of their CTAs' programs.
    relinquish_alloc_permit gives up the executing CTA's permit."""
    op = inst.opcode
    cg = cta_group_of(inst)
    ops = inst.operands
    where = f"line {inst.loc.line}: {inst}"

    def run(idx):
        warps, first = warps_of(idx)
        blocked = []                                     # (warp, cta, nCols) of blocked allocs
        waiting = []                                     # warps waiting for their peer
        for w, t in zip(warps.tolist(), first.tolist()):
            cta = int(wave.cta_of[t])
            ti = np.array([t])
            tm = cta_state(wave, cta).tmem
            if op == "tcgen05.relinquish_alloc_permit":
                tm.relinquish_alloc_permit(cta_group=cg)
                continue
            n = int(wave.read(ops[1], ti, 32)[0])
            if op == "tcgen05.alloc":
                _, off = shared_target(wave, inst, ops[0], ti)
                arg = int(off[0])
            else:
                arg = int(wave.read(ops[0], ti, 32)[0])
            if cg == 1:
                try:
                    if op == "tcgen05.alloc":
                        tm.alloc(n, smem=wave.memory.shared.cta_view(cta), dst=arg)
                    else:
                        tm.dealloc(arg, n)
                        wave.tmem_frees += 1
                except TmemAllocBlocked:
                    blocked.append((w, cta, n))
                continue
            # .cta_group::2: a collective of one warp of each CTA of the pair
            pst = pair_state(wave, cta)
            pst.check_active(f"{where}: CTA {wave._cta_name(cta)}")
            pend = wave.tstate.setdefault(("peer", id(pst)), {})
            other = pend.get(op)
            if other is None:
                pend[op] = (cta, w, n, arg)
                waiting.append((w, cta))
                continue
            pcta, pw, pn, parg = other
            if pcta == cta:
                raise UndefinedBehavior(f"{where}: two warps of CTA {wave._cta_name(cta)} issue "
                                        f"{op}.cta_group::2 while the peer CTA's warp has not; "
                                        "one warp of each CTA of the pair performs it "
                                        "collectively (9.7.16.7.1)")
            if pn != n or (op == "tcgen05.dealloc" and parg != arg):
                raise UndefinedBehavior(f"{where}: the two CTAs of the pair issue {op}."
                                        f"cta_group::2 with different operands ({pn}, {parg:#x} "
                                        f"and {n}, {arg:#x})")
            pair = pst.tmem_pair
            try:
                if op == "tcgen05.alloc":
                    taddr = pair.alloc(n)
                    write_address(wave.memory.shared.cta_view(cta), arg, taddr)
                    write_address(wave.memory.shared.cta_view(pcta), parg, taddr)
                else:
                    pair.dealloc(arg, n)
                    wave.tmem_frees += 1
            except TmemAllocBlocked:
                blocked.append((w, cta, n))              # retried after a dealloc; the peer
                continue                                 # keeps waiting
            del pend[op]
            if (pw, pcta) in waiting:                    # the peer issued in this same step
                waiting.remove((pw, pcta))
                continue
            peer = np.arange(pw * WARP_SIZE, (pw + 1) * WARP_SIZE)
            peer = peer[(wave.status[peer] == BLOCKED) & (wave.wait_kind[peer] == WAIT_PEER)]
            wave.status[peer] = RUN
            wave.wait_kind[peer] = NO_WAIT
            wave.pc[peer] += 1
        if not blocked and not waiting:
            wave.advance(idx)
            return
        stay = np.zeros(idx.size, bool)
        for w, cta, n in blocked:
            sel = idx // WARP_SIZE == w
            stay |= sel
            wave.block_on_tmem(idx[sel], cta, n)
        for w, cta in waiting:
            sel = idx // WARP_SIZE == w
            stay |= sel
            wave.status[idx[sel]] = BLOCKED
            wave.wait_kind[idx[sel]] = WAIT_PEER
            wave.wait_cta[idx[sel]] = cta
        if (~stay).any():
            wave.advance(idx[~stay])
    return run


def cta_exit(wave, cta: int, where: str) -> None:
    """The last thread of CTA `cta` (wave position) has exited: its tcgen05 state records it (a
    later .cta_group::2 instruction of its peer is then undefined, Table 46), and every Tensor
    Memory column it allocated must have been deallocated (9.7.16.7.1)."""
    st = wave.tstate.get(cta)
    if st is None:
        return
    st.exited = True
    if wave.launch.geometry.cluster_size % 2 == 0:
        for op, (pcta, _, _, _) in wave.tstate.get(("peer", id(pair_state(wave, cta))),
                                                   {}).items():
            if pcta != cta:
                raise UndefinedBehavior(f"{where}: CTA {wave._cta_name(cta)} exits while the "
                                        f"warp of its peer CTA {wave._cta_name(pcta)} waits for "
                                        f"it in {op}.cta_group::2; the peer CTA must be active "
                                        "(9.7.16.5, Table 46)")
    if st.tmem.allocations:
        ctaid = tuple(int(x) for x in wave.launch.geometry.ctaid(int(wave.ctas[cta])))
        raise TmemLeakError(f"{where}: CTA {ctaid} exits with Tensor Memory still allocated "
                            f"({st.tmem.describe()}); all of it must be deallocated with "
                            "tcgen05.dealloc before the kernel exits (9.7.16.7.1)",
                            leaks=st.tmem.leaks(), cta=int(wave.ctas[cta]))


def _ldst(wave, inst):
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
    where = f"line {inst.loc.line}: "

    def run(idx):
        warps, first = warps_of(idx)
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
                                                 nan=inst.has(".NaN"), split=split,
                                                 where=where)
                outs.append(r)
                red_outs.append(rv)
            elif is_ld:
                outs.append(tmem_ldst.tcgen05_ld(tm, shape, num, taddr, warp_ids=wid, pack=pack,
                                                 split=split, where=where))
            else:
                tmem_ldst.tcgen05_st(tm, shape, num, taddr, all_vals[pos:pos + tidx.size],
                                     warp_ids=wid, unpack=pack, split=split, where=where)
            pos += tidx.size
        if is_ld:
            r = np.concatenate(outs)
            if red:
                wave.write(redval, all_t, np.concatenate(red_outs))
            for k, e in enumerate(names):
                wave.write(e, all_t, r[:, k])
        wave.advance(idx)
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
            cols[name] = (wave.symbol_address(sym, np.asarray(idx, np.int64)).tolist() if sym
                          else [0] * len(idx))
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
        if i not in self.finish:
            todo = [j for j in range(len(self.members)) if j not in self.finish]
            items = [(st, self.inst, vals.__getitem__) for st, vals in
                     (self.members[j] for j in todo)]
            self.finish.update(zip(todo, execute_parsed_batch(items, self.target,
                                                              self.ptx_version)))
        return self.finish.pop(i)()


def _mma(wave, inst):
    cg = cta_group_of(inst)
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
        wave.advance(idx)
    return run


def _commit(wave, inst):
    """tcgen05.commit.cta_group::N.mbarrier::arrive::one{.shared::cluster}{.multicast::cluster}
    .b64 [mbar]{, ctaMask} (9.7.16.12.1): arrive-on (count 1) once the prior asynchronous
    tcgen05 operations completed; with .multicast::cluster on the mbarrier at the same offset
    in every CTA of ctaMask."""
    cg = cta_group_of(inst)
    mc = inst.has(".multicast::cluster")
    ops = inst.operands
    cs = wave.launch.geometry.cluster_size
    text = f"line {inst.loc.line}: {inst}"

    def run(idx):
        # the mbarrier addresses (and masks) of all issuing threads at once; issued per thread
        ctas, offs = shared_target(wave, inst, ops[0], idx)
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
        wave.advance(idx)
    return run


def _cp(wave, inst):
    """tcgen05.cp.cta_group::N.shape{.multicast}{.b8x16.src_fmt} [taddr], s-desc."""
    cg = cta_group_of(inst)
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
        wave.advance(idx)
    return run


def _shift(wave, inst):
    cg = cta_group_of(inst)
    ops = inst.operands

    def run(idx):
        for t, cta, vals in zip(idx.tolist(), wave.cta_of[idx].tolist(),
                                _captured_all(wave, inst, idx)):
            taddr = (vals[ops[0].base] if ops[0].base else 0) + ops[0].offset
            tmem = pair_state(wave, cta).tmem_pair if cg == 2 else cta_state(wave, cta).tmem
            wave.proxy.issue(t, "shift", perform=lambda tm=tmem, a=taddr:
                             tmem_cp.tcgen05_shift_down(tm, a, cg), cta_group=cg)
        wave.advance(idx)
    return run


def _with_notes(build):
    """`build` after the PTX ISA / target notes of the instruction (`_tcgen05_notes`)."""
    def checked(wave, inst):
        _tcgen05_notes(wave, inst)
        return build(wave, inst)
    return checked


BUILDERS = {
    "tcgen05.alloc": _with_notes(_alloc), "tcgen05.dealloc": _with_notes(_alloc),
    "tcgen05.relinquish_alloc_permit": _with_notes(_alloc),
    "tcgen05.ld": _with_notes(_ldst), "tcgen05.st": _with_notes(_ldst),
    "tcgen05.wait": _with_notes(lambda wave, inst: wave.advance),
    "tcgen05.mma": _mma,                    # its notes: isa.tcgen05_mma.execute_parsed
    "tcgen05.commit": _with_notes(_commit), "tcgen05.cp": _with_notes(_cp),
    "tcgen05.shift": _with_notes(_shift),
}
