#include <cstdio>
#include <cuda_runtime.h>
__global__ void vadd(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
int main() {
  const int n = 1000; float *a, *b, *c; float ha[n], hb[n], hc[n];
  for (int i = 0; i < n; ++i) { ha[i] = i; hb[i] = 2 * i; }
  cudaMalloc(&a, n * 4); cudaMalloc(&b, n * 4); cudaMalloc(&c, n * 4);
  cudaMemcpy(a, ha, n * 4, cudaMemcpyHostToDevice); cudaMemcpy(b, hb, n * 4, cudaMemcpyHostToDevice);
  vadd<<<(n + 255) / 256, 256>>>(a, b, c, n);
  cudaError_t e = cudaDeviceSynchronize();
  cudaMemcpy(hc, c, n * 4, cudaMemcpyDeviceToHost);
  int bad = 0; for (int i = 0; i < n; ++i) bad += hc[i] != 3 * i;
  printf("%s %d %s\n", cudaGetErrorString(e), bad, bad ? "FAILED" : "PASSED");
  return bad != 0;
}
