// Small kernels for tests/distributed (nvcc 13.0: nvcc -arch=sm_100a -ptx small.cu -o small.ptx).
#include <cstdio>

// every CTA's thread 0 stores its CTA id at out[0]: a write race between CTAs
extern "C" __global__ void race(unsigned *out) {
    if (threadIdx.x == 0) out[0] = blockIdx.x;
}

// every CTA's thread 0 stores 7 at out[0]: a race whose every order gives the same bytes
extern "C" __global__ void same(unsigned *out) {
    if (threadIdx.x == 0) out[0] = 7;
}

// CTA c adds every thread's tid to counter[c]: atomics, one address per CTA
extern "C" __global__ void atom_each(unsigned *counter) {
    atomicAdd(&counter[blockIdx.x], threadIdx.x);
}

// CTA c stores c + 1 at out[64 c]
extern "C" __global__ void fault(unsigned *out) {
    if (threadIdx.x == 0) out[64 * blockIdx.x] = blockIdx.x + 1;
}

// reads %clock64
extern "C" __global__ void read_clock(unsigned long long *out) {
    if (threadIdx.x == 0) out[blockIdx.x] = clock64();
}

// one line per CTA
extern "C" __global__ void hello() {
    if (threadIdx.x == 0) printf("cta %d\n", blockIdx.x);
}

// y[i] = a * x[i] + y[i] for i < n (the farm's small kernel)
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

// CTA c > 0 stores out[c - 1] + 1 at out[c]; CTA 0 stores 42: each CTA reads what the CTA
// before it wrote (a race on hardware unless the CTAs run in order)
extern "C" __global__ void relay(unsigned *out) {
    if (threadIdx.x == 0) out[blockIdx.x] = blockIdx.x == 0 ? 42 : out[blockIdx.x - 1] + 1;
}
