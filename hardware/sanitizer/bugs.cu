// One planted bug per case, for compute-sanitizer on an H100/H200 (sm_90a): the sm_90 equivalents
// of the bug classes ptxsim's sanitizer reports (docs/sanitizer.md, "ptxsim and
// compute-sanitizer"). Each case is one small kernel; `bugs CASE` runs it once, `bugs list`
// prints the cases. Run every case under each tool (run.sh): memcheck, racecheck, initcheck,
// synccheck. A case prints "result ..." so a silently wrong value can be seen in the log.
//
//   nvcc -gencode=arch=compute_90a,code=sm_90a -lineinfo -o bugs bugs.cu
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    printf("cuda error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); } } while (0)

__device__ __forceinline__ uint32_t sa(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(uint64_t* b, int n) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(sa(b)), "r"(n));
    asm volatile("fence.mbarrier_init.release.cluster;");
}
__device__ __forceinline__ void mbar_expect(uint64_t* b, int bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(sa(b)),
                 "r"(bytes));
}
__device__ __forceinline__ void mbar_wait(uint64_t* b, int parity) {
    asm volatile("{\n.reg .pred p;\nW_%=:\nmbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
                 "@!p bra W_%=;\n}" :: "r"(sa(b)), "r"(parity));
}
__device__ __forceinline__ void bulk_g2s(void* dst, const void* src, int bytes, uint64_t* b) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
                 "[%0], [%1], %2, [%3];" :: "r"(sa(dst)), "l"(src), "r"(bytes), "r"(sa(b))
                 : "memory");
}
__device__ __forceinline__ void bulk_s2g(void* dst, const void* src, int bytes) {
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
                 :: "l"(dst), "r"(sa(src)), "r"(bytes) : "memory");
    asm volatile("cp.async.bulk.commit_group;");
}
__device__ __forceinline__ void bulk_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
}
__device__ __forceinline__ void bulk_wait() {
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

// ---------------------------------------------------------------- racecheck: shared memory
// Warp 1 writes a word warp 0 reads, no barrier between them.
__global__ void k_race_shared(int* out) {
    __shared__ int w;
    if (threadIdx.x == 32) w = 7;
    if (threadIdx.x == 0) out[0] = w;
}
// The fixed version: __syncthreads between.
__global__ void k_race_shared_fixed(int* out) {
    __shared__ int w;
    if (threadIdx.x == 32) w = 7;
    __syncthreads();
    if (threadIdx.x == 0) out[0] = w;
}
// ---------------------------------------------------------------- racecheck: global memory
// Two CTAs store different values to one global word with plain stores.
__global__ void k_race_global(int* out) {
    if (threadIdx.x == 0) out[0] = blockIdx.x + 1;
}
// One CTA writes, another reads, no synchronisation.
__global__ void k_race_global_rw(int* out) {
    if (blockIdx.x == 0 && threadIdx.x == 0) out[1] = 5;
    if (blockIdx.x == 1 && threadIdx.x == 0) out[0] = out[1];
}
// ---------------------------------------------------------------- initcheck
__global__ void k_uninit_shared(int* out) {
    __shared__ int s[64];
    out[threadIdx.x] = s[threadIdx.x];
}
__global__ void k_uninit_global(int* out, const int* never_written) {
    out[threadIdx.x] = never_written[threadIdx.x];
}
// ---------------------------------------------------------------- memcheck
__global__ void k_oob_global(int* out) {
    out[threadIdx.x + 64] = 1;                      // out has 64 ints
}
__global__ void k_oob_shared(int* out, int n) {
    extern __shared__ int dyn[];                     // launched with 256 bytes
    dyn[threadIdx.x * n] = 1;                        // n = 64: beyond the 64 ints
    out[0] = dyn[0];
}
__global__ void k_misaligned(int* out) {
    int* p = reinterpret_cast<int*>(reinterpret_cast<char*>(out) + 2);
    p[threadIdx.x] = 1;
}
// ---------------------------------------------------------------- synccheck
// __syncthreads in a branch only warp 0 takes.
__global__ void k_divergent_bar(int* out) {
    __shared__ int s[64];
    s[threadIdx.x] = threadIdx.x;
    if (threadIdx.x < 32) __syncthreads();
    out[threadIdx.x] = s[63 - threadIdx.x];
}
// A barrier whose threads disagree on the thread count (bar.sync 1, 64 vs 1, 128).
__global__ void k_bar_count(int* out) {
    if (threadIdx.x < 64) asm volatile("bar.sync 1, 64;");
    else asm volatile("bar.sync 1, 128;");
    out[threadIdx.x] = 1;
}
// Lanes of one warp disagree on a .aligned barrier (bar.sync is barrier.sync.aligned).
__global__ void k_divergent_lanes(int* out) {
    if (threadIdx.x % 2 == 0) asm volatile("bar.sync 0;");
    out[threadIdx.x] = 1;
}
// ---------------------------------------------------------------- bulk / TMA (async proxy)
// Read the destination of a bulk copy before waiting on its mbarrier.
__global__ void k_bulk_read_before_wait(int* out, const int* in) {
    __shared__ alignas(128) int s[64];
    __shared__ uint64_t bar;
    if (threadIdx.x == 0) mbar_init(&bar, 1);
    __syncthreads();
    if (threadIdx.x == 0) {
        mbar_expect(&bar, 256);
        bulk_g2s(s, in, 256, &bar);
    }
    out[threadIdx.x] = s[threadIdx.x];               // no mbar_wait before the read
    mbar_wait(&bar, 0);
}
// The bulk store's source overwritten before cp.async.bulk.wait_group.read.
__global__ void k_bulk_src_overwrite(int* out) {
    __shared__ alignas(128) int s[64];
    s[threadIdx.x] = threadIdx.x;
    asm volatile("fence.proxy.async.shared::cta;");
    __syncthreads();
    if (threadIdx.x == 0) bulk_s2g(out, s, 256);
    __syncthreads();
    s[threadIdx.x] = -1;                             // the copy may still read s
    if (threadIdx.x == 0) bulk_wait();
}
// Generic writes to shared memory read by the async proxy without fence.proxy.async.
__global__ void k_missing_proxy_fence(int* out) {
    __shared__ alignas(128) int s[64];
    s[threadIdx.x] = threadIdx.x + 1;
    __syncthreads();                                 // no fence.proxy.async before it
    if (threadIdx.x == 0) { bulk_s2g(out, s, 256); bulk_wait(); }
}
// The CTA exits with its bulk store still reading shared memory.
__global__ void k_bulk_inflight_exit(int* out) {
    __shared__ alignas(128) int s[64];
    s[threadIdx.x] = threadIdx.x;
    asm volatile("fence.proxy.async.shared::cta;");
    __syncthreads();
    if (threadIdx.x == 0) bulk_s2g(out, s, 256);     // no wait_group before exit
}
// The destination of a bulk copy overwritten by generic stores while the copy is in flight.
__global__ void k_bulk_dst_overwrite(int* out, const int* in) {
    __shared__ alignas(128) int s[64];
    __shared__ uint64_t bar;
    if (threadIdx.x == 0) mbar_init(&bar, 1);
    __syncthreads();
    if (threadIdx.x == 0) {
        mbar_expect(&bar, 256);
        bulk_g2s(s, in, 256, &bar);
    }
    s[threadIdx.x] = -1;                             // races with the copy
    mbar_wait(&bar, 0);
    out[threadIdx.x] = s[threadIdx.x];
}
// ---------------------------------------------------------------- mbarrier misuse
__global__ void k_mbar_plain_store(int* out) {
    __shared__ uint64_t bar;
    if (threadIdx.x == 0) {
        mbar_init(&bar, 1);
        reinterpret_cast<volatile uint32_t*>(&bar)[1] = 7;   // plain store to a live barrier
        asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(sa(&bar)));
        mbar_wait(&bar, 0);
        out[0] = 1;
    }
}
// More arrivals than the phase expects in one instruction's worth of threads.
__global__ void k_mbar_over_arrive(int* out) {
    __shared__ uint64_t bar;
    if (threadIdx.x == 0) mbar_init(&bar, 1);
    __syncthreads();
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(sa(&bar)));  // 64 arrivals
    out[threadIdx.x] = 1;
}
// tx-count overflow: expect more than 2^20-1 bytes.
__global__ void k_mbar_tx_overflow(int* out) {
    __shared__ uint64_t bar;
    if (threadIdx.x == 0) {
        mbar_init(&bar, 1);
        asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;"
                     :: "r"(sa(&bar)), "r"(1 << 20));
        asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;"
                     :: "r"(sa(&bar)), "r"(1 << 20));
        out[0] = 1;
    }
}
// ---------------------------------------------------------------- cp.async (sm_80)
__global__ void k_cp_async_read_before_wait(int* out, const int* in) {
    __shared__ alignas(16) int s[64];
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: "r"(sa(&s[threadIdx.x])),
                 "l"(in + threadIdx.x));
    asm volatile("cp.async.commit_group;");
    out[threadIdx.x] = s[threadIdx.x];               // before cp.async.wait_group
    asm volatile("cp.async.wait_group 0;");
}
// ---------------------------------------------------------------- wgmma (sm_90a async MMA)
// m64n8k16 f16 -> f32, A and B in shared memory (no swizzle). Descriptor: start >> 4 in bits
// 0-13, leading byte offset >> 4 in 16-29, stride byte offset >> 4 in 32-45, no swizzle.
__device__ __forceinline__ uint64_t gdesc(const void* p, uint32_t lbo, uint32_t sbo) {
    return (uint64_t)((sa(p) >> 4) & 0x3FFF) | ((uint64_t)((lbo >> 4) & 0x3FFF) << 16) |
           ((uint64_t)((sbo >> 4) & 0x3FFF) << 32);
}
__device__ __forceinline__ void wgmma_64x8x16(float (&d)[4], uint64_t da, uint64_t db) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0, %1, %2, %3}, %4, %5, "
                 "0, 1, 1, 0, 0;"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "l"(da), "l"(db));
}
// The wgmma's shared-memory operand overwritten before wgmma.wait_group.
__global__ void k_wgmma_operand_overwrite(float* out) {
    __shared__ alignas(128) uint16_t a[64 * 16];
    __shared__ alignas(128) uint16_t b[8 * 16];
    for (int i = threadIdx.x; i < 64 * 16; i += 128) a[i] = 0x3C00;    // f16 1.0
    for (int i = threadIdx.x; i < 8 * 16; i += 128) b[i] = 0x3C00;
    asm volatile("fence.proxy.async.shared::cta;");
    __syncthreads();
    float d[4] = {0, 0, 0, 0};
    asm volatile("wgmma.fence.sync.aligned;");
    wgmma_64x8x16(d, gdesc(a, 128, 256), gdesc(b, 128, 256));
    asm volatile("wgmma.commit_group.sync.aligned;");
    for (int i = threadIdx.x; i < 64 * 16; i += 128) a[i] = 0x4000;    // 2.0: in flight
    asm volatile("wgmma.wait_group.sync.aligned 0;");
    for (int k = 0; k < 4; k++) out[threadIdx.x * 4 + k] = d[k];
}
// The accumulator registers read before wgmma.wait_group (the tcgen05 "D read before commit").
__global__ void k_wgmma_acc_before_wait(float* out) {
    __shared__ alignas(128) uint16_t a[64 * 16];
    __shared__ alignas(128) uint16_t b[8 * 16];
    for (int i = threadIdx.x; i < 64 * 16; i += 128) a[i] = 0x3C00;
    for (int i = threadIdx.x; i < 8 * 16; i += 128) b[i] = 0x3C00;
    asm volatile("fence.proxy.async.shared::cta;");
    __syncthreads();
    float d[4] = {0, 0, 0, 0};
    asm volatile("wgmma.fence.sync.aligned;");
    wgmma_64x8x16(d, gdesc(a, 128, 256), gdesc(b, 128, 256));
    asm volatile("wgmma.commit_group.sync.aligned;");
    for (int k = 0; k < 4; k++) out[threadIdx.x * 4 + k] = d[k];     // before the wait
    asm volatile("wgmma.wait_group.sync.aligned 0;");
}
// Generic shared-memory writes read by wgmma without fence.proxy.async.
__global__ void k_wgmma_missing_proxy_fence(float* out) {
    __shared__ alignas(128) uint16_t a[64 * 16];
    __shared__ alignas(128) uint16_t b[8 * 16];
    for (int i = threadIdx.x; i < 64 * 16; i += 128) a[i] = 0x3C00;
    for (int i = threadIdx.x; i < 8 * 16; i += 128) b[i] = 0x3C00;
    __syncthreads();                                 // no fence.proxy.async
    float d[4] = {0, 0, 0, 0};
    asm volatile("wgmma.fence.sync.aligned;");
    wgmma_64x8x16(d, gdesc(a, 128, 256), gdesc(b, 128, 256));
    asm volatile("wgmma.commit_group.sync.aligned;");
    asm volatile("wgmma.wait_group.sync.aligned 0;");
    for (int k = 0; k < 4; k++) out[threadIdx.x * 4 + k] = d[k];
}
// ---------------------------------------------------------------- clusters
// CTA 1 stores into CTA 0's shared memory (distributed shared memory), CTA 0 reads it, no
// barrier.cluster between the two.
__global__ void __cluster_dims__(2, 1, 1) k_cluster_race(int* out) {
    __shared__ int s;
    uint32_t rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    if (threadIdx.x == 0) s = 0;
    asm volatile("barrier.cluster.arrive.aligned; barrier.cluster.wait.aligned;");
    if (rank == 1 && threadIdx.x == 0) {
        uint32_t remote;
        asm volatile("mapa.shared::cluster.u32 %0, %1, 0;" : "=r"(remote) : "r"(sa(&s)));
        asm volatile("st.shared::cluster.u32 [%0], 9;" :: "r"(remote));
    }
    if (rank == 0 && threadIdx.x == 0) out[0] = s;   // no cluster barrier since the store
    asm volatile("barrier.cluster.arrive.aligned; barrier.cluster.wait.aligned;");
}

