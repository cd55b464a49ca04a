"""semantics(opcode) picks the same function and qualifiers as a direct call (each row below
spells the expected call out by hand), and rejects what PTX does not define."""
import numpy as np
import pytest

from ptxsim.errors import PtxValidationError
from ptxsim.isa import compare as C
from ptxsim.isa import convert as V
from ptxsim.isa import floating as F
from ptxsim.isa import integer as I
from ptxsim.isa import logic as L
from ptxsim.isa import warp as W
from ptxsim.isa.base import semantics

R = np.random.default_rng(8)
u16 = R.integers(0, 1 << 16, 32).astype(np.uint16)
u32 = R.integers(0, 1 << 32, 32, dtype=np.int64).astype(np.uint32)
v32 = R.integers(0, 1 << 32, 32, dtype=np.int64).astype(np.uint32)
w32 = R.integers(0, 1 << 32, 32, dtype=np.int64).astype(np.uint32)
u64 = R.integers(0, 1 << 63, 32, dtype=np.int64).astype(np.uint64) * np.uint64(3)
f32 = R.normal(size=32).astype(np.float32).view(np.uint32)
g32 = R.normal(size=32).astype(np.float32).view(np.uint32)
f64 = R.normal(size=32).view(np.uint64)
p = R.integers(0, 2, 32).astype(bool)
small = R.integers(0, 40, 32).astype(np.uint32)

