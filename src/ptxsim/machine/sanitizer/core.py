"""The sanitizer's state for one wave: happens-before clocks per warp, shadow state of shared
memory and Tensor Memory, the asynchronous operations in flight, and the checks the handlers call.

Happens-before (docs/sanitizer.md, "The model"). Every warp of the wave is one agent with a
vector clock (`vc[w]`, one int64 per warp; `ep[w] = vc[w, w]` its own epoch). A release (bar
arrive, mbarrier arrive, barrier.cluster.arrive, an atomic on a synchronisation word) publishes
the warp's clock and starts its next epoch; an acquire (the barrier completes, a successful
mbarrier wait, the cluster barrier's wait, an atomic reading the word) joins the published clock
into the warp's. An access of warp r is ordered after an access of warp x at epoch e iff
vc[r, x] >= e (FastTrack's epoch test). The lanes of a warp are one agent (program order).

Asynchronous operations (tcgen05.mma / cp / shift / ld / st, TMA and bulk copies, cp.async) are
`AsyncRec`s. An operation's effects are known to warp r once some warp x observed its
completion through the completion mechanism the PTX ISA defines (tcgen05.commit + mbarrier
wait, complete-tx + mbarrier wait, tcgen05.wait::ld / ::st, a true register dependency on a
tcgen05.ld destination (9.7.16.6.4.5), cp.async{.bulk}.wait_group, cp.async.mbarrier.arrive) at
epoch e of x, and vc[r, x] >= e: `obs` maps each observer to that epoch. Operations of one
thread that form a tcgen05 pipeline (9.7.16.6.2) are ordered without completion.

Shadow shared memory, per 4-byte word of every CTA of the wave: the last generic write (`sw`),
the last generic read (`sr`) and the last asynchronous reader (`sa`), each a packed int64
(warp + 1) << 53 | epoch << 24 | pc, or for an asynchronous operation (ASYNC << 53) | rec id;
bits 20-23 of a generic record hold the bytes of the word it accessed; one init flag per
byte (`ib`). Tensor
Memory, per CTA and cell: the rec ids of the last writer and reader and an init flag.
"""
from __future__ import annotations

import numpy as np

from ptxsim.machine.grid import WARP_SIZE
from ptxsim.machine.mbarrier import decode as _mb_decode
from ptxsim.machine.watchdog import EXITED, RUN
from ptxsim.machine.sanitizer.findings import Access, Finding
from ptxsim.ptx.instruction import Address, Register, RegisterPair, Vector

# packed access records
_PC_BITS, _EP_BITS = 24, 29
_PC_MASK = (1 << 20) - 1                           # pc in bits [0, 20), byte mask in [20, 24)
_MASK_SHIFT = 20
_EP_MASK = (1 << _EP_BITS) - 1
_W_SHIFT = _PC_BITS + _EP_BITS                     # 53 (sign bit stays 0)
ASYNC = 1023                                       # warp field of an asynchronous record
MAX_WARPS = ASYNC - 1
_ASYNC_TAG = np.int64(ASYNC << _W_SHIFT | 15 << _MASK_SHIFT)   # | rec id << 24


def _atag(rec) -> np.int64:
    """The shadow record of an asynchronous operation (all four bytes of the word)."""
    return _ASYNC_TAG | np.int64(rec.id << _PC_BITS)

# tcgen05 pipelines (9.7.16.6.2): (earlier kind, later kind) executed in issue order when
# issued by one thread (or ordered across threads, 9.7.16.6.4.3)
_BIG = 1 << 62
_RING = 4096                                       # rows of the known(rec, warp) cache
READERS = ("mma", "cp", "tma_store", "wgmma")   # asynchronous operations that only read
                                                    # shared memory (their marks are in `sa`)
_NFENCE = 4                                        # fence.proxy.async epochs kept per warp
PIPELINED = {("mma", "mma"), ("cp", "mma"), ("shift", "mma"), ("shift", "cp"), ("mma", "shift")}
TC_COMMIT_TRACKED = ("mma", "cp", "shift")        # completion through tcgen05.commit
TC_ALL = ("mma", "cp", "shift", "ld", "st")         # asynchronous tcgen05 operations


def _uniq(a: np.ndarray) -> list:
    """The distinct values of a small-alphabet array (usually one), as Python ints."""
    if a.size == 0:
        return []
    lo, hi = a.min(), a.max()
    if lo == hi:
        return [int(lo)]
    return _usort(a).tolist()


def _usort(a) -> np.ndarray:
    """np.unique(a) by a sort (numpy 2.4's np.unique hashes int64 arrays: ~18x slower for
    32k elements)."""
    s = np.sort(np.asarray(a).ravel())
    if s.size < 2:
        return s
    return s[np.concatenate(([True], s[1:] != s[:-1]))]


def _sorted_unique(a: np.ndarray) -> np.ndarray:
    """np.unique of an array that is already sorted."""
    if a.size < 2:
        return a
    return a[np.concatenate(([True], a[1:] != a[:-1]))]


def _reg_names(op):
    """Register names an operand mentions (vector elements, address bases and coordinates,
    both halves of a p|q pair)."""
    if isinstance(op, RegisterPair):
        yield op.first.name
        yield op.second.name
    elif isinstance(op, Address):
        if op.base is not None:
            yield op.base
        if op.vector is not None:
            yield from _reg_names(op.vector)
    elif isinstance(op, Vector):
        for e in op.elements:
            yield from _reg_names(e)
    elif isinstance(op, Register):
        yield op.name


# instructions whose first operand is not a destination register (uninitialised-register check)
_NO_DEST = {"st", "red", "stmatrix", "bar", "barrier", "barrier.cluster", "bra", "brx", "call",
            "ret", "exit", "trap", "mbarrier.init", "mbarrier.inval", "mbarrier.expect_tx",
            "mbarrier.complete_tx", "cp.async", "cp.async.bulk", "cp.async.bulk.tensor",
            "cp.reduce.async.bulk", "cp.reduce.async.bulk.tensor", "tensormap.replace",
            "tcgen05.st", "tcgen05.mma", "tcgen05.cp", "tcgen05.shift", "tcgen05.commit",
            "tcgen05.alloc", "tcgen05.dealloc", "prefetch", "prefetchu", "fence", "membar",
            "wgmma.mma_async"}


def _dest_and_sources(inst, declared):
    """(destination register names, source register names) of an instruction, for the
    uninitialised-register check; only names the kernel declares with .reg."""
    ops = list(inst.operands)
    dst = []
    if ops and inst.opcode not in _NO_DEST and isinstance(ops[0], (Register, RegisterPair,
                                                                      Vector)):
        dst = [n for n in _reg_names(ops[0]) if declared(n) is not None]
        ops = ops[1:]
    src = [n for op in ops for n in _reg_names(op) if declared(n) is not None]
    return dst, src


def _reg_names_of(inst):
    for op in inst.operands:
        yield from _reg_names(op)
    if inst.predicate is not None:
        yield inst.predicate.name


# Zeroed shadow arrays kept from the last wave, by shape: a fresh np.zeros of the ~80 MB
# shared-memory shadow is paid in page faults at first touch, scattered over the run (0.14 s
# of a Triton 1024^3 launch, mostly huge-page zeroing); refilling a kept one is one memset.
# One array per (shape, dtype); released at the wave's end (WaveSanitizer.release).
_POOL: dict = {}


def _pooled(shape, dtype) -> np.ndarray:
    a = _POOL.pop((shape, np.dtype(dtype).str), None)
    if a is None:
        return np.zeros(shape, dtype)
    a.fill(0)
    return a


def _release(a: np.ndarray) -> None:
    _POOL[(a.shape, a.dtype.str)] = a


# Tensor Memory shadows (writer id, reader id, initialised) of one CTA each, kept from the
# last wave the same way (three fresh 128 x 512 arrays per CTA cost ~0.5 ms in page faults
# at first touch; 64 CTAs of a Triton 1024^3 launch ~30 ms).
_TM_POOL: list = []


def _tm_shadow() -> tuple:
    if _TM_POOL:
        st = _TM_POOL.pop()
        for a in st:
            a.fill(0)
        return st
    return (np.zeros((128, 512), np.int64), np.zeros((128, 512), np.int64),
            np.zeros((128, 512), bool))


class AsyncRec:
    """One asynchronous operation (issued by thread `t`, warp `warp` of the wave)."""
    __slots__ = ("id", "kind", "pc", "t", "warp", "cta", "epoch", "done", "obs", "cover",
                 "regs", "clock", "issue_step", "done_step", "unit", "obs_t",
                 "all_known", "trace_args", "words", "ctas", "covers", "overlaps", "allw",
                 "rkeys")

    def __init__(self, rid, kind, pc, t, warp, cta, epoch, step, unit):
        self.id, self.kind, self.pc, self.t, self.warp, self.cta = rid, kind, pc, t, warp, cta
        self.epoch, self.issue_step, self.unit = epoch, step, unit
        self.done = False
        self.done_step = None
        self.obs: dict[int, int] = {}       # observer warp -> epoch of the observation
        self.obs_t: dict[int, int] = {}     # full mode: observations valid for tcgen05 ops
        self.cover = None                   # the tcgen05.commit rec that tracks this op
        self.regs = None                    # tcgen05.ld destination registers
        self.clock = None                   # release clock carried by its mbarrier signal
        self.all_known = False              # every warp of its cluster is
        self.trace_args = {}
        self.words = None                   # flat shared-memory words it marked
        self.ctas = None                    # the CTAs (wave positions) of those words
        self.covers = ()                    # a commit: the operations it tracks
        self.overlaps = None                # [(earlier copy, flat words)] it also writes
        self.rkeys = None                   # a reader: [(alive_rd entry, CTAs)]
        self.allw = None                    # a merged record (`WaveSanitizer.merge_ok`): the
        #                                     warps of every CTA it writes in


