"""Instruction handlers of the kernel executor: `handler(wave, pc, inst)` returns a function of
the active thread indices that performs the instruction for all of them at once and moves their
program counters. Arithmetic goes through `ptxsim.isa.base.semantics`; memory through
`machine.memory.Memory`; barriers, mbarriers and the asynchronous proxy through the wave.
"""
from __future__ import annotations

import numpy as np

from ptxsim.errors import (ExecutionError, OperandError, PtxValidationError, TrapExecuted,
                           UnsupportedFeature, UndefinedBehavior)
from ptxsim.isa import base as isa_base
from ptxsim.machine.executor import WAIT_CLUSTER, _reg_dtype
from ptxsim.machine.grid import WARP_SIZE
from ptxsim.machine.program import TYPE_BYTES
from ptxsim.ptx.instruction import Address, Register, RegisterPair, SpecialRegister, Vector

UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
SPACE_QUALS = {".global": "global", ".shared": "shared::cta", ".shared::cta": "shared::cta",
               ".shared::cluster": "shared::cluster", ".local": "local", ".param": "param",
               ".param::entry": "param", ".param::func": "param", ".const": "const"}
BASE_OPS = {"add", "sub", "addc", "subc", "mul", "mad", "madc", "fma", "mul24", "mad24", "sad",
            "div", "rem", "abs", "neg", "min", "max", "popc", "clz", "brev", "bfind", "bfe",
            "bfi", "fns", "bmsk", "szext", "dp4a", "dp2a", "and", "or", "xor", "not", "cnot",
            "lop3", "shl", "shr", "shf", "prmt", "setp", "set", "selp", "slct", "rcp", "sqrt",
            "rsqrt", "ex2", "lg2", "sin", "cos", "tanh", "copysign", "testp", "cvt"}
WARP_OPS = {"shfl", "vote", "match", "redux", "elect", "activemask"}
NO_OPS = {"fence", "membar", "prefetch", "prefetchu", "nanosleep", "griddepcontrol",
          "setmaxnreg", "fence.proxy", "cp.async.bulk.prefetch",
          "cp.async.bulk.prefetch.tensor", "applypriority", "discard", "createpolicy",
          "tcgen05.fence", "tensormap.cp_fenceproxy"}


VIDEO_OPS = __import__("re").compile(
    r"^(vadd|vsub|vabsdiff|vmin|vmax|vshl|vshr|vmad|vset|vavrg)(2|4)?$")   # 9.7.18


def _type(inst) -> str | None:
    ts = inst.types
    return ts[-1] if ts else None


def _width(t: str | None) -> int:
    if t is None:
        return 32
    return 8 * TYPE_BYTES.get(t, 4)


def _space(inst, default="generic") -> str:
    for q in inst.qualifiers:
        if q in SPACE_QUALS:
            return SPACE_QUALS[q]
    return default


def _vec(inst) -> int:
    for q in inst.qualifiers:
        if q in (".v2", ".v4", ".v8"):
            return int(q[2:])
    return 1


def _advance(wave, idx):
    wave.advance(idx)


def handler(wave, pc: int, inst):
    op = inst.opcode
    def loc():                         # the error prefix, made only for an error
        return f"line {inst.loc.line}: {inst}"
    try:
        if op in BASE_OPS:
            return _base(wave, inst)
        if op in WARP_OPS:
            return _warp(wave, inst)
        if op == "mov":
            return _mov(wave, inst)
        if VIDEO_OPS.match(op):
            return _video(wave, inst)
        if op in ("ld", "ldu"):
            return _ld(wave, inst)
        if op == "st":
            return _st(wave, inst)
        if op in ("atom", "red"):
            return _atom(wave, inst)
        if op == "cvta":
            return _cvta(wave, inst)
        if op == "isspacep":
            return _isspacep(wave, inst)
        if op in ("mapa", "getctarank"):
            return _mapa(wave, inst)
        if op == "bra":
            return _bra(wave, pc, inst)
        if op == "brx":
            return _brx(wave, pc, inst)
        if op in STACK_OPS:
            return _stack_op(wave, inst)
        if op == "call":
            return _call(wave, pc, inst)
        if op == "ret":
            return _ret(wave)
        if op == "exit":
            return wave.exit_threads
        if op == "bar" and inst.has(".warp"):         # bar.warp.sync membermask (9.7.13.2)
            return lambda idx: _advance(wave, idx)
        if op in ("bar", "barrier") and not inst.has(".cluster"):
            return _bar(wave, inst)
        if op == "barrier.cluster":
            return _cluster_bar(wave, inst)
        if op.startswith("mbarrier."):
            return _mbarrier(wave, inst)
        if op in NO_OPS:
            return lambda idx: _advance(wave, idx)
        if op == "trap":
            def trap(idx):
                raise TrapExecuted(f"{loc()}: trap executed by thread {int(idx[0])}")
            return trap
        from ptxsim.machine import exec_async
        h = exec_async.handler(wave, pc, inst)
        if h is not None:
            return h
        from ptxsim.isa import registry
        registry._load()
        if op in registry.HANDLERS:
            return _registered(wave, inst)
    except (OperandError, UnsupportedFeature, ExecutionError, UndefinedBehavior) as e:
        raise type(e)(f"{loc()}: {e}") from None
    except PtxValidationError as e:      # an isa legality check (target / PTX version notes)
        if e.line is not None:
            raise
        raise type(e)(f"{e.message} ({inst})", line=inst.loc.line, col=inst.loc.col,
                      file=inst.loc.file) from None
    raise ExecutionError(f"{loc()}: ptxsim has no semantics for '{inst.mnemonic}'")


