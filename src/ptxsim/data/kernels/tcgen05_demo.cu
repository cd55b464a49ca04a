// ptxsim demo kernels: single-CTA tcgen05 GEMMs written with inline PTX (PTX ISA 9.7.16).
//   nvcc -arch=sm_100a -ptx tcgen05_demo.cu -o tcgen05_demo.ptx     (CUDA 13.0)
// Each kernel: one CTA of 128 threads computes D (128 x 64, f32) = A (128 x K) . B^T, B given
// as (64 x K), both K-major. The whole K extent is staged in shared memory in the canonical
// K-major no-swizzle layout (9.7.16.11: 8-row x 16-byte core matrices; SBO = 128 bytes between
// 8-row groups, LBO = 16 * rows bytes between K-adjacent core matrices), thread 0 issues one
// tcgen05.mma per K step and commits to an mbarrier, every warp then reads its 32 lanes of the
// accumulator with tcgen05.ld.32x32b.
#include <cstdint>

#define N_COLS 64          // N of every demo; D takes N f32 columns of Tensor Memory
#define M_ROWS 128

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Shared-memory matrix descriptor (9.7.16.4.1): start >> 4 [0,14), LBO >> 4 [16,30),
// SBO >> 4 [32,46), fixed 0b001 [46,49), base offset 0, no swizzle.
__device__ __forceinline__ uint64_t smem_desc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
    return (uint64_t)((addr >> 4) & 0x3FFF) | ((uint64_t)((lbo >> 4) & 0x3FFF) << 16) |
           ((uint64_t)((sbo >> 4) & 0x3FFF) << 32) | (1ull << 46);
}

// Byte offset of byte `kb` of row `r` in the canonical K-major layout of an operand of `rows`.
__device__ __forceinline__ uint32_t kmajor_offset(int r, int kb, int rows) {
    return (r / 8) * 128 + (kb / 16) * (16 * rows) + (r % 8) * 16 + (kb % 16);
}

__device__ __forceinline__ void stage(uint8_t* dst, const uint8_t* src, int rows, int kbytes) {
    for (int i = threadIdx.x; i < rows * kbytes; i += blockDim.x) {
        int r = i / kbytes, kb = i % kbytes;
        dst[kmajor_offset(r, kb, rows)] = src[i];
    }
}

__device__ __forceinline__ void tmem_alloc(uint32_t* slot, uint32_t ncols) {
    if (threadIdx.x < 32) {
        asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;"
                     :: "r"(smem_addr(slot)), "r"(ncols));
        asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;");
    }
}

__device__ __forceinline__ void mbar_init(uint64_t* bar) {
    if (threadIdx.x == 0)
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem_addr(bar)));
}

__device__ __forceinline__ void commit_and_wait(uint64_t* bar) {
    if (threadIdx.x == 0)
        asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];"
                     :: "r"(smem_addr(bar)));
    asm volatile("{\n.reg .pred done;\nwait_%=:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n"
                 "@!done bra wait_%=;\n}" :: "r"(smem_addr(bar)));
    asm volatile("tcgen05.fence::after_thread_sync;");
}

// Every warp reads lanes 32w..32w+31 (its sub-partition), 16 columns at a time, and stores
// row 32w + lane of D.
__device__ __forceinline__ void store_accumulator(uint32_t taddr, float* D) {
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32, row = 32 * warp + lane;
    for (int c = 0; c < N_COLS; c += 16) {
        uint32_t r[16];
        uint32_t a = taddr + ((uint32_t)(32 * warp) << 16) + c;
        asm volatile("tcgen05.ld.sync.aligned.32x32b.x16.b32 {%0, %1, %2, %3, %4, %5, %6, %7, "
                     "%8, %9, %10, %11, %12, %13, %14, %15}, [%16];"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]),
                       "=r"(r[6]), "=r"(r[7]), "=r"(r[8]), "=r"(r[9]), "=r"(r[10]), "=r"(r[11]),
                       "=r"(r[12]), "=r"(r[13]), "=r"(r[14]), "=r"(r[15]) : "r"(a));
        asm volatile("tcgen05.wait::ld.sync.aligned;");
        for (int j = 0; j < 16; ++j) D[row * N_COLS + c + j] = __uint_as_float(r[j]);
    }
}

__device__ __forceinline__ void tmem_free(uint32_t taddr, uint32_t ncols) {
    __syncthreads();
    if (threadIdx.x < 32)
        asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" :: "r"(taddr),
                     "r"(ncols));
}

