# Hardware probe 2 for docs/base-instructions.md (run on a GPU with CuPy; $OUT is where
# the .npz goes). Recorded on an H200 (sm_90) 2026-11-21; set -arch to sm_100a on a B200.
import cupy as cp,numpy as np,os
U=r'''
#define A(s,t,o,...) asm volatile(s:t(o):__VA_ARGS__)
extern "C" __global__ void u(const unsigned*i,unsigned*o,int n){int t=blockIdx.x*blockDim.x+threadIdx.x;if(t>=n)return;unsigned x=i[t],r;
#define OP(k,s) A(s " %0,%1;","=r",r,"r"(x));o[k*n+t]=r;
OP(0,"ex2.approx.ftz.f32")OP(1,"lg2.approx.ftz.f32")OP(2,"sin.approx.ftz.f32")OP(3,"cos.approx.ftz.f32")OP(4,"tanh.approx.f32")OP(5,"rsqrt.approx.ftz.f32")OP(6,"rcp.approx.ftz.f32")OP(7,"sqrt.approx.ftz.f32")OP(8,"ex2.approx.f32")OP(9,"rcp.approx.f32")}
extern "C" __global__ void p(const unsigned long long*v,unsigned long long*o){unsigned r,a=v[0],b=v[1],c=v[2];unsigned long long q,X=v[3],Y=v[4],Z=v[5];int n=0;
A("mul.rn.ftz.f32 %0,%1,%2;","=r",r,"r"(a),"r"(b));o[n++]=r;
A("mul.rz.f32 %0,%1,%2;","=r",r,"r"(a),"r"(b));o[n++]=r;
A("{.reg .b32 t;add.cc.u32 t,%1,%1;subc.u32 %0,%2,%3;}","=r",r,"r"(c),"r"(5),"r"(3));o[n++]=r;
A("{.reg .b32 t;add.cc.u32 t,%2,%3;subc.u32 %0,%2,%3;}","=r",r,"r"(c),"r"(5),"r"(3));o[n++]=r;
A("{.reg .b32 t;sub.cc.u32 t,%1,%2;subc.u32 %0,%2,%3;}","=r",r,"r"(3),"r"(5),"r"(3));o[n++]=r;
A("add.f64 %0,%1,%2;","=l",q,"l"(X),"l"(Y));o[n++]=q;
A("add.f64 %0,%1,%2;","=l",q,"l"(Y),"l"(X));o[n++]=q;
A("add.f64 %0,%1,%2;","=l",q,"l"(Z),"l"(X));o[n++]=q;
A("mul.f64 %0,%1,%2;","=l",q,"l"(Z),"l"(Y));o[n++]=q;
A("fma.rn.f64 %0,%1,%2,%3;","=l",q,"l"(Y),"l"(Y),"l"(X));o[n++]=q;
A("sqrt.rn.f64 %0,%1;","=l",q,"l"(Y^0x8000000000000000ull));o[n++]=q;
A("abs.f64 %0,%1;","=l",q,"l"(X|0x8000000000000000ull));o[n++]=q;
A("min.f64 %0,%1,%2;","=l",q,"l"(X),"l"(Z));o[n++]=q;
A("cvt.f64.f32 %0,%1;","=l",q,"r"(0xff800001u));o[n++]=q;
A("add.f32 %0,%1,%2;","=r",r,"r"(0x7f800001u),"r"(a));o[n++]=r;
A("sqrt.rn.f32 %0,%1;","=r",r,"r"(0xbf800000u));o[n++]=r;
unsigned short h;A("add.f16 %0,%1,%2;","=h",h,"h"((unsigned short)0xfe01),"h"((unsigned short)0x3c00));o[n++]=h;
A("add.rn.bf16 %0,%1,%2;","=h",h,"h"((unsigned short)0xffc1),"h"((unsigned short)0x3f80));o[n++]=h;
A("cvt.rn.f16.f32 %0,%1;","=h",h,"r"(0xffc00001u));o[n++]=h;
A("cvt.rn.ftz.f32.f64 %0,%1;","=r",r,"l"(0x380ffffffffff000ull));o[n++]=r;
A("neg.f32 %0,%1;","=r",r,"r"(0x00000001u));o[n++]=r;o[63]=n;}
'''
m=cp.RawModule(code=U,options=("-arch=sm_90",))
rng=np.random.default_rng(1)
e=rng.integers(0,256,1<<16).astype(np.uint32);f=rng.integers(0,1<<23,1<<16).astype(np.uint32);s=rng.integers(0,2,1<<16).astype(np.uint32)
x=(s<<31)|(e<<23)|f;x[:4096]=(np.linspace(-20,20,4096,dtype=np.float32)).view(np.uint32)
n=x.size;I=cp.asarray(x);O=cp.zeros(10*n,dtype=cp.uint32)
m.get_function("u")(((n+255)//256,),(256,),(I,O,np.int32(n)))
V=cp.array([0x20000001,0x1ffffffe,0xffffffff,0x7ff0000000000001,0x7ff8000000000002,0x7ff8000000000003],dtype=cp.uint64);P=cp.zeros(64,dtype=cp.uint64)
m.get_function("p")((1,),(1,),(V,P));P=P.get()
np.savez_compressed(os.environ["OUT"]+"/base_hw_sm90.npz",x=x,y=O.get().reshape(10,n),probes=P)
print(' '.join(hex(int(t)) for t in P[:int(P[63])]))
