// ptxsim harness (scripts/build_gemm_harnesses.py, tests/cuda/test_gemm_harnesses.py): ThunderKittens'
// bf16_b200 GEMM kernel, unchanged, at 256x256x256 against a float64 host product (bf16 tolerance)
#define main tk_benchmark_main
#include "kernels/gemm/bf16_b200/bf16_b200_gemm.cu"
#undef main
#include <cmath>
int main() {
  using C = config<256, 64, 128, 4, true, 5, 2>;
  const int M = 256, N = 256, K = 256;
  __nv_bfloat16 *dA, *dB, *dC;
  CUDACHECK(cudaMalloc(&dA, M * K * 2)); CUDACHECK(cudaMalloc(&dB, N * K * 2)); CUDACHECK(cudaMalloc(&dC, M * N * 2));
  std::vector<__nv_bfloat16> hA(M * K), hB(N * K), hC(M * N);
  srand(7);
  for (auto& x : hA) x = __float2bfloat16((rand() % 2001 - 1000) / 1000.0f);
  for (auto& x : hB) x = __float2bfloat16((rand() % 2001 - 1000) / 1000.0f);
  CUDACHECK(cudaMemcpy(dA, hA.data(), M * K * 2, cudaMemcpyHostToDevice));
  CUDACHECK(cudaMemcpy(dB, hB.data(), N * K * 2, cudaMemcpyHostToDevice));
  typename globals<C>::a_gl Ag{dA, nullptr, nullptr, M, K};
  typename globals<C>::b_gl Bg{dB, nullptr, nullptr, N, K};
  typename globals<C>::d_gl Dg{dC, nullptr, nullptr, M, N};
  globals<C> g{Ag, Bg, Dg};
  CUDACHECK(cudaFuncSetAttribute(kernel<C>, cudaFuncAttributeMaxDynamicSharedMemorySize, g.dynamic_shared_memory()));
  LaunchConfig<true, true> lc(g.grid(), g.block(), g.dynamic_shared_memory(), 0, C::CLUSTER_SIZE);
  CUDACHECK(cudaLaunchKernelEx(lc, kernel<C>, g));
  CUDACHECK(cudaDeviceSynchronize());
  CUDACHECK(cudaMemcpy(hC.data(), dC, M * N * 2, cudaMemcpyDeviceToHost));
  double maxerr = 0; int bad = 0;
  for (int i = 0; i < M; ++i) for (int j = 0; j < N; ++j) {
    double ref = 0;  // D = A (MxK, row-major) * B^T (B is NxK)
    for (int k = 0; k < K; ++k) ref += (double)__bfloat162float(hA[i * K + k]) * (double)__bfloat162float(hB[j * K + k]);
    double got = __bfloat162float(hC[i * N + j]);
    double err = fabs(got - ref); maxerr = fmax(maxerr, err);
    if (err > 0.02 + 0.01 * fabs(ref)) ++bad;
  }
  printf("max abs err %g, %d of %d outside bf16 tolerance: %s\n", maxerr, bad, M * N, bad ? "FAILED" : "PASSED");
  return bad != 0;
}
