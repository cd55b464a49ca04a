"""Register-to-register handlers: the base arithmetic / logic / compare / convert instructions
through `ptxsim.isa.base.semantics` (with the fast kernels when every operand's dtype is known),
the warp collectives (shfl / vote / match / redux / elect / activemask) on (warps, 32) views,
the video instructions through `ptxsim.isa.video`, and mov (pack / unpack, .b128).
"""
from __future__ import annotations

import numpy as np

from ptxsim.errors import TargetError
from ptxsim.isa import base as isa_base
from ptxsim.isa import integer as isa_integer
from ptxsim.isa.targets import parse_target, parse_version
from ptxsim.isa import video
from ptxsim.machine import poison
from ptxsim.machine.grid import WARP_SIZE
from ptxsim.machine.handlers.common import UINT, type_of, width_of
from ptxsim.ptx.instruction import Register, RegisterPair, Vector


BASE_OPS = {"add", "sub", "addc", "subc", "mul", "mad", "madc", "fma", "mul24", "mad24", "sad",
            "div", "rem", "abs", "neg", "min", "max", "popc", "clz", "brev", "bfind", "bfe",
            "bfi", "fns", "bmsk", "szext", "dp4a", "dp2a", "and", "or", "xor", "not", "cnot",
            "lop3", "shl", "shr", "shf", "prmt", "setp", "set", "selp", "slct", "rcp", "sqrt",
            "rsqrt", "ex2", "lg2", "sin", "cos", "tanh", "copysign", "testp", "cvt"}


WARP_OPS = {"shfl", "vote", "match", "redux", "elect", "activemask"}


VIDEO_OPS = tuple(video.SYNTAX)         # the video opcodes of 9.7.18 (isa.video's one table)


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


def _ptx_9_2(launch) -> bool:
    """The module admits the PTX ISA 9.2 forms: .version >= 9.2 and an sm_100a / sm_100f-or-newer
    target (isa.convert.cvt_x2)."""
    v, t = getattr(launch, "ptx_version", None), getattr(launch, "target", None)
    try:
        tt = parse_target(t)
        # no .version (ptxsim.execute: one instruction, no module) = the newest PTX ISA
        return (v is None or parse_version(v) >= (9, 2)) and tt.sm >= 100 and \
            tt.suffix in ("a", "f")
    except TargetError:        # an unparsable .version / target: the checks elsewhere name it
        return False


def _base(wave, inst):
    """Every base arithmetic / logic / compare / convert instruction (ptxsim.isa.base)."""
    fn = isa_base.semantics(inst.mnemonic, _ptx_9_2(wave.launch) if inst.opcode == "cvt" else False)
    isa_integer.check_simd_9_2(inst.mnemonic, wave.launch.target, wave.launch.ptx_version)
    ops = inst.operands
    dst, srcs = ops[0], ops[1:]
    types = inst.types
    op = inst.opcode
    # source operand widths (immediates): the source type of cvt / set / slct / mul.wide
    src_t = types[-1] if types else None
    if op in ("cvt",) and len(types) == 2:
        src_t = types[1]
    if op in ("set", "slct") and len(types) == 2:
        src_t = types[1]
    widths = [width_of(src_t)] * len(srcs)
    if op in ("shl", "shr", "shf", "bfe", "bfi") and len(srcs) >= 2:
        widths = [width_of(src_t)] + [32] * (len(srcs) - 1)
        if op == "bfi":
            widths = [width_of(src_t), width_of(src_t), 32, 32]
    if op == "selp":
        widths[-1] = 1
    if op == "lop3":
        widths = [width_of(src_t)] * 3 + [32] * (len(srcs) - 3)
    if op in ("prmt",):
        widths = [32] * len(srcs)
    if op in ("mul", "mad") and inst.has(".wide"):
        widths = [width_of(src_t)] * len(srcs)
        if op == "mad":
            widths[-1] = 2 * width_of(src_t)
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
    if op in ("div", "rem") and src_t and src_t[1] in "su" and nargs == 2:
        return _int_div(wave, inst, fn, readers, w_dst)
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


def _int_div(wave, inst, fn, readers, w_dst):
    """Integer div / rem: a zero divisor gives an unspecified value (9.7.1.8 / 9.7.1.9:
    "Division by zero yields an unspecified, machine-specific value"); that thread's destination
    becomes poison (machine/poison.py), an error only where it is used."""
    r0, r1 = readers
    advance = wave.advance

    def run(idx):
        a, b = r0(idx), r1(idx)
        zero = b == 0
        anyzero = zero.any()
        if anyzero:
            b = np.where(zero, np.ones_like(b), b)
        res = fn(a, b)
        if isinstance(res, tuple):
            res = res[0]
        if anyzero:
            res = np.where(zero, ~np.zeros_like(res), res)     # all ones, as the hardware's
            # software division sequence gives for a zero divisor (not a promise: poison)
        w_dst(idx, res)
        if anyzero:
            poison.produce(wave, inst.operands[0], np.asarray(idx)[zero], inst,
                           "integer division by zero; PTX leaves the result unspecified")
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
    t = type_of(inst)

    def run(idx):
        warps, active, full, sel = _warp_view(wave, idx)
        args = []
        for i, s in enumerate(srcs):
            w = 1 if (op == "vote" and i == 0) else (width_of(t) if (i == 0 and op in
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


def _mov(wave, inst):
    t = type_of(inst)
    w = width_of(t)
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
