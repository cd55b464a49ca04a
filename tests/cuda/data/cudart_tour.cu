// A CUDA C++ program of ptxsim's own (tests/cuda/test_exec.py): built by the test with
//   nvcc -cudart shared -gencode arch=compute_100a,code=compute_100a cudart_tour.cu
// and run unchanged by `ptxsim exec`. It checks its own results against a host reference and
// prints one line per check; argv[1] picks a scenario.
#include <cassert>
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>

__constant__ float scale[4];
__device__ int counter;
__managed__ int managed_total;

__global__ void add_managed(int v) { atomicAdd(&managed_total, v); }

__global__ void saxpy(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = scale[i % 4] * x[i] + y[i];
  if (i < n) atomicAdd(&counter, 1);
}

__global__ void reverse_shared(const int* in, int* out, int n) {
  extern __shared__ int s[];
  int t = threadIdx.x;
  s[t] = in[blockIdx.x * n + t];
  __syncthreads();
  out[blockIdx.x * n + t] = s[n - 1 - t];
}

__global__ void __cluster_dims__(2, 1, 1) cluster_rank(unsigned* out) {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  if (threadIdx.x == 0) out[blockIdx.x] = r;
}

__global__ void hello(int v) { if (threadIdx.x == 0) printf("device says %d\n", v); }

__global__ void checked(const int* p, int n) { assert(p[threadIdx.x] < n); }

__global__ void overrun(int* p, int n) { p[threadIdx.x + n] = 1; }

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  printf("FAIL %s: %s (%s)\n", #x, cudaGetErrorName(e), cudaGetErrorString(e)); return 1; } } while (0)

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "ok";
  if (!strcmp(mode, "ok")) {
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("device %s cc %d.%d sms %d warp %d smem/block-optin %zu\n", prop.name, prop.major,
           prop.minor, prop.multiProcessorCount, prop.warpSize, prop.sharedMemPerBlockOptin);
    int n = 1000;
    float hx[1000], hy[1000], ref[1000], hs[4] = {1.f, 2.f, -0.5f, 3.f};
    for (int i = 0; i < n; ++i) { hx[i] = i * 0.25f; hy[i] = 1.f - i; ref[i] = hs[i % 4] * hx[i] + hy[i]; }
    float *x, *y;
    CHECK(cudaMalloc(&x, n * 4));
    CHECK(cudaMalloc(&y, n * 4));
    CHECK(cudaMemcpyToSymbol(scale, hs, sizeof hs));
    int zero = 0;
    CHECK(cudaMemcpyToSymbol(counter, &zero, 4));
    cudaStream_t st;
    CHECK(cudaStreamCreate(&st));
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    CHECK(cudaMemcpyAsync(x, hx, n * 4, cudaMemcpyHostToDevice, st));
    CHECK(cudaMemcpyAsync(y, hy, n * 4, cudaMemcpyHostToDevice, st));
    CHECK(cudaEventRecord(a, st));
    saxpy<<<(n + 127) / 128, 128, 0, st>>>(x, y, n);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(b, st));
    CHECK(cudaStreamSynchronize(st));
    float ms = -1;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    CHECK(cudaMemcpy(hy, y, n * 4, cudaMemcpyDeviceToHost));
    int count = 0;
    CHECK(cudaMemcpyFromSymbol(&count, counter, 4));
    int bad = 0;
    for (int i = 0; i < n; ++i) bad += hy[i] != ref[i];
    printf("saxpy mismatches %d counter %d elapsed>0 %d\n", bad, count, ms > 0);

    int *in, *out, hin[2 * 256], hout[2 * 256];
    for (int i = 0; i < 512; ++i) hin[i] = i * 7;
    CHECK(cudaMalloc(&in, sizeof hin));
    CHECK(cudaMalloc(&out, sizeof hout));
    CHECK(cudaMemset(out, 0xFF, sizeof hout));
    CHECK(cudaMemcpy(in, hin, sizeof hin, cudaMemcpyHostToDevice));
    reverse_shared<<<2, 256, 256 * sizeof(int)>>>(in, out, 256);
    CHECK(cudaMemcpy(hout, out, sizeof hout, cudaMemcpyDeviceToHost));
    bad = 0;
    for (int blk = 0; blk < 2; ++blk)
      for (int t = 0; t < 256; ++t) bad += hout[blk * 256 + t] != hin[blk * 256 + 255 - t];
    printf("reverse mismatches %d\n", bad);

    // too much dynamic shared memory until the attribute is raised
    reverse_shared<<<1, 256, 100 * 1024>>>(in, out, 256);
    cudaError_t e = cudaGetLastError();
    printf("64KB without attribute: %s\n", cudaGetErrorName(e));
    CHECK(cudaFuncSetAttribute(reverse_shared, cudaFuncAttributeMaxDynamicSharedMemorySize, 100 * 1024));
    reverse_shared<<<1, 256, 100 * 1024>>>(in, out, 256);
    printf("64KB with attribute: %s\n", cudaGetErrorName(cudaGetLastError()));
    reverse_shared<<<1, 2048>>>(in, out, 256);
    cudaError_t peek = cudaPeekAtLastError();
    cudaError_t last = cudaGetLastError();
    printf("2048 threads: %s / %s / then %s\n", cudaGetErrorName(peek), cudaGetErrorName(last),
           cudaGetErrorName(cudaGetLastError()));

    unsigned *ranks, hr[4];
    CHECK(cudaMalloc(&ranks, sizeof hr));
    cluster_rank<<<4, 32>>>(ranks);
    CHECK(cudaMemcpy(hr, ranks, sizeof hr, cudaMemcpyDeviceToHost));
    printf("cluster ranks %u %u %u %u\n", hr[0], hr[1], hr[2], hr[3]);

    fflush(stdout);
    hello<<<1, 32>>>(42);
    CHECK(cudaDeviceSynchronize());
    printf("after printf\n");
    CHECK(cudaFree(x));
    CHECK(cudaFree(y));
    printf("double free: %s\n", cudaGetErrorName(cudaFree(x)));
    managed_total = 5;                       // the host writes a __managed__ variable ...
    add_managed<<<2, 32>>>(1);
    CHECK(cudaDeviceSynchronize());
    printf("managed %d\n", managed_total);  // ... and reads what the kernel added
    printf("PASSED\n");
    return 0;
  }
  if (!strcmp(mode, "assert") || !strcmp(mode, "oob")) {
    int h[32], *d;
    for (int i = 0; i < 32; ++i) h[i] = i;
    CHECK(cudaMalloc(&d, sizeof h));
    CHECK(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
    if (mode[0] == 'a') checked<<<1, 32>>>(d, 31);
    else overrun<<<1, 32>>>(d, 16);
    cudaError_t launch = cudaGetLastError();
    cudaError_t sync = cudaDeviceSynchronize();
    cudaError_t later = cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    printf("launch %s sync %s later %s\n", cudaGetErrorName(launch), cudaGetErrorName(sync),
           cudaGetErrorName(later));
    return 0;
  }
  if (!strcmp(mode, "unmodelled")) {
    cudaGraph_t g;
    cudaError_t e = cudaGraphCreate(&g, 0);
    printf("cudaGraphCreate: %d %s\n", (int)e, cudaGetErrorName(e));
    return 0;
  }
  return 2;
}
