// TMA tile-mode store probe (sm_90a): shared memory holds 16-bit words w+1 (w = word index from
// a 1024-aligned buffer); the box at offset 2048 is stored with cp.async.bulk.tensor.2d
// .global.shared::cta.tile.bulk_group into a 72x40 uint16 tensor prefilled with 0xCDCD, which is
// written to out.bin. Usage: ./tma_store_probe swizzle box0 box1 c0 c1
// Build: nvcc -arch=sm_90a -O2 -o tma_store_probe tma_store_probe.cu
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
typedef CUresult (*Enc)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                        const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                        CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
__global__ void k(const __grid_constant__ CUtensorMap tm, int c0, int c1) {
  __shared__ __align__(1024) uint16_t buf[4096];
  for (int i = threadIdx.x; i < 4096; i += blockDim.x) buf[i] = (uint16_t)(i + 1);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t s = (uint32_t)__cvta_generic_to_shared(buf + 1024);
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];"
                 :: "l"(&tm), "r"(c0), "r"(c1), "r"(s) : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  }
  __syncthreads();
}
int main(int argc, char** argv) {
  Enc enc; cudaDriverEntryPointQueryResult q;
  cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", (void**)&enc, 12000, cudaEnableDefault, &q);
  int sw = atoi(argv[1]); cuuint32_t box[2] = {(cuuint32_t)atoi(argv[2]), (cuuint32_t)atoi(argv[3])};
  cuuint64_t dims[2] = {72, 40}, str[1] = {144}; cuuint32_t es[2] = {1, 1};
  std::vector<uint16_t> h(72 * 40, 0xCDCD);
  void* g; cudaMalloc(&g, h.size() * 2); cudaMemcpy(g, h.data(), h.size() * 2, cudaMemcpyHostToDevice);
  CUtensorMap tm;
  if (enc(&tm, CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, g, dims, str, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
          (CUtensorMapSwizzle)sw, CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)) {
    printf("encode error\n"); return 2; }
  k<<<1, 128>>>(tm, atoi(argv[4]), atoi(argv[5]));
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) { printf("%s\n", cudaGetErrorString(e)); return 1; }
  cudaMemcpy(h.data(), g, h.size() * 2, cudaMemcpyDeviceToHost);
  FILE* f = fopen("out.bin", "wb"); fwrite(h.data(), 2, h.size(), f); fclose(f);
  printf("ok\n"); return 0;
}