class WaveSanitizer:
    """Sanitizer state and checks of one wave (`Wave.san`)."""

    def __init__(self, san, wave):
        self.san = san
        self.wave = wave
        self.full = san.full
        self.findings = san.findings
        self.tracer = san.tracer
        prog = wave.program
        self.pc_of = {id(inst): pc for pc, inst in enumerate(prog.instructions)}
        self.W = W = wave.N // WARP_SIZE
        self.enabled = san.checks and W <= MAX_WARPS
        # asynchronous operations complete at the latest point (one per CTA when no thread
        # can run): in full mode and for a trace, where the timeline shows the overlap
        self.latest = san.full or san.tracer is not None
        # registers that some tcgen05.ld writes (a use of one may complete a pending load)
        self.ld_dest_regs = set()
        for inst in prog.instructions:
            if inst.opcode == "tcgen05.ld" and inst.operands:
                self.ld_dest_regs |= set(_reg_names(inst.operands[0]))
        self.vc = np.zeros((W, W), np.int64)
        self.ep = np.ones(W, np.int64)
        self.vc[np.arange(W), np.arange(W)] = 1
        # tcgen05 view (full mode): what a warp's tcgen05 ops are ordered after, and what it
        # published at its last tcgen05.fence::before_thread_sync
        if self.full:
            self.vct = self.vc.copy()
            self.fb = np.zeros((W, W), np.int64)
            self.pend_t = np.zeros((W, W), np.int64)
        # shared memory shadow
        sh = wave.memory.shared
        self.S = sh.size
        self.SW = -(-sh.size // 4)                        # words per CTA
        nw = wave.n_ctas * self.SW
        # the three records of a word side by side (one cache line serves all three)
        self.shadow = _pooled((nw, 3), np.int64)
        self.sw, self.sr, self.sa = self.shadow[:, 0], self.shadow[:, 1], self.shadow[:, 2]
        # per warp: (warp + 1) << 53 | epoch << 24, the constant part of its records
        self.epw = ((np.arange(W, dtype=np.int64) + 1) << _W_SHIFT) | (self.ep << _PC_BITS)
        self.ib = _pooled((nw * 4,), np.uint8)            # init flag per byte
        self.ibw = self.ib.view(np.uint32)               # the same, 4 bytes per word
        self.ibh = self.ib.view(np.uint16)               # and 2 bytes per half-word
        self.any_async_read = False
        # per CTA: generic writes / reads since its last barrier of all its warps, unretired
        # asynchronous operations marking its words (what a new access must be checked
        # against); once another CTA accessed shared memory, only cluster barriers clear
        self.gw = np.zeros(wave.n_ctas, bool)
        self.gr = np.zeros(wave.n_ctas, bool)
        self.alive = np.zeros(wave.n_ctas, np.int64)
        self.alive_w = np.zeros(wave.n_ctas, np.int64)     # ... of them writing
        self.lastw = np.zeros(W, np.int64)                 # epoch of each warp's last write
        # the in-CTA words each warp wrote since its last fence.proxy.async (a range covering
        # them: lowest, highest; empty: lo > hi), and per CTA at its last barrier of all warps the union of its
        # warps' (what an asynchronous read there may need a proxy-fence check for)
        self.uf_lo = np.full(W, _BIG, np.int64)
        self.uf_hi = np.full(W, -1, np.int64)
        self.unf_lo = np.full(wave.n_ctas, _BIG, np.int64)
        self.unf_hi = np.full(wave.n_ctas, -1, np.int64)
        self._runs_memo: dict = {}                         # id(local words) -> (words, runs)
        self.remote_seen = False
        # proxy fences: per warp the epochs of its last _NFENCE fence.proxy.async (oldest
        # first, -1 = none)
        self.pfm = np.full((W, _NFENCE), -1, np.int64)
        # each warp's clock at its last fence.proxy.async (made at the first fence)
        self.pfv = None
        self.al_pend: dict = {}           # warp -> held partial .aligned arrival
        # Tensor Memory shadow, per CTA (lazy): (writer rec ids, reader rec ids, init)
        self.tm: dict[int, tuple] = {}
        self.dmemo: dict[int, tuple] = {}                # CTA -> (block, rec id, slices)
        self.last_fence = None                           # set by ordered(): the fence missing
        self.fp_cache: dict = {}                         # tcgen05.mma footprints
        # asynchronous operations
        self.recs: dict[int, AsyncRec] = {}
        self.next_rec = 1
        self.commits_of: dict[int, list] = {}            # issuer thread -> its commits
        self.uncovered: dict[int, list] = {}             # issuer -> mma/cp/shift not committed
        self.pending_ld: dict[int, list] = {}            # warp -> tcgen05.ld recs not complete
        self.pending_st: dict[int, list] = {}
        self.ld_regs: set = set()                        # registers of pending tcgen05.ld
        # mbarrier phases: key (cta, offset) -> accumulated release clock / recs of the
        # current phase; (key, parity) -> (clock, recs, phase number) of the last completed
        self.mb_acc: dict = {}
        self.mb_recs: dict = {}
        self.mb_done: dict = {}
        self.mb_acc_t: dict = {}                         # full mode: the tcgen05 view
        self.mb_done_t: dict = {}
        self.pend_obs: dict = {}                         # warp -> recs waiting for fence::after
        self.last_fail = np.full(wave.N, -1, np.int64)   # per thread: the phase it last tested
        self.rinit: dict = {}                            # full mode: register -> written
        self.rdone: set = set()                          # registers already reported
        self.mb_par: dict = {}
        self.mb_phase: dict = {}
        self.mb_last: dict = {}                          # (key, warp) -> phase number acquired
        # named barriers (cta, id) -> accumulated clock; cluster barrier phases
        self.bar_acc: dict = {}
        self.cl_acc: dict = {}
        self.cl_done: dict = {}
        # atomics used for synchronisation: word key -> published clock
        self.sync_obj: dict = {}
        self.groups: dict = {}                           # (warpgroup, "wgmma") -> groups
        self.gcnt: dict = {}                             # family -> commits per thread
        self.gpend: dict = {}                            # family -> [[rec, threads, group,
        #                                                  not yet awaited]]
        self.gasync: list = []                           # asynchronous writes to global
        self._cw: dict = {}                              # CTA -> warps of its cluster
        self._cws: dict = {}                             # CTA -> the same as a slice
        # known(rec, warp) cache: a ring of _RING recs x W warps, each row tagged by rec id
        self.kbtag = np.zeros(_RING, np.int64)
        self.kbm = np.zeros((_RING, W), bool)
        self._words: dict = {}                           # id(byte array) -> its words
        self.pinned_warp = wave.cta_of[::WARP_SIZE]      # CTA of each warp
        self.retired_ids = np.zeros(4096, bool)                # per rec id: retired (all_known)
        # unretired asynchronous writes of shared memory: rec id -> [CTAs, lowest, highest
        # in-CTA word] (an MMA operand read outside every range needs no per-word check)
        self.alive_wr: dict = {}
        # unretired asynchronous reads of shared memory, grouped by their runs of in-CTA
        # words: id(runs) -> [lows, highs, readers per CTA, readers]
        self.alive_rd: dict = {}
        self._cta1s: dict = {}
        # marks of quiet asynchronous reads not yet written into `sa` (rec id -> (words,
        # tag)): written before anything reads or writes `sa` (`_sa_sync`), dropped when the
        # reader retires first (a pipelined GEMM's MMA reads are never looked up)
        self.sa_pend: dict = {}
        self.sa_pend_n = 0
        self._init_ok: dict = {}                 # (id(local words), CTA) -> local words
        #                                          all initialised (init flags are never cleared)
        # the copies of all CTAs of one step may be one record ("merged": its parts observed
        # per CTA, `known`): without clusters and without a trace, where no CTA can touch
        # another CTA's shared memory and no observer of one CTA's part is in another CTA
        self.merge_ok = wave.launch.geometry.cluster_size == 1 and self.tracer is None

    # -------------------------------------------------------------------- compiled wrapper
    def wrap(self, pc: int, inst, body):
        """The instruction's function with the per-step checks it needs: synccheck of a
        .aligned instruction, the completion of pending tcgen05.ld by a use of their
        destination registers (9.7.16.6.4.5)."""
        if not self.enabled:
            return body
        names = set(_reg_names_of(inst))
        regs = names & self.ld_dest_regs
        aligned = inst.has(".aligned") or (inst.opcode == "bar" and not inst.has(".warp"))
        dst, src = _dest_and_sources(inst, self.wave.declared) if self.full and \
            inst.opcode not in ("call", "ret") else ([], [])
        if not regs and not aligned and not dst and not src:
            return body
        regs = frozenset(regs)

        def run(idx):
            if aligned:
                self.check_aligned(inst, idx)
            if regs and self.ld_regs:
                self.reg_use(idx, regs)
            if src:
                self.reg_read(inst, idx, src)
            body(idx)
            for name in dst:
                self._rinit(name)[idx] = True
        return run

    def _rinit(self, name: str) -> np.ndarray:
        a = self.rinit.get(name)
        if a is None:
            a = self.rinit[name] = np.zeros(self.wave.N, bool)
        return a

    def reg_read(self, inst, idx, names) -> None:
        """Full mode: the threads `idx` read registers `names`; one no instruction of theirs
        wrote is reported (once per register)."""
        for name in names:
            if name in self.rdone:
                continue
            got = self._rinit(name)[idx]
            if not got.all():
                bad = ~got
                self.rdone.add(name)
                self.report("uninit-register", inst, int(idx[int(np.argmax(bad))]),
                            f"reads {name}, which no instruction of this thread has written",
                            f"register {name}", count=int(bad.sum()))

    # ----------------------------------------------------------------------------- helpers
    def pc(self, inst) -> int:
        return self.pc_of.get(id(inst), 0)

    def _ctaid(self, cta: int) -> tuple:
        return tuple(int(x) for x in self.wave.launch.geometry.ctaid(int(self.wave.ctas[cta])))

    def _who(self, t: int) -> tuple:
        wave = self.wave
        cta = int(t) // wave.P
        return self._ctaid(cta), (int(t) % wave.P) // WARP_SIZE, int(t) % WARP_SIZE

    def _access_of_packed(self, packed: int, what: str) -> Access:
        packed = int(packed)
        pc = packed & _PC_MASK
        w = (packed >> _W_SHIFT) - 1
        cta = int(self.pinned_warp[w]) if 0 <= w < self.W else None
        who = (f"{what} by warp {(w * WARP_SIZE % self.wave.P) // WARP_SIZE} of CTA "
               f"{self._ctaid(cta)}" if cta is not None else what)
        return self._access_at(pc, who)

    def _access_at(self, pc: int, what: str) -> Access:
        prog = self.wave.program
        inst = prog.instructions[pc] if 0 <= pc < len(prog.instructions) else None
        return Access(prog.line(pc), prog.text(pc), what,
                      getattr(getattr(inst, "loc", None), "file", None))

    def _access_of_rec(self, rec: AsyncRec, word=None) -> Access:
        """The access of `rec` (a merged record: its part in the CTA of shared `word`)."""
        state = "completed" if rec.done else "in flight"
        if rec.allw is not None and word is not None:
            cta = self._ctaid(int(word) // self.SW)
            if cta != self._who(rec.t)[0]:
                return self._access_at(rec.pc, f"{rec.kind} issued by a thread of CTA {cta}, "
                                               f"{state}")
        who = self._who(rec.t)
        return self._access_at(rec.pc, f"{rec.kind} issued by CTA {who[0]} warp {who[1]} lane "
                                       f"{who[2]}, {state}")

    def report(self, kind: str, inst, t: int, message: str, where: str = "",
               earlier: Access | None = None, count: int = 1) -> None:
        cta, warp, lane = self._who(t)
        loc = getattr(inst, "loc", None)
        self.findings.add(Finding(kind, message, getattr(loc, "line", None), str(inst),
                                  getattr(loc, "file", None), cta, warp, lane, where, earlier,
                                  count))

    def tick(self, ws) -> None:
        """Warps `ws` (unique) start a new epoch (after a release, or a proxy fence)."""
        self.ep[ws] += 1
        self.vc[ws, ws] = self.ep[ws]
        self.epw[ws] += 1 << _PC_BITS

    def known(self, rec: AsyncRec, ws: np.ndarray) -> np.ndarray:
        """For warps `ws`: is `rec`'s completion ordered before their next instruction?
        (Once true for a warp it stays true, clocks only grow: cached in the ring `kbm`.)"""
        ws = np.asarray(ws, np.int64)
        if rec.all_known:
            return np.ones(ws.size, bool)
        slot = rec.id % _RING
        mine = self.kbtag[slot] == rec.id
        if mine:
            got = self.kbm[slot, ws]
            if got.all():
                return got
        r = rec.cover if (rec.kind in TC_COMMIT_TRACKED and rec.cover is not None) else rec
        obs = r.obs
        if not obs:
            return self.kbm[slot, ws] if mine else np.zeros(ws.size, bool)
        xs = np.fromiter(obs.keys(), np.int64, len(obs))
        es = np.fromiter(obs.values(), np.int64, len(obs))
        hb = self.vc[ws[:, None], xs[None, :]] >= es[None, :]
        if r.allw is not None:
            # a merged record: each CTA's part is observed by that CTA's warps only
            hb &= self.pinned_warp[ws][:, None] == self.pinned_warp[xs][None, :]
        got = hb.any(1)
        if got.any():
            if not mine:
                self.kbtag[slot] = rec.id
                self.kbm[slot] = False
            self.kbm[slot, ws[got]] = True
            cw = self._rec_warps(rec)
            if self.kbm[slot, cw].all():
                rec.all_known = True
                self._retire(rec)
        return got

    def learn(self, rec: AsyncRec, w: int) -> None:
        """Warp w observes `rec`'s completion now (its epoch is the observation's), and the
        known(rec, w) cache says so at once."""
        if w in rec.obs:
            return
        rec.obs[w] = int(self.ep[w])
        self._cache_known(rec, w)

    def _cache_known(self, rec: AsyncRec, w) -> None:
        """known(rec, w) is true from now on (w: one warp or an array of warps)."""
        if rec.all_known:
            return
        slot = rec.id % _RING
        row = self.kbm[slot]
        if self.kbtag[slot] != rec.id:
            self.kbtag[slot] = rec.id
            row[:] = False
        row[w] = True
        if row[self._rec_warps_sel(rec)].all():
            rec.all_known = True
            self._retire(rec)

    def known_cached(self, ids, ws) -> np.ndarray:
        """Vectorised: per element, is rec `ids[i]` retired or cached as known by warp
        `ws[i]`?"""
        got = self.retired_ids[ids]
        if got.all():
            return got
        rest = np.flatnonzero(~got)
        i, w = ids[rest], np.asarray(ws)[rest]
        slot = i % _RING
        got[rest] = (self.kbtag[slot] == i) & self.kbm[slot, w]
        return got

    def _rec_warps(self, rec: AsyncRec) -> np.ndarray:
        """The warps that must know `rec` for it to retire."""
        return rec.allw if rec.allw is not None else self.cluster_warps(rec.cta)

    def _rec_warps_sel(self, rec: AsyncRec):
        """_rec_warps as an index: a slice for a cluster's warps (consecutive)."""
        if rec.allw is not None:
            return rec.allw
        sl = self._cws.get(rec.cta)
        if sl is None:
            cw = self.cluster_warps(rec.cta)
            sl = self._cws[rec.cta] = slice(int(cw[0]), int(cw[-1]) + 1)
        return sl

    def _retire(self, rec: AsyncRec) -> None:
        """Every warp that could touch its memory knows `rec` completed: its shared-memory
        marks can conflict with nothing any more, and are dropped."""
        self.retired_ids[rec.id] = True
        self.alive_wr.pop(rec.id, None)
        if self.sa_pend and self.sa_pend.pop(rec.id, None) is not None:
            if not self.sa_pend:
                self.sa_pend_n = 0
        if rec.rkeys:
            for e, ctas in rec.rkeys:
                if ctas.size == 1:
                    e[2][int(ctas[0])] -= 1       # (an int index: ~10x a one-element array's)
                else:
                    e[2][ctas] -= 1
                e[3] -= ctas.size
                if e[3] <= 0 and self.alive_rd.get(id(e[0])) is e:
                    del self.alive_rd[id(e[0])]
            rec.rkeys = None
        if rec.words is None:
            return
        # its marks stay: a check that meets one finds the operation known and drops it
        rec.words = None
        cs = int(rec.ctas[0]) if rec.ctas.size == 1 else rec.ctas
        self.alive[cs] -= 1
        if rec.kind not in READERS:
            self.alive_w[cs] -= 1

    def known_t(self, x: AsyncRec, r: int) -> bool:
        """Full mode: is x's completion ordered before warp r's next tcgen05 operation through
        the tcgen05 fences (9.7.16.6.3-4)?"""
        src = x.cover if (x.kind in TC_COMMIT_TRACKED and x.cover is not None) else x
        for o, e in src.obs_t.items():
            if o == r or self.vct[r, o] >= e:
                return True
        return False

    def missing_fence(self, x: AsyncRec, r: int) -> str:
        """Which tcgen05 thread-sync fence the ordering of x before warp r's operation lacks."""
        src = x.cover if (x.kind in TC_COMMIT_TRACKED and x.cover is not None) else x
        if r in src.obs and r not in src.obs_t:
            return "after"                    # r waited itself but did not fence after
        for o, e in src.obs_t.items():
            if self.pend_t[r, o] >= e:
                return "after"                # r acquired it, no fence::after since
        return "before"

    def cluster_warps(self, cta: int) -> np.ndarray:
        cw = self._cw.get(cta)
        if cw is None:
            cs = self.wave.launch.geometry.cluster_size
            c0 = cta - cta % cs
            per = self.wave.P // WARP_SIZE
            cw = self._cw[cta] = np.arange(c0 * per, (c0 + cs) * per, dtype=np.int64)
        return cw

    def observe(self, rec: AsyncRec, ws) -> None:
        """Warps `ws` observe `rec`'s completion now (e.g. a successful mbarrier wait)."""
        for w in np.atleast_1d(ws).tolist():
            if w not in rec.obs:
                rec.obs[w] = int(self.ep[w])

    # ---------------------------------------------------------------------- async records
    def new_rec(self, kind: str, inst, t: int, unit: str) -> AsyncRec:
        w = int(t) // WARP_SIZE
        rec = AsyncRec(self.next_rec, kind, self.pc(inst), int(t), w, int(t) // self.wave.P,
                       int(self.ep[w]), self.wave.launch.steps, unit)
        self.next_rec += 1
        if self.next_rec >= self.retired_ids.size:
            self.retired_ids = np.concatenate([self.retired_ids,
                                               np.zeros(self.retired_ids.size, bool)])
        self.recs[rec.id] = rec
        if self.tracer is not None:
            self.tracer.issue(self, rec)
        return rec

    def rec_done(self, rec: AsyncRec) -> None:
        rec.done = True
        rec.done_step = self.wave.launch.steps
        if self.tracer is not None:
            self.tracer.complete(self, rec)

    def wrap_perform(self, rec: AsyncRec, perform, on_done=None):
        """`perform` that also marks `rec` complete (and runs `on_done` after it)."""
        return self.wrap_all([(rec, on_done)], perform)

    def wrap_all(self, items, perform, on_done_all=None):
        """`perform` of one queued operation that also marks each rec of `items` [(rec,
        on_done or None)] complete, then runs its on_done (and `on_done_all`)."""
        def run():
            data = self.wave.memory.shared.data.reshape(-1)
            before = [(rec, [data[self._bytes_of_words(w)].copy()
                             for _, w, _ in rec.overlaps])
                      for rec, _ in items if rec.overlaps]
            if perform is not None:
                perform()
            for rec, on_done in items:
                self.rec_done(rec)
            for rec, b in before:
                self._landed(rec, b)
            for rec, on_done in items:
                if on_done is not None:
                    on_done()
            if on_done_all is not None:
                on_done_all()
        return run

    def ordered(self, x: AsyncRec, y: AsyncRec) -> bool:
        """Is asynchronous operation x ordered before y (y's issue)?"""
        if x is y:
            return True
        self.last_fence = None
        if x.t == y.t and x.kind in TC_COMMIT_TRACKED and y.kind in TC_COMMIT_TRACKED \
                and (x.kind, y.kind) not in PIPELINED:
            # one thread's tcgen05.mma / cp / shift execute in issue order in default mode:
            # NVIDIA's CuTe DSL re-fills scale factors with tcgen05.cp right after the MMAs
            # that read them (mma -> cp is not a pair of 9.7.16.6.2; full mode reports it)
            if not self.full or bool(self.known(x, np.array([y.warp]))[0]):
                return True
            self.last_fence = "pipeline"
            return False
        if (x.kind, y.kind) in PIPELINED:
            if x.t == y.t:
                return True
            # pipelined across threads (9.7.16.6.4.3): x's issue happens before y's issue
            # (full mode: through fence::before in x's warp and fence::after in y's)
            if self.vc[y.warp, x.warp] >= x.epoch:
                if not self.full or self.vct[y.warp, x.warp] > x.epoch:
                    return True
                self.last_fence = "before" if self.pend_t[y.warp, x.warp] <= x.epoch \
                    else "after"
                return False
        ok = bool(self.known(x, np.array([y.warp]))[0])
        # full mode: between tcgen05 operations the ordering must also hold for the tensor
        # core: through the thread-sync fences (a wait::ld / ::st orders its own warp's later
        # operations by itself)
        if ok and self.full and y.kind in TC_ALL and x.kind in TC_ALL and \
                (x.warp != y.warp or x.kind in TC_COMMIT_TRACKED):
            if not self.known_t(x, y.warp):
                self.last_fence = self.missing_fence(x, y.warp)
                return False
        return ok

    # ------------------------------------------------------------------- shared memory
    def shared_access(self, inst, idx, cta, off, nbytes: int, write: bool,
                      data=None) -> None:
        """A generic access of `nbytes` per thread (threads `idx`, per-thread CTA / byte
        offset of the wave's shared memory): race, asynchronous-proxy and init checks, then
        the shadow update. `data`: the bytes each thread stored ((n, nbytes) uint8), to tell a
        harmless same-value write of two warps in one instruction from a race."""
        if not self.enabled or idx.size == 0:
            return
        if not self.remote_seen and (np.asarray(cta) != self.wave.cta_of[idx]).any():
            self.remote_seen = True                      # distributed shared memory in use
        pc = self.pc(inst) & _PC_MASK
        flat = np.asarray(cta, np.int64) * (self.SW * 4) + np.asarray(off, np.int64)
        if nbytes >= 4:
            nw = nbytes // 4
            words = (flat >> 2) if nw == 1 else ((flat >> 2)[:, None] + np.arange(nw)).ravel()
            th = idx if nw == 1 else np.repeat(idx, nw)
            mask = None                                   # whole words
            low = (15 << _MASK_SHIFT) | pc
        else:
            words = flat >> 2
            th = idx
            mask = ((1 << nbytes) - 1) << (flat & 3)
            low = (mask << _MASK_SHIFT) | pc
        w = th // WARP_SIZE
        # which earlier records can still conflict: generic writes / reads since the target
        # CTAs' last barrier of all their warps, asynchronous marks not yet retired
        c = _sorted_unique(np.asarray(cta, np.int64))  # covers every CTA touched
        live = self.alive[c].any()
        if write:
            if live or self.gw[c].any():
                self._check_prev(inst, th, w, words, mask, self.sw, "write", write)
            if self.gr[c].any():
                self._check_prev(inst, th, w, words, mask, self.sr, "read", write)
            if live:
                self._check_async_readers(inst, th, w, words)
            self.gw[c] = True
            uw = _sorted_unique(w)
            self.lastw[uw] = self.ep[uw]
            offs = np.asarray(off, np.int64)          # in-CTA words, all the warps' range
            lo, hi = int(offs.min()) >> 2, (int(offs.max()) + nbytes - 1) >> 2
            self.uf_lo[uw] = np.minimum(self.uf_lo[uw], lo)
            self.uf_hi[uw] = np.maximum(self.uf_hi[uw], hi)
            rec = self.epw[w] | low
            self.sw[words] = rec
            # two warps writing one word in this same instruction: the scatter kept one
            back = self.sw[words]
            clash = (back >> _W_SHIFT) != (w + 1)
            if clash.any():
                self._same_step_clash(inst, th, w, words, back, clash, mask, flat, nbytes, data)
            if mask is None:
                self.ibw[words] = 0x01010101
            elif nbytes == 2:                             # aligned: one half-word
                self.ibh[flat >> 1] = 0x0101
            else:
                self.ib[flat] = 1
        else:
            if live or self.gw[c].any():
                self._check_prev(inst, th, w, words, mask, self.sw, "write", write)
            self.gr[c] = True
            # initcheck
            if mask is None:
                bad = self.ibw[words] != 0x01010101
            elif nbytes == 2:
                bad = self.ibh[flat >> 1] != 0x0101
            else:
                bad = self.ib[flat] == 0
            if bad.any():
                i = int(np.argmax(bad))
                word = int(words[i])
                self.report("uninit-shared", inst, int(th[i]),
                            "read of shared memory that no instruction has written",
                            self._where_word(word), count=int(bad.sum()))
                # report each word once
                if mask is None:
                    self.ibw[words[bad]] = 0x01010101
                elif nbytes == 2:
                    self.ibh[flat[bad] >> 1] = 0x0101
                else:
                    self.ib[flat[bad]] = 1
            self.sr[words] = self.epw[w] | low

    def _same_step_clash(self, inst, th, w, words, back, clash, mask, flat, nbytes,
                         data) -> None:
        bw = (back[clash] >> _W_SHIFT) - 1
        other = bw != w[clash]
        if mask is not None:
            other &= ((back[clash] >> _MASK_SHIFT) & mask[clash]) != 0
        if other.any() and data is not None:
            # writes of the value that remains are harmless (Triton's warp-specialised setup
            # stores one constant from every thread)
            ci = np.flatnonzero(clash)[other]
            per = max(1, nbytes // 4)
            row, part = ci // per, ci % per
            n = min(nbytes, 4)
            start = flat[row] + 4 * part if nbytes >= 4 else flat[row]
            mem = self.wave.memory.shared.data.reshape(-1)
            cta, inner = np.divmod(start, self.SW * 4)
            mine = np.asarray(data, np.uint8).reshape(len(flat), -1)
            own = mine[row[:, None], (4 * part)[:, None] + np.arange(n)] if nbytes >= 4 \
                else mine[row]
            now = mem[(cta * self.S + inner)[:, None] + np.arange(n)]
            differ = (own != now).any(1)
            other[other] = differ
        if other.any():
            j = np.flatnonzero(clash)[int(np.argmax(other))]
            self.report("race-shared", inst, int(th[j]),
                        "write races with a write by another warp of the same instruction "
                        "(no barrier orders them)", self._where_word(int(words[j])),
                        self._access_of_packed(int(back[j]), "write"), count=int(other.sum()))

    def _where_word(self, word: int) -> str:
        cta, off = divmod(int(word) * 4, self.SW * 4)
        return f"shared::cta offset {off:#x} of CTA {self._ctaid(cta)}"

    def _check_prev(self, inst, th, w, words, mask, arr, prev_kind: str,
                    write: bool) -> None:
        """Conflicts of this access with the previous `prev_kind` access of each word (a write
        conflicts with both, a read with the previous write)."""
        prev = arr[words]
        pw = (prev >> _W_SHIFT) - 1                       # -1: no record
        hit = pw != w
        hit &= pw >= 0
        if not hit.any():
            return
        if mask is not None:
            hit &= ((prev >> _MASK_SHIFT) & mask) != 0
            if not hit.any():
                return
        is_async = hit & (pw == ASYNC - 1)
        gen = hit & ~is_async
        if gen.any():
            gi = np.flatnonzero(gen)
            pep = (prev[gi] >> _PC_BITS) & _EP_MASK
            race = self.vc[w[gi], pw[gi]] < pep
            if race.any():
                j = gi[int(np.argmax(race))]
                action = "write" if write else "read"
                self.report("race-shared", inst, int(th[j]),
                            f"{action} races with an earlier {prev_kind} by another warp (no "
                            "barrier or release / acquire orders them)",
                            self._where_word(int(words[j])),
                            self._access_of_packed(int(prev[j]), prev_kind),
                            count=int(race.sum()))
        if is_async.any():
            self._check_async_prev(inst, th, w, words, prev, is_async, prev_kind, write)

    def _check_async_prev(self, inst, th, w, words, prev, sel, prev_kind, write) -> None:
        """The previous access of these words was an asynchronous operation's."""
        ids = (prev[sel] >> _PC_BITS) & _EP_MASK
        ws, ths, wds = w[sel], th[sel], words[sel]
        rest = ~self.known_cached(ids, ws)
        if not rest.any():
            return
        if not rest.all():
            ids, ws, ths, wds = ids[rest], ws[rest], ths[rest], wds[rest]
        arr = self.sw if prev_kind == "write" else self.sa
        for rid in _uniq(ids):
            rec = self.recs.get(int(rid))
            if rec is None or rec.all_known:
                continue
            m = ids == rid
            uw, first = np.unique(ws[m], return_index=True)
            ok = self.known(rec, uw)
            if ok.all():
                if rec.all_known and (write or prev_kind != "write"):
                    arr[wds[m]] = 0        # nothing can conflict with it any more
                continue
            j = int(np.flatnonzero(m)[first[int(np.argmax(~ok))]])
            if prev_kind == "write" and not write:
                kind, msg = ("async-read-before-complete",
                             f"read of shared memory the {rec.kind} copy writes, before its "
                             "completion is known to this warp (wait on its mbarrier / "
                             "wait_group first)")
            elif prev_kind == "write":
                kind, msg = ("async-dest-overwritten",
                             f"write to shared memory the {rec.kind} copy writes, before its "
                             "completion is known to this warp")
            else:
                kind, msg = ("async-source-overwritten",
                             f"write to shared memory the {rec.kind} operation reads, before "
                             "its completion is known to this warp")
            self.report(kind, inst, int(ths[j]), msg, self._where_word(int(wds[j])),
                        self._access_of_rec(rec, wds[j]), count=int((~ok).sum()))

    def _sa_sync(self) -> None:
        """Write the pending marks of quiet asynchronous reads into `sa`, in issue order."""
        items = list(self.sa_pend.values())
        self.sa_pend.clear()
        self.sa_pend_n = 0
        if items:
            self.sa[np.concatenate([w for w, _ in items])] = np.concatenate(
                [np.full(w.size, t, np.int64) for w, t in items])

    def _check_async_readers(self, inst, th, w, words) -> None:
        if self.sa_pend:
            self._sa_sync()
        prev = self.sa[words]
        sel = prev != 0
        if sel.any():
            self._check_async_prev(inst, th, w, words, prev, sel, "async-read", True)
            # this write supersedes the asynchronous reads: a later access that conflicts with
            # them conflicts with this write too (and is reported against it)
            self.sa[words[sel]] = 0

    # -------------------------------------------- the asynchronous proxy in shared memory
    def async_smem(self, rec: AsyncRec, inst, cta: int, byte_offsets=None, *, chunks=None,
                   write: bool) -> None:
        """`rec` (issued now by rec.t) reads (write=False) or writes the shared-memory bytes of
        CTA `cta` (sorted offsets, or 16-byte chunk numbers): checks against the generic
        accesses and asynchronous operations before it, then the shadow marks."""
        if not self.enabled:
            return
        words = self._local_words(byte_offsets, chunks) + cta * self.SW
        self._async_words(rec, inst, words, write)

    def _local_words(self, byte_offsets, chunks) -> np.ndarray:
        """The in-CTA word numbers of sorted byte offsets or of 16-byte chunks (memoised for
        the read-only arrays the footprints return)."""
        src = chunks if chunks is not None else byte_offsets
        key = id(src) if isinstance(src, np.ndarray) and not src.flags.writeable else None
        got = self._words.get(key) if key is not None else None
        if got is not None and got[0] is src:
            return got[1]
        if chunks is not None:
            words = (np.asarray(chunks, np.int64)[:, None] * 4 + np.arange(4)).ravel()
        else:
            words = _usort(np.asarray(byte_offsets, np.int64) >> 2)
        words = words[(words >= 0) & (words < self.SW)]
        if key is not None:
            self._words[key] = (src, words)
        return words

    def async_smem_flat(self, rec: AsyncRec, inst, flat, size: int, write: bool) -> None:
        """As async_smem for `size` bytes at each flat byte offset (cta * 4 * SW + offset)."""
        if not self.enabled:
            return
        words = _usort(((np.asarray(flat, np.int64)[:, None] + np.arange(size)) >> 2))
        self._async_words(rec, inst, words[(words >= 0) & (words < self.sw.size)], write)

    def async_smem_flat_done(self, flat, size: int) -> None:
        b = (np.asarray(flat, np.int64)[:, None] + np.arange(size)).ravel()
        self.ib[b[(b >= 0) & (b < self.ib.size)]] = 1

    def _async_words(self, rec: AsyncRec, inst, words, write: bool) -> None:
        self.async_words_multi([rec], inst, [words], write)

    def async_words_multi(self, recs: list, inst, words_list: list, write: bool,
                          issuers: list | None = None, init_keys: list | None = None) -> None:
        """Asynchronous operations `recs` (issued now, e.g. one tcgen05.mma per CTA of a step)
        read (write=False) or write the flat shared-memory words `words_list[i]`: each
        checked against the generic accesses and the asynchronous operations before it, in
        one vectorised pass, then marked as in flight. `issuers`: per record, the issuing
        thread of each of its words (a merged record of several CTAs' copies, or the copies of
        several warps of one CTA); else each record's own thread. `init_keys`: per record (read) its (in-CTA words
        array, CTA), whose initcheck is done once."""
        sizes = [w.size for w in words_list]
        if not sum(sizes):
            return
        fresh = []                                # CTAs of records marking words first
        for ri, (rec, w) in enumerate(zip(recs, words_list)):
            if w.size and write:
                if issuers is not None:               # in-CTA words: the issuers' CTA's
                    loc = w - self.wave.cta_of[issuers[ri]] * self.SW
                else:
                    loc = w % self.SW
                lo, hi = int(loc.min()), int(loc.max())
                got = self.alive_wr.get(rec.id)
                if got is None:
                    self.alive_wr[rec.id] = [None, lo, hi]
                else:
                    got[1], got[2] = min(got[1], lo), max(got[2], hi)
            if w.size:
                if rec.words is None:
                    rec.words = w
                    key = init_keys[ri] if init_keys else None
                    if key is not None and (rec.ctas is None or rec.ctas.size == 1):
                        rec.ctas = self._cta1(key[1])  # (an MMA footprint: one CTA)
                    elif rec.allw is None:            # (a merged record has its CTAs)
                        lo, hi = int(w[0]) // self.SW, int(w[-1]) // self.SW
                        rec.ctas = np.array([lo]) if lo == hi and \
                            int(w.min()) // self.SW == lo and int(w.max()) // self.SW == lo \
                            else _usort(w // self.SW)
                    fresh.append(rec.ctas)
                else:
                    rec.words = np.concatenate([rec.words, w])
                    more = np.setdiff1d(_usort(w // self.SW), rec.ctas)
                    if more.size:
                        self.alive[more] += 1
                        if write:
                            self.alive_w[more] += 1
                        rec.ctas = np.union1d(rec.ctas, more)
        if write:
            for rec in recs:
                got = self.alive_wr.get(rec.id)
                if got is not None:
                    got[0] = rec.ctas
        if fresh:
            cs = np.concatenate(fresh) if len(fresh) > 1 else fresh[0]
            np.add.at(self.alive, cs, 1)
            if write:
                np.add.at(self.alive_w, cs, 1)
        if not write:
            for k, (rec, w) in enumerate(zip(recs, words_list)):
                if w.size and rec.ctas is not None:
                    key = init_keys[k] if init_keys else None
                    if key is not None:
                        runs = self._runs(key[0], True)
                    else:
                        runs = self._runs(_usort(w % self.SW), False)
                    e = self.alive_rd.get(id(runs[0]))
                    if e is None:
                        e = self.alive_rd[id(runs[0])] = [runs[0], runs[1],
                                                          np.zeros(self.wave.n_ctas, np.int64), 0]
                    e[2][rec.ctas] += 1
                    e[3] += rec.ctas.size
                    if rec.rkeys is None:
                        rec.rkeys = []
                    rec.rkeys.append((e, rec.ctas))
        elif len(recs) == 1:
            near = self._write_quiet(recs[0])
            if near is not None:
                w = words_list[0]
                if near:                  # other writes in flight nearby: not on these words?
                    prev = self.sw[w]
                    asy = prev[(prev >> _W_SHIFT) == ASYNC]
                    if asy.size and np.isin((asy >> _PC_BITS) & _EP_MASK, near).any():
                        near = None
                if near is not None:
                    # nothing before can conflict: only the marks
                    self.sw[w] = _atag(recs[0])
                    return
        if not write:
            # a read of CTAs whose every generic write is ordered and fenced by a barrier of
            # all their warps, with no asynchronous write in flight there: nothing to check
            # but initialisation (the common case of a pipelined GEMM's MMA issue)
            # (in flight there: an asynchronous write whose in-CTA word range overlaps the
            # read's, when the read lies in one CTA)
            # and with generic writes not fenced by their warps at that barrier: the read's
            # runs of words overlap the CTA's range of them)
            keys = init_keys or [None] * len(recs)
            hot: dict = {}

            def quiet(k):
                rec, w = recs[k], words_list[k]
                if rec.ctas is None or rec.ctas.size != 1:
                    return False
                c = int(rec.ctas[0])
                if self.gw[c]:
                    return False
                local = keys[k][0] if keys[k] is not None else w - c * self.SW
                if local.size == 0 or local[0] < 0 or local[-1] >= self.SW:
                    return False
                lo, hi = self._runs(local, keys[k] is not None)
                if self.unf_lo[c] <= self.unf_hi[c]:
                    a, b = self.unf_lo[c], self.unf_hi[c]
                    if ((lo <= b) & (hi >= a)).any():
                        return False
                if not self.alive_w[c]:
                    return True
                h = hot.get(id(local))
                if h is None:
                    h = hot[id(local)] = np.zeros(self.wave.n_ctas, bool)
                    for ctas, alo, ahi in self.alive_wr.values():
                        if ctas is not None and ((lo <= ahi) & (hi >= alo)).any():
                            h[ctas] = True
                return not h[c]
            if init_keys and len(recs) > 4 and all(
                    k is not None and x.ctas is not None and x.ctas.size == 1
                    and x.ctas[0] == k[1] for k, x in zip(keys, recs)):
                busy = self._busy_reads(keys, hot)            # the same, vectorised
            else:
                busy = [not quiet(k) for k in range(len(recs))]
            if not all(busy):
                todo = [k for k, b in enumerate(busy) if not b and
                        (keys[k] is None or self._init_ok.get((id(keys[k][0]), keys[k][1]))
                         is not keys[k][0])]
                self._init_check_async(inst, [recs[k] for k in todo],
                                       [words_list[k] for k in todo])
                for k in todo:
                    if keys[k] is not None:
                        self._init_ok[(id(keys[k][0]), keys[k][1])] = keys[k][0]
                for x, w, b in zip(recs, words_list, busy):
                    if not b:                     # the marks, written when needed
                        got = self.sa_pend.pop(x.id, None)
                        if got is not None:
                            w = np.concatenate([got[0], w])
                        self.sa_pend[x.id] = (w, int(_atag(x)))
                        self.sa_pend_n += w.size
                if self.sa_pend_n > 1 << 22:
                    self._sa_sync()
                self.any_async_read = True
                recs = [x for x, b in zip(recs, busy) if b]
                words_list = [w for w, b in zip(words_list, busy) if b]
                if issuers is not None:
                    issuers = [i for i, b in zip(issuers, busy) if b]
                sizes = [w.size for w in words_list]
                if not recs:
                    return
        words = np.concatenate(words_list) if len(words_list) > 1 else words_list[0]
        rix = np.repeat(np.arange(len(recs)), sizes)
        if issuers is not None:                       # per word: the thread issuing it
            th = np.concatenate(issuers) if len(issuers) > 1 else \
                np.asarray(issuers[0], np.int64)
        else:
            th = np.array([x.t for x in recs], np.int64)[rix]
        r = th // WARP_SIZE
        tags = np.array([int(_atag(x)) for x in recs], np.int64)[rix]
        keep = None
        # generic accesses before: must happen before the issue (and, for a read by the
        # asynchronous proxy of a generic write, be fenced with fence.proxy.async)
        for arr, what in ((self.sw, "write"), ) + (((self.sr, "read"),) if write else ()):
            prev = arr[words]
            pw = (prev >> _W_SHIFT) - 1
            gen = (pw >= 0) & (pw != ASYNC - 1) & (pw != r)
            own = (pw == r) if what == "write" and not write else None
            if gen.any():
                gi = np.flatnonzero(gen)
                pep = (prev[gi] >> _PC_BITS) & _EP_MASK
                race = self.vc[r[gi], pw[gi]] < pep
                if race.any():
                    j = gi[int(np.argmax(race))]
                    rec = recs[int(rix[j])]
                    kind = "async-overwrites-unread" if write else "race-shared"
                    self.report(kind, inst, int(th[j]),
                                f"the {rec.kind} {'writes' if write else 'reads'} shared memory "
                                f"an earlier generic {what} of another warp is not ordered "
                                "before", self._where_word(int(words[j])),
                                self._access_of_packed(int(prev[j]), what),
                                count=int(race.sum()))
            if own is not None:
                fence = gen | own
                if fence.any():
                    self._proxy_fences(inst, recs, rix, r, words, prev, pw, fence)
            if what == "write":
                asy = pw == ASYNC - 1
                if asy.any():
                    if write:
                        keep = self._overlapping_copies(recs, rix, th, words, prev, asy)
                    else:
                        self._async_vs_async(inst, recs, rix, th, words, prev, asy, write)
        if not write:
            self._init_check_async(inst, recs, words_list)
        if self.sa_pend:
            self._sa_sync()
        if write:
            prev = self.sa[words]
            asy = prev != 0
            if asy.any():
                self._async_vs_async(inst, recs, rix, th, words, prev, asy, write)
            if keep is not None:                          # earlier copies stay the writers
                words, tags = words[~keep], tags[~keep]
            self.sw[words] = tags
        else:
            self.sa[words] = tags
            self.any_async_read = True

    def _busy_reads(self, keys, hot) -> list:
        """`quiet` of async_words_multi for reads in one CTA each, keys [(in-CTA words, CTA)]:
        per group of one footprint, in array operations over its CTAs."""
        busy = [True] * len(keys)
        groups: dict = {}
        for k, (local, c) in enumerate(keys):
            groups.setdefault(id(local), (local, []))[1].append(k)
        for local, ks in groups.values():
            if local.size == 0 or local.min() < 0 or local.max() >= self.SW:
                continue
            cs = np.array([keys[k][1] for k in ks], np.int64)
            lo, hi = self._runs(local, True)
            bad = self.gw[cs].copy()
            ul, uh = self.unf_lo[cs], self.unf_hi[cs]
            has = ul <= uh
            if has.any():
                a, b = ul, uh
                bad |= has & ((lo[None, :] <= b[:, None]) & (hi[None, :] >= a[:, None])).any(1)
            inf = self.alive_w[cs] > 0
            if inf.any():
                h = hot.get(id(local))
                if h is None:
                    h = hot[id(local)] = np.zeros(self.wave.n_ctas, bool)
                    for ctas, alo, ahi in self.alive_wr.values():
                        if ctas is not None and ((lo <= ahi) & (hi >= alo)).any():
                            h[ctas] = True
                bad |= inf & h[cs]
            for k, b in zip(ks, bad.tolist()):
                busy[k] = b
        return busy

    def _write_quiet(self, rec: AsyncRec):
        """An asynchronous write by `rec` (its words just marked) into CTAs with no generic
        access since their last barrier of all warps (every one ordered before the issue),
        no unretired asynchronous read overlapping its in-CTA word range, and no other
        unretired asynchronous write on its words: no check can fire. Returns None when the
        full check is needed, else the ids of the unretired writes whose ranges overlap (the
        caller looks for their marks in the words)."""
        ctas = rec.ctas
        if ctas is None or self.gw[ctas].any() or self.gr[ctas].any():
            return None
        _, a, b = self.alive_wr[rec.id]
        for lo, hi, cnt, _ in self.alive_rd.values():
            if (cnt[ctas] > 0).any() and ((lo <= b) & (hi >= a)).any():
                return None
        mine = None
        near = []
        for rid, (c2, lo, hi) in self.alive_wr.items():
            if rid != rec.id and lo <= b and hi >= a and c2 is not None:
                if mine is None:
                    mine = np.zeros(self.wave.n_ctas, bool)
                    mine[ctas] = True
                if mine[c2].any():
                    if len(near) == 8:
                        return None
                    near.append(rid)
        return near

    def _cta1(self, c: int) -> np.ndarray:
        got = self._cta1s.get(c)
        if got is None:
            got = self._cta1s[c] = np.array([c], np.int64)
        return got

    def _runs(self, local, memo: bool):
        """The runs of consecutive words of sorted in-CTA words `local`: (lows, highs)."""
        got = self._runs_memo.get(id(local)) if memo else None
        if got is not None and got[0] is local:
            return got[1]
        cut = np.flatnonzero(local[1:] != local[:-1] + 1)
        runs = (local[np.r_[0, cut + 1]], local[np.r_[cut, local.size - 1]])
        if memo:
            self._runs_memo[id(local)] = (local, runs)
        return runs

    def _init_check_async(self, inst, recs, words_list) -> None:
        """initcheck: the asynchronous proxy reads bytes no one wrote."""
        for rec, words in zip(recs, words_list):
            bad = self.ibw[words] == 0
            if bad.any():
                j = int(np.argmax(bad))
                self.report("uninit-shared", inst, rec.t,
                            f"the {rec.kind} reads shared memory that no instruction has written",
                            self._where_word(int(words[j])), count=int(bad.sum()))
                self.ibw[words[bad]] = 0x01010101

    def _ordered_at(self, x: AsyncRec, rec: AsyncRec, th) -> np.ndarray:
        """Per issuing thread `th` (of rec's words): is x ordered before rec's issue? (A copy
        of a merged record is issued by each of its threads' warps.)"""
        if rec.allw is None or rec.kind in TC_ALL:
            return np.full(th.size, self.ordered(x, rec))
        if x is rec:
            return np.ones(th.size, bool)
        uw, inv = np.unique(th // WARP_SIZE, return_inverse=True)
        return self.known(x, uw)[inv]

    def _async_vs_async(self, inst, recs, rix, th, words, prev, sel, write) -> None:
        """Earlier asynchronous operations on these words must be known complete to each
        issuing warp (or form a tcgen05 pipeline with it)."""
        gi = np.flatnonzero(sel)
        ids = (prev[gi] >> _PC_BITS) & _EP_MASK
        rest = ~self.known_cached(ids, th[gi] // WARP_SIZE)
        if not rest.any():
            return
        gi, ids = gi[rest], ids[rest]
        pairs = _usort(ids * len(recs) + rix[gi])
        for key in pairs.tolist():
            rid, k = divmod(key, len(recs))
            rec = recs[k]
            x = self.recs.get(int(rid))
            if x is None or x is rec:
                continue
            mk = (ids == rid) & (rix[gi] == k)
            bad = ~self._ordered_at(x, rec, th[gi[mk]])
            if not bad.any():
                continue
            j = int(gi[np.flatnonzero(mk)[int(np.argmax(bad))]])
            if write:
                kind, msg = ("async-overwrites-unread",
                             f"the {rec.kind} writes shared memory an earlier {x.kind} may "
                             "still access (its completion is not known to the issuing warp)")
            else:
                kind, msg = ("async-read-before-complete",
                             f"the {rec.kind} reads shared memory the {x.kind} copy writes, "
                             "before its completion is known to the issuing warp")
            self.report(kind, inst, int(th[j]), msg, self._where_word(int(words[j])),
                        self._access_of_rec(x, words[j]), count=int(bad.sum()))

    def _overlapping_copies(self, recs, rix, th, words, prev, sel):
        """Asynchronous writes over bytes an earlier asynchronous write (not yet known complete
        to the issuer) also writes: two TMA copies of the same data into one place (CuTe's
        2-CTA scale-factor multicast) are harmless, different data is a race whose winner is
        undefined. Decided when the later copy lands (`wrap_perform` compares the bytes); until
        then the earlier copy stays the words' writer. Returns the words kept (bool mask)."""
        gi = np.flatnonzero(sel)
        ids = (prev[gi] >> _PC_BITS) & _EP_MASK
        rest = ~self.known_cached(ids, th[gi] // WARP_SIZE)
        if not rest.any():
            return None
        gi, ids = gi[rest], ids[rest]
        keep = np.zeros(words.size, bool)
        for rid in _uniq(ids):
            x = self.recs.get(int(rid))
            m = ids == rid
            for k in _uniq(rix[gi[m]]):
                rec = recs[k]
                if x is None or x is rec:
                    continue
                mm = gi[m][rix[gi[m]] == k]
                mm = mm[~self._ordered_at(x, rec, th[mm])]
                if not mm.size:
                    continue
                keep[mm] = True
                if rec.overlaps is None:
                    rec.overlaps = []
                rec.overlaps.append((x, words[mm], int(th[mm[0]])))
        return keep if keep.any() else None

    def _bytes_of_words(self, words) -> np.ndarray:
        cta, w = np.divmod(np.asarray(words, np.int64), self.SW)
        b = (cta * self.S + w * 4)[:, None] + np.arange(4)
        return np.minimum(b, self.wave.memory.shared.data.size - 1).ravel()

    def _landed(self, rec: AsyncRec, before: list) -> None:
        """The copy `rec` landed over bytes of earlier in-flight copies: the same bytes are
        harmless; other bytes are a write-write race of the asynchronous proxy."""
        data = self.wave.memory.shared.data.reshape(-1)
        for (x, words, t), old in zip(rec.overlaps, before):
            changed = data[self._bytes_of_words(words)] != old
            if changed.any():
                k = int(np.argmax(changed.reshape(-1, 4).any(1)))
                inst = self.wave.program.instructions[rec.pc]
                self.report("async-overwrites-unread", inst, t,
                            f"the {rec.kind} writes other data into shared memory an earlier "
                            f"{x.kind} copy also writes, with no completion of one known before "
                            "the other's issue: which bytes remain is undefined",
                            self._where_word(int(words[k])),
                            self._access_of_rec(x, words[k]))
                self.sw[words] = _atag(rec)
        rec.overlaps = None

    def _proxy_fences(self, inst, recs, rix, r, words, prev, pw, sel) -> None:
        """Generic writes read by the asynchronous proxy need a fence.proxy.async on the
        base-causality path from the write to the asynchronous operation (9.7.16.6.5 and the
        memory model's proxy-preserved causality order): either the writing warp fenced after
        the write (its last fence is at or after the write's epoch; that the fence also precedes
        the synchronisation is left to the race check), or the issuing warp fenced after the
        write was ordered before it (its clock at its last fence covers the write's epoch:
        ThunderKittens' TMA stores, where lane 0 of the storing warp fences after the warpgroup
        barrier)."""
        gi = np.flatnonzero(sel)
        e = (prev[gi] >> _PC_BITS) & _EP_MASK
        ok = e <= self.pfm[pw[gi], -1]
        if not ok.all() and self.pfv is not None:
            ok |= self.pfv[r[gi], pw[gi]] >= e            # r: each word's issuing warp
        if ok.all():
            return
        bad = ~ok
        k = gi[int(np.argmax(bad))]
        rec = recs[int(rix[k])]
        self.report("missing-proxy-fence", inst, rec.t,
                    f"the {rec.kind} reads shared memory written through the generic proxy "
                    "with no fence.proxy.async between that write and the synchronisation",
                    self._where_word(int(words[k])),
                    self._access_of_packed(int(prev[k]), "write"), count=int(bad.sum()))

    def async_words_done(self, words) -> None:
        """An asynchronous write of the flat words `words` completed: they are initialised."""
        self.ibw[words] = 0x01010101

    def async_smem_done(self, rec, cta, byte_offsets=None, *, chunks=None) -> None:
        """An asynchronous write completed: its bytes are initialised."""
        self.ibw[self._local_words(byte_offsets, chunks) + cta * self.SW] = 0x01010101

    # ------------------------------------------------------------- global memory (full)
    def global_race(self, inst, idx, addr, nbytes: int, write: bool, data=None) -> None:
        """Full mode: a generic ld / st of global memory against the last write / read of each
        word by another warp of any CTA: within a wave by the warps' clocks; against a CTA of an
        earlier wave, a conflict is reported when the launch never synchronised through global
        memory (no atomic or .acquire / .release access: nothing could order the two CTAs)."""
        gm = self.wave.memory.global_
        a = np.asarray(addr, np.uint64)
        if not a.size:
            return
        try:
            bix, off = gm.locate(a, nbytes)
        except Exception:   # noqa: BLE001 -- out of bounds: the access itself raises
            return
        shadows = self.san.gshadow
        wpc = self.wave.wpc
        gwarp = self.wave.ctas[idx // self.wave.P] * wpc + (idx % self.wave.P) // WARP_SIZE
        w = idx // WARP_SIZE
        nw = max(1, nbytes // 4)
        pc = self.pc(inst)
        for b in _usort(bix).tolist():
            m = bix == b
            sh = shadows.get(b)
            if sh is None:
                size = -(-gm.buffers[b].nbytes // 4)
                sh = shadows[b] = (np.zeros(size, np.int64), np.zeros(size, np.int32),
                                   np.zeros(size, np.int64), np.zeros(size, np.int32))
            wrec, wpcs, rrec, rpcs = sh
            words = (off[m] >> 2)
            if nw > 1:
                words = (words[:, None] + np.arange(nw)).ravel()
            gw = np.repeat(gwarp[m], nw) if nw > 1 else gwarp[m]
            lw = np.repeat(w[m], nw) if nw > 1 else w[m]
            th = np.repeat(idx[m], nw) if nw > 1 else idx[m]
            words = np.minimum(words, wrec.size - 1)
            checks = ((wrec, wpcs, "write"), (rrec, rpcs, "read")) if write else \
                ((wrec, wpcs, "write"),)
            for rec_arr, pc_arr, what in checks:
                prev = rec_arr[words]
                pg = (prev >> 32) - 1                      # previous global warp, -1: none
                hit = (pg >= 0) & (pg != gw)
                if not hit.any():
                    continue
                hi = np.flatnonzero(hit)
                pe = prev[hi] & 0xFFFFFFFF
                local = self._local_warp(pg[hi])
                race = np.where(local >= 0,
                                self.vc[lw[hi], np.maximum(local, 0)] < pe,
                                not self.san.global_sync)
                if race.any():
                    j = hi[int(np.argmax(race))]
                    k = int(words[j])
                    pgw = int(pg[j])
                    cta = pgw // wpc
                    ctaid = tuple(int(x) for x in self.wave.launch.geometry.ctaid(cta))
                    prior = self._access_at(int(pc_arr[k]), f"{what} by warp {pgw % wpc} of "
                                                            f"CTA {ctaid}")
                    self.report("race-global", inst, int(th[j]),
                                f"{'write' if write else 'read'} races with an earlier {what} "
                                "by another warp (no synchronisation orders them)",
                                f"global address {int(gm.buffers[b].base + 4 * k):#x} "
                                f"(buffer '{gm.buffers[b].name}')", prior,
                                count=int(race.sum()))
            tag = ((gw + 1) << 32) | self.ep[lw]
            if write:
                wrec[words] = tag
                wpcs[words] = pc
                clash = wrec[words] != tag                # two warps, one word, this step
                if clash.any() and data is not None:
                    # writes of the value that remains are harmless
                    rows = np.flatnonzero(clash) // nw
                    mine = np.asarray(data, np.uint8).reshape(idx.size, -1)[m][rows]
                    o = off[m][rows]
                    now = gm.buffers[b].u8[o[:, None] + np.arange(mine.shape[1])]
                    clash[np.flatnonzero(clash)] = (mine != now).any(1)
                if clash.any():
                    j = int(np.argmax(clash))
                    k = int(words[j])
                    pgw = int((wrec[k] >> 32) - 1)
                    ctaid = tuple(int(x) for x in
                                  self.wave.launch.geometry.ctaid(pgw // wpc))
                    self.report("race-global", inst, int(th[j]),
                                "write races with a write by another warp of the same "
                                "instruction (no synchronisation orders them)",
                                f"global address {int(gm.buffers[b].base + 4 * k):#x} "
                                f"(buffer '{gm.buffers[b].name}')",
                                self._access_at(pc, f"write by warp {pgw % wpc} of CTA "
                                                    f"{ctaid}"), count=int(clash.sum()))
            else:
                rrec[words] = tag
                rpcs[words] = pc

    def _local_warp(self, gwarp) -> np.ndarray:
        """Wave-local warp of global warp ids (-1: a CTA of another wave)."""
        wpc = self.wave.wpc
        cta = gwarp // wpc
        pos = np.searchsorted(self.wave.ctas, cta)
        pos = np.minimum(pos, self.wave.ctas.size - 1)
        here = self.wave.ctas[pos] == cta
        return np.where(here, pos * wpc + gwarp % wpc, -1)

    # ------------------------------------------------------- asynchronous writes to global
    def global_async_write(self, rec: AsyncRec, starts, lens) -> None:
        """`rec` (a TMA tile store / bulk store) writes the global runs [starts, +lens) when it
        completes: generic accesses there before its completion is known are reported."""
        if self.enabled and len(starts):
            self.gasync.append((rec, np.asarray(starts, np.int64), np.asarray(lens, np.int64)))

    def global_access(self, inst, idx, addr, nbytes: int, write: bool) -> None:
        """A generic ld / st of global memory against the asynchronous writes in flight."""
        a = np.asarray(addr, np.uint64).astype(np.int64)
        w = idx // WARP_SIZE
        for rec, starts, lens in self.gasync:
            k = np.searchsorted(starts, a, side="right") - 1
            hit = (k >= 0) & (a < starts[np.maximum(k, 0)] + lens[np.maximum(k, 0)])
            k2 = np.searchsorted(starts, a + nbytes - 1, side="right") - 1
            hit |= (k2 >= 0) & (a + nbytes - 1 < starts[np.maximum(k2, 0)] +
                                lens[np.maximum(k2, 0)])
            if not hit.any():
                continue
            uw, first = np.unique(w[hit], return_index=True)
            ok = self.known(rec, uw)
            if ok.all():
                continue
            j = int(np.flatnonzero(hit)[first[int(np.argmax(~ok))]])
            kind = "async-dest-overwritten" if write else "async-read-before-complete"
            self.report(kind, inst, int(idx[j]),
                        f"{'write to' if write else 'read of'} global memory the {rec.kind} "
                        "copy writes, before its completion is known to this warp "
                        "(cp.async.bulk.wait_group first)", f"global address {int(a[j]):#x}",
                        self._access_of_rec(rec), count=int((~ok).sum()))

    # ------------------------------------------------------------ async-groups, cp.async
    # An operation joins the open async-group of each thread that issued it; per family
    # ("bulk", "cp_async") each thread's commit count numbers its groups, so a record keeps
    # its threads and the group number each joined: commit and wait_group are array
    # operations over the executing threads, a loop only over the records still awaited.
    def group_add(self, rec: AsyncRec, threads, fam: str) -> None:
        threads = np.atleast_1d(np.asarray(threads, np.int64))
        cnt = self.gcnt.get(fam)
        if cnt is None:
            cnt = self.gcnt[fam] = np.zeros(self.wave.N, np.int64)
        self.gpend.setdefault(fam, []).append([rec, threads, cnt[threads].copy(),
                                              np.ones(threads.size, bool)])

    def bulk_group_add(self, t: int, rec: AsyncRec) -> None:
        self.group_add(rec, t, "bulk")

    def group_commit(self, idx, fam: str) -> None:
        cnt = self.gcnt.get(fam)
        if cnt is None:
            cnt = self.gcnt[fam] = np.zeros(self.wave.N, np.int64)
        cnt[np.asarray(idx, np.int64)] += 1

    def group_wait(self, idx, fam: str, n: int) -> None:
        """wait_group n by threads idx: each thread's groups but its n most recent completed;
        its warp observes their operations."""
        pend = self.gpend.get(fam)
        if not pend:
            return
        idx = np.asarray(idx, np.int64)
        lim = np.full(self.wave.N, -1, np.int64)
        lim[idx] = self.gcnt[fam][idx] - n
        keep = []
        for e in pend:
            rec, threads, gidx, open_ = e
            hit = open_ & (gidx < lim[threads])
            if hit.any():
                if not rec.done:
                    self.rec_done(rec)
                self.learn_many(rec, _sorted_unique(threads[hit] // WARP_SIZE))
                open_ &= ~hit
            if open_.any():
                keep.append(e)
        self.gpend[fam] = keep

    def cp_async_arrive(self, idx, cta, off) -> None:
        """cp.async.mbarrier.arrive: the threads' prior cp.async signal the mbarrier."""
        pend = self.gpend.get("cp_async")
        if not pend:
            return
        idx = np.atleast_1d(np.asarray(idx, np.int64))
        pos = np.full(self.wave.N, -1, np.int64)
        pos[idx] = np.arange(idx.size)
        cta = np.broadcast_to(np.asarray(cta, np.int64), idx.shape)
        off = np.broadcast_to(np.asarray(off, np.int64), idx.shape)
        for rec, threads, _, open_ in pend:
            k = pos[threads[open_]]
            k = k[k >= 0]
            if not k.size:
                continue
            for c, o in set(zip(cta[k].tolist(), off[k].tolist())):
                if (c, o) in self.mb_par:
                    recs = self.mb_recs.setdefault((c, o), [])
                    if rec not in recs:
                        recs.append(rec)

    def learn_many(self, rec: AsyncRec, ws: np.ndarray) -> None:
        """learn(rec, w) for each warp of ws (unique)."""
        new = [w for w in ws.tolist() if w not in rec.obs]
        if new:
            rec.obs.update(zip(new, self.ep[new].tolist()))
            self._cache_known(rec, np.asarray(new, np.int64))

    def _groups(self, t: int, fam: str):
        g = self.groups.get((t, fam))
        if g is None:
            g = self.groups[(t, fam)] = ([], [])        # uncommitted, committed groups
        return g

    # wgmma (sm_90): a warpgroup's operations complete at its wgmma.wait_group
    def wgmma_issue(self, rec: AsyncRec, w0: int) -> None:
        self._groups(w0, "wgmma")[0].append(rec)

    def wgmma_commit(self, w0: int) -> None:
        unc, com = self._groups(w0, "wgmma")
        com.append(list(unc))
        unc.clear()

    def wgmma_wait(self, w0: int, n: int) -> None:
        """wgmma.wait_group n of the warpgroup whose first warp is w0: all but its n most
        recent groups completed; its four warps observe them."""
        _, com = self._groups(w0, "wgmma")
        while len(com) > n:
            for rec in com.pop(0):
                if not rec.done:
                    self.rec_done(rec)
                for w in range(w0, w0 + 4):
                    self.learn(rec, w)

    def proxy_fence(self, idx) -> None:
        ws = _usort(idx // WARP_SIZE)
        self.uf_lo[ws] = _BIG
        self.uf_hi[ws] = -1
        self.pfm[ws, :-1] = self.pfm[ws, 1:]
        self.pfm[ws, -1] = self.ep[ws]
        if self.pfv is None:
            self.pfv = np.zeros_like(self.vc)
        self.pfv[ws] = self.vc[ws]
        self.tick(ws)

    def sync_write_shared(self, inst, t: int, cta: int, off: int, nbytes: int) -> None:
        """A write that is not a generic st but orders like one (tcgen05.alloc's address,
        mbarrier.init): initialised, recorded as a write of the warp."""
        if not self.enabled:
            return
        self.shared_access(inst, np.array([t], np.int64), np.array([cta]), np.array([off]),
                           nbytes, True)

    # ------------------------------------------------------------------- Tensor Memory
    def _tmem(self, cta: int):
        st = self.tm.get(cta)
        if st is None:
            st = self.tm[cta] = _tm_shadow()
        return st

    def tmem_access(self, rec: AsyncRec, inst, cta: int, lanes, cols, *, read: bool,
                    write: bool, init: bool = True, block=None) -> None:
        """`rec` reads and / or writes the Tensor Memory cells (lanes, cols) of CTA `cta`
        (`block`: the same cells as a (lane slice, column slice) rectangle, when they are
        one)."""
        if not self.enabled:
            return
        memo = self.dmemo.get(cta)
        if block is not None and read and write:
            bkey = (block[0].start, block[0].stop, block[1].start, block[1].stop)
            if memo is not None and memo[0] == bkey:
                x = self.recs.get(memo[1])
                if x is None or self.ordered(x, rec):
                    # the whole block was last read and written by x, before rec: nothing to
                    # report; the shadow arrays are brought up to date lazily (_materialize)
                    self.dmemo[cta] = (bkey, rec.id, block)
                    return
        tw, tr, ti = self._tmem(cta)
        if memo is not None:
            self._materialize(cta)
        if block is not None:
            sel = block
        else:
            lanes = np.asarray(lanes, np.int64).ravel()
            cols = np.asarray(cols, np.int64).ravel()
            sel = (lanes, cols)

        def where(mask):
            k = np.argwhere(mask)[0]
            if block is not None:
                ln, cl = block[0].start + int(k[0]), block[1].start + int(k[1])
            else:
                ln, cl = int(lanes[k[0]]), int(cols[k[0]])
            return f"Tensor Memory lane {ln} column {cl} of CTA {self._ctaid(cta)}"
        if read:
            wid = tw[sel]
            for rid in _uniq(wid):
                x = self.recs.get(rid) if rid else None
                if x is None or self.ordered(x, rec):
                    continue
                m = wid == rid
                if self.last_fence:
                    self._fence_report(rec, inst, x, where(m), int(m.sum()))
                    continue
                how = ("tcgen05.wait::st" if x.kind == "st" else
                       "tcgen05.commit and a wait on its mbarrier")
                self.report("tmem-read-before-complete", inst, rec.t,
                            f"{rec.kind} reads Tensor Memory the earlier tcgen05.{x.kind} "
                            f"writes, before its completion is known to this warp ({how})",
                            where(m), self._access_of_rec(x), count=int(m.sum()))
            if init:
                got = ti[sel]
                if not got.all():
                    bad = ~got
                    self.report("uninit-tmem", inst, rec.t,
                                f"{rec.kind} reads Tensor Memory that no tcgen05 operation "
                                "wrote since it was allocated", where(bad), count=int(bad.sum()))
                    ti[sel] = True
        if write:
            for arr, what in ((tr, "reads"), (tw, "writes")):
                pid = arr[sel]
                for rid in _uniq(pid):
                    x = self.recs.get(rid) if rid else None
                    if x is None or self.ordered(x, rec):
                        continue
                    m = pid == rid
                    if self.last_fence:
                        self._fence_report(rec, inst, x, where(m), int(m.sum()))
                        continue
                    hint = (" (a tcgen05.wait::ld is missing after it)" if x.kind == "ld"
                            else "")
                    self.report("tmem-overwrite-in-flight", inst, rec.t,
                                f"{rec.kind} writes Tensor Memory the earlier tcgen05.{x.kind} "
                                f"{what}, before its completion is known to this warp{hint}",
                                where(m), self._access_of_rec(x), count=int(m.sum()))
            tw[sel] = rec.id
            ti[sel] = True
        if read:
            tr[sel] = rec.id
            if write and block is not None:
                self.dmemo[cta] = ((block[0].start, block[0].stop, block[1].start,
                                    block[1].stop), rec.id, block)

    def _fence_report(self, rec, inst, x, where, count) -> None:
        which = self.last_fence
        if which == "pipeline":
            self.report("tcgen05-not-pipelined", inst, rec.t,
                        f"tcgen05.{rec.kind} after tcgen05.{x.kind} of the same thread on the "
                        "same Tensor Memory: not a pipelined pair of PTX ISA 9.7.16.6.2, so "
                        "their order is not guaranteed without waiting for the first "
                        "(tcgen05.commit + mbarrier)", where, self._access_of_rec(x), count)
            return
        self.report(f"tcgen05-missing-fence-{which}", inst, rec.t,
                    f"{rec.kind} is ordered after the earlier tcgen05.{x.kind} by thread "
                    f"synchronisation but not for the tensor core: a tcgen05.fence::"
                    f"{which}_thread_sync is missing "
                    + ("in the synchronising thread before its arrive / barrier" if
                       which == "before" else "in this warp after its wait / barrier")
                    + " (9.7.16.6.4)", where, self._access_of_rec(x), count)

    def _materialize(self, cta: int) -> None:
        """Write a lazily kept "block owned by one MMA" (dmemo) into the shadow arrays."""
        memo = self.dmemo.pop(cta, None)
        if memo is None:
            return
        tw, tr, ti = self.tm[cta]
        tw[memo[2]] = memo[1]
        tr[memo[2]] = memo[1]
        ti[memo[2]] = True

    def tmem_dealloc(self, inst, t: int, cta: int, col0: int, ncols: int) -> None:
        if not self.enabled:
            return
        st = self.tm.get(cta)
        if st is None:
            return
        self._materialize(cta)
        tw, tr, ti = st
        w = int(t) // WARP_SIZE
        for arr in (tw, tr):
            ids = arr[:, col0:col0 + ncols]
            for rid in _usort(ids[ids != 0]).tolist():
                x = self.recs.get(int(rid))
                if x is None or bool(self.known(x, np.array([w]))[0]):
                    continue
                if x.warp == w and x.kind in ("ld", "st") and x.done and x.obs.get(w):
                    continue
                self.report("tmem-dealloc-in-flight", inst, t,
                            f"tcgen05.dealloc of columns the tcgen05.{x.kind} may still "
                            "access (its completion is not known to this warp)",
                            f"Tensor Memory columns [{col0}, {col0 + ncols}) of CTA "
                            f"{self._ctaid(cta)}", self._access_of_rec(x))
        tw[:, col0:col0 + ncols] = 0
        tr[:, col0:col0 + ncols] = 0
        ti[:, col0:col0 + ncols] = False

    # tcgen05.ld / st: completion through tcgen05.wait or a register dependency
    def tc_ldst(self, rec: AsyncRec, regs=None) -> None:
        book = self.pending_ld if rec.kind == "ld" else self.pending_st
        book.setdefault(rec.warp, []).append(rec)
        if regs is not None:
            rec.regs = frozenset(regs)
            self.ld_regs |= rec.regs

    def tc_wait(self, idx, kind: str) -> None:
        book = self.pending_ld if kind == "ld" else self.pending_st
        for w in _usort(idx // WARP_SIZE).tolist():
            for rec in book.pop(w, ()):
                self.rec_done(rec)
                self.learn(rec, w)
                if self.full:
                    rec.obs_t.setdefault(w, int(self.ep[w]))
        if kind == "ld":
            self._refresh_ld_regs()

    def _refresh_ld_regs(self) -> None:
        self.ld_regs = set()
        for recs in self.pending_ld.values():
            for r in recs:
                if r.regs:
                    self.ld_regs |= r.regs

    def reg_use(self, idx, names) -> None:
        """An instruction of threads `idx` names registers `names`: a true dependency on a
        pending tcgen05.ld's destination completes that load for the warp (9.7.16.6.4.5)."""
        hit = self.ld_regs.intersection(names)
        if not hit:
            return
        for w in _usort(idx // WARP_SIZE).tolist():
            recs = self.pending_ld.get(w)
            if not recs:
                continue
            left = []
            for r in recs:
                if r.regs and r.regs & hit:
                    self.rec_done(r)
                    self.learn(r, w)
                else:
                    left.append(r)
            self.pending_ld[w] = left
        self._refresh_ld_regs()

    # tcgen05.mma / cp / shift and tcgen05.commit
    def mma_batch(self, inst, items) -> None:
        """The tcgen05.mma of one step: items [(rec, CTAs, MmaFootprint)]: Tensor Memory per
        MMA, the shared-memory operands of all of them in one vectorised pass."""
        recs, words, keys = [], [], []
        for rec, ctas, fp in items:
            for ci, c in enumerate(ctas):
                lanes, cols = fp.d[ci]
                self.tmem_access(rec, inst, c, lanes, cols, read=fp.d_read, write=True,
                                 block=fp.d_blocks[ci])
                for lanes, cols in fp.tmem_reads[ci]:
                    self.tmem_access(rec, inst, c, lanes, cols, read=True, write=False)
                recs.append(rec)
                local = self._operand_words(fp.smem_reads[ci])
                words.append(local + c * self.SW)
                keys.append((local, c))
                if self.tracer is not None and ci == 0:
                    rec.trace_args = {"smem": [int(b[0]) for b in fp.smem_reads[0]]}
            self.tc_issue(rec)
        if recs:
            self.async_words_multi(recs, inst, words, write=False, init_keys=keys)

    def _operand_words(self, arrays) -> np.ndarray:
        """The in-CTA words of an MMA's shared-memory operands (memoised per footprint)."""
        key = tuple(id(a) for a in arrays)
        got = self._words.get(key)
        if got is None or any(x is not y for x, y in zip(got[0], arrays)):
            w = _usort(np.concatenate([self._local_words(a, None) for a in arrays]))
            got = self._words[key] = (tuple(arrays), w)
        return got[1]

    def tc_issue(self, rec: AsyncRec, threads=None) -> None:
        """rec (an mma / cp / shift) waits for a tcgen05.commit of its issuing thread (or of
        each of `threads`, when several issued it as one)."""
        if threads is None:
            self.uncovered.setdefault(rec.t, []).append(rec)
            return
        for t in np.asarray(threads).tolist():
            self.uncovered.setdefault(t, []).append(rec)

    def tc_commit(self, commit: AsyncRec, threads=None) -> None:
        """tcgen05.commit by thread commit.t (or by each of `threads` at once): tracks every
        prior mma / cp / shift of the thread(s); its arrive carries their warps' clock (an
        implicit tcgen05.fence::before_thread_sync, 9.7.16.6.4.2)."""
        ts = [commit.t] if threads is None else np.asarray(threads).tolist()
        covers = []
        for t in ts:
            covers += self.uncovered.pop(t, [])
            self.commits_of.setdefault(t, []).append(commit)
        commit.covers = list(dict.fromkeys(covers))
        for r in commit.covers:
            r.cover = commit
        ws = _sorted_unique(np.asarray(ts, np.int64) // WARP_SIZE)
        commit.clock = self.vc[ws].max(0)
        self.tick(ws)

    # ------------------------------------------------------------------------ mbarriers
    def _mb_keys(self, cta, off):
        return list(zip(np.atleast_1d(cta).tolist(), np.atleast_1d(off).tolist()))

    def _distinct(self, cta, off, *more):
        """Distinct rows of (cta, off, *more) per thread (vectorised), as tuples of ints, with
        the index of each row's first thread."""
        cols = [np.atleast_1d(np.asarray(a, np.int64)) for a in (cta, off) + more]
        n = max(c.size for c in cols)
        cols = [np.broadcast_to(c, (n,)) for c in cols]
        if n == 1:
            return [tuple(int(c[0]) for c in cols)], [0]
        code = cols[0]
        for c, span in zip(cols[1:], (self.S + 8, 2, self.W)[:len(cols) - 1]):
            code = code * span + c
        _, first = np.unique(code, return_index=True)
        rows = np.stack([c[first] for c in cols], 1).tolist()
        return [tuple(r) for r in rows], first.tolist()

    def mb_init(self, cta, off) -> None:
        if self.enabled:                    # the object's 8 bytes now hold a value
            b = (np.atleast_1d(np.asarray(cta, np.int64)) * self.SW * 4
                 + np.atleast_1d(np.asarray(off, np.int64)))
            self.ibw[_usort(b >> 2)] = 0x01010101
            self.ibw[_usort((b >> 2) + 1)] = 0x01010101
        for key in self._mb_keys(cta, off):
            self.mb_par[key] = 0
            self.mb_phase[key] = 0
            self.mb_acc.pop(key, None)
            self.mb_recs.pop(key, None)
            self.mb_done.pop((key, 0), None)
            self.mb_done.pop((key, 1), None)

    def _acc(self, key):
        a = self.mb_acc.get(key)
        if a is None:
            a = self.mb_acc[key] = np.zeros(self.W, np.int64)
        return a

    def mb_arrive(self, cta, off, idx, release: bool = True, count=1, inst=None) -> None:
        """Threads `idx` arrive on the mbarriers (cta, off) (before the arrive is applied)."""
        if inst is not None and self.enabled:
            self._mb_overflow(inst, cta, off, idx, count)
        if not release:
            return
        w = idx // WARP_SIZE
        rows, _ = self._distinct(cta, off, np.zeros(w.size, np.int64), w)
        for c, o, _, ww in rows:
            a = self._acc((c, o))
            np.maximum(a, self.vc[ww], out=a)
            if self.full:
                at = self._acc_t((c, o))
                np.maximum(at, self.fb[ww], out=at)
        self.tick(_usort(w))

    def _mb_overflow(self, inst, cta, off, idx, count) -> None:
        """One instruction's arrivals on an mbarrier that exceed its pending count complete a
        phase and run into the next: the H200 faults ("unspecified launch failure"; synccheck:
        "Barrier overflow", hardware/sanitizer mbar_over_arrive)."""
        cta = np.atleast_1d(np.asarray(cta, np.int64))
        off = np.atleast_1d(np.asarray(off, np.int64))
        cnt = np.broadcast_to(np.asarray(count, np.int64), cta.shape)
        key = cta * (self.S + 8) + off
        uk, first, inv = np.unique(key, return_index=True, return_inverse=True)
        total = np.bincount(inv, weights=cnt).astype(np.int64)
        for k, i, n in zip(uk.tolist(), first.tolist(), total.tolist()):
            if n < 2:
                continue
            try:
                st = self.wave.mbar.state(int(cta[i]), int(off[i]))
            except Exception:   # noqa: BLE001 -- a bad object: the arrive itself reports it
                continue
            if st["valid"] and n > st["pending"]:
                self.report("mbarrier-overflow", inst, int(idx[i]),
                            f"{n} arrivals in one instruction on an mbarrier with "
                            f"{st['pending']} pending: they complete its phase and run into "
                            "the next (the H200 faults)",
                            f"mbarrier at shared::cta {int(off[i]):#x} of CTA "
                            f"{self._ctaid(int(cta[i]))}")

    def _acc_t(self, key):
        a = self.mb_acc_t.get(key)
        if a is None:
            a = self.mb_acc_t[key] = np.zeros(self.W, np.int64)
        return a

    def mb_signal(self, rec: AsyncRec | None, cta: int, off: int, clock=None) -> None:
        """An asynchronous operation signals mbarrier (cta, off) (complete-tx, or the arrive of
        a tcgen05.commit / cp.async.mbarrier.arrive)."""
        key = (int(cta), int(off))
        a = self._acc(key)
        if clock is not None:
            np.maximum(a, clock, out=a)
            if self.full:                    # tcgen05.commit: an implicit fence::before
                at = self._acc_t(key)
                np.maximum(at, clock, out=at)
        if rec is not None:
            self.mb_recs.setdefault(key, []).append(rec)

    def mb_sync(self, cta, off) -> None:
        """After an operation on mbarriers (cta, off): phases that completed move their
        accumulated release clock and signalling operations to `mb_done`."""
        rows, _ = self._distinct(cta, off)
        keys = [k for k in rows if k in self.mb_par]
        if not keys:
            return
        # the phase bits of all of them at once (bit 63 of the little-endian object word,
        # machine/mbarrier.py); an object out of place is left to the mbarrier code
        kc = np.array(keys, np.int64).reshape(-1, 2)
        good = (kc[:, 1] % 8 == 0) & (kc[:, 1] >= 0) & (kc[:, 1] + 8 <= self.S)
        flat = self.wave.memory.shared.data.reshape(-1)
        pos = np.where(good, kc[:, 0] * self.S + kc[:, 1] + 7, 0)
        phase = (flat[pos] >> 7).tolist()
        for key, cur, ok in zip(keys, phase, good.tolist()):
            if not ok:
                continue
            old = self.mb_par[key]
            if cur != old:
                clock = self.mb_acc.pop(key, None)
                recs = self.mb_recs.pop(key, [])
                if self.full:
                    self.mb_done_t[(key, old)] = self.mb_acc_t.pop(key, None)
                self.mb_phase[key] += 1
                self.mb_done[(key, old)] = (clock, recs, self.mb_phase[key])
                self.mb_par[key] = cur
                if self.tracer is not None:
                    self.tracer.phase(self, key, self.mb_phase[key])

    def mb_acquire(self, inst, cta, off, parity, idx) -> None:
        """Threads `idx` completed a wait on the phase of the given parity."""
        w = idx // WARP_SIZE
        rows, firsts = self._distinct(cta, off, np.asarray(parity, np.int64) & 1, w)
        groups: dict = {}                          # (key, parity) -> [(warp, first thread)]
        for (c, o, p, ww), i in zip(rows, firsts):
            groups.setdefault(((c, o), p), []).append((ww, i))
        for (key, p), members in groups.items():
            done = self.mb_done.get((key, p))
            if done is None:
                continue                     # the phase before the first: nothing to acquire
            clock, recs, phase = done
            ws = np.array([m[0] for m in members], np.int64)
            if clock is not None:
                self.vc[ws] = np.maximum(self.vc[ws], clock[None, :])
                self.vc[ws, ws] = self.ep[ws]
            if self.full:
                t = self.mb_done_t.get((key, p))
                if t is not None:
                    self.pend_t[ws] = np.maximum(self.pend_t[ws], t[None, :])
            for r in recs:
                if r.kind == "commit":
                    self._observe_commit(r, ws)
                else:
                    for ww in ws.tolist():
                        if ww not in r.obs:
                            r.obs[ww] = int(self.ep[ww])
                    self._cache_known(r, ws)
                if self.full:
                    for ww in ws.tolist():
                        self.pend_obs.setdefault(ww, []).append(r)
            for ww, i in members:
                last = self.mb_last.get((key, ww))
                if last is not None and phase >= last + 2 and self.full:
                    self.report("mbarrier-phase-skipped", inst, int(idx[i]),
                                f"the parity wait returned for phase {phase} of this "
                                f"mbarrier; this warp last waited for phase {last}, so phases "
                                f"{last + 1}..{phase - 1} were never waited for",
                                f"mbarrier at shared::cta {key[1]:#x} of CTA "
                                f"{self._ctaid(key[0])}")
                self.mb_last[(key, ww)] = phase

    def wait_first_fail(self, idx, cta, off, value, parity: bool) -> np.ndarray:
        """For threads whose mbarrier test failed: True where this is the thread's first
        failed test of that phase (it then returns false instead of waiting); the phase is
        remembered per thread, so the next failed test of it waits."""
        v = np.asarray(value, np.int64)
        bit = (v & 1) if parity else ((v.astype(np.uint64) >> np.uint64(63)).astype(np.int64))
        key = ((np.asarray(cta, np.int64) * (self.S + 8) + np.asarray(off, np.int64)) << 2) \
            | (bit << 1) | int(parity)
        first = self.last_fail[idx] != key
        self.last_fail[idx] = key
        return first

    def _observe_commit(self, commit: AsyncRec, ws) -> None:
        """Warps `ws` learn that `commit` (and so every earlier commit of its thread)
        completed."""
        ws = np.atleast_1d(np.asarray(ws, np.int64))
        for c in reversed(self.commits_of.get(commit.t, ())):
            if c.id > commit.id:
                continue
            new = [w for w in ws.tolist() if w not in c.obs]
            if not new:
                break
            for w in new:
                c.obs[w] = int(self.ep[w])
            nw = np.array(new, np.int64)
            for r in c.covers:                 # the operations it tracks: known to them now
                self._cache_known(r, nw)

    # --------------------------------------------------------------- named / cluster barriers
    def bar_arrive(self, key, sel, wait: bool) -> None:
        ws = _sorted_unique(sel // WARP_SIZE)
        a = self.bar_acc.get(key)
        if a is None:
            a = self.bar_acc[key] = np.zeros(self.W, np.int64)
        np.maximum(a, self.vc[ws].max(0), out=a)
        if self.full:
            t = self.bar_acc.get(("t",) + tuple(key))
            if t is None:
                t = self.bar_acc[("t",) + tuple(key)] = np.zeros(self.W, np.int64)
            np.maximum(t, self.fb[ws].max(0), out=t)
        if not wait:
            self.tick(ws)

    def bar_complete(self, key, waiters) -> None:
        a = self.bar_acc.pop(key, None)
        t = self.bar_acc.pop(("t",) + tuple(key), None) if self.full else None
        if a is None or not waiters:
            return
        ws = _usort(np.concatenate([np.asarray(s) for s in waiters]) // WARP_SIZE) \
            if len(waiters) > 1 else _sorted_unique(np.asarray(waiters[0]) // WARP_SIZE)
        self.vc[ws] = np.maximum(self.vc[ws], a[None, :])
        self.vc[ws, ws] = self.ep[ws]
        if self.full and t is not None:
            self.pend_t[ws] = np.maximum(self.pend_t[ws], t[None, :])
        self.tick(ws)
        if not self.remote_seen and (self.gw[key[0]] or self.gr[key[0]]):
            # every live warp of the CTA took part: whatever its warps accessed before is
            # ordered before whatever they access next
            cta, P = key[0], self.wave.P
            st = self.wave.status[cta * P:(cta + 1) * P].reshape(-1, WARP_SIZE)
            live = cta * (P // WARP_SIZE) + np.flatnonzero((st != EXITED).any(1))
            if np.isin(live, ws).all():
                if self.gw[cta]:
                    self.unf_lo[cta] = self.uf_lo[live].min()
                    self.unf_hi[cta] = self.uf_hi[live].max()
                self.gw[cta] = self.gr[cta] = False

    def bar_all(self, idx) -> None:
        """Every live thread of each CTA of `idx` arrives at one barrier in this step
        (Wave.bar_arrive's fast path): bar_arrive and bar_complete of every CTA at once, each
        CTA's warps acquiring what all of them released."""
        ws = _sorted_unique(idx // WARP_SIZE)
        cta = ws // (self.wave.P // WARP_SIZE)
        starts = np.flatnonzero(np.r_[True, cta[1:] != cta[:-1]])
        grp = np.cumsum(np.r_[False, cta[1:] != cta[:-1]])
        a = np.maximum.reduceat(self.vc[ws], starts, axis=0)
        self.vc[ws] = a[grp]
        self.vc[ws, ws] = self.ep[ws]
        if self.full:
            tm = np.maximum.reduceat(self.fb[ws], starts, axis=0)
            self.pend_t[ws] = np.maximum(self.pend_t[ws], tm[grp])
        self.tick(ws)
        if self.remote_seen:
            return
        c = cta[starts]
        dirty = self.gw[c] | self.gr[c]
        if dirty.any():
            # every live warp of these CTAs took part (bar_complete's rule)
            lo = np.minimum.reduceat(self.uf_lo[ws], starts)
            hi = np.maximum.reduceat(self.uf_hi[ws], starts)
            w = self.gw[c]
            self.unf_lo[c[w]] = lo[w]
            self.unf_hi[c[w]] = hi[w]
            self.gw[c] = self.gr[c] = False

    def cluster_arrive(self, idx, cluster: int, release: bool) -> None:
        ws = _usort(idx // WARP_SIZE)
        if release:
            a = self.cl_acc.get(cluster)
            if a is None:
                a = self.cl_acc[cluster] = np.zeros(self.W, np.int64)
            np.maximum(a, self.vc[ws].max(0), out=a)
        self.tick(ws)

    def cluster_phase_done(self, cluster: int, phase: int) -> None:
        self.cl_done[(cluster, phase)] = self.cl_acc.pop(cluster, None)

    def cluster_acquire(self, threads, cluster: int, phase) -> None:
        """Threads completed their wait for phases `phase` (per thread) of the cluster
        barrier."""
        w = np.asarray(threads) // WARP_SIZE
        for ww, p in set(zip(w.tolist(), np.atleast_1d(phase).tolist())):
            a = self.cl_done.get((cluster, int(p)))
            if a is None:
                continue
            np.maximum(self.vc[ww], a, out=self.vc[ww])
            self.vc[ww, ww] = self.ep[ww]

    # ------------------------------------------------------------- tcgen05 fences (full)
    def tc_fence(self, idx, before: bool) -> None:
        if not self.full:
            return
        ws = _usort(idx // WARP_SIZE)
        if before:
            self.fb[ws] = self.vc[ws]
        else:
            self.vct[ws] = np.maximum(self.vct[ws], self.pend_t[ws])
            for w in ws.tolist():
                for r in self.pend_obs.pop(w, ()):
                    src = r.covers if r.kind == "commit" else (r,)
                    for x in (r,) + tuple(src):
                        x.obs_t.setdefault(w, int(self.ep[w]))

    # --------------------------------------------------------------------- synccheck
    def check_aligned(self, inst, idx) -> None:
        """A .aligned instruction: every live thread of each executing warp must execute it
        together (the same instruction, the same guard). Lanes of a warp that diverged before it
        (`if (elect_one_sync()) {...} __syncthreads();`) reach it at different scheduler steps
        here, while the hardware reconverges them first: a partial arrival while other lanes
        still run elsewhere is held, and resolved when the rest arrive at the same instruction;
        it is reported when the warp reaches another .aligned instruction first, or at the end
        of the wave (`aligned_leftovers`)."""
        wave = self.wave
        w = idx // WARP_SIZE
        uw, counts = np.unique(w, return_counts=True)
        if (counts == WARP_SIZE).all() and not self.al_pend:
            return
        st = wave.status.reshape(-1, WARP_SIZE)[uw]
        real = wave.real.reshape(-1, WARP_SIZE)[uw]
        live = ((st != EXITED) & real).sum(1)
        # lanes elsewhere that could run (not waiting): the warp has diverged around the
        # instruction (lanes that wait catch up on their own: the same instruction, later)
        pcs = wave.pc.reshape(-1, WARP_SIZE)[uw]
        here = np.zeros(st.shape, bool)
        here.reshape(-1)[(np.searchsorted(uw, w) * WARP_SIZE + idx % WARP_SIZE)] = True
        pc = int(wave.pc[idx[0]])
        elsewhere = ((st == RUN) & real & ~here & (pcs != pc)).any(1)
        partial = counts < live
        if self.al_pend:                          # (a loop over held warps only)
            for k in np.flatnonzero(np.isin(uw, np.fromiter(self.al_pend, np.int64))):
                wk = int(uw[k])
                held = self.al_pend[wk]
                if held[0] == pc:                 # the rest of the warp arrives: reconverged
                    held[1] += int(counts[k])
                    if held[1] >= int(live[k]):
                        del self.al_pend[wk]
                    partial[k] = False
                else:                             # another .aligned instruction first
                    del self.al_pend[wk]
                    self._report_aligned(*held[1:])
        bad = partial & elsewhere
        for k in np.flatnonzero(bad):
            t = int(idx[np.searchsorted(w, uw[k])])
            self.al_pend[int(uw[k])] = [pc, int(counts[k]), int(live[k]), inst, t]

    def _report_aligned(self, count, live, inst, t) -> None:
        self.report("divergent-aligned", inst, t,
                    f"{count} of the warp's {live} live threads execute this .aligned "
                    "instruction; the others reached another .aligned instruction or the end "
                    "of the kernel without it, or have the guard false (undefined, 9.7.13.1 / "
                    "9.7.16)")

    def release(self) -> None:
        """The wave is over: its shadow arrays go back to the pool for the next wave (no
        check reads them afterwards)."""
        if self.shadow is not None:
            _release(self.shadow)
            _release(self.ib)
            self.shadow = self.ib = None
        if len(_TM_POOL) < 256:
            _TM_POOL.extend(list(self.tm.values())[:256 - len(_TM_POOL)])
        self.tm = {}
        self.dmemo.clear()

    def aligned_leftovers(self) -> None:
        """End of the wave: warps whose lanes never all reached their held .aligned
        instruction."""
        for held in self.al_pend.values():
            self._report_aligned(*held[1:])
        self.al_pend.clear()

    # ------------------------------------------------------------------------- atomics
    def atomic_sync(self, space: str, keys, idx, acquire: bool, release: bool) -> None:
        """An atomic (or ld.acquire / st.release ...) of threads `idx` on the words `keys`
        (int64 per thread) of `space` ("s" shared: flat word index, "g" global: address / 4):
        release publishes the warp's clock into the word, acquire joins it. An instruction
        touching more than 32 words is taken as data (a reduction), not synchronisation."""
        if space == "g":
            self.san.global_sync = True
        keys = np.asarray(keys, np.int64)
        uk = _usort(keys)
        if uk.size > 32 or uk.size == 0:
            return
        w = idx // WARP_SIZE
        pairs = sorted(set(zip(keys.tolist(), w.tolist())))
        ticks = set()
        for k, ww in pairs:
            key = (space, k)
            obj = self.sync_obj.get(key)
            if acquire and obj is not None:
                np.maximum(self.vc[ww], obj, out=self.vc[ww])
                self.vc[ww, ww] = self.ep[ww]
            if release:
                if obj is None:
                    obj = self.sync_obj[key] = np.zeros(self.W, np.int64)
                np.maximum(obj, self.vc[ww], out=obj)
                ticks.add(ww)
        if ticks:
            self.tick(np.array(sorted(ticks), np.int64))

    def shared_atomic(self, inst, idx, cta, off, nbytes: int) -> None:
        """atom / red on shared memory: reads initialised memory, leaves it initialised, and
        clears the words' race records (atomics do not race with each other; a plain access
        after one is checked against the accesses after it)."""
        flat = np.asarray(cta, np.int64) * (self.SW * 4) + np.asarray(off, np.int64)
        b = (flat[:, None] + np.arange(nbytes)).ravel()
        bad = self.ib[b] == 0
        if bad.any():
            i = int(np.argmax(bad)) // nbytes
            self.report("uninit-shared", inst, int(idx[i]),
                        "atomic on shared memory that no instruction has written",
                        self._where_word(int(flat[i] >> 2)), count=int(bad.sum()))
        self.ib[b] = 1
        words = _usort(flat >> 2)
        self.sw[words] = 0
        self.sr[words] = 0
