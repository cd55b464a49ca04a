# Hardware probe 4 for docs/base-instructions.md (run on a GPU with CuPy; $OUT is where
# the .npz goes). Recorded on an H200 (sm_90) 2026-11-21; set -arch to sm_100a on a B200.
import cupy as cp,numpy as np
S=r'''
#define A(s,t,o,...) asm volatile(s:t(o):__VA_ARGS__)
extern "C" __global__ void p(const unsigned long long*v,unsigned long long*o){unsigned r,n=0,N=v[0],S=v[1],T=v[2];unsigned long long q,D=v[3],E=v[4];unsigned short h,H=v[5],B=v[6];
A("add.sat.f32 %0,%1,%1;","=r",r,"r"(N));o[n++]=r;
A("cvt.f32.f16 %0,%1;","=r",r,"h"(H));o[n++]=r;
A("cvt.f32.bf16 %0,%1;","=r",r,"h"(B));o[n++]=r;
A("cvt.rn.f16.f64 %0,%1;","=h",h,"l"(D));o[n++]=h;
A("cvt.rn.bf16.f64 %0,%1;","=h",h,"l"(D));o[n++]=h;
A("cvt.rni.f32.f32 %0,%1;","=r",r,"r"(N));o[n++]=r;
A("cvt.ftz.f32.f32 %0,%1;","=r",r,"r"(S));o[n++]=r;
A("rcp.rn.ftz.f64 %0,%1;","=l",q,"l"(E));o[n++]=q;
A("rcp.rn.f64 %0,%1;","=l",q,"l"(E));o[n++]=q;
A("neg.f16 %0,%1;","=h",h,"h"(H));o[n++]=h;
A("abs.bf16 %0,%1;","=h",h,"h"(B));o[n++]=h;
A("max.f16 %0,%1,%2;","=h",h,"h"(H),"h"(H));o[n++]=h;
A("min.NaN.f32 %0,%1,%2;","=r",r,"r"(N),"r"(T));o[n++]=r;
A("cvt.rzi.s32.f32 %0,%1;","=r",r,"r"(N));o[n++]=r;
A("cvt.f64.f16 %0,%1;","=l",q,"h"(H));o[n++]=q;
A("sqrt.rn.ftz.f32 %0,%1;","=r",r,"r"(S));o[n++]=r;
A("cvt.rn.f16.f32 %0,%1;","=h",h,"r"(T));o[n++]=h;
A("cvt.rn.ftz.f16.f32 %0,%1;","=h",h,"r"(S));o[n++]=h;
A("fma.rn.f16 %0,%1,%2,%3;","=h",h,"h"(H),"h"((unsigned short)0x3c00),"h"((unsigned short)0));o[n++]=h;
o[63]=n;}
'''
m=cp.RawModule(code=S,options=("-arch=sm_90",))
V=cp.array([0xffc00123,0x80000001,0x3f800001,0x7ff4000000000001,0x0008000000000000,0x7d01,0xff81],dtype=cp.uint64);P=cp.zeros(64,dtype=cp.uint64)
m.get_function("p")((1,),(1,),(V,P));P=P.get();print(' '.join(hex(int(t)) for t in P[:int(P[63])]))