// ---------------------------------------------------------------- driver
struct Case { const char* name; };
static const char* CASES[] = {
    "race_shared", "race_shared_fixed", "race_global", "race_global_rw", "uninit_shared",
    "uninit_global", "oob_global", "oob_shared", "misaligned", "divergent_bar", "bar_count",
    "divergent_lanes", "bulk_read_before_wait", "bulk_src_overwrite", "missing_proxy_fence",
    "bulk_inflight_exit", "bulk_dst_overwrite", "mbar_plain_store", "mbar_over_arrive",
    "mbar_tx_overflow", "cp_async_read_before_wait", "wgmma_operand_overwrite",
    "wgmma_acc_before_wait", "wgmma_missing_proxy_fence", "cluster_race"};

int main(int argc, char** argv) {
    if (argc < 2 || !strcmp(argv[1], "list")) {
        for (auto c : CASES) printf("%s\n", c);
        return 0;
    }
    const char* c = argv[1];
    int *out, *in, *fresh;
    CK(cudaMalloc(&out, 4096));
    CK(cudaMemset(out, 0, 4096));
    CK(cudaMalloc(&in, 4096));
    CK(cudaMemset(in, 1, 4096));
    CK(cudaMalloc(&fresh, 4096));                    // never written
    int* small;
    CK(cudaMalloc(&small, 64 * sizeof(int)));
    CK(cudaMemset(small, 0, 64 * sizeof(int)));
    float* fout = reinterpret_cast<float*>(out);
    if (!strcmp(c, "race_shared")) k_race_shared<<<1, 64>>>(out);
    else if (!strcmp(c, "race_shared_fixed")) k_race_shared_fixed<<<1, 64>>>(out);
    else if (!strcmp(c, "race_global")) k_race_global<<<2, 32>>>(out);
    else if (!strcmp(c, "race_global_rw")) k_race_global_rw<<<2, 32>>>(out);
    else if (!strcmp(c, "uninit_shared")) k_uninit_shared<<<1, 64>>>(out);
    else if (!strcmp(c, "uninit_global")) k_uninit_global<<<1, 64>>>(out, fresh);
    else if (!strcmp(c, "oob_global")) k_oob_global<<<1, 32>>>(small);
    else if (!strcmp(c, "oob_shared")) k_oob_shared<<<1, 32, 256>>>(out, 64);
    else if (!strcmp(c, "misaligned")) k_misaligned<<<1, 32>>>(out);
    else if (!strcmp(c, "divergent_bar")) k_divergent_bar<<<1, 64>>>(out);
    else if (!strcmp(c, "bar_count")) k_bar_count<<<1, 128>>>(out);
    else if (!strcmp(c, "divergent_lanes")) k_divergent_lanes<<<1, 64>>>(out);
    else if (!strcmp(c, "bulk_read_before_wait")) k_bulk_read_before_wait<<<1, 64>>>(out, in);
    else if (!strcmp(c, "bulk_src_overwrite")) k_bulk_src_overwrite<<<1, 64>>>(out);
    else if (!strcmp(c, "missing_proxy_fence")) k_missing_proxy_fence<<<1, 64>>>(out);
    else if (!strcmp(c, "bulk_inflight_exit")) k_bulk_inflight_exit<<<1, 64>>>(out);
    else if (!strcmp(c, "bulk_dst_overwrite")) k_bulk_dst_overwrite<<<1, 64>>>(out, in);
    else if (!strcmp(c, "mbar_plain_store")) k_mbar_plain_store<<<1, 32>>>(out);
    else if (!strcmp(c, "mbar_over_arrive")) k_mbar_over_arrive<<<1, 64>>>(out);
    else if (!strcmp(c, "mbar_tx_overflow")) k_mbar_tx_overflow<<<1, 32>>>(out);
    else if (!strcmp(c, "cp_async_read_before_wait"))
        k_cp_async_read_before_wait<<<1, 64>>>(out, in);
    else if (!strcmp(c, "wgmma_operand_overwrite")) k_wgmma_operand_overwrite<<<1, 128>>>(fout);
    else if (!strcmp(c, "wgmma_acc_before_wait")) k_wgmma_acc_before_wait<<<1, 128>>>(fout);
    else if (!strcmp(c, "wgmma_missing_proxy_fence"))
        k_wgmma_missing_proxy_fence<<<1, 128>>>(fout);
    else if (!strcmp(c, "cluster_race")) k_cluster_race<<<2, 32>>>(out);
    else { printf("unknown case %s\n", c); return 2; }
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    int host[8];
    CK(cudaMemcpy(host, out, sizeof(host), cudaMemcpyDeviceToHost));
    printf("result %s: out[0..3] = %d %d %d %d\n", c, host[0], host[1], host[2], host[3]);
    return 0;
}