// ---------------------------------------------------------------------------------------------
// 1. Dense bf16 GEMM: tcgen05.mma.cta_group::1.kind::f16, K = 16 per instruction.
//    Instruction descriptor (Table 42): dtype F32 (1 << 4), atype BF16 (1 << 7), btype BF16
//    (1 << 10), K-major A and B (transpose bits 0), N >> 3 at [17,23), M >> 4 at [24,29).
// ---------------------------------------------------------------------------------------------
extern "C" __global__ void __launch_bounds__(128)
dense_bf16_gemm(const uint16_t* A, const uint16_t* B, float* D, int K) {
    extern __shared__ __align__(1024) uint8_t smem[];
    uint8_t* sa = smem;                                  // 128 x K bf16
    uint8_t* sb = sa + M_ROWS * K * 2;                   // 64 x K bf16
    uint64_t* bar = reinterpret_cast<uint64_t*>(sb + N_COLS * K * 2);
    uint32_t* slot = reinterpret_cast<uint32_t*>(bar + 1);
    tmem_alloc(slot, N_COLS);
    mbar_init(bar);
    stage(sa, reinterpret_cast<const uint8_t*>(A), M_ROWS, K * 2);
    stage(sb, reinterpret_cast<const uint8_t*>(B), N_COLS, K * 2);
    asm volatile("fence.proxy.async.shared::cta;");      // generic writes -> async proxy
    asm volatile("tcgen05.fence::before_thread_sync;");
    __syncthreads();
    asm volatile("tcgen05.fence::after_thread_sync;");
    uint32_t taddr = *slot;
    if (threadIdx.x == 0) {
        const uint32_t idesc = (1u << 4) | (1u << 7) | (1u << 10) | ((N_COLS >> 3) << 17) |
                               ((M_ROWS >> 4) << 24);
        for (int k = 0; k < K / 16; ++k) {               // 16 bf16 = 2 core matrices along K
            uint64_t da = smem_desc(smem_addr(sa) + k * 2 * 16 * M_ROWS, 16 * M_ROWS, 128);
            uint64_t db = smem_desc(smem_addr(sb) + k * 2 * 16 * N_COLS, 16 * N_COLS, 128);
            uint32_t acc = k > 0;
            asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %4, 0;\n"
                         "tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p;\n}"
                         :: "r"(taddr), "l"(da), "l"(db), "r"(idesc), "r"(acc));
        }
    }
    commit_and_wait(bar);
    store_accumulator(taddr, D);
    tmem_free(taddr, N_COLS);
}

// ---------------------------------------------------------------------------------------------
// 2. Block-scaled mxf8 GEMM: e4m3 x e4m3 with one ue8m0 scale per 32 K elements per row of A
//    and per column of B: tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale.block32, K = 32
//    per instruction. K = 128: four instructions; the scale factors of K block k sit in byte k
//    of the scale words (scale-factor IDs, Table 43 bits [4,6) for B and [29,31) for A).
//    Scale factors in Tensor Memory (9.7.16.10.7, 4x1 data path): the scale of row i at lanes
//    (i % 32) + 32r for r = 0..3 (duplicated to every sub-partition), column i / 32: each warp
//    stores the words of rows 32c + lane into its own 32 lanes with tcgen05.st.32x32b.
//    SA: (128, 4) bytes, SB: (64, 4) bytes (row = column n of B), row-major.
// ---------------------------------------------------------------------------------------------
extern "C" __global__ void __launch_bounds__(128)
mxf8_gemm(const uint8_t* A, const uint8_t* B, const uint32_t* SA, const uint32_t* SB, float* D) {
    const int K = 128;
    extern __shared__ __align__(1024) uint8_t smem[];
    uint8_t* sa = smem;                                  // 128 x 128 e4m3
    uint8_t* sb = sa + M_ROWS * K;                       // 64 x 128 e4m3
    uint64_t* bar = reinterpret_cast<uint64_t*>(sb + N_COLS * K);
    uint32_t* slot = reinterpret_cast<uint32_t*>(bar + 1);
    tmem_alloc(slot, 128);                               // D: 64 columns, scales: 4 + 2
    mbar_init(bar);
    stage(sa, A, M_ROWS, K);
    stage(sb, B, N_COLS, K);
    asm volatile("fence.proxy.async.shared::cta;");
    asm volatile("tcgen05.fence::before_thread_sync;");
    __syncthreads();
    asm volatile("tcgen05.fence::after_thread_sync;");
    uint32_t taddr = *slot;
    uint32_t t_sa = taddr + 64, t_sb = taddr + 68;        // scale columns after D
    {
        int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
        uint32_t lanes = (uint32_t)(32 * warp) << 16;
        uint32_t a0 = SA[lane], a1 = SA[32 + lane], a2 = SA[64 + lane], a3 = SA[96 + lane];
        uint32_t b0 = SB[lane], b1 = SB[32 + lane];
        asm volatile("tcgen05.st.sync.aligned.32x32b.x4.b32 [%0], {%1, %2, %3, %4};"
                     :: "r"(t_sa + lanes), "r"(a0), "r"(a1), "r"(a2), "r"(a3));
        asm volatile("tcgen05.st.sync.aligned.32x32b.x2.b32 [%0], {%1, %2};"
                     :: "r"(t_sb + lanes), "r"(b0), "r"(b1));
        asm volatile("tcgen05.wait::st.sync.aligned;");
    }
    asm volatile("tcgen05.fence::before_thread_sync;");
    __syncthreads();
    asm volatile("tcgen05.fence::after_thread_sync;");
    if (threadIdx.x == 0) {
        // Table 43: atype/btype E4M3 = 0, N >> 3 at [17,23), UE8M0 scales (1 << 23),
        // M >> 7 at [27,29), scale IDs: B at [4,6), A at [29,31).
        const uint32_t base = ((N_COLS >> 3) << 17) | (1u << 23) | ((M_ROWS >> 7) << 27);
        for (int k = 0; k < K / 32; ++k) {               // 32 bytes = 2 core matrices along K
            uint64_t da = smem_desc(smem_addr(sa) + k * 2 * 16 * M_ROWS, 16 * M_ROWS, 128);
            uint64_t db = smem_desc(smem_addr(sb) + k * 2 * 16 * N_COLS, 16 * N_COLS, 128);
            uint32_t idesc = base | ((uint32_t)k << 4) | ((uint32_t)k << 29);
            uint32_t acc = k > 0;
            asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
                         "tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale.block32 [%0], %1, "
                         "%2, %3, [%4], [%5], p;\n}"
                         :: "r"(taddr), "l"(da), "l"(db), "r"(idesc), "r"(t_sa), "r"(t_sb),
                            "r"(acc));
        }
    }
    commit_and_wait(bar);
    store_accumulator(taddr, D);
    tmem_free(taddr, 128);
}

