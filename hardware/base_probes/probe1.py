# Hardware probe 1 for docs/base-instructions.md (run on a GPU with CuPy; $OUT is where
# the .npz goes). Recorded on an H200 (sm_90) 2026-11-21; set -arch to sm_100a on a B200.
import cupy as cp
S=r'''
#define U unsigned
#define L unsigned long long
#define A(s,t,o,...) asm volatile(s:t(o):__VA_ARGS__)
#define PR(m,j) A("prmt.b32." #m " %0,%1,%2,%3;","=r",r,"r"(X[1]),"r"(X[2]),"r"(j));o[n++]=r;
extern "C" __global__ void k(const L*i,L*o){U l=threadIdx.x,r,n=0;L q;volatile const L*v=i;
U X[12];for(int t=0;t<12;t++)X[t]=(U)v[t];L Y0=v[12],Y1=v[13],Y2=v[14];
if(l==0){
A("div.s32 %0,%1,%2;","=r",r,"r"(X[0]),"r"(X[3]));o[n++]=r;
A("rem.s32 %0,%1,%2;","=r",r,"r"(X[0]),"r"(X[3]));o[n++]=r;
A("div.u32 %0,%1,%2;","=r",r,"r"(X[4]),"r"(X[5]));o[n++]=r;
A("div.s32 %0,%1,%2;","=r",r,"r"(X[3]),"r"(X[5]));o[n++]=r;
A("neg.f32 %0,%1;","=r",r,"r"(X[6]));o[n++]=r;
A("abs.f32 %0,%1;","=r",r,"r"(X[7]));o[n++]=r;
A("add.f64 %0,%1,%2;","=l",q,"l"(Y0),"l"(Y1));o[n++]=q;
A("sub.f64 %0,%1,%1;","=l",q,"l"(Y2));o[n++]=q;
A("cvt.f64.f32 %0,%1;","=l",q,"r"(X[6]));o[n++]=q;
A("cvt.rn.f32.f64 %0,%1;","=r",r,"l"(Y0));o[n++]=r;
A("neg.f64 %0,%1;","=l",q,"l"(Y0));o[n++]=q;
A("{.reg .b32 t;sub.cc.u32 t,%1,%2;addc.u32 %0,%1,%1;}","=r",r,"r"(X[5]),"r"(X[4]));o[n++]=r;
A("add.f32 %0,%1,%2;","=r",r,"r"(X[6]),"r"(X[7]));o[n++]=r;
A("mul.rn.ftz.f32 %0,%1,%2;","=r",r,"r"(X[8]),"r"(X[9]));o[n++]=r;
A("add.sat.f32 %0,%1,%1;","=r",r,"r"(X[10]));o[n++]=r;
A("min.f32 %0,%1,%2;","=r",r,"r"(X[5]),"r"(X[10]));o[n++]=r;
A("max.f32 %0,%1,%2;","=r",r,"r"(X[10]),"r"(X[5]));o[n++]=r;
A("slct.b32.f32 %0,%1,%2,%3;","=r",r,"r"(X[4]),"r"(X[5]),"r"(X[6]));o[n++]=r;
A("rcp.approx.ftz.f64 %0,%1;","=l",q,"l"(Y1+(Y1>>1)));o[n++]=q;
A("ex2.approx.ftz.f32 %0,%1;","=r",r,"r"(X[11]));o[n++]=r;
A("lg2.approx.ftz.f32 %0,%1;","=r",r,"r"(X[11]));o[n++]=r;
for(U j=0;j<4;j++){PR(f4e,j)PR(b4e,j)PR(rc8,j)PR(ecl,j)PR(ecr,j)PR(rc16,j)}o[255]=n;}
if(l>=4){A("{.reg .pred p;elect.sync %0|p,%1;}","=r",r,"r"(0xfffffff0u));if(l==9)o[254]=r;}}
'''
m=cp.RawModule(code=S,options=("-arch=sm_90",));f=m.get_function("k")
I=cp.array([0x80000000,0x33221100,0x77665544,0xffffffff,7,0,0x7fc00001,0xffc00002,0x3f7fffff,0x00800000,0x80000000,0x3fc00000,0x7ff8000000000001,0x3ff0000000000000,0x7ff0000000000000],dtype=cp.uint64)
O=cp.zeros(256,dtype=cp.uint64);f((1,),(32,),(I,O));o=O.get()
print(' '.join(hex(int(x)) for x in o[:int(o[255])]),'elect',int(o[254]))
