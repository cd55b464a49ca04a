struct Params { float a; const float* x; float* y; int n; };
__constant__ float scale[4];
__device__ int counter;
extern "C" __global__ void saxpy(Params p) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < p.n) p.y[i] = p.a * p.x[i] * scale[0] + p.y[i];
  if (i == 0) atomicAdd(&counter, 1);
}
extern "C" __global__ void __cluster_dims__(2,1,1) clus(int* out) {
  extern __shared__ int s[];
  s[threadIdx.x] = threadIdx.x;
  out[blockIdx.x * blockDim.x + threadIdx.x] = s[threadIdx.x] + blockIdx.x;
}