// ---------------------------------------------------------------------------------------------
// 3. Sparse f16 GEMM: A is 2:4 structured-sparse, given compressed (128 x K/2) with its
//    metadata; tcgen05.mma.sp.cta_group::1.kind::f16, logical K = 32 per instruction (A: 16
//    stored elements per row and step). The metadata lives in Tensor Memory, one column per
//    instruction (9.7.16.10.8); the host passes the column words per lane (E: 128 x K/32 words,
//    lane-major) and every warp stores its 32 lanes with tcgen05.st.32x32b.x2.
//    Instruction descriptor (Table 42): sparsity (1 << 2), selector 0, dtype F32, atype/btype
//    F16 = 0, N >> 3, M >> 4.  K is fixed to 64 (two instructions).
// ---------------------------------------------------------------------------------------------
extern "C" __global__ void __launch_bounds__(128)
sparse_f16_gemm(const uint16_t* Ac, const uint16_t* B, const uint32_t* E, float* D) {
    const int K = 64;
    extern __shared__ __align__(1024) uint8_t smem[];
    uint8_t* sa = smem;                                  // 128 x 32 f16 (compressed)
    uint8_t* sb = sa + M_ROWS * K;                       // 64 x 64 f16
    uint64_t* bar = reinterpret_cast<uint64_t*>(sb + N_COLS * K * 2);
    uint32_t* slot = reinterpret_cast<uint32_t*>(bar + 1);
    tmem_alloc(slot, 128);                               // D: 64 columns, metadata: 2
    mbar_init(bar);
    stage(sa, reinterpret_cast<const uint8_t*>(Ac), M_ROWS, K);      // K/2 elements = K bytes
    stage(sb, reinterpret_cast<const uint8_t*>(B), N_COLS, K * 2);
    asm volatile("fence.proxy.async.shared::cta;");
    asm volatile("tcgen05.fence::before_thread_sync;");
    __syncthreads();
    asm volatile("tcgen05.fence::after_thread_sync;");
    uint32_t taddr = *slot;
    uint32_t t_meta = taddr + 64;
    {
        int warp = threadIdx.x / 32, lane = threadIdx.x % 32, row = 32 * warp + lane;
        asm volatile("tcgen05.st.sync.aligned.32x32b.x2.b32 [%0], {%1, %2};"
                     :: "r"(t_meta + ((uint32_t)(32 * warp) << 16)), "r"(E[2 * row]),
                        "r"(E[2 * row + 1]));
        asm volatile("tcgen05.wait::st.sync.aligned;");
    }
    asm volatile("tcgen05.fence::before_thread_sync;");
    __syncthreads();
    asm volatile("tcgen05.fence::after_thread_sync;");
    if (threadIdx.x == 0) {
        const uint32_t idesc = (1u << 2) | (1u << 4) | ((N_COLS >> 3) << 17) |
                               ((M_ROWS >> 4) << 24);
        for (int k = 0; k < K / 32; ++k) {
            // A: 16 stored f16 = 2 core matrices along K; B: 32 f16 = 4 core matrices
            uint64_t da = smem_desc(smem_addr(sa) + k * 2 * 16 * M_ROWS, 16 * M_ROWS, 128);
            uint64_t db = smem_desc(smem_addr(sb) + k * 4 * 16 * N_COLS, 16 * N_COLS, 128);
            uint32_t acc = k > 0;
            asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %5, 0;\n"
                         "tcgen05.mma.sp.cta_group::1.kind::f16 [%0], %1, %2, [%3], %4, p;\n}"
                         :: "r"(taddr), "l"(da), "l"(db), "r"(t_meta + k), "r"(idesc),
                            "r"(acc));
        }
    }
    commit_and_wait(bar);
    store_accumulator(taddr, D);
    tmem_free(taddr, 128);
}
