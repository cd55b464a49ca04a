// ptxsim hw4: structure of tanh.approx.f32 on sm_90 (MUFU.TANH) and its captures.
//   nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -o tanh tanh.cu
//   ./tanh analyse                 per biased exponent E of the positive inputs: how many results
//                                  are the input itself, exactly 1.0; how many u break
//                                  tanh(-a) = -tanh(a); and for k = 1..23 how many u have
//                                  tanh(u) != tanh(u with its low k bits cleared) (dependence on
//                                  the low fraction bits). Non-finite inputs skipped.
//   ./tanh range START COUNT OUT.bin     raw u32 results of tanh.approx.f32 for START.. (+COUNT)
//   ./tanh list OP IN.bin OUT.bin        OP 0 tanh, 1 sin.approx.f32, 2 cos.approx.f32
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
  __global__ void list_##NAME(const unsigned* in, unsigned* out, unsigned long long n) {          \
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;             \
    if (i < n) out[i] = op_##NAME(in[i]);                                                         \
  }
DEF(tanh, "tanh.approx.f32")
DEF(sin, "sin.approx.f32")
DEF(cos, "cos.approx.f32")

__global__ void range_tanh(unsigned* out, unsigned start, unsigned long long n) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = op_tanh(start + (unsigned)i);
}

// one thread: 64 consecutive positive inputs (same exponent). cnt[E * 32 + j]:
// j = 0 identity, 1 one, 2 odd-symmetry breaks, 3 results with a sign bit, 4.. : k = j - 3 (1..23)
#define RUN 64
__global__ void analyse(unsigned long long* cnt) {
  unsigned long long t = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  unsigned base = (unsigned)(t * RUN);
  if (base >= 0x7F800000u) return;
  unsigned E = base >> 23;
  unsigned c[27];
  for (int j = 0; j < 27; j++) c[j] = 0;
  for (int i = 0; i < RUN; i++) {
    unsigned u = base + i;
    unsigned h = op_tanh(u);
    c[0] += h == u;
    c[1] += h == 0x3F800000u;
    c[2] += op_tanh(u | 0x80000000u) != (h ^ 0x80000000u);
    c[3] += h >> 31;
    for (int k = 1; k <= 23; k++) c[3 + k] += op_tanh(u & ~((1u << k) - 1u)) != h;
  }
  for (int j = 0; j < 27; j++) if (c[j]) atomicAdd(&cnt[E * 32 + j], (unsigned long long)c[j]);
}

int main(int argc, char** argv) {
  if (argc < 2) return 1;
  if (!strcmp(argv[1], "analyse")) {
    unsigned long long* cnt; CK(cudaMalloc(&cnt, 256 * 32 * 8)); CK(cudaMemset(cnt, 0, 256 * 32 * 8));
    unsigned long long threads = (0x7F800000ull + RUN - 1) / RUN;
    analyse<<<(threads + 255) / 256, 256>>>(cnt); CK(cudaGetLastError());
    std::vector<unsigned long long> c(256 * 32);
    CK(cudaMemcpy(c.data(), cnt, 256 * 32 * 8, cudaMemcpyDeviceToHost));
    printf("E(biased) identity one odd_breaks neg | mismatches when clearing the low k bits, k=1..23\n");
    for (int E = 0; E < 255; E++) {
      printf("E %3d %8llu %8llu %llu %llu |", E, c[E * 32], c[E * 32 + 1], c[E * 32 + 2], c[E * 32 + 3]);
      for (int k = 1; k <= 23; k++) printf(" %llu", c[E * 32 + 3 + k]);
      printf("\n");
    }
  } else if (!strcmp(argv[1], "range")) {
    unsigned start = strtoul(argv[2], 0, 0);
    unsigned long long n = strtoull(argv[3], 0, 0);
    unsigned* d; CK(cudaMalloc(&d, n * 4));
    range_tanh<<<(n + 255) / 256, 256>>>(d, start, n); CK(cudaGetLastError());
    std::vector<unsigned> h(n); CK(cudaMemcpy(h.data(), d, n * 4, cudaMemcpyDeviceToHost));
    FILE* f = fopen(argv[4], "wb"); fwrite(h.data(), 4, n, f); fclose(f);
  } else if (!strcmp(argv[1], "list")) {
    int op = atoi(argv[2]);
    FILE* f = fopen(argv[3], "rb"); fseek(f, 0, SEEK_END); size_t n = ftell(f) / 4;
    fseek(f, 0, SEEK_SET); std::vector<unsigned> h(n); if (fread(h.data(), 4, n, f) != n) return 3; fclose(f);
    unsigned *di, *dout; CK(cudaMalloc(&di, n * 4)); CK(cudaMalloc(&dout, n * 4));
    CK(cudaMemcpy(di, h.data(), n * 4, cudaMemcpyHostToDevice));
    if (op == 0) list_tanh<<<(n + 255) / 256, 256>>>(di, dout, n);
    if (op == 1) list_sin<<<(n + 255) / 256, 256>>>(di, dout, n);
    if (op == 2) list_cos<<<(n + 255) / 256, 256>>>(di, dout, n);
    CK(cudaGetLastError());
    CK(cudaMemcpy(h.data(), dout, n * 4, cudaMemcpyDeviceToHost));
    f = fopen(argv[4], "wb"); fwrite(h.data(), 4, n, f); fclose(f);
  }
  return 0;
}
