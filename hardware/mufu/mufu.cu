// ptxsim hw4: capture and full-range verification of the f32 MUFU .approx instructions on sm_90.
//   nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -o mufu mufu.cu
//   ./mufu range OP START COUNT OUT.bin     raw u32 results of OP for inputs START .. START+COUNT-1
//   ./mufu list OP IN.bin OUT.bin           raw u32 results of OP for the u32 inputs in IN.bin
//   ./mufu verify OP TABLEDIR               model (mufu_model.cuh) vs OP over all 2^32 inputs
//                                           (built with -DWITH_MODEL; OP -1: all ten)
// OP indexes OPS below. One kernel per instruction, so the SASS of each is separate.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(2); } } while (0)

#define DEF(NAME, INSTR)                                                                          \
  __device__ __forceinline__ unsigned op_##NAME(unsigned u) {                                     \
    float x = __uint_as_float(u), y;                                                              \
    asm volatile(INSTR " %0, %1;" : "=f"(y) : "f"(x));                                            \
    return __float_as_uint(y);                                                                    \
  }                                                                                               \
  __global__ void range_##NAME(unsigned* out, unsigned start, unsigned long long n) {             \
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;             \
    if (i < n) out[i] = op_##NAME(start + (unsigned)i);                                           \
  }                                                                                               \
  __global__ void list_##NAME(const unsigned* in, unsigned* out, unsigned long long n) {          \
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;             \
    if (i < n) out[i] = op_##NAME(in[i]);                                                         \
  }

DEF(rcp_ftz, "rcp.approx.ftz.f32")
DEF(rcp, "rcp.approx.f32")
DEF(rsqrt_ftz, "rsqrt.approx.ftz.f32")
DEF(rsqrt, "rsqrt.approx.f32")
DEF(sqrt_ftz, "sqrt.approx.ftz.f32")
DEF(sqrt, "sqrt.approx.f32")
DEF(ex2_ftz, "ex2.approx.ftz.f32")
DEF(ex2, "ex2.approx.f32")
DEF(lg2_ftz, "lg2.approx.ftz.f32")
DEF(lg2, "lg2.approx.f32")

#ifdef WITH_MODEL
#include "mufu_model.cuh"   // struct Tabs; __device__ unsigned model_NAME(unsigned u, const Tabs&)
#define VER(NAME)                                                                                 \
  __global__ void verify_##NAME(Tabs tab, unsigned long long* cnt, unsigned* first) {             \
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;             \
    unsigned u = (unsigned)i;                                                                     \
    unsigned h = op_##NAME(u), m = model_##NAME(u, tab);                                          \
    if (h != m) {                                                                                 \
      atomicAdd(&cnt[u >> 23], 1ull);                                                             \
      unsigned long long t = atomicAdd(&cnt[512], 1ull);                                          \
      if (t < 16) { first[3 * t] = u; first[3 * t + 1] = h; first[3 * t + 2] = m; }              \
    }                                                                                             \
  }
#include "mufu_verify_list.h"
#endif

typedef void (*RangeK)(unsigned*, unsigned, unsigned long long);
typedef void (*ListK)(const unsigned*, unsigned*, unsigned long long);
static const char* OPS[] = {"rcp.approx.ftz.f32", "rcp.approx.f32", "rsqrt.approx.ftz.f32",
  "rsqrt.approx.f32", "sqrt.approx.ftz.f32", "sqrt.approx.f32", "ex2.approx.ftz.f32",
  "ex2.approx.f32", "lg2.approx.ftz.f32", "lg2.approx.f32"};
static RangeK RK[] = {range_rcp_ftz, range_rcp, range_rsqrt_ftz, range_rsqrt, range_sqrt_ftz,
  range_sqrt, range_ex2_ftz, range_ex2, range_lg2_ftz, range_lg2};
static ListK LK[] = {list_rcp_ftz, list_rcp, list_rsqrt_ftz, list_rsqrt, list_sqrt_ftz,
  list_sqrt, list_ex2_ftz, list_ex2, list_lg2_ftz, list_lg2};

int main(int argc, char** argv) {
  if (argc < 3) { fprintf(stderr, "usage: see header\n"); return 1; }
  int op = atoi(argv[2]);
  if (!strcmp(argv[1], "range")) {
    unsigned start = strtoul(argv[3], 0, 0);
    unsigned long long n = strtoull(argv[4], 0, 0);
    unsigned* d; CK(cudaMalloc(&d, n * 4));
    RK[op]<<<(n + 255) / 256, 256>>>(d, start, n); CK(cudaGetLastError());
    std::vector<unsigned> h(n); CK(cudaMemcpy(h.data(), d, n * 4, cudaMemcpyDeviceToHost));
    FILE* f = fopen(argv[5], "wb"); fwrite(h.data(), 4, n, f); fclose(f);
    printf("%s range 0x%08x +%llu -> %s\n", OPS[op], start, n, argv[5]);
  } else if (!strcmp(argv[1], "list")) {
    FILE* f = fopen(argv[3], "rb"); fseek(f, 0, SEEK_END); size_t n = ftell(f) / 4;
    fseek(f, 0, SEEK_SET); std::vector<unsigned> h(n); if (fread(h.data(), 4, n, f) != n) return 3; fclose(f);
    unsigned *di, *dout; CK(cudaMalloc(&di, n * 4)); CK(cudaMalloc(&dout, n * 4));
    CK(cudaMemcpy(di, h.data(), n * 4, cudaMemcpyHostToDevice));
    LK[op]<<<(n + 255) / 256, 256>>>(di, dout, n); CK(cudaGetLastError());
    CK(cudaMemcpy(h.data(), dout, n * 4, cudaMemcpyDeviceToHost));
    f = fopen(argv[4], "wb"); fwrite(h.data(), 4, n, f); fclose(f);
    printf("%s list %zu -> %s\n", OPS[op], n, argv[4]);
  }
#ifdef WITH_MODEL
  else if (!strcmp(argv[1], "verify")) {            // OP = -1: all ten
    for (int k = (op < 0 ? 0 : op); k <= (op < 0 ? 9 : op); k++) verify_main(k, argv[3], OPS[k]);
  }
#endif
  return 0;
}