# ------------------------------------------------------------------------------- arithmetic
_KERNEL_DTYPES: dict = {}


def _kernel_dtypes(mnemonic: str, fn):
    """The operand dtypes of the fast kernel behind `fn` (isa.base: FAST_PATHS builder ->
    (kernel, dtypes); `fn.kernel` is the kernel it built), or None without one."""
    if mnemonic not in _KERNEL_DTYPES:
        general, kernel = getattr(fn, "general", None), getattr(fn, "kernel", None)
        got = None
        if kernel is not None and getattr(general, "func", None) in isa_base.FAST_PATHS and \
                general.func not in isa_base.WARP_FAST:
            got = isa_base.FAST_PATHS[general.func](**general.keywords)
        _KERNEL_DTYPES[mnemonic] = None if got is None else tuple(np.dtype(d) for d in got[1])
    return _KERNEL_DTYPES[mnemonic]


def _base(wave, inst):
    """Every base arithmetic / logic / compare / convert instruction (ptxsim.isa.base)."""
    fn = isa_base.semantics(inst.mnemonic)
    ops = inst.operands
    dst, srcs = ops[0], ops[1:]
    t = _type(inst)
    types = inst.types
    op = inst.opcode
    # source operand widths (immediates): the source type of cvt / set / slct / mul.wide
    src_t = types[-1] if types else None
    if op in ("cvt",) and len(types) == 2:
        src_t = types[1]
    if op in ("set", "slct") and len(types) == 2:
        src_t = types[1]
    widths = [_width(src_t)] * len(srcs)
    if op in ("shl", "shr", "shf", "bfe", "bfi") and len(srcs) >= 2:
        widths = [_width(src_t)] + [32] * (len(srcs) - 1)
        if op == "bfi":
            widths = [_width(src_t), _width(src_t), 32, 32]
    if op == "selp":
        widths[-1] = 1
    if op == "lop3":
        widths = [_width(src_t)] * 3 + [32] * (len(srcs) - 3)
    if op in ("prmt",):
        widths = [32] * len(srcs)
    if op in ("mul", "mad") and inst.has(".wide"):
        widths = [_width(src_t)] * len(srcs)
        if op == "mad":
            widths[-1] = 2 * _width(src_t)
    carry_in = op in ("addc", "subc", "madc")
    writes_cc = inst.has(".cc")
    ftype = src_t if src_t in (".f32", ".f64", ".f16", ".bf16") else None
    # operands decided once (Wave.reader / writer); selp's predicate as bool
    readers, dtypes = zip(*[wave.reader(s, w, ftype) for s, w in zip(srcs, widths)]) \
        if srcs else ((), ())
    readers, dtypes = list(readers), list(dtypes)
    if op == "selp" and dtypes[-1] != np.bool_:
        rd_c = readers[-1]

        def as_bool(idx, rd_c=rd_c):
            c = rd_c(idx)
            return c.astype(bool) if c.dtype != np.bool_ else c
        readers[-1] = as_bool
        dtypes[-1] = np.dtype(bool)
    if carry_in:
        readers.append(lambda idx: wave.cc[idx])
        dtypes.append(np.dtype(bool))
    # the fast kernel (isa.base._guarded) without its per-call dtype check when every operand's
    # dtype is known here to be the kernel's (1-d arrays of idx.size: what its guard tests)
    kdt = _kernel_dtypes(inst.mnemonic, fn)
    if kdt is not None and len(kdt) == len(dtypes) and \
            all(d is not None and d == k for d, k in zip(dtypes, kdt)):
        fn = fn.kernel
    pair = isinstance(dst, RegisterPair)
    if pair:
        w_first, w_second = wave.writer(dst.first), wave.writer(dst.second)
    else:
        w_dst = wave.writer(dst)
    advance = wave.advance
    nargs = len(readers)
    if nargs == 2 and not writes_cc and op != "setp" and not pair:
        r0, r1 = readers

        def run2(idx):                   # the common case: d = f(a, b)
            res = fn(r0(idx), r1(idx))
            if isinstance(res, tuple):
                res = res[0]
            w_dst(idx, res)
            advance(idx)
        return run2

    def run(idx):
        res = fn(*[r(idx) for r in readers])
        if writes_cc:
            res, cf = res
            wave.cc[idx] = np.asarray(cf, bool)
        if op == "setp":
            p, q = res if isinstance(res, tuple) else (res, None)
            if pair:
                w_first(idx, p)
                if q is not None:
                    w_second(idx, q)
            else:
                w_dst(idx, p)
        elif isinstance(res, tuple):
            if pair:
                w_first(idx, res[0])
                w_second(idx, res[1])
            else:
                w_dst(idx, res[0])
        else:
            w_dst(idx, res)
        advance(idx)
    return run


