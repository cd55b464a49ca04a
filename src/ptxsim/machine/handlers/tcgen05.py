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

from ptxsim.errors import (PtxsimError, TmemAllocBlocked, TmemLeakError,
                           UndefinedBehavior)
from ptxsim.isa import tmem, tmem_cp, tmem_ldst
from ptxsim.isa.cta import CtaPairState, CtaState
from ptxsim.isa.legality import check_notes
from ptxsim.isa.tcgen05_mma import (execute_parsed, execute_parsed_batch, mma_footprint,
                                    parse_operands, tcgen05_mma_ctas)
from ptxsim.isa.tmem import (N_COLUMNS, N_LANES, TensorMemory, split_address,
                             write_address)
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
def tmem_cells(wave) -> np.ndarray:
    """The Tensor Memory of every CTA of the wave as one (n_ctas, 128, 512) uint32 array (each
    CTA's TensorMemory.cells is its row), so that an instruction issued in many CTAs reads and
    writes them in one array operation. Allocated on first use (pages untouched stay free)."""
    cells = wave.tstate.get("cells")
    if cells is None:
        cells = wave.tstate["cells"] = np.zeros((wave.n_ctas, N_LANES, N_COLUMNS), np.uint32)
    return cells


def cta_state(wave, cta: int):
    st = wave.tstate.get(cta)
    if st is None:
        rank = cta % wave.launch.geometry.cluster_size
        st = CtaState(smem=wave.memory.shared.cta_view(cta),
                      tmem=TensorMemory(cells=tmem_cells(wave)[cta], cta_rank=rank),
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


def _san(wave):
    """The wave's sanitizer when its checks are on, else None."""
    s = wave.san
    return s if s is not None and s.enabled else None


def _pair_ctas(wave, cta: int, cg: int) -> list[int]:
    """The CTAs (wave positions) a .cta_group::cg instruction of CTA `cta` acts on."""
    if cg == 1:
        return [cta]
    even = cta - (cta % wave.launch.geometry.cluster_size) % 2
    return [even, even + 1]


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
    san = _san(wave)

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
                        if san is not None:    # the address written to shared memory
                            san.sync_write_shared(inst, t, cta, arg, 4)
                    else:
                        if san is not None:
                            san.tmem_dealloc(inst, t, cta, arg & 0xFFFF, n)
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
                    if san is not None:    # each CTA's warp writes the address into its CTA
                        san.sync_write_shared(inst, t, cta, arg, 4)
                        san.sync_write_shared(inst, pw * WARP_SIZE, pcta, parg, 4)
                else:
                    if san is not None:
                        san.tmem_dealloc(inst, t, cta, arg & 0xFFFF, n)
                        san.tmem_dealloc(inst, pw * WARP_SIZE, pcta, parg & 0xFFFF, n)
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
    san = _san(wave)
    if san is not None:
        fmap = tmem_ldst.fragment_map(shape, num, pack)
        dest_regs = [e.name for e in names if isinstance(e, Register)] + \
            ([redval.name] if red and isinstance(redval, Register) else [])

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
            got: dict = {}              # a register named several times is read once
            for e in names:
                k = getattr(e, "name", None) if isinstance(e, Register) else None
                if k is None or k not in got:
                    v = wave.read(e, all_t, 32).astype(np.uint32)
                    if k is None:
                        got[id(e)] = v
                    else:
                        got[k] = v
            all_vals = np.stack([got[e.name if isinstance(e, Register) else id(e)]
                                 for e in names], 1)
        split = int(rest[0].value) if rest else None
        if san is not None:               # each warp's access, before it runs (one step)
            for cta, ws, firsts, _ in groups:
                tm = cta_state(wave, cta).tmem
                try:
                    lanes, cols = tmem_ldst.resolve(
                        tm.cells, fmap, wave.addr(addr_op, firsts).astype(np.int64),
                        ws - cta * wave.wpc, split, "tcgen05." + ("ld" if is_ld else "st"))
                except PtxsimError:
                    break                 # the access itself reports it
                for k, t in enumerate(firsts.tolist()):
                    rec = san.new_rec("ld" if is_ld else "st", inst, t, "ldst")
                    san.tmem_access(rec, inst, cta, lanes[k], cols[k], read=is_ld,
                                    write=not is_ld)
                    san.tc_ldst(rec, dest_regs if is_ld else None)
        if not red and len(groups) > 1:
            # every CTA's warps in one gather / scatter of the wave's Tensor Memory; the
            # per-CTA path below when a check needs it (it raises, naming the cell)
            order = np.concatenate([np.flatnonzero(ctas == g[0]) for g in groups])
            wid = warps[order] - ctas[order] * wave.wpc
            taddr = wave.addr(addr_op, first[order]).astype(np.int64)
            tms = [cta_state(wave, g[0]).tmem for g in groups]
            cells = tmem_cells(wave)
            if is_ld:
                r = tmem_ldst.tcgen05_ld_ctas(tms, cells, ctas[order], shape, num, taddr, wid,
                                              pack=pack, split=split)
                if r is not None:
                    for k, e in enumerate(names):
                        wave.write(e, all_t, r[:, k])
                    wave.advance(idx)
                    return
            elif tmem_ldst.tcgen05_st_ctas(tms, cells, ctas[order], shape, num, taddr,
                                           all_vals, wid, unpack=pack, split=split):
                wave.advance(idx)
                return
        outs, red_outs, pos = [], [], 0
        for cta, ws, firsts, tidx in groups:
            taddr = wave.addr(addr_op, firsts).astype(np.int64)
            wid = ws - cta * wave.wpc
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


def _wait(wave, inst):
    """tcgen05.wait::ld / ::st: ptxsim performs tcgen05.ld / st at issue, so the wait has no
    effect on the bits; the sanitizer learns that the warp's prior loads / stores completed."""
    san = _san(wave)
    if san is None:
        return wave.advance
    kind = "ld" if inst.has("::ld") else "st"

    def run(idx):
        san.tc_wait(idx, kind)
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


def _columns(wave, inst, idx) -> dict:
    """The issuing threads' register values at issue time, one array per register name of the
    instruction (gathered once for all of them; predicates as 0 / 1, symbols as their
    address)."""
    cols = {}
    for name in dict.fromkeys(_reg_names(inst)):
        if wave.program.registers.get(name) is None:
            sym = wave.launch.symbols.get(name)
            cols[name] = (np.asarray(wave.symbol_address(sym, np.asarray(idx, np.int64)),
                                     np.uint64) if sym else np.zeros(len(idx), np.uint64))
        else:
            v = wave.reg(name)[idx]
            cols[name] = v.astype(np.uint8) if v.dtype == np.bool_ else v
    return cols


def _reader(cols: dict, k: int):
    """read(name) -> int of issuing thread k (the per-instruction API's operand reader)."""
    return lambda name: int(cols[name][k])


def _rounds(keys: np.ndarray) -> list:
    """The members (positions) of each round: round r holds the r-th issue of every key (CTA
    or CTA pair), so a round's instructions touch distinct CTAs and the rounds run in issue
    order. `keys` is non-decreasing (threads in order)."""
    rank = np.arange(keys.size) - np.searchsorted(keys, keys, side="left")
    if not rank.any():
        return [np.arange(keys.size)]
    return [np.flatnonzero(rank == r) for r in range(int(rank.max()) + 1)]


def _mma(wave, inst):
    """tcgen05.mma issued by the threads of one step: one asynchronous operation for all of
    them. At completion each round of independent instructions (distinct CTAs or pairs) runs as
    one batch: `isa.tcgen05_mma.tcgen05_mma_ctas` (array operations over the CTAs) when the form
    allows it, else `execute_parsed_batch` (per CTA, its numerics batched)."""
    cg = cta_group_of(inst)
    target = wave.launch.target
    ptx = getattr(wave.launch, "ptx_version", None)
    text = f"line {inst.loc.line}: {inst}"
    cs = wave.launch.geometry.cluster_size

    def perform_round(ctas, cols, sel):
        states = [pair_state(wave, c) if cg == 2 else cta_state(wave, c)
                  for c in ctas[sel].tolist()]
        if cg == 1:
            try:
                mma, kw = parse_operands(inst, lambda name: cols[name][sel], vector=True)
            except Exception:                      # noqa: BLE001 -- the general path raises
                mma = None
            if mma is not None:
                finish = tcgen05_mma_ctas(states, mma, kw, smem=wave.memory.shared.data,
                                          which=ctas[sel], cells=tmem_cells(wave),
                                          target=target, ptx_version=ptx)
                if finish is not None:
                    finish()
                    return
        if sel.size == 1:
            execute_parsed(states[0], inst, _reader(cols, int(sel[0])), target, ptx)
            return
        for finish in execute_parsed_batch(
                [(st, inst, _reader(cols, k)) for st, k in zip(states, sel.tolist())],
                target, ptx):
            finish()

    san = _san(wave)

    def run(idx):
        cols = _columns(wave, inst, idx)
        ctas = wave.cta_of[idx]
        keys = ctas - (ctas % cs) % 2 if cg == 2 else ctas

        def perform():
            for sel in _rounds(keys):
                perform_round(ctas, cols, sel)
        if san is not None:
            perform = _san_mma(san, wave, inst, idx, ctas, cols, cg, target, ptx, perform)
        wave.proxy.issue(int(idx[0]), "mma", perform=perform, cta_group=cg, what=text,
                         threads=idx)
        wave.advance(idx)
    return run


def _san_mma(san, wave, inst, idx, ctas, cols, cg, target, ptx, perform):
    """The sanitizer's view of the tcgen05.mma of threads idx (one queued operation): per
    issuing thread a record of its Tensor Memory cells and shared-memory operand bytes, checked
    and marked as in flight until the operation completes (`mma_batch`). Returns the perform
    that also completes them."""
    items, recs = [], []
    names = list(cols)
    rows = list(zip(*(np.asarray(cols[n]).tolist() for n in names))) if names else None
    for k, (t, cta) in enumerate(zip(idx.tolist(), ctas.tolist())):
        row = rows[k] if rows is not None else ()
        rec = san.new_rec("mma", inst, t, "mma")
        recs.append(rec)
        key = (id(inst), row)
        fp = san.fp_cache.get(key)
        if fp is None:
            vals = dict(zip(names, (int(v) for v in row)))
            try:
                fp = mma_footprint(inst, vals.__getitem__, target, ptx, wave.memory.shared.size)
            except PtxsimError:
                fp = False                 # the execution reports the bad operand
            if len(san.fp_cache) > 4096:
                san.fp_cache.clear()
            san.fp_cache[key] = fp
        if fp:
            items.append((rec, _pair_ctas(wave, cta, cg), fp))
        else:
            san.tc_issue(rec)
    if items:
        san.mma_batch(inst, items)
    return san.wrap_all([(rec, None) for rec in recs], perform)


def _san_cp(san, wave, inst, issued, cg, shape, mcast, perform):
    """tcgen05.cp of the threads of one step for the sanitizer: one record per distinct copy
    (CTA, taddr, s-desc; the same copy issued by several threads of a CTA is one, as it runs),
    which writes its Tensor Memory cells and reads its shared-memory bytes until the operation
    completes, tracked by the commits of every thread that issued it."""
    idx, ctas, taddr, desc = (np.asarray(x) for x in issued)
    key = np.stack([ctas.astype(np.uint64), taddr.astype(np.uint64), desc.astype(np.uint64)])
    _, first, inv = np.unique(key, axis=1, return_index=True, return_inverse=True)
    inv = inv.reshape(-1)
    recs = []
    for g, k in enumerate(first.tolist()):
        rec = san.new_rec("cp", inst, int(idx[k]), "cp")
        try:
            (L, C), src_bytes = tmem_cp.cp_footprint(int(taddr[k]), int(desc[k]), shape, mcast)
        except PtxsimError:
            src_bytes = None
        if src_bytes is not None:
            for c in _pair_ctas(wave, int(ctas[k]), cg):
                san.tmem_access(rec, inst, c, L, C, read=False, write=True)
                san.async_smem(rec, inst, c, src_bytes, write=False)
        san.tc_issue(rec, idx[inv == g])
        recs.append(rec)
    return san.wrap_all([(rec, None) for rec in recs], perform)


def _commit(wave, inst):
    """tcgen05.commit.cta_group::N.mbarrier::arrive::one{.shared::cluster}{.multicast::cluster}
    .b64 [mbar]{, ctaMask} (9.7.16.12.1): arrive-on (count 1) once the prior asynchronous
    tcgen05 operations completed; with .multicast::cluster on the mbarrier at the same offset
    in every CTA of ctaMask. The commits of one step are one queued operation whose signal is one
    vectorised arrive, in thread order (the CTAs of ctaMask in rank order per thread)."""
    cg = cta_group_of(inst)
    mc = inst.has(".multicast::cluster")
    ops = inst.operands
    cs = wave.launch.geometry.cluster_size
    text = f"line {inst.loc.line}: {inst}"
    san = _san(wave)

    def run(idx):
        ctas, offs = shared_target(wave, inst, ops[0], idx)
        ctas, offs = np.asarray(ctas, np.int64), np.asarray(offs, np.int64)
        if mc:
            masks = wave.read(ops[1], idx, 16).astype(np.int64)
            ranks = np.arange(cs)
            hit = (masks[:, None] >> ranks[None, :]) & 1 != 0         # (threads, ranks)
            t_of, r_of = np.nonzero(hit)                               # thread order, rank order
            ctas = ctas[t_of] - ctas[t_of] % cs + r_of
            offs = offs[t_of]
        signal = (lambda c=ctas, o=offs: wave.mbar.arrive(c, o, 1) if c.size else None)
        if san is not None:
            of = t_of if mc else np.arange(idx.size)
            signal = _san_commit(san, inst, idx, of, ctas, offs, signal)
        wave.proxy.commit(int(idx[0]), cg, signal=signal, what=text, threads=idx)
        wave.advance(idx)
    return run


def _taddr(cols, op) -> np.ndarray:
    """A [taddr] operand's value per issuing thread (int64)."""
    base = cols[op.base].astype(np.int64) if op.base else 0
    return (base + int(op.offset)) & 0xFFFFFFFF


def _san_commit(san, inst, idx, of, ctas, offs, signal):
    """tcgen05.commit of threads idx for the sanitizer, one record per CTA: the arrive of each
    thread (on the mbarriers (ctas[j], offs[j]) with of[j] its position in idx) carries its
    warp's clock and the operations it tracks to the mbarriers' phases."""
    cta_t = san.wave.cta_of[idx]
    rec_of = np.empty(idx.size, np.int64)
    recs = []
    for c in np.unique(cta_t).tolist():
        sel = np.flatnonzero(cta_t == c)
        rec = san.new_rec("commit", inst, int(idx[sel[0]]), None)
        san.tc_commit(rec, idx[sel])
        rec_of[sel] = len(recs)
        recs.append(rec)
    targets = sorted(set(zip(rec_of[np.asarray(of, np.int64)].tolist(),
                             np.asarray(ctas).tolist(), np.asarray(offs).tolist())))

    def run():
        for r, c, o in targets:
            san.mb_signal(recs[r], c, o, clock=recs[r].clock)
        signal()
        san.mb_sync(np.asarray(ctas), np.asarray(offs))
        for rec in recs:
            san.rec_done(rec)
    return run


def _cp(wave, inst):
    """tcgen05.cp.cta_group::N.shape{.multicast}{.b8x16.src_fmt} [taddr], s-desc: the copies of
    one step are one queued operation. tcgen05.cp reads shared memory and writes Tensor Memory
    only, so issues by several threads of one CTA with the same operands are one copy; the
    others run in issue order (rounds)."""
    cg = cta_group_of(inst)
    shape = next(q[1:] for q in inst.qualifiers if q[1:] in tmem_cp.CP_SHAPES)
    mcast = next((q[1:] for q in inst.qualifiers if q.startswith(".warpx")), None)
    fmt = next((q[1:] for q in inst.qualifiers if q in (".b6x16_p32", ".b4x16_p64")), None)
    ops = inst.operands
    text = f"line {inst.loc.line}: {inst}"
    cs = wave.launch.geometry.cluster_size
    san = _san(wave)

    def run(idx):
        cols = _columns(wave, inst, idx)
        ctas = wave.cta_of[idx]
        taddr = _taddr(cols, ops[0])
        desc = (cols[ops[1].name].astype(np.uint64) if isinstance(ops[1], Register) else
                np.full(idx.size, int(ops[1].value), np.uint64))
        keys = ctas - (ctas % cs) % 2 if cg == 2 else ctas
        # the same copy issued again by another thread of the CTA (pair): once, in issue order
        # of its last issue
        issued = (idx, ctas, taddr, desc)                # for the sanitizer, as issued
        rec = np.stack([keys.astype(np.uint64), taddr.astype(np.uint64), desc])
        _, last = np.unique(rec[:, ::-1], axis=1, return_index=True)
        keep = np.sort(keys.size - 1 - last)
        ctas, taddr, desc, keys = ctas[keep], taddr[keep], desc[keep], keys[keep]

        def perform():
            for sel in _rounds(keys):
                for c, a, d in zip(ctas[sel].tolist(), taddr[sel].tolist(), desc[sel].tolist()):
                    if cg == 2:
                        pst = pair_state(wave, c)
                        tmem, smems = pst.tmem_pair, (pst.even.smem, pst.odd.smem)
                    else:
                        tmem, smems = cta_state(wave, c).tmem, (wave.memory.shared.cta_view(c),)
                    rows = [tmem_cp.cp_rows_from_smem(s, d, shape) for s in smems]
                    src = rows[0] if cg == 1 else np.stack(rows)
                    tmem_cp.tcgen05_cp(tmem, shape, a, src, mcast, fmt, cg)
        if san is not None:
            perform = _san_cp(san, wave, inst, issued, cg, shape, mcast, perform)
        wave.proxy.issue(int(idx[0]), "cp", perform=perform, cta_group=cg, what=text,
                         threads=idx)
        wave.advance(idx)
    return run


def _shift(wave, inst):
    """tcgen05.shift.cta_group::N.down [taddr]: the shifts of one step, one queued operation."""
    cg = cta_group_of(inst)
    ops = inst.operands
    text = f"line {inst.loc.line}: {inst}"
    cs = wave.launch.geometry.cluster_size
    san = _san(wave)

    def run(idx):
        cols = _columns(wave, inst, idx)
        ctas = wave.cta_of[idx]
        taddr = _taddr(cols, ops[0])
        keys = ctas - (ctas % cs) % 2 if cg == 2 else ctas
        # shifts of one block issued again by other threads of the CTA (pair) are one shift by
        # that many rows (tmem_cp.tcgen05_shift_down times=); when one CTA shifts several
        # blocks they run one by one, in thread order
        _, first, inv, count = np.unique(keys, return_index=True, return_inverse=True,
                                         return_counts=True)
        if (taddr == taddr[first][inv.reshape(-1)]).all():          # one block per CTA
            work = list(zip(ctas[first].tolist(), taddr[first].tolist(), count.tolist()))
        else:
            work = [(c, a, 1) for c, a in zip(ctas.tolist(), taddr.tolist())]

        def perform():
            for c, a, k in work:
                tm = pair_state(wave, c).tmem_pair if cg == 2 else cta_state(wave, c).tmem
                tmem_cp.tcgen05_shift_down(tm, a, cg, times=k)
        if san is not None:                  # one record per distinct (CTA, block)
            u, first_s, inv_s = np.unique(np.stack([ctas, taddr]), axis=1, return_index=True,
                                          return_inverse=True)
            inv_s = inv_s.reshape(-1)
            recs = []
            for g, k in enumerate(first_s.tolist()):
                rec = san.new_rec("shift", inst, int(idx[k]), "cp")
                lane0, col0 = split_address(int(taddr[k]))
                L = np.arange(lane0, min(lane0 + tmem_cp.SHIFT_ROWS, 128))[:, None]
                C = np.arange(col0, min(col0 + tmem_cp.SHIFT_COLUMNS, 512))[None, :]
                L, C = np.broadcast_arrays(L, C)
                for cc in _pair_ctas(wave, int(ctas[k]), cg):
                    san.tmem_access(rec, inst, cc, L, C, read=True, write=True)
                san.tc_issue(rec, idx[inv_s == g])
                recs.append(rec)
            perform = san.wrap_all([(rec, None) for rec in recs], perform)
        wave.proxy.issue(int(idx[0]), "shift", perform=perform, cta_group=cg, what=text,
                         threads=idx)
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
    "tcgen05.wait": _with_notes(lambda wave, inst: _wait(wave, inst)),
    "tcgen05.mma": _mma,                    # its notes: isa.tcgen05_mma.execute_parsed
    "tcgen05.commit": _with_notes(_commit), "tcgen05.cp": _with_notes(_cp),
    "tcgen05.shift": _with_notes(_shift),
}
