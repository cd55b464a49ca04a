// ptxsim hw4: tanh / sin / cos .approx.f32 on sm_90 -- the models transcribed to CUDA, against the
// real instructions over all 2^32 inputs, and range kernels for np_verify_tsc.py (CuPy).
//   nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -o tsc tsc.cu
//   ./tsc verify TABLEDIR [PERTURB]   TABLEDIR/tanh.bin (7,733,248 u32), TABLEDIR/sinq.bin (2^23 u32)
//                                     (hardware/mufu/expand_tsc.py); PERTURB=1 adds 1 to tanh entry 4,000,000
//                                     and to sin-quarter entry 5,000,000 (negative control)
// Models (docs/mufu.md, src/ptxsim/isa/floating.py _mufu_tanh / _mufu_sincos):
//   tanh: odd; biased exponent <= 118: a; >= 130 (Inf too): +-1; 119..129: T[off[E] + (f >> drop[E])]
//   sin/cos: r = RZ(a * 0x3E22F983) (mul.rz.f32, subnormals kept); F = trunc(|r| 2^25) mod 2^25;
//            cos: F += 2^23 (mod 2^25), sign dropped; quadrant q = F >> 23, low = F mod 2^23;
//            |x| = Q[q odd ? 2^23 - 1 - low : low]; sign = sign(r) xor (q >= 2); Inf/NaN: NaN
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
  extern "C" __global__ void range_##NAME(unsigned* out, unsigned start, unsigned long long n) {  \
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;             \
    if (i < n) out[i] = op_##NAME(start + (unsigned)i);                                           \
  }
DEF(tanh, "tanh.approx.f32")
DEF(sin, "sin.approx.f32")
DEF(sin_ftz, "sin.approx.ftz.f32")
DEF(cos, "cos.approx.f32")
DEF(cos_ftz, "cos.approx.ftz.f32")

__constant__ int DROP[11] = {6, 6, 6, 5, 5, 4, 4, 4, 3, 2, 2};   // biased exponents 119..129
struct Tabs { const unsigned* tanh; const unsigned* q; unsigned off[11]; };

__device__ unsigned model_tanh(unsigned u, const Tabs& t) {
  unsigned s = u & 0x80000000u, E = (u >> 23) & 255, f = u & 0x7FFFFFu;
  if (E == 255 && f) return 0x7FFFFFFFu;
  if (E >= 130) return s | 0x3F800000u;
  if (E <= 118) return u;
  return s | t.tanh[t.off[E - 119] + (f >> DROP[E - 119])];
}
__device__ unsigned model_sincos(unsigned u, const Tabs& t, bool cosine) {
  if (((u >> 23) & 255) == 255) return 0x7FFFFFFFu;
  float r = __fmul_rz(__uint_as_float(u), __uint_as_float(0x3E22F983u));
  double m = floor(fabs((double)r) * 33554432.0);                 // exact: |r| 2^25 < 2^153
  unsigned F = (unsigned)fmod(m, 33554432.0);
  unsigned s = __float_as_uint(r) & 0x80000000u;
  if (cosine) { F = (F + (1u << 23)) & ((1u << 25) - 1); s = 0; }
  unsigned q = F >> 23, low = F & 0x7FFFFFu;
  return t.q[(q & 1) ? 0x7FFFFFu - low : low] | (s ^ (q >= 2 ? 0x80000000u : 0u));
}
#define VER(NAME, MODEL)                                                                          \
  __global__ void verify_##NAME(Tabs tab, unsigned long long* cnt, unsigned* first) {             \
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;             \
    unsigned u = (unsigned)i;                                                                     \
    unsigned h = op_##NAME(u), m = MODEL;                                                         \
    if (h != m) {                                                                                 \
      atomicAdd(&cnt[u >> 23], 1ull);                                                             \
      unsigned long long k = atomicAdd(&cnt[512], 1ull);                                          \
      if (k < 16) { first[3 * k] = u; first[3 * k + 1] = h; first[3 * k + 2] = m; }              \
    }                                                                                             \
  }
VER(tanh, model_tanh(u, tab))
VER(sin, model_sincos(u, tab, false))
VER(sin_ftz, model_sincos(u, tab, false))
VER(cos, model_sincos(u, tab, true))
VER(cos_ftz, model_sincos(u, tab, true))
typedef void (*VerK)(Tabs, unsigned long long*, unsigned*);
static VerK VK[] = {verify_tanh, verify_sin, verify_sin_ftz, verify_cos, verify_cos_ftz};
static const char* NM[] = {"tanh.approx.f32", "sin.approx.f32", "sin.approx.ftz.f32",
                           "cos.approx.f32", "cos.approx.ftz.f32"};

static unsigned* load(const char* dir, const char* name, size_t n, long perturb) {
  char p[512]; snprintf(p, sizeof p, "%s/%s.bin", dir, name);
  FILE* f = fopen(p, "rb"); if (!f) { fprintf(stderr, "no %s\n", p); exit(4); }
  std::vector<unsigned> h(n); if (fread(h.data(), 4, n, f) != n) { fprintf(stderr, "short %s\n", p); exit(4); }
  fclose(f);
  if (perturb >= 0) h[perturb] += 1;
  unsigned* d; CK(cudaMalloc(&d, n * 4)); CK(cudaMemcpy(d, h.data(), n * 4, cudaMemcpyHostToDevice));
  return d;
}

int main(int argc, char** argv) {
  if (argc < 3 || strcmp(argv[1], "verify")) { fprintf(stderr, "usage: see header\n"); return 1; }
  bool perturb = argc > 3 && atoi(argv[3]);
  Tabs t; unsigned o = 0;
  for (int k = 0; k < 11; k++) { t.off[k] = o; o += 1u << (23 - (k < 3 ? 6 : k < 5 ? 5 : k < 8 ? 4 : k < 9 ? 3 : 2)); }
  t.tanh = load(argv[2], "tanh", o, perturb ? 4000000 : -1);
  t.q = load(argv[2], "sinq", 1u << 23, perturb ? 5000000 : -1);
  unsigned long long* cnt; unsigned* first;
  CK(cudaMalloc(&cnt, 513 * 8)); CK(cudaMalloc(&first, 48 * 4));
  for (int op = 0; op < 5; op++) {
    CK(cudaMemset(cnt, 0, 513 * 8)); CK(cudaMemset(first, 0, 48 * 4));
    cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b); cudaEventRecord(a);
    VK[op]<<<1u << 24, 256>>>(t, cnt, first);
    CK(cudaGetLastError()); cudaEventRecord(b); CK(cudaDeviceSynchronize());
    float ms; cudaEventElapsedTime(&ms, a, b);
    unsigned long long h[513]; unsigned fh[48];
    CK(cudaMemcpy(h, cnt, sizeof h, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(fh, first, sizeof fh, cudaMemcpyDeviceToHost));
    printf("VERIFY%s %-20s inputs 4294967296 mismatches %llu (%.1f ms)\n", perturb ? "(perturbed)" : "",
           NM[op], h[512], ms);
    int shown = 0;
    for (int k = 0; k < 512 && shown < 12; k++)
      if (h[k]) { printf("  sign %d exponent %3d: %llu\n", k >> 8, k & 255, h[k]); shown++; }
    for (unsigned k = 0; k < 6 && k < h[512]; k++)
      printf("  a=0x%08x hw=0x%08x model=0x%08x\n", fh[3 * k], fh[3 * k + 1], fh[3 * k + 2]);
  }
  return 0;
}
