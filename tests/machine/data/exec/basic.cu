// Small kernels for the executor tests; compiled with
//   nvcc -arch=sm_100a -ptx basic.cu -o basic.ptx   (CUDA 13.0)
extern "C" __global__ void vadd(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

// Block sum: warp shuffles, then shared memory and __syncthreads.
extern "C" __global__ void block_sum(const int* x, int* out, int n) {
    __shared__ int partial[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = i < n ? x[i] : 0;
    for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(0xffffffffu, v, d);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < (blockDim.x >> 5) ? partial[lane] : 0;
        for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(0xffffffffu, v, d);
        if (lane == 0) atomicAdd(out, v);
    }
}

// Float reduction in a loop with divergence (grid-stride), fma and a float atomic.
extern "C" __global__ void saxpy_dot(const float* x, const float* y, float a, float* out,
                                      float* z, int n) {
    float acc = 0.f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float v = fmaf(a, x[i], y[i]);
        z[i] = v;
        acc += v * x[i];
    }
    atomicAdd(out, acc);
}

// A kernel that waits forever: an mbarrier expecting 2 arrivals receives one per CTA.
extern "C" __global__ void hang(int* flag) {
    __shared__ unsigned long long bar;
    unsigned addr = (unsigned)__cvta_generic_to_shared(&bar);
    if (threadIdx.x == 0)
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 2;" :: "r"(addr));
    __syncthreads();
    if (threadIdx.x == 0)
        asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(addr));
    asm volatile("{\n.reg .pred p;\nwait_%=:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n"
                 "@!p bra wait_%=;\n}" :: "r"(addr));
    flag[threadIdx.x] = 1;
}

// A non-inlined device function: call with .param arguments and a return value.
__device__ __noinline__ float scale_add(float x, float y, int k) {
    float r = x;
    for (int i = 0; i < k; ++i) r = r * 2.0f + y;
    return r;
}
extern "C" __global__ void use_call(const float* a, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = scale_add(a[i], 1.0f, i % 4);
}

// Distributed shared memory: each CTA of a 2-CTA cluster writes its rank into the peer's shared
// memory (mapa + st.shared::cluster), barrier.cluster, then reads what the peer wrote.
#include <cooperative_groups.h>
extern "C" __global__ void __cluster_dims__(2, 1, 1) dsmem_swap(int* out) {
    namespace cg = cooperative_groups;
    __shared__ int box[64];
    cg::cluster_group cluster = cg::this_cluster();
    unsigned rank = cluster.block_rank();
    int* peer = cluster.map_shared_rank(box, rank ^ 1);
    peer[threadIdx.x] = 1000 * (int)rank + threadIdx.x;
    cluster.sync();
    out[blockIdx.x * 64 + threadIdx.x] = box[threadIdx.x];
    cluster.sync();
}

// Atomics and sign-extending loads.
extern "C" __global__ void atomics(int* counters, const signed char* bytes, int* widened) {
    int t = threadIdx.x;
    atomicAdd(&counters[0], 1);
    atomicMax(&counters[1], t * 7 - 100);
    atomicMin(&counters[2], 50 - t);
    atomicCAS(&counters[3], 0, t + 1);          // exactly one thread wins (the first in order)
    atomicExch(&counters[4], t);
    widened[t] = bytes[t];                      // ld.global.s8 -> sign extension
}
