# Hardware probe 5 for docs/base-instructions.md (run on a GPU with CuPy; $OUT is where
# the .npz goes). Recorded on an H200 (sm_90) 2026-11-21; set -arch to sm_100a on a B200.
import cupy as cp,numpy as np
S=r'''
#define A(s,t,o,...) asm volatile(s:t(o):__VA_ARGS__)
extern "C" __global__ void p(const unsigned long long*v,unsigned long long*o){unsigned r,n=0,N1=v[0],N2=v[1];unsigned short h,H1=v[2],H2=v[3],B1=v[4],B2=v[5];unsigned long long q,D=v[6];
A("max.f32 %0,%1,%2;","=r",r,"r"(N1),"r"(N2));o[n++]=r;
A("min.f32 %0,%1,%2;","=r",r,"r"(N2),"r"(N1));o[n++]=r;
A("max.f16 %0,%1,%2;","=h",h,"h"(H1),"h"(H2));o[n++]=h;
A("min.f16 %0,%1,%2;","=h",h,"h"(H2),"h"(H1));o[n++]=h;
A("max.bf16 %0,%1,%2;","=h",h,"h"(B1),"h"(B2));o[n++]=h;
A("min.bf16 %0,%1,%2;","=h",h,"h"(B2),"h"(B1));o[n++]=h;
A("max.NaN.f16 %0,%1,%2;","=h",h,"h"(H1),"h"((unsigned short)0x3c00));o[n++]=h;
A("cvt.rn.f16.f64 %0,%1;","=h",h,"l"(D));o[n++]=h;
A("cvt.rn.f32.f64 %0,%1;","=r",r,"l"(D));o[n++]=r;
A("cvt.f64.bf16 %0,%1;","=l",q,"h"(B1));o[n++]=q;
A("max.xorsign.abs.f16 %0,%1,%2;","=h",h,"h"(H1),"h"(H2));o[n++]=h;
A("max.ftz.f32 %0,%1,%2;","=r",r,"r"(N1),"r"(N1));o[n++]=r;
o[63]=n;}
'''
m=cp.RawModule(code=S,options=("-arch=sm_90",))
V=cp.array([0x7fc00001,0xffa00002,0x7d01,0xfe02,0x7f81,0xffc2,0xfff4000000000123],dtype=cp.uint64);P=cp.zeros(64,dtype=cp.uint64)
m.get_function("p")((1,),(1,),(V,P));P=P.get();print(' '.join(hex(int(t)) for t in P[:int(P[63])]))