ROWS = [
    ("add.s32", (u32, v32), lambda: I.add(u32, v32, type="s32")),
    ("add.sat.s32", (u32, v32), lambda: I.add(u32, v32, type="s32", sat=True)),
    ("add.u16x2", (u32, v32), lambda: I.add(u32, v32, type="u16x2")),
    ("add.cc.u32", (u32, v32), lambda: I.add_cc(u32, v32, type="u32")),
    ("addc.cc.u32", (u32, v32, p), lambda: I.addc(u32, v32, p, type="u32", cc=True)),
    ("subc.u64", (u64, u64, p), lambda: I.subc(u64, u64, p, type="u64")),
    ("sub.rz.ftz.f32", (f32, g32), lambda: F.sub(f32, g32, type="f32", rnd="rz", ftz=True)),
    ("add.rm.f32.f16", (u16, f32), lambda: F.add_mixed(u16, f32, atype="f16", rnd="rm")),
    ("mul.wide.s32", (u32, v32), lambda: I.mul(u32, v32, type="s32", mode="wide")),
    ("mul.hi.u64", (u64, u64), lambda: I.mul(u64, u64, type="u64", mode="hi")),
    ("mul.rp.f64", (f64, f64), lambda: F.mul(f64, f64, type="f64", rnd="rp")),
    ("mad.hi.sat.s32", (u32, v32, w32), lambda: I.mad(u32, v32, w32, type="s32", mode="hi",
                                                      sat=True)),
    ("mad.lo.cc.u32", (u32, v32, w32), lambda: I.mad_cc(u32, v32, w32, type="u32", mode="lo")),
    ("madc.hi.cc.u32", (u32, v32, w32, p), lambda: I.mad_cc(u32, v32, w32, p, type="u32",
                                                            mode="hi", carry_in=True)),
    ("mad.rn.f32", (f32, g32, f32), lambda: F.mad(f32, g32, f32, type="f32", rnd="rn")),
    ("fma.rz.sat.f32", (f32, g32, f32), lambda: F.fma(f32, g32, f32, type="f32", rnd="rz",
                                                      sat=True)),
    ("fma.rn.f32.bf16", (u16, u16, f32), lambda: F.fma_mixed(u16, u16, f32, abtype="bf16",
                                                             rnd="rn")),
    ("mul24.hi.s32", (u32, v32), lambda: I.mul24(u32, v32, type="s32", mode="hi")),
    ("mad24.lo.u32", (u32, v32, w32), lambda: I.mad24(u32, v32, w32, type="u32", mode="lo")),
    ("sad.s32", (u32, v32, w32), lambda: I.sad(u32, v32, w32, type="s32")),
    ("div.u32", (u32, v32 | 1), lambda: I.div(u32, v32 | 1, type="u32")),
    ("rem.s64", (u64, u64 | 1), lambda: I.rem(u64, u64 | 1, type="s64")),
    ("div.rn.f64", (f64, f64), lambda: F.div(f64, f64, type="f64", rnd="rn")),
    ("div.approx.ftz.f32", (f32, g32), lambda: F.div(f32, g32, type="f32", approx=True,
                                                     ftz=True)),
    ("div.full.f32", (f32, g32), lambda: F.div(f32, g32, type="f32", full=True)),
    ("abs.s32", (u32,), lambda: I.abs(u32, type="s32")),
    ("neg.ftz.f32", (f32,), lambda: F.neg(f32, type="f32", ftz=True)),
    ("min.relu.s32", (u32, v32), lambda: I.min(u32, v32, type="s32", relu=True)),
    ("max.NaN.xorsign.abs.f32", (f32, g32), lambda: F.max(f32, g32, type="f32", nan=True,
                                                          xorsign_abs=True)),
    ("min.abs.f32", (f32, g32, f32), lambda: F.min(f32, g32, f32, type="f32", abs=True)),
    ("popc.b64", (u64,), lambda: I.popc(u64, type="b64")),
    ("bfind.shiftamt.s32", (u32,), lambda: I.bfind(u32, type="s32", shiftamt=True)),
    ("bfe.s32", (u32, small, small), lambda: I.bfe(u32, small, small, type="s32")),
    ("bfi.b32", (u32, v32, small, small), lambda: I.bfi(u32, v32, small, small, type="b32")),
    ("bmsk.clamp.b32", (small, small), lambda: I.bmsk(small, small, mode="clamp")),
    ("szext.wrap.s32", (u32, small), lambda: I.szext(u32, small, type="s32", mode="wrap")),
    ("dp4a.s32.u32", (u32, v32, w32), lambda: I.dp4a(u32, v32, w32, atype="s32", btype="u32")),
    ("dp2a.hi.u32.s32", (u32, v32, w32), lambda: I.dp2a(u32, v32, w32, mode="hi", atype="u32",
                                                        btype="s32")),
    ("xor.b32", (u32, v32), lambda: L.xor(u32, v32, type="b32")),
    ("not.pred", (p,), lambda: L.not_(p, type="pred")),
    ("lop3.b32", (u32, v32, w32, 0x96), lambda: L.lop3(u32, v32, w32, 0x96)),
    ("lop3.or.b32", (u32, v32, w32, 0x80, p), lambda: L.lop3(u32, v32, w32, 0x80, bool_op="or",
                                                             q=p)),
    ("shr.s32", (u32, small), lambda: L.shr(u32, small, type="s32")),
    ("shf.r.clamp.b32", (u32, v32, small), lambda: L.shf(u32, v32, small, dir="r",
                                                        mode="clamp")),
    ("prmt.b32.ecl", (u32, v32, w32), lambda: L.prmt(u32, v32, w32, mode="ecl")),
    ("prmt.b32", (u32, v32, w32), lambda: L.prmt(u32, v32, w32)),
    ("setp.lo.u32", (u32, v32), lambda: C.setp(u32, v32, cmp="lo", type="u32")),
    ("setp.ltu.and.ftz.f32", (f32, g32, p), lambda: C.setp(f32, g32, cmp="ltu", type="f32",
                                                           ftz=True, bool_op="and", c=p)),
    ("set.gt.or.u32.s32", (u32, v32, p), lambda: C.set(u32, v32, cmp="gt", dtype="u32",
                                                       stype="s32", bool_op="or", c=p)),
    ("selp.b64", (u64, u64 >> np.uint64(1), p), lambda: C.selp(u64, u64 >> np.uint64(1), p,
                                                                type="b64")),
    ("slct.ftz.b32.f32", (u32, v32, f32), lambda: C.slct(u32, v32, f32, dtype="b32",
                                                         ctype="f32", ftz=True)),
    ("rcp.rn.f64", (f64,), lambda: F.rcp(f64, type="f64", rnd="rn")),
    ("sqrt.approx.ftz.f32", (f32,), lambda: F.sqrt(f32, type="f32", approx=True, ftz=True)),
    ("ex2.approx.ftz.f32", (f32,), lambda: F.ex2(f32, ftz=True)),
    ("tanh.approx.bf16x2", (u32,), lambda: F.tanh(u32, type="bf16x2")),
    ("sin.approx.f32", (f32,), lambda: F.sin(f32)),
    ("testp.subnormal.f32", (u32,), lambda: F.testp(u32, op="subnormal", type="f32")),
    ("copysign.f64", (f64, f64), lambda: F.copysign(f64, f64, type="f64")),
    ("cvt.rzi.s32.f32", (f32,), lambda: V.cvt(f32, dtype="s32", atype="f32", rnd="rzi")),
    ("cvt.rn.ftz.sat.f16.f32", (f32,), lambda: V.cvt(f32, dtype="f16", atype="f32", rnd="rn",
                                                     ftz=True, sat=True)),
    ("cvt.rn.relu.satfinite.bf16.f32", (f32,), lambda: V.cvt(f32, dtype="bf16", atype="f32",
                                                             rnd="rn", relu=True,
                                                             satfinite=True)),
    ("cvt.s64.s8", (u16 & np.uint16(0xFF),), lambda: V.cvt(u16 & np.uint16(0xFF), dtype="s64",
                                                           atype="s8")),
    ("cvt.rn.satfinite.e4m3x2.f32", (f32, g32), lambda: V.cvt_x2(f32, g32, dtype="e4m3x2",
                                                                 atype="f32", rnd="rn",
                                                                 satfinite=True)),
    ("cvt.rn.f16x2.e2m1x2", (u16 & np.uint16(0xFF),), lambda: V.cvt_x2(
        u16 & np.uint16(0xFF), dtype="f16x2", atype="e2m1x2", rnd="rn")),
    ("cvt.rna.tf32.f32", (f32,), lambda: V.cvt(f32, dtype="tf32", atype="f32", rnd="rna")),
    ("cvt.pack.sat.s8.s32.b32", (u32, v32, w32), lambda: V.cvt_pack(u32, v32, w32, dtype="s8")),
    ("shfl.sync.bfly.b32", (u32, 3, 0x1F, 0xFFFFFFFF), lambda: W.shfl_sync(
        u32, 3, 0x1F, 0xFFFFFFFF, mode="bfly")),
    ("vote.sync.ballot.b32", (p, 0xFFFFFFFF), lambda: W.vote_sync(p, 0xFFFFFFFF, mode="ballot")),
    ("match.any.sync.b64", (u64, 0xFFFFFFFF), lambda: W.match_sync(u64, 0xFFFFFFFF, mode="any",
                                                                   type="b64")),
    ("redux.sync.max.s32", (u32, 0xFFFFFFFF), lambda: W.redux_sync(u32, 0xFFFFFFFF, op="max",
                                                                   type="s32")),
    ("elect.sync", (0xFFFFFFFF,), lambda: W.elect_sync(0xFFFFFFFF)),
]


