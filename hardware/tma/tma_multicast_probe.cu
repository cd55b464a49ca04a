// TMA multicast probe (sm_90a): a cluster of 4 CTAs; each initialises its own mbarrier and
// expects the box bytes only if its rank is in the mask; rank 1 issues one 2D tile load with
// .multicast::cluster ctaMask = argv mask. Every CTA dumps its shared memory (4 x 4096 bytes)
// and whether its mbarrier phase 0 completed. Usage: ./mc mask. Build: nvcc -arch=sm_90a.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
typedef CUresult (*Enc)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                        const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                        CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
__global__ void __cluster_dims__(4, 1, 1) k(const __grid_constant__ CUtensorMap tm, int mask, uint8_t* out) {
  __shared__ __align__(1024) uint8_t buf[4096];
  __shared__ __align__(8) uint64_t mb;
  uint32_t rank; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  for (int i = threadIdx.x; i < 4096; i += blockDim.x) buf[i] = 0xAB;
  uint32_t b = (uint32_t)__cvta_generic_to_shared(&mb), d = (uint32_t)__cvta_generic_to_shared(buf + 1024);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  asm volatile("barrier.cluster.arrive.aligned; barrier.cluster.wait.aligned;" ::: "memory");
  int mine = (mask >> rank) & 1;
  if (threadIdx.x == 0) {
    if (mine) asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 2048;" :: "r"(b));
    else asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(b));
  }
  asm volatile("barrier.cluster.arrive.aligned; barrier.cluster.wait.aligned;" ::: "memory");
  if (rank == 1 && threadIdx.x == 0) {
    uint16_t m16 = (uint16_t)mask;
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3}], [%4], %5;" :: "r"(d), "l"(&tm), "r"(0), "r"(0), "r"(b), "h"(m16) : "memory");
  }
  uint32_t done = 0; long it = 0;
  while (!done && ++it < 20000000L)
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done) : "r"(b) : "memory");
  __syncthreads();
  for (int i = threadIdx.x; i < 4096; i += blockDim.x) out[rank * 4100 + i] = buf[i];
  if (threadIdx.x == 0) out[rank * 4100 + 4096] = done;
  asm volatile("barrier.cluster.arrive.aligned; barrier.cluster.wait.aligned;" ::: "memory");
}
int main(int argc, char** argv) {
  Enc enc; cudaDriverEntryPointQueryResult q;
  cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", (void**)&enc, 12000, cudaEnableDefault, &q);
  std::vector<uint16_t> h(64 * 16); for (size_t i = 0; i < h.size(); i++) h[i] = (uint16_t)(i + 1);
  void* g; cudaMalloc(&g, h.size() * 2); cudaMemcpy(g, h.data(), h.size() * 2, cudaMemcpyHostToDevice);
  cuuint64_t dims[2] = {64, 16}, str[1] = {128}; cuuint32_t box[2] = {64, 16}, es[2] = {1, 1};
  CUtensorMap tm;
  if (enc(&tm, CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, g, dims, str, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
          CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)) {
    printf("encode error\n"); return 2; }
  uint8_t* o; cudaMalloc(&o, 4 * 4100);
  k<<<4, 128>>>(tm, atoi(argv[1]), o);
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) { printf("%s\n", cudaGetErrorString(e)); return 1; }
  std::vector<uint8_t> r(4 * 4100); cudaMemcpy(r.data(), o, r.size(), cudaMemcpyDeviceToHost);
  FILE* f = fopen("out.bin", "wb"); fwrite(r.data(), 1, r.size(), f); fclose(f);
  printf("ok done=%d %d %d %d\n", r[4096], r[4100 + 4096], r[8200 + 4096], r[12300 + 4096]); return 0;
}
