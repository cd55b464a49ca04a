// ptxsim harness (scripts/build_gemm_harnesses.py, tests/cuda/test_gemm_harnesses.py): DeepGEMM's sm100 bf16 GEMM kernel, instantiated as its JIT
// does for a normal K-major GEMM, at 256x256x256, checked against a host reference
#include <cuda.h>
#include <cstdio>
#include <cmath>
#include <vector>
#include <deep_gemm/impls/sm100_bf16_gemm.cuh>
using namespace deep_gemm;
constexpr uint32_t M = 256, N = 256, K = 256, NUM_SMS = 4;
#define CK(x) do { cudaError_t e = (x); if (e) { printf("%s: %s\n", #x, cudaGetErrorName(e)); return 1; } } while (0)
#define DK(x) do { CUresult r = (x); if (r) { printf("%s: %d\n", #x, (int)r); return 1; } } while (0)
static int tmap(CUtensorMap* m, void* p, uint64_t inner, uint64_t outer, uint32_t box_in, uint32_t box_out) {
  cuuint64_t dims[2] = {inner, outer}, strides[1] = {inner * 2};
  cuuint32_t box[2] = {box_in, box_out}, es[2] = {1, 1};
  DK(cuTensorMapEncodeTiled(m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, p, dims, strides, box, es,
     CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
     CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  return 0;
}
int main() {
  auto kern = &sm100_bf16_gemm_impl<cute::UMMA::Major::K, cute::UMMA::Major::K, 0, N, K,
      128, 128, 64, 1, 128, 128, 128, 4, 128, 128, 1, false, NUM_SMS, 128, false, false,
      GemmType::Normal, false, cutlass::bfloat16_t, 100>;
  std::vector<__nv_bfloat16> hA(M * K), hB(N * K), hD(M * N);
  srand(11);
  for (auto& x : hA) x = __float2bfloat16((rand() % 2001 - 1000) / 1000.0f);
  for (auto& x : hB) x = __float2bfloat16((rand() % 2001 - 1000) / 1000.0f);
  void *dA, *dB, *dD;
  CK(cudaMalloc(&dA, M * K * 2)); CK(cudaMalloc(&dB, N * K * 2)); CK(cudaMalloc(&dD, M * N * 2));
  CK(cudaMemcpy(dA, hA.data(), M * K * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dB, hB.data(), N * K * 2, cudaMemcpyHostToDevice));
  CUtensorMap ta, tb, td;
  if (tmap(&ta, dA, K, M, 64, 128) || tmap(&tb, dB, K, N, 64, 128) || tmap(&td, dD, N, M, 64, 128)) return 1;
  int smem = 232448 - 1024;
  CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  kern<<<NUM_SMS, 256, smem>>>(nullptr, M, N, K, ta, tb, td);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(hD.data(), dD, M * N * 2, cudaMemcpyDeviceToHost));
  double maxerr = 0; int bad = 0;
  for (uint32_t i = 0; i < M; ++i) for (uint32_t j = 0; j < N; ++j) {
    double ref = 0;
    for (uint32_t k = 0; k < K; ++k) ref += (double)__bfloat162float(hA[i * K + k]) * (double)__bfloat162float(hB[j * K + k]);
    double err = fabs((double)__bfloat162float(hD[i * N + j]) - ref);
    maxerr = fmax(maxerr, err); if (err > 0.02 + 0.01 * fabs(ref)) ++bad;
  }
  printf("max abs err %g, %d of %d outside bf16 tolerance: %s\n", maxerr, bad, M * N, bad ? "FAILED" : "PASSED");
  return bad != 0;
}
