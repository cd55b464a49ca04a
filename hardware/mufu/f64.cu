// ptxsim hw4 (helper mufu3): the f64 approximations on sm_90 -- rcp.approx.ftz.f64 (MUFU.RCP64H),
// rsqrt.approx.ftz.f64 (MUFU.RSQ64H) and rsqrt.approx.f64 (MUFU.RSQ64H + DFMA refinement).
//   nvcc -O2 -gencode=arch=compute_90a,code=sm_90a -o f64 f64.cu
//   ./f64 list OP IN.bin OUT.bin           u64 results of OP for the u64 inputs in IN.bin
//   ./f64 range OP HI0 COUNT OUT.bin       upper words of OP((hi << 32) | 0), hi = HI0 .. +COUNT-1
//   ./f64 verify TABDIR [NEG]              model vs hardware, every 2^32 upper word x 3 lower words
//                                          (0, 0xFFFFFFFF, a hash of hi); NEG=1: one table entry
//                                          of each of rcp / rsqrt changed (negative control)
// OP: 0 rcp.approx.ftz.f64, 1 rsqrt.approx.ftz.f64, 2 rsqrt.approx.f64.
// The model (written from the SASS, hardware/mufu/results/f64_sass.txt, independently of the numpy code):
// RCP64H / RSQ64H read the f32 MUFU.RCP / MUFU.RSQ tables (TABDIR/rcp.bin, rsqrt.bin, expanded
// from src/ptxsim/data/mufu_sm90_f32.npz by hardware/mufu/expand.py) at index (upper fraction << 3) and keep
// the top 20 fraction bits of the value.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(2); } } while (0)
typedef unsigned long long u64;

__device__ __forceinline__ u64 op_rcp(u64 u) {
  double x = __longlong_as_double(u), y;
  asm volatile("rcp.approx.ftz.f64 %0, %1;" : "=d"(y) : "d"(x));
  return __double_as_longlong(y);
}
__device__ __forceinline__ u64 op_rsqf(u64 u) {
  double x = __longlong_as_double(u), y;
  asm volatile("rsqrt.approx.ftz.f64 %0, %1;" : "=d"(y) : "d"(x));
  return __double_as_longlong(y);
}
__device__ __forceinline__ u64 op_rsq(u64 u) {
  double x = __longlong_as_double(u), y;
  asm volatile("rsqrt.approx.f64 %0, %1;" : "=d"(y) : "d"(x));
  return __double_as_longlong(y);
}
__device__ __forceinline__ u64 hw(int op, u64 u) {
  return op == 0 ? op_rcp(u) : op == 1 ? op_rsqf(u) : op_rsq(u);
}

extern "C" __global__ void k_list(int op, const u64* in, u64* out, u64 n) {
  u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x;
  if (i < n) out[i] = hw(op, in[i]);
}
extern "C" __global__ void k_range(int op, unsigned hi0, unsigned* out, u64 n) {
  u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x;
  if (i < n) out[i] = (unsigned)(hw(op, (u64)(hi0 + (unsigned)i) << 32) >> 32);
}