def _same(x, y):
    if isinstance(x, tuple):
        return isinstance(y, tuple) and len(x) == len(y) and all(_same(a, b) for a, b in zip(x, y))
    return np.array_equal(np.asarray(x), np.asarray(y)) and np.asarray(x).dtype == \
        np.asarray(y).dtype


@pytest.mark.parametrize("opcode,args,direct", ROWS, ids=[r[0] for r in ROWS])
def test_semantics_matches_direct_call(opcode, args, direct):
    assert _same(semantics(opcode)(*args), direct())


@pytest.mark.parametrize("opcode", ["add.sat.u64", "add.rn.s32", "mul.s32", "mul.lo.sat.s32",
                                    "fma.f32", "div.f32", "setp.lt.lo.u32", "cvt.f32",
                                    "shfl.down.b32", "ld.global.u32", "ex2.f32",
                                    "tanh.approx.ftz.f32", "min.xorsign.f32", "cvt.pack.s8.s32.b32",
                                    "sin.approx.f16"])
def test_semantics_rejects(opcode):
    with pytest.raises(PtxValidationError):
        f = semantics(opcode)
        for n in (2, 3, 1, 4):       # any arity: the error must be about the qualifiers
            try:
                f(*([np.zeros(32, np.uint32)] * n))
            except TypeError:
                continue
