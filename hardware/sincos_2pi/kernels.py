"""PTX of the sin / cos .approx.ftz.2pi.f32 capture (PTX ISA 9.5; ptxas 13.5 assembles it for
sm_90a here, the H200 runs the cubin: its CUDA 13.0 driver cannot JIT PTX 9.5).

SAMPLE: out_sin[i], out_cos[i] = sin / cos.approx.ftz.2pi.f32 of in[i] (the recorded vector).
CHECK: every one of the 2^32 inputs (2^28 threads x 16, from `start`) against the model of
    ptxsim.isa.floating._mufu_sincos(revolutions=True) evaluated in the kernel from the quarter-turn
    table Q (src/ptxsim/data/mufu_sm90_sincos.npz, the 2^23 sin.approx results of the first
    quarter turn): F = trunc(|a| 2^25) mod 2^25 from a's bits, quadrant = F >> 23, low = F mod 2^23,
    |sin| = Q[low] (quadrants 0, 2) or Q[2^23 - 1 - low] (1, 3), negative in quadrants 2, 3, odd;
    cos at F + 2^23, even; Inf / NaN -> 0x7FFFFFFF. res (u64): [sin mismatches, cos mismatches,
    inputs checked]; bad (u32): the smallest mismatching input of sin, of cos (0xFFFFFFFF: none).
"""

HEAD = ".version 9.5\n.target sm_90a\n.address_size 64\n"

SAMPLE = """
.visible .entry sample(.param .u64 pin, .param .u64 psin, .param .u64 pcos, .param .u32 n)
{
  .reg .b32 %r<8>;
  .reg .f32 %f<4>;
  .reg .b64 %rd<10>;
  .reg .pred %p;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mad.lo.u32 %r4, %r1, %r2, %r3;
  ld.param.u32 %r5, [n];
  setp.ge.u32 %p, %r4, %r5;
  @%p bra END;
  ld.param.u64 %rd1, [pin];
  ld.param.u64 %rd2, [psin];
  ld.param.u64 %rd3, [pcos];
  mul.wide.u32 %rd4, %r4, 4;
  add.s64 %rd5, %rd1, %rd4;
  ld.global.f32 %f1, [%rd5];
  sin.approx.ftz.2pi.f32 %f2, %f1;
  cos.approx.ftz.2pi.f32 %f3, %f1;
  add.s64 %rd6, %rd2, %rd4;
  st.global.f32 [%rd6], %f2;
  add.s64 %rd7, %rd3, %rd4;
  st.global.f32 [%rd7], %f3;
END:
  ret;
}
"""

# model(%a, cos) -> %r ; registers: %s sign, %e exponent, %m significand, %F fixed revolutions
_MODEL = """
  and.b32 %s, %a, 0x80000000;
  shr.u32 %e, %a, 23;
  and.b32 %e, %e, 255;
  and.b32 %m, %a, 0x7FFFFF;
  setp.ne.u32 %pz, %e, 0;
  @%pz or.b32 %m, %m, 0x800000;
  max.s32 %sh, %e, 1;
  sub.s32 %sh, %sh, 125;
  setp.ge.s32 %pz, %sh, 0;
  cvt.u64.u32 %m64, %m;
  shl.b64 %m64, %m64, %sh;
  cvt.u32.u64 %F, %m64;
  and.b32 %F, %F, 0x1FFFFFF;
  neg.s32 %nsh, %sh;
  shr.u32 %Fr, %m, %nsh;
  @!%pz mov.u32 %F, %Fr;
  {cos_adjust}
  shr.u32 %quad, %F, 23;
  and.b32 %low, %F, 0x7FFFFF;
  and.b32 %odd, %quad, 1;
  setp.ne.u32 %pz, %odd, 0;
  @%pz sub.u32 %low, 0x7FFFFF, %low;
  mul.wide.u32 %off, %low, 4;
  add.s64 %qa, %q, %off;
  ld.global.nc.u32 %r, [%qa];
  setp.ge.u32 %pz, %quad, 2;
  @%pz xor.b32 %s, %s, 0x80000000;
  or.b32 %r, %r, %s;
  setp.eq.u32 %pz, %e, 255;
  @%pz mov.u32 %r, 0x7FFFFFFF;
"""

CHECK = """
.visible .entry check(.param .u64 pq, .param .u64 pres, .param .u64 pbad, .param .u32 start)
{
  .reg .b32 %a, %r, %hw, %s, %e, %m, %sh, %nsh, %F, %Fr, %quad, %low, %odd, %j, %base, %t1, %t2;
  .reg .b64 %q, %res, %bad, %m64, %off, %qa, %nsin, %ncos;
  .reg .f32 %x, %y;
  .reg .pred %pz, %pl, %pd;
  ld.param.u64 %q, [pq];
  ld.param.u64 %res, [pres];
  ld.param.u64 %bad, [pbad];
  mov.u32 %t1, %ctaid.x;
  mov.u32 %t2, %ntid.x;
  mov.u32 %base, %tid.x;
  mad.lo.u32 %base, %t1, %t2, %base;
  shl.b32 %base, %base, 4;
  ld.param.u32 %t2, [start];
  add.u32 %base, %base, %t2;
  mov.u64 %nsin, 0;
  mov.u64 %ncos, 0;
  mov.u32 %j, 0;
LOOP:
  add.u32 %a, %base, %j;
  mov.b32 %x, %a;
  sin.approx.ftz.2pi.f32 %y, %x;
  mov.b32 %hw, %y;
""" + _MODEL.replace("{cos_adjust}", "") + """
  setp.ne.u32 %pd, %hw, %r;
  @%pd add.u64 %nsin, %nsin, 1;
  @%pd atom.global.min.u32 %t1, [%bad], %a;
  cos.approx.ftz.2pi.f32 %y, %x;
  mov.b32 %hw, %y;
""" + _MODEL.replace("{cos_adjust}", "add.u32 %F, %F, 0x800000;\n  and.b32 %F, %F, 0x1FFFFFF;\n"
                     "  mov.u32 %s, 0;") + """
  setp.ne.u32 %pd, %hw, %r;
  @%pd add.u64 %ncos, %ncos, 1;
  @%pd atom.global.min.u32 %t1, [%bad+4], %a;
  add.u32 %j, %j, 1;
  setp.lt.u32 %pl, %j, 16;
  @%pl bra LOOP;
  red.global.add.u64 [%res], %nsin;
  red.global.add.u64 [%res+8], %ncos;
  red.global.add.u64 [%res+16], 16;
  ret;
}
"""


def module() -> str:
    return HEAD + SAMPLE + CHECK