// ---- the model ----
__device__ unsigned m_rcp64h(unsigned hi, const unsigned* T) {
  unsigned s = hi & 0x80000000u, f = hi & 0xfffffu; int E = (hi >> 20) & 0x7ff;
  if (E == 0x7ff) return f ? 0x7fffffffu : s;
  if (E == 0) return s | 0x7ff00000u;
  unsigned r = T[f << 3];                                    // f32 bits, value in (0.5, 1]
  int eo = (int)((r >> 23) & 0xff) - 127 + 1023 + 1023 - E;
  if (eo <= 0) return s;                                     // below 2^-1022: flushed
  return s | ((unsigned)eo << 20) | ((r >> 3) & 0xfffffu);
}
__device__ unsigned m_rsq64h(unsigned hi, const unsigned* T) {
  unsigned s = hi & 0x80000000u, f = hi & 0xfffffu; int E = (hi >> 20) & 0x7ff;
  if (E == 0) return s | 0x7ff00000u;
  if (s || (E == 0x7ff && f)) return 0x7fffffffu;
  if (E == 0x7ff) return 0;
  int e = E - 1023, p = e & 1, k = (e - p) / 2;
  unsigned r = T[((unsigned)p << 23) | (f << 3)];            // value in (0.5, 1]
  int eo = (int)((r >> 23) & 0xff) - 127 + 1023 - k;
  return ((unsigned)eo << 20) | ((r >> 3) & 0xfffffu);
}
__device__ double refine(double a, const unsigned* T) {
  unsigned hi = (unsigned)(__double_as_longlong(a) >> 32);
  double y = __longlong_as_double((u64)m_rsq64h(hi, T) << 32);
  double t = __dmul_rn(y, y);
  t = __fma_rn(a, -t, 1.0);
  double c = __fma_rn(t, 0.375, 0.5);
  double v = __dmul_rn(y, t);
  return __fma_rn(c, v, y);
}
__device__ u64 m_rsqrt(u64 x, const unsigned* T) {
  unsigned hi = (unsigned)(x >> 32);
  double a = __longlong_as_double(x);
  if (hi - 0x100000u < 0x7fe00000u) return __double_as_longlong(refine(a, T));
  if (a == 0.0) return (x & 0x8000000000000000ull) | 0x7ff0000000000000ull;
  if (a != a) return __double_as_longlong(__dadd_rn(a, a));
  if (hi & 0x80000000u) return 0xfff8000000000000ull;
  if (a > 1.0) return 0;                                     // +Inf
  return __double_as_longlong(__dmul_rn(refine(__dmul_rn(a, 0x1p54), T), 0x1p27));
}
__device__ u64 model(int op, u64 x, const unsigned* R, const unsigned* S) {
  unsigned hi = (unsigned)(x >> 32);
  if (op == 0) return (u64)m_rcp64h(hi, R) << 32;
  if (op == 1) return (u64)m_rsq64h(hi, S) << 32;
  return m_rsqrt(x, S);
}
__device__ __forceinline__ unsigned lo_of(unsigned hi, int j) {
  if (j == 0) return 0u;
  if (j == 1) return 0xffffffffu;
  unsigned h = hi * 0x9e3779b1u; h ^= h >> 15; h *= 0x85ebca6bu; h ^= h >> 13;
  return h;
}
__global__ void k_verify(int op, const unsigned* R, const unsigned* S, u64 hi0, u64* cnt, u64* first) {
  u64 hi = hi0 + blockIdx.x * (u64)blockDim.x + threadIdx.x;
  for (int j = 0; j < 3; j++) {
    u64 x = (hi << 32) | lo_of((unsigned)hi, j);
    u64 h = hw(op, x), m = model(op, x, R, S);
    if (h != m) {
      atomicAdd(&cnt[hi >> 20], 1ull);
      u64 t = atomicAdd(&cnt[4096], 1ull);
      if (t < 16) { first[3 * t] = x; first[3 * t + 1] = h; first[3 * t + 2] = m; }
    }
  }
}

static std::vector<unsigned> load(const char* dir, const char* name) {
  char p[512]; snprintf(p, sizeof p, "%s/%s.bin", dir, name);
  FILE* f = fopen(p, "rb"); if (!f) { fprintf(stderr, "no %s\n", p); exit(3); }
  fseek(f, 0, SEEK_END); size_t n = ftell(f) / 4; fseek(f, 0, SEEK_SET);
  std::vector<unsigned> v(n); if (fread(v.data(), 4, n, f) != n) exit(3); fclose(f); return v;
}
static const char* OPS[] = {"rcp.approx.ftz.f64", "rsqrt.approx.ftz.f64", "rsqrt.approx.f64"};