def _warp_view(wave, idx):
    warps = np.unique(idx // WARP_SIZE)
    active = np.zeros((warps.size, WARP_SIZE), bool)
    pos = np.searchsorted(warps, idx // WARP_SIZE)
    active[pos, idx % WARP_SIZE] = True
    full = (warps[:, None] * WARP_SIZE + np.arange(WARP_SIZE)).reshape(-1)
    return warps, active, full, (pos, idx % WARP_SIZE)


def _warp(wave, inst):
    """shfl / vote / match / redux / elect / activemask: (warps, 32) views with the active
    mask of the executing lanes."""
    fn = isa_base.semantics(inst.mnemonic)
    ops = inst.operands
    dst, srcs = ops[0], ops[1:]
    op = inst.opcode
    t = _type(inst)

    def run(idx):
        warps, active, full, sel = _warp_view(wave, idx)
        args = []
        for i, s in enumerate(srcs):
            w = 1 if (op == "vote" and i == 0) else (_width(t) if (i == 0 and op in
                                                               ("shfl", "match", "redux"))
                                                     else 32)
            v = wave.read(s, full, w).reshape(warps.size, WARP_SIZE)
            args.append(v)
        res = fn(*args, active=active)
        outs = res if isinstance(res, tuple) else (res,)
        dsts = (dst.first, dst.second) if isinstance(dst, RegisterPair) else (dst,)
        for d, v in zip(dsts, outs):
            if v is None:
                continue
            wave.write(d, idx, np.asarray(v)[sel])
        wave.advance(idx)
    return run


def _video(wave, inst):
    """Scalar and SIMD video instructions (9.7.18) through `ptxsim.isa.video`: the text of
    the instruction (selectors, .sat, .op2, masks) parsed once, evaluated over all threads."""
    from ptxsim.isa import video
    text = inst.mnemonic + " " + ", ".join(str(o) for o in inst.operands) + ";"
    ins = video.parse(text)
    video.check_target(ins, wave.launch.target)
    d, ra, rb, rc = ins.regs

    def run(idx):
        rd = lambda n: wave.reg(n)[idx].astype(np.uint32)  # noqa: E731
        out = video.evaluate(ins, rd(ra), rd(rb), rd(rc) if rc else None, rd(d))
        wave.write(Register(d), idx, out)
        wave.advance(idx)
    return run


# ---------------------------------------------------------------------------------- mov
def _elements(op):
    return op.elements if isinstance(op, Vector) else (op,)


def _mov(wave, inst):
    t = _type(inst)
    w = _width(t)
    dst, src = inst.operands[0], inst.operands[1]
    ftype = t if t in (".f32", ".f64", ".f16", ".bf16") else None
    if w == 128:
        return _mov128(wave, dst, src)
    if isinstance(dst, Vector):                      # unpack: mov.b64 {a, b}, d
        n = len(dst.elements)
        ew = w // n

        def unpack(idx):
            v = wave.read(src, idx, w).astype(np.uint64)
            for k, e in enumerate(dst.elements):
                part = (v >> np.uint64(k * ew)) & np.uint64((1 << ew) - 1)
                wave.write(e, idx, part.astype(UINT[ew // 8]))
            wave.advance(idx)
        return unpack
    if isinstance(src, Vector):                      # pack: mov.b64 d, {a, b}
        n = len(src.elements)
        ew = w // n

        def pack(idx):
            acc = np.zeros(idx.size, np.uint64)
            for k, e in enumerate(src.elements):
                acc |= (wave.read(e, idx, ew).astype(np.uint64) & np.uint64((1 << ew) - 1)) \
                    << np.uint64(k * ew)
            wave.write(dst, idx, acc.astype(UINT[w // 8]))
            wave.advance(idx)
        return pack
    advance, put = wave.advance, wave.writer(dst)
    if t == ".pred":
        rd = wave.reader(src, 1)[0]

        def movp(idx):
            v = rd(idx)
            put(idx, v.astype(bool) if v.dtype != np.bool_ else v)
            advance(idx)
        return movp
    rd, dt = wave.reader(src, w, ftype)
    mask = np.uint64((1 << w) - 1 if w < 64 else (1 << 64) - 1)
    if dt is not None and dt.itemsize * 8 <= w:          # no truncation: the value as read

        def mov_plain(idx):
            put(idx, rd(idx))
            advance(idx)
        return mov_plain

    def mov(idx):
        v = rd(idx)
        if v.dtype.itemsize * 8 > w:
            v = (v.astype(np.uint64) & mask).astype(UINT[w // 8])
        put(idx, v)
        advance(idx)
    return mov


def _mov128(wave, dst, src):
    """mov.b128: between .b128 registers, and pack / unpack {lo, hi} .b64 halves."""
    def run(idx):
        if isinstance(dst, Vector):
            v = wave.reg(src.name)[idx]
            for k, e in enumerate(dst.elements):
                wave.write(e, idx, v[:, k])
        elif isinstance(src, Vector):
            halves = [wave.read(e, idx, 64).astype(np.uint64) for e in src.elements]
            wave.write(dst, idx, np.stack(halves, 1))
        else:
            wave.write(dst, idx, wave.reg(src.name)[idx])
        wave.advance(idx)
    return run


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


def _callparam(wave, a):
    """The per-thread byte array of a call-site / formal .param (None for other addresses)."""
    if a.base is None or a.base not in wave.program.call_params:
        return None
    arr = wave.callparams.get(a.base)
    if arr is None:
        arr = wave.callparams[a.base] = np.zeros((wave.N, max(wave.program.call_params[a.base],
                                                              1)), np.uint8)
    return arr


def _ld(wave, inst):
    t = _type(inst)
    size = TYPE_BYTES[t]
    vec = _vec(inst)
    space = _space(inst)
    dst, a = inst.operands[0], inst.operands[1]
    elems = _elements(dst)
    signed = t.startswith(".s")
    mem = wave.memory
    if size == 16:
        def ld128(idx):                                   # .b128 registers: (N, 2) uint64
            vals = mem.load(space, wave.addr(a, idx), 16, vec=vec, thread=idx)
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
        cp = _callparam(wave, a) if has_cp else None
        if cp is not None:
            raw = cp[idx, a.offset:a.offset + size * vec]
            vals = raw.copy().view(f"<u{size}").reshape(idx.size, vec)
        else:
            addr = addr_of(idx)
            vals = mem.load_direct(space, addr, size, vec, idx) if direct else None
            if vals is None:
                vals = mem.load(space, addr, size, vec=vec, thread=idx)
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
    dt = _reg_dtype(wave.declared(e.name)) if isinstance(e, Register) else None
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
    t = _type(inst)
    size = TYPE_BYTES[t]
    vec = _vec(inst)
    space = _space(inst)
    a, src = inst.operands[0], inst.operands[1]
    # st.async ... [a], b, [mbar] (9.7.9.12): the store, then complete-tx of its bytes on the
    # mbarrier (performed at once: any completion time is allowed)
    mbar = inst.operands[2] if inst.has(".async") and len(inst.operands) > 2 else None
    elems = _elements(src)
    mem = wave.memory
    ftype = t if t in (".f32", ".f64", ".f16", ".bf16") else None
    if size == 16:
        def st128(idx):
            vals = np.stack([wave.reg(e.name)[idx] for e in elems], 1)    # (n, vec, 2)
            mem.store(space, wave.addr(a, idx), vals, 16, vec=vec, thread=idx)
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
        cp = _callparam(wave, a) if has_cp else None
        if cp is not None:
            cp[idx, a.offset:a.offset + size * vec] = vals.view(np.uint8).reshape(idx.size, -1)
            wave.advance(idx)
            return
        addr = addr_of(idx)
        if not (direct and mem.store_direct(space, addr, vals, size, vec, idx)):
            mem.store(space, addr, vals, size, vec=vec, thread=idx)
        if mbar is not None:
            _async_complete_tx(wave, inst, mbar, idx, size * vec)
        wave.advance(idx)
    return run


ATOM_INT = {"add", "and", "or", "xor", "exch", "inc", "dec", "cas", "min", "max"}


def _atom(wave, inst):
    t = _type(inst)
    size = TYPE_BYTES[t]
    space = _space(inst)
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
    vec = _vec(inst)
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
        src_els = _elements(srcs[0])
        dst_els = _elements(dst) if dst is not None else None
        if len(src_els) != vec or (dst_els is not None and len(dst_els) != vec):
            raise OperandError(f"{inst.opcode}.v{vec} needs {vec}-element vector operands")

        def run_vec(idx):
            addr = wave.addr(a, idx)
            mis = (addr % np.uint64(size * vec)) != 0
            if mis.any():
                from ptxsim.errors import MisalignedAddress
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

    def run(idx):
        addr = wave.addr(a, idx)
        vals = [wave.read(s, idx, 8 * size) for s in srcs]
        old = mem.atomic(space, addr, size, fn, vals, thread=idx)
        if dst is not None:
            wave.write(dst, idx, old)
        if mbar is not None:
            _async_complete_tx(wave, inst, mbar, idx, size)
        wave.advance(idx)
    return run


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


def _async_complete_tx(wave, inst, mbar, idx, nbytes: int) -> None:
    """complete-tx of `nbytes` per thread on the mbarrier operand (a shared::cluster address)
    of st.async / red.async."""
    cta, off = shared_target(wave, inst, mbar, idx, "shared::cluster")
    wave.mbar.complete_tx(cta, off, np.full(idx.size, nbytes, np.int64))


def _cvta(wave, inst):
    to = inst.has(".to")
    space = _space(inst)
    dst, src = inst.operands
    mem = wave.memory

    rd, put, advance = wave.reader(src, 64)[0], wave.writer(dst), wave.advance
    conv = mem.cvta_from_generic if to else mem.cvta_to_generic

    def run(idx):
        put(idx, conv(space, rd(idx).astype(np.uint64)))
        advance(idx)
    return run


def _isspacep(wave, inst):
    space = _space(inst)
    dst, src = inst.operands

    def run(idx):
        v = wave.read(src, idx, 64).astype(np.uint64)
        wave.write(dst, idx, wave.memory.isspacep(space, v, wave.cta_of[idx]))
        wave.advance(idx)
    return run


def _mapa(wave, inst):
    space = _space(inst, "generic")
    ops = inst.operands
    sh = wave.memory.shared

    def run(idx):
        v = wave.read(ops[1], idx, 64).astype(np.uint64)
        generic = space == "generic"
        if generic:
            v = wave.memory.cvta_from_generic("shared::cluster", v)
        if inst.opcode == "mapa":
            rank = wave.read(ops[2], idx, 32).astype(np.int64)
            r = sh.mapa(v, rank, wave.cta_of[idx])
            if generic:
                r = wave.memory.cvta_to_generic("shared::cluster", r)
        else:
            r = sh.getctarank(v, wave.cta_of[idx])
        wave.write(ops[0], idx, r)
        wave.advance(idx)
    return run


# ---------------------------------------------------------------------------- control flow
def _bra(wave, pc, inst):
    target = wave.program.branch_target[pc]
    pcs = wave.pc

    def run(idx):
        pcs[wave._span if idx is wave._span_idx else idx] = target
    return run


def _brx(wave, pc, inst):
    """brx.idx index, tlist (9.7.8.2): jump to the index-th label of the .branchtargets list;
    an index outside the list is undefined behaviour."""
    table = np.asarray(wave.program.brx_targets[pc], np.int64)

    def run(idx):
        i = wave.read(inst.operands[0], idx, 32).astype(np.int64)
        if ((i < 0) | (i >= table.size)).any():
            raise UndefinedBehavior(f"line {inst.loc.line}: brx.idx index "
                                    f"{int(i[(i < 0) | (i >= table.size)][0])} outside the "
                                    f"{table.size}-entry .branchtargets list")
        wave.pc[idx] = table[i]
    return run


# ------------------------------------------------------------------ stack (9.7.17, isa/stack.py)
STACK_OPS = {"stacksave", "stackrestore", "alloca"}


class StackedLocal:
    """The local space of a wave whose threads use the stack instructions: the static frame
    (`.local` variables, ptxsim offsets [0, frame)) plus each thread's stack window
    [limit, top) of `isa.stack.Stack` (H200-measured addresses, docs/executor-gaps.md), one byte
    array per thread. Every access to the stack window goes through `Stack.check_access` (use
    after stackrestore, size-0 allocations); an access outside both parts faults."""

    def __init__(self, old, stack):
        self.name, self.writable = "local", True
        self.frame = old.data.shape[-1]
        self.stack = stack
        self.limit, self.top = int(stack.limit), int(stack.top)
        n = old.data.shape[0]
        if self.frame == 0 and n == stack.threads:
            # no static frame: the bytes live with the Stack (they persist across
            # `ptxsim.execute` calls that share it)
            self.data = stack.memory()
        else:
            self.data = np.zeros((n, self.frame + (self.top - self.limit)), np.uint8)
            self.data[:, :self.frame] = old.data

    def _flat(self, owner, off, size: int, addr) -> np.ndarray:
        from ptxsim.errors import MemoryAccessError
        off = np.asarray(off, np.int64)
        owner = np.asarray(owner, np.int64)
        in_stack = (off >= self.limit) & (off + size <= self.top)
        in_frame = (off >= 0) & (off + size <= self.frame)
        near = ~in_frame & (off >= self.limit) & (off <= self.top)
        if near.any():          # released memory / size-0 allocations first (undefined)
            full = np.zeros(self.stack.threads, np.uint64)
            act = np.zeros(self.stack.threads, bool)
            full[owner[near]] = off[near].astype(np.uint64)
            act[owner[near]] = True
            self.stack.check_access(full, size, act)
        bad = ~in_stack & ~in_frame
        if bad.any():
            i = int(np.argmax(bad))
            raise MemoryAccessError(
                f"local access of {size} bytes at {int(off[i]):#x} (thread {int(owner[i])}) is "
                f"outside the thread's frame [0, {self.frame}) and its {self.top - self.limit}-"
                f"byte stack [{self.limit:#x}, {self.top:#x}) (the GPU faults: "
                "cudaErrorIllegalAddress)", address=int(np.asarray(addr)[i]), space="local")
        col = np.where(in_stack, off - self.limit + self.frame, off)
        return owner * self.data.shape[-1] + col


def wave_stack(wave):
    """The wave's per-thread stacks (`isa.stack.Stack`), made on first use: the stack pointer
    starts at the H200-measured 0xFFFDC0 less the static frame (rounded to 16), and the stack
    ends cudaLimitStackSize (1024) bytes below 0xFFFDC0, the frame counted in it (inferred: only
    frame-less kernels were measured). The local space grows a window over it."""
    st = getattr(wave, "local_stack", None)
    if st is None:
        from ptxsim.isa import stack as isa_stack
        frame = -(-wave.memory.local.data.shape[-1] // 16) * 16
        top = isa_stack.INITIAL_SP - frame
        limit = isa_stack.INITIAL_SP - isa_stack.DEFAULT_STACK_BYTES
        if top <= limit:
            raise UnsupportedFeature(f"the static local frame ({frame} bytes) leaves no room on "
                                     f"the {isa_stack.DEFAULT_STACK_BYTES}-byte stack")
        st = isa_stack.Stack(wave.N, top=top, limit=limit)
        attach_stack(wave, st)
    return st


def attach_stack(wave, st) -> None:
    """Use `st` as the wave's stacks (also `ptxsim.execute(..., state=Stack)`)."""
    if not isinstance(wave.memory.local, StackedLocal):
        wave.memory.local = StackedLocal(wave.memory.local, st)
    else:
        wave.memory.local.stack = st
    wave.local_stack = st


def _stack_op(wave, inst):
    """stacksave.type d / stackrestore.type a / alloca.type ptr, size{, immAlign} (9.7.17) on
    the executing threads' stacks; the pointers are local-space addresses."""
    from ptxsim.isa import stack as isa_stack
    from ptxsim.ptx.instruction import Immediate
    op = inst.opcode
    ops = inst.operands
    # 9.7.17's one table (isa/stack.py FORMS): qualifiers, operand kinds, immAlign, and the PTX
    # ISA (7.3) / target (sm_52) notes against the module's .version and the launch target
    isa_stack.check(op, inst.qualifiers,
                    [int(o.value) if isinstance(o, Immediate) else getattr(o, "name", str(o))
                     for o in ops], wave.launch.target, getattr(wave.launch, "ptx_version", None))
    type_ = _type(inst)[1:]
    w = 32 if type_ == "u32" else 64
    align = None
    if op == "alloca" and len(ops) > 2:
        if not isinstance(ops[2], Immediate):
            raise OperandError("alloca: immAlign must be an integer constant (9.7.17.3)")
        align = int(ops[2].value)
    if align is not None:
        isa_stack.check_align(align)
    st = wave_stack(wave)

    def run(idx):
        if op == "stacksave":
            wave.write(ops[0], idx, st.stacksave(type_, threads=idx))
        elif op == "stackrestore":
            st.stackrestore(wave.read(ops[0], idx, w).astype(np.uint64), type_, threads=idx)
        else:
            size = wave.read(ops[1], idx, w).astype(np.uint64)
            wave.write(ops[0], idx, st.alloca(size, align, type_, threads=idx))
        wave.advance(idx)
    return run


MAX_CALL_DEPTH = 64


def _call(wave, pc, inst):
    """call{.uni} (ret), func, (args) (9.7.8.4): the actual .param bytes are copied into the
    callee's formal parameters, the call site is pushed on the thread's stack."""
    from ptxsim.ptx.instruction import Group
    from ptxsim.machine.program import _callee_name
    callee = wave.program.functions[_callee_name(inst)]
    groups = [o for o in inst.operands if isinstance(o, Group)]
    has_ret = isinstance(inst.operands[0], Group)
    args = groups[1] if has_ret else (groups[0] if groups else None)
    actual = [e.name for e in args.elements] if args is not None else []
    if callee.entry < 0:                              # extern system call (program.py)
        from ptxsim.machine import printf
        return printf.vprintf_handler(wave, inst, actual,
                                      inst.operands[0].elements[0].name if has_ret else None)
    if len(actual) != len(callee.params):
        raise OperandError(f"call of {callee.name} with {len(actual)} arguments; it declares "
                           f"{len(callee.params)} parameters")

    def run(idx):
        if (wave.sp[idx] >= MAX_CALL_DEPTH).any():
            raise UnsupportedFeature(f"line {inst.loc.line}: call depth beyond {MAX_CALL_DEPTH} "
                                     "(ptxsim's call stack; the GPU's 1024-byte stack would "
                                     "overflow at a smaller depth for most frames)")
        args = []
        for formal, act in zip(callee.params, actual):
            src = _callparam(wave, Address(act))
            args.append(src[idx].copy())
        if callee.recursive:
            # the callee's registers and .params are per activation: save the live ones at
            # this depth (restored by ret); the arguments were read before
            _save_frame(wave, callee.name, idx)
        for formal, a in zip(callee.params, args):
            dst = _callparam(wave, Address(formal))
            n = min(a.shape[1], dst.shape[1])
            dst[idx, :n] = a[:, :n]
        wave.stack[idx, wave.sp[idx]] = pc
        wave.sp[idx] += 1
        wave.pc[idx] = callee.entry
    return run


def _frame_names(wave, func: str):
    prefix = func + "::"
    regs = [n for n in wave.regs if n.startswith(prefix)]
    params = [n for n in wave.program.call_params if n.startswith(prefix)]
    return regs, params


def _save_frame(wave, func: str, idx) -> None:
    """Save the registers and call .params of `func` ("func::name") of the threads idx at
    their current call depth (before the call pushes)."""
    frames = wave.__dict__.setdefault("frames", {})
    depth = wave.sp[idx]
    regs, params = _frame_names(wave, func)
    for kind, names in (("reg", regs), ("param", params)):
        for n in names:
            cur = wave.regs[n] if kind == "reg" else _callparam(wave, Address(n))
            store = frames.get((kind, n))
            if store is None:
                store = frames[(kind, n)] = np.zeros((MAX_CALL_DEPTH,) + cur.shape, cur.dtype)
            store[depth, idx] = cur[idx]


def _restore_frame(wave, func: str, sel) -> None:
    """ret of `func`: its registers and .params of the threads sel (whose depth was already
    popped) get the values saved at the call."""
    frames = wave.__dict__.get("frames", {})
    depth = wave.sp[sel]
    for (kind, n), store in frames.items():
        if not n.startswith(func + "::"):
            continue
        cur = wave.regs.get(n) if kind == "reg" else _callparam(wave, Address(n))
        if cur is not None:
            cur[sel] = store[depth, sel]


def _ret(wave):
    """ret: back to the call site (copying the formal return parameters into the call's
    return .param), or exit in the kernel itself."""
    from ptxsim.ptx.instruction import Group
    from ptxsim.machine.program import _callee_name

    def run(idx):
        top = wave.sp[idx] == 0
        if top.any():
            wave.exit_threads(idx[top])
        rest = idx[~top]
        if not rest.size:
            return
        wave.sp[rest] -= 1
        sites = wave.stack[rest, wave.sp[rest]]
        for site in np.unique(sites):
            sel = rest[sites == site]
            call = wave.program.instructions[int(site)]
            callee = wave.program.functions[_callee_name(call)]
            rets = []
            if isinstance(call.operands[0], Group):
                rets = [(e.name, _callparam(wave, Address(formal))[sel].copy())
                        for formal, e in zip(callee.returns, call.operands[0].elements)]
            if callee.recursive:
                _restore_frame(wave, callee.name, sel)
            for name, v in rets:
                dst = _callparam(wave, Address(name))
                n = min(v.shape[1], dst.shape[1])
                dst[sel, :n] = v[:, :n]
            wave.pc[sel] = int(site) + 1
    return run


def _bar(wave, inst):
    """bar{.cta}.sync / barrier{.cta}.sync{.aligned} a{, b}; bar.arrive a, b; bar.red
    (9.7.13.1)."""
    if inst.has(".red"):
        return _bar_red(wave, inst)
    wait = not inst.has(".arrive")
    ops = inst.operands
    line = inst.loc.line

    def run(idx):
        ids = wave.read(ops[0], idx, 32).astype(np.int64) if ops else np.zeros(idx.size, np.int64)
        if (ids < 0).any() or (ids > 15).any():
            raise UndefinedBehavior(f"line {line}: barrier id outside 0..15")
        counts = (wave.read(ops[1], idx, 32).astype(np.int64) if len(ops) > 1
                  else np.full(idx.size, -1, np.int64))
        wave.bar_arrive(idx, ids, counts, wait, line)
    return run


BAR_RED_OPS = {".popc": ".u32", ".and": ".pred", ".or": ".pred"}   # 9.7.13.1


def _bar_red(wave, inst):
    """bar{.cta}.red.popc.u32 d, a{, b}, {!}c / bar{.cta}.red.{and,or}.pred p, a{, b}, {!}c
    (and barrier{.cta}.red...{.aligned}): a bar.sync on barrier a whose participating threads
    also reduce predicate c — popc counts the threads with c true, .and / .or combine them —
    and every participant receives the result. The contributions of the barrier's current
    phase are kept per (CTA, barrier); each arrival writes the reduction so far to every
    waiting participant, so the value they read once released is over all of them (also when
    the barrier completes because other threads exited)."""
    op = next((q for q in inst.qualifiers if q in BAR_RED_OPS), None)
    if op is None:
        raise OperandError("bar.red needs .popc, .and or .or (9.7.13.1)")
    t = _type(inst)
    if t != BAR_RED_OPS[op]:
        raise OperandError(f"bar.red{op} takes type {BAR_RED_OPS[op]}, not {t} (9.7.13.1)")
    ops = inst.operands
    if len(ops) not in (3, 4):
        raise OperandError("bar.red takes d, a{, b}, {!}c")
    dst, a, c = ops[0], ops[1], ops[-1]
    b = ops[2] if len(ops) == 4 else None
    line = inst.loc.line
    acc = wave.__dict__.setdefault("bar_red", {})        # (cta, id) -> [threads, values]

    def run(idx):
        ids = wave.read(a, idx, 32).astype(np.int64)
        if (ids < 0).any() or (ids > 15).any():
            raise UndefinedBehavior(f"line {line}: barrier id outside 0..15")
        counts = (wave.read(b, idx, 32).astype(np.int64) if b is not None
                  else np.full(idx.size, -1, np.int64))
        pred = wave.read(c, idx, 1)
        pred = pred.astype(bool) if pred.dtype != np.bool_ else pred
        keys = wave.cta_of[idx] * 64 + ids
        for k in np.unique(keys):
            sel = keys == k
            key = (int(k) // 64, int(k) % 64)
            if key not in wave.bars or key not in acc:   # a new phase of this barrier
                acc[key] = [np.zeros(0, np.int64), np.zeros(0, bool), op]
            entry = acc[key]
            if entry[2] != op:
                raise UndefinedBehavior(f"line {line}: barrier {key[1]} reduces with {op} and "
                                        f"{entry[2]} in one phase")
            threads = np.concatenate([entry[0], idx[sel]])
            vals = np.concatenate([entry[1], pred[sel]])
            acc[key] = [threads, vals, op]
            if op == ".popc":
                res = np.full(threads.size, int(vals.sum()), np.uint32)
            elif op == ".and":
                res = np.full(threads.size, bool(vals.all()))
            else:
                res = np.full(threads.size, bool(vals.any()))
            wave.write(dst, threads, res)
            wave.bar_arrive(idx[sel], ids[sel], counts[sel], True, line)
    return run


def _cluster_bar(wave, inst):
    """barrier.cluster.arrive{.relaxed} / barrier.cluster.wait (9.7.13.3): a phase of the
    cluster barrier completes when every non-exited thread of the cluster has arrived; the k-th
    wait of a thread returns once k phases completed."""
    is_wait = inst.has(".wait")
    cs = wave.launch.geometry.cluster_size

    def run(idx):
        wave.advance(idx)
        if not is_wait:
            wave.cl_arrive[idx] += 1
            cluster_update(wave, np.unique(wave.cta_of[idx] // cs))
            return
        wave.cl_wait[idx] += 1
        c = wave.cta_of[idx] // cs
        blocked = wave.cl_wait[idx] > wave.cl_done[c]
        sel = idx[blocked]
        wave.status[sel] = 1
        wave.wait_kind[sel] = WAIT_CLUSTER
        wave.wait_cta[sel] = c[blocked]
    return run


def cluster_update(wave, clusters) -> None:
    cs = wave.launch.geometry.cluster_size
    for c in clusters:
        c = int(c)
        lo, hi = c * cs * wave.P, (c + 1) * cs * wave.P
        st = wave.status[lo:hi]
        live = st != 2
        if not live.any():
            continue
        wave.cl_done[c] = max(wave.cl_done[c], int(wave.cl_arrive[lo:hi][live].min()))
        waiting = np.flatnonzero((st == 1) & (wave.cl_wait[lo:hi] <= wave.cl_done[c])) + lo
        waiting = waiting[wave.wait_kind[waiting] == WAIT_CLUSTER]
        wave.wait_kind[waiting] = 0
        wave.status[waiting] = 0


# -------------------------------------------------------------------------------- mbarrier
def shared_target(wave, inst, op, idx, default="generic"):
    """(cta index, offset) of a shared-memory address operand."""
    space = _space(inst, default)
    a = wave.addr(op, idx) if isinstance(op, Address) else wave.read(op, idx, 64).astype(
        np.uint64)
    cta = wave.cta_of[idx]
    if space == "generic":
        a = wave.memory.cvta_from_generic("shared::cluster", a)
        space = "shared::cluster"
    if space == "shared::cta":
        return cta, a.astype(np.int64)
    return wave.memory.shared.resolve_cluster(a, cta)


def _mbarrier(wave, inst):
    op = inst.opcode
    ops = inst.operands
    mb = wave.mbar
    if op == "mbarrier.init":
        def init(idx):
            cta, off = shared_target(wave, inst, ops[0], idx)
            mb.init(cta, off, wave.read(ops[1], idx, 32).astype(np.int64))
            wave.advance(idx)
        return init
    if op == "mbarrier.inval":
        def inval(idx):
            cta, off = shared_target(wave, inst, ops[0], idx)
            mb.inval(cta, off)
            wave.advance(idx)
        return inval
    if op in ("mbarrier.arrive", "mbarrier.arrive_drop"):
        drop = op == "mbarrier.arrive_drop"
        etx = inst.has(".expect_tx")
        nocomp = inst.has(".noComplete")
        # forms: state, [addr]{, count} / state, [addr], txCount{, ...} / [addr] (remote, no
        # state) — the address is the first Address operand
        ai = next(i for i, o in enumerate(ops) if isinstance(o, Address))
        dst = ops[0] if ai == 1 else None
        rest = ops[ai + 1:]

        def arrive(idx):
            cta, off = shared_target(wave, inst, ops[ai], idx)
            tx = 0
            count = 1
            if etx:
                tx = wave.read(rest[0], idx, 32).astype(np.int64)
                if len(rest) > 1:
                    count = wave.read(rest[1], idx, 32).astype(np.int64)
            elif rest:
                count = wave.read(rest[0], idx, 32).astype(np.int64)
            tok = mb.arrive(cta, off, count, expect_tx=tx, drop=drop, no_complete=nocomp)
            if dst is not None:
                wave.write(dst, idx, tok)
            wave.advance(idx)
        return arrive
    if op in ("mbarrier.expect_tx", "mbarrier.complete_tx"):
        def tx(idx):
            cta, off = shared_target(wave, inst, ops[0], idx)
            n = wave.read(ops[1], idx, 32).astype(np.int64)
            (mb.expect_tx if op == "mbarrier.expect_tx" else mb.complete_tx)(cta, off, n)
            wave.advance(idx)
        return tx
    if op in ("mbarrier.test_wait", "mbarrier.try_wait"):
        parity = inst.has(".parity")

        def wait(idx):
            cta, off = shared_target(wave, inst, ops[1], idx)
            v = wave.read(ops[2], idx, 64)
            if parity:
                ok = mb.test_wait_parity(cta, off, v.astype(np.int64))
            else:
                ok = mb.test_wait(cta, off, v.astype(np.uint64))
            done = idx[ok]
            if done.size:
                wave.write(ops[0], done, np.ones(done.size, bool))
                wave.advance(done)
            if (~ok).any():
                # suspend until the phase completes (a try_wait whose time limit never
                # expires; test_wait spins are folded into the same wait)
                nd = ~ok
                wave.block_on_mbarrier(idx[nd], cta[nd], off[nd], v[nd].astype(np.int64),
                                       v[nd].astype(np.uint64), parity)
        return wait
    if op == "mbarrier.pending_count":
        from ptxsim.machine.mbarrier import pending_count

        def pend(idx):
            wave.write(ops[0], idx, pending_count(wave.read(ops[1], idx, 64).astype(np.uint64)))
            wave.advance(idx)
        return pend
    raise UnsupportedFeature(f"'{inst.mnemonic}' is not modelled")


# ------------------------------------------------------------ families of ptxsim.isa.registry
def _registered(wave, inst):
    """Instructions whose semantics register in `ptxsim.isa.registry` (warp-level mma / mma.sp,
    video, misc brkpt / pmevent, ...): called per CTA on whole-warp register views (uint32
    bits, as `ptxsim.execute` passes them); only the executing lanes' outputs are written."""
    import dataclasses

    from ptxsim.api import RegisterFile
    from ptxsim.isa import misc, registry
    op = inst.opcode
    h = registry.handler_for(op)
    guard, wants_state = registry.mode_of(op)
    if op == "mma" and any(q.startswith(".sp") for q in inst.qualifiers):
        # PTX ISA notes of 9.7.14.6.3 against the module's .version (the handler's own checks
        # take the target)
        from ptxsim.isa.mma_sp import form_of
        form_of(inst).check_version(getattr(wave.launch, "ptx_version", None))
    bare = dataclasses.replace(inst, predicate=None)
    names = set()
    for o in inst.operands:
        for e in (o.elements if isinstance(o, Vector) else
                  (o.first, o.second) if isinstance(o, RegisterPair) else (o,)):
            if isinstance(e, Register) and not isinstance(e, SpecialRegister) and \
                    wave.program.registers.get(e.name) is not None:
                names.add(e.name)
    where = f"line {inst.loc.line}: {inst}"
    states = {}

    def run(idx):
        ctas = wave.cta_of[idx]
        for cta in np.unique(ctas):
            sel = idx[ctas == cta]
            warps = np.unique(sel // WARP_SIZE)
            full = (warps[:, None] * WARP_SIZE + np.arange(WARP_SIZE)).reshape(-1)
            regs = {}
            for n in names:
                v = wave.reg(n)[full]
                regs[n] = v.astype(np.uint32) if v.dtype != np.uint64 else v
            rf = RegisterFile({k: v for k, v in regs.items() if v.dtype == np.uint32},
                              warps.size, where)
            kw = {}
            if wants_state:
                if op in misc.OPCODES:
                    st = states.get(int(cta))
                    if st is None:
                        st = states[int(cta)] = misc.MiscState(warps=wave.wpc)
                    kw["state"] = st
                    active = np.zeros(wave.wpc * WARP_SIZE, bool)
                    active[sel - int(cta) * wave.P] = True
                    kw["active"] = active
                    rf = _cta_regs(wave, names, int(cta), where)
                else:
                    raise UnsupportedFeature(f"{where}: stateful family '{op}' is not wired "
                                             "into the executor")
            out = h(bare, rf, wave.launch.target, **kw)
            if not out:
                continue
            if op in misc.OPCODES:
                base = int(cta) * wave.P
                pos = sel - base
            else:
                pos = np.searchsorted(full, sel)
            for name, bits in out.items():
                wave.write(Register(name), sel, np.asarray(bits)[pos])
        wave.advance(idx)
    return run


def _cta_regs(wave, names, cta, where):
    from ptxsim.api import RegisterFile
    sl = slice(cta * wave.P, (cta + 1) * wave.P)
    regs = {n: wave.reg(n)[sl].astype(np.uint32) for n in names
            if wave.reg(n).dtype != np.uint64}
    return RegisterFile(regs, wave.wpc, where)
