# Capture program for tests/data/hardware/cvt/cvt_sm90.npz: run on an H200 (sm_90) through the device
# tool with CuPy (python3 this_file, OUT=<dir>); writes in/f16/bf1/tf3/e/dec .npz. The test file
# keeps a seeded subset (tests/types/test_types_hardware_cvt.py says which). Not imported by the package.
import numpy as np,cupy as cp,os
r=np.random.default_rng(7)
u=np.uint32
a=r.integers(0,2**32,100000,dtype=np.uint64).astype(u)
b=np.arange(65536,dtype=u)<<16
bm=b+u(0x8000)
f=np.arange(65536,dtype=np.uint16).view(np.float16).astype(np.float32).view(u)
f=f[np.isfinite(f.view(np.float32))]
fm=f+u(0x1000)
k=np.arange(-512,512,dtype=np.float64)
g=(k[:,None]*2.0**np.arange(-30,19)[None,:]).ravel().astype(np.float32).view(u)
sp=np.array([0,0x80000000,0x7f800000,0xff800000,0x7fc00000,0xffc00000,0x7f800001,0xff800001,0x7fffffff,0x7f7fffff,0xff7fffff,1,0x80000001,0x00800000,0x807fffff],dtype=u)
x=np.unique(np.concatenate([sp,a,b,bm,bm-1,bm+1,f,fm,fm-1,fm+1,g,g+1,g-1]))
x3=x[::3].view(np.float32).astype(np.float64)
d=np.concatenate([x3,(x3[:100000]*(1+2.0**-40)),(x3[:100000]*(1-2.0**-40))])
V={}
def run(op,src,t,i2=0):
  c={'f':'float','d':'double','h':'unsigned short'}[t]
  s='extern "C" __global__ void k(const %s*x,unsigned*y,int n){int i=blockIdx.x*256+threadIdx.x;if(i<n){unsigned r=0;%s y[i]=r;}}'%(c,op)
  X=cp.asarray(src);Y=cp.zeros(len(src),dtype=cp.uint32)
  cp.RawKernel(s,'k',options=('-arch=sm_90',))(((len(src)+255)//256,),(256,),(X,Y,np.int32(len(src))))
  return Y.get()
H='unsigned short h;asm("%s %%0,%%1;":"=h"(h):"f"(x[i]));r=h;'
for t in['f16','bf16']:
  for m in['rn','rz','rm','rp','rn.relu','rz.relu','rn.satfinite','rz.satfinite','rn.relu.satfinite']:
    V[t+'.'+m]=run(H%('cvt.%s.%s.f32'%(m,t)),x,'f')
  for m in['rn','rz','rm','rp']:
    V[t+'.'+m+'.f64']=run('unsigned short h;asm("cvt.%s.%s.f64 %%0,%%1;":"=h"(h):"d"(x[i]));r=h;'%(m,t),d,'d')
for m in['rna','rna.satfinite','rn','rz','rn.relu','rz.relu']:
  V['tf32.'+m]=run('asm("cvt.%s.tf32.f32 %%0,%%1;":"=r"(r):"f"(x[i]));'%m,x,'f')
for t in['e4m3','e5m2']:
  for m in['rn.satfinite','rn.satfinite.relu']:
    V[t+'.'+m]=run('unsigned short h;asm("cvt.%s.%sx2.f32 %%0,%%1,%%2;":"=h"(h):"f"(x[i]),"f"(0.5f));r=h;'%(m,t),x,'f')
  V['dec.'+t]=run('asm("cvt.rn.f16x2.%sx2 %%0,%%1;":"=r"(r):"h"(x[i]));'%t,np.arange(65536,dtype=np.uint16),'h')
O=os.environ['OUT']+'/'
np.savez_compressed(O+'in.npz',x=x,d=d)
for p in['f16.','bf16.','tf32.','e','dec.']:np.savez_compressed(O+p[:3]+'.npz',**{k:(v if p in('tf32.','dec.') else v.astype(np.uint16)) for k,v in V.items() if k.startswith(p)})
print({k:v.shape for k,v in V.items()})