int main(int argc, char** argv) {
  if (argc < 3) { fprintf(stderr, "usage: see header\n"); return 1; }
  if (!strcmp(argv[1], "list")) {
    int op = atoi(argv[2]);
    FILE* f = fopen(argv[3], "rb"); fseek(f, 0, SEEK_END); size_t n = ftell(f) / 8;
    fseek(f, 0, SEEK_SET); std::vector<u64> h(n); if (fread(h.data(), 8, n, f) != n) return 3; fclose(f);
    u64 *di, *dout; CK(cudaMalloc(&di, n * 8)); CK(cudaMalloc(&dout, n * 8));
    CK(cudaMemcpy(di, h.data(), n * 8, cudaMemcpyHostToDevice));
    k_list<<<(n + 255) / 256, 256>>>(op, di, dout, n); CK(cudaGetLastError());
    CK(cudaMemcpy(h.data(), dout, n * 8, cudaMemcpyDeviceToHost));
    f = fopen(argv[4], "wb"); fwrite(h.data(), 8, n, f); fclose(f);
    printf("%s list %zu -> %s\n", OPS[op], n, argv[4]);
  } else if (!strcmp(argv[1], "range")) {
    int op = atoi(argv[2]); unsigned hi0 = strtoul(argv[3], 0, 0); u64 n = strtoull(argv[4], 0, 0);
    unsigned* d; CK(cudaMalloc(&d, n * 4));
    k_range<<<(n + 255) / 256, 256>>>(op, hi0, d, n); CK(cudaGetLastError());
    std::vector<unsigned> h(n); CK(cudaMemcpy(h.data(), d, n * 4, cudaMemcpyDeviceToHost));
    FILE* f = fopen(argv[5], "wb"); fwrite(h.data(), 4, n, f); fclose(f);
    printf("%s range 0x%08x +%llu -> %s\n", OPS[op], hi0, n, argv[5]);
  } else if (!strcmp(argv[1], "verify")) {
    int neg = argc > 3 && atoi(argv[3]);
    std::vector<unsigned> R = load(argv[2], "rcp"), S = load(argv[2], "rsqrt");
    if (neg) { R[12345u << 3] += 8; S[12345u << 3] += 8; }   // the lowest kept bit of one entry
    unsigned *dR, *dS; u64 *cnt, *first;
    CK(cudaMalloc(&dR, R.size() * 4)); CK(cudaMalloc(&dS, S.size() * 4));
    CK(cudaMemcpy(dR, R.data(), R.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dS, S.data(), S.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMalloc(&cnt, 4097 * 8)); CK(cudaMalloc(&first, 48 * 8));
    for (int op = 0; op < 3; op++) {
      CK(cudaMemset(cnt, 0, 4097 * 8)); CK(cudaMemset(first, 0, 48 * 8));
      cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b); cudaEventRecord(a);
      for (u64 hi0 = 0; hi0 < (1ull << 32); hi0 += 1ull << 30)
        k_verify<<<(1u << 30) / 256, 256>>>(op, dR, dS, hi0, cnt, first);
      CK(cudaGetLastError()); cudaEventRecord(b); CK(cudaEventSynchronize(b));
      float ms; cudaEventElapsedTime(&ms, a, b);
      std::vector<u64> c(4097), fr(48);
      CK(cudaMemcpy(c.data(), cnt, 4097 * 8, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(fr.data(), first, 48 * 8, cudaMemcpyDeviceToHost));
      printf("VERIFY %-22s inputs %llu (all 2^32 upper words x 3 lower words) mismatches %llu  (%.1f s)%s\n",
             OPS[op], 3ull << 32, c[4096], ms / 1000, neg ? "  [negative control]" : "");
      int shown = 0;
      for (int k = 0; k < 4096 && shown < 12; k++)
        if (c[k]) { printf("   bin sign|exp 0x%03x: %llu\n", k, c[k]); shown++; }
      for (u64 t = 0; t < c[4096] && t < 16; t++)
        printf("   x %016llx hw %016llx model %016llx\n", fr[3 * t], fr[3 * t + 1], fr[3 * t + 2]);
    }
  }
  return 0;
}
