# Hardware probe 3 for docs/base-instructions.md (run on a GPU with CuPy; $OUT is where
# the .npz goes). Recorded on an H200 (sm_90) 2026-11-21; set -arch to sm_100a on a B200.
import cupy as cp,numpy as np,os
S=r'''
#define A(s,t,o,...) asm volatile(s:t(o):__VA_ARGS__)
extern "C" __global__ void h(const unsigned short*i,unsigned short*o,int n){int t=blockIdx.x*blockDim.x+threadIdx.x;if(t>=n)return;unsigned short x=i[t],r;
#define H(k,s) A(s " %0,%1;","=h",r,"h"(x));o[k*n+t]=r;
H(0,"ex2.approx.f16")H(1,"tanh.approx.f16")H(2,"ex2.approx.ftz.bf16")H(3,"tanh.approx.bf16")}
extern "C" __global__ void f(const unsigned*a,const unsigned*b,unsigned*o,int n){int t=blockIdx.x*blockDim.x+threadIdx.x;if(t>=n)return;unsigned x=a[t],y=b[t],r;
A("div.approx.f32 %0,%1,%2;","=r",r,"r"(x),"r"(y));o[t]=r;A("div.full.f32 %0,%1,%2;","=r",r,"r"(x),"r"(y));o[n+t]=r;
A("div.approx.ftz.f32 %0,%1,%2;","=r",r,"r"(x),"r"(y));o[2*n+t]=r;}
extern "C" __global__ void d(const unsigned long long*a,unsigned long long*o,int n){int t=blockIdx.x*blockDim.x+threadIdx.x;if(t>=n)return;unsigned long long x=a[t],r;
A("rsqrt.approx.f64 %0,%1;","=l",r,"l"(x));o[t]=r;A("rcp.approx.ftz.f64 %0,%1;","=l",r,"l"(x));o[n+t]=r;}
'''
m=cp.RawModule(code=S,options=("-arch=sm_90",));g=np.random.default_rng(3)
u=np.arange(65536,dtype=np.uint16);n=u.size;O=cp.zeros(4*n,dtype=cp.uint16)
m.get_function("h")((256,),(256,),(cp.asarray(u),O,np.int32(n)));H=O.get().reshape(4,n)
def r32(k):
 e=g.integers(0,256,k).astype(np.uint32);return (g.integers(0,2,k).astype(np.uint32)<<31)|(e<<23)|g.integers(0,1<<23,k).astype(np.uint32)
k=16384;a=r32(k);b=r32(k);b[:4096]=(b[:4096]&0x807fffff)|(g.integers(100,154,4096).astype(np.uint32)<<23);a[:4096]=(a[:4096]&0x807fffff)|(g.integers(100,154,4096).astype(np.uint32)<<23)
O=cp.zeros(3*k,dtype=cp.uint32);m.get_function("f")((64,),(256,),(cp.asarray(a),cp.asarray(b),O,np.int32(k)));D=O.get().reshape(3,k)
x=g.integers(0,1<<63,k,dtype=np.int64).astype(np.uint64)|(g.integers(0,2,k).astype(np.uint64)<<np.uint64(63))
O=cp.zeros(2*k,dtype=cp.uint64);m.get_function("d")((64,),(256,),(cp.asarray(x),O,np.int32(k)));E=O.get().reshape(2,k)
np.savez_compressed(os.environ["OUT"]+"/mufu2.npz",h=H,a=a,b=b,div=D,x64=x,y64=E)
print(H[:,0x3c00],D[:,:2],E[:,:2])
