// ptxsim hw4: does sin/cos.approx.f32 on sm_90 factor through a fixed-point revolution?
//   ./sincos analyse OUTDIR
// For each of sin/cos .approx{.ftz}.f32 and each key below: pass 1 writes T[key(a)] = hw(a) for
// all 2^32 a (racy: some writer wins); pass 2 counts the a with hw(a) != T[key(a)], by
// sign/exponent of a. Zero conflicts = the instruction is a function of the key alone.
//   key 0: r = RZ(a * 0x3E22F983); f = r - rint(r); (sign f, trunc(|f| 2^K)), K = 25
//   key 1: the same with K = 24
//   key 2: (sign r, trunc(|r| 2^25) mod 2^25)
// Non-finite a are skipped. The tables of key SAVEKIND (argv[3], default 2) of the four forms are
// written to OUTDIR/*.bin; KINDS (argv[4], default "210") lists the keys analysed.
#include <cstdio>
#include <cstdlib>
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
DEF(sin_ftz, "sin.approx.ftz.f32")
DEF(sin, "sin.approx.f32")
DEF(cos_ftz, "cos.approx.ftz.f32")
DEF(cos, "cos.approx.f32")

__device__ __forceinline__ long long key(unsigned u, int kind) {
  float a = __uint_as_float(u);
  float r = __fmul_rz(a, __uint_as_float(0x3E22F983u));
  if (kind == 2) {
    double m = fabs((double)r) * 33554432.0;                     // |r| 2^25
    unsigned long long q = (unsigned long long)fmod(floor(m), 33554432.0);
    return (long long)(((r < 0.f || (r == 0.f && signbit(r))) ? (1ull << 25) : 0) | q);
  }
  float f = r - rintf(r);                                          // exact
  int K = kind == 0 ? 25 : 24;
  unsigned long long q = (unsigned long long)floor(fabs((double)f) * (double)(1ull << K));
  return (long long)(((f < 0.f || (f == 0.f && signbit(f))) ? (1ull << 25) : 0) | q);
}
#define AN(NAME)                                                                                  \
  __global__ void fill_##NAME(unsigned* T, int kind) {                                            \
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;             \
    unsigned u = (unsigned)i;                                                                     \
    if (((u >> 23) & 0xff) == 0xff) return;                                                       \
    T[key(u, kind)] = op_##NAME(u);                                                               \
  }                                                                                               \
  __global__ void check_##NAME(const unsigned* T, int kind, unsigned long long* cnt,              \
                               unsigned* first) {                                                 \
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;             \
    unsigned u = (unsigned)i;                                                                     \
    if (((u >> 23) & 0xff) == 0xff) return;                                                       \
    unsigned h = op_##NAME(u), t = T[key(u, kind)];                                               \
    if (h != t) {                                                                                 \
      atomicAdd(&cnt[u >> 23], 1ull);                                                             \
      unsigned long long k = atomicAdd(&cnt[512], 1ull);                                          \
      if (k < 8) { first[3 * k] = u; first[3 * k + 1] = h; first[3 * k + 2] = t; }                \
    }                                                                                             \
  }
AN(sin_ftz) AN(sin) AN(cos_ftz) AN(cos)
typedef void (*FillK)(unsigned*, int);
typedef void (*CheckK)(const unsigned*, int, unsigned long long*, unsigned*);
static FillK FK[] = {fill_sin_ftz, fill_sin, fill_cos_ftz, fill_cos};
static CheckK CKS[] = {check_sin_ftz, check_sin, check_cos_ftz, check_cos};
static const char* NM[] = {"sin_ftz", "sin", "cos_ftz", "cos"};

int main(int argc, char** argv) {
  if (argc < 3) return 1;
  size_t N = 1ull << 26;
  unsigned* T; CK(cudaMalloc(&T, N * 4));
  unsigned long long* cnt; unsigned* first; CK(cudaMalloc(&cnt, 513 * 8)); CK(cudaMalloc(&first, 96));
  std::vector<unsigned> h(N);
  for (int op = 0; op < 4; op++)
    for (const char* kp = argc > 4 ? argv[4] : "210"; *kp; kp++) {
      int kind = *kp - '0';
      CK(cudaMemset(T, 0xff, N * 4)); CK(cudaMemset(cnt, 0, 513 * 8));
      FK[op]<<<1u << 24, 256>>>(T, kind); CK(cudaGetLastError());
      CKS[op]<<<1u << 24, 256>>>(T, kind, cnt, first); CK(cudaGetLastError());
      CK(cudaDeviceSynchronize());
      unsigned long long c[513]; unsigned fh[24];
      CK(cudaMemcpy(c, cnt, sizeof c, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(fh, first, sizeof fh, cudaMemcpyDeviceToHost));
      printf("KEY %-8s kind %d conflicts %llu\n", NM[op], kind, c[512]);
      int shown = 0;
      for (int k = 0; k < 512 && shown < 12; k++)
        if (c[k]) { printf("   sign %d exp %3d: %llu\n", k >> 8, k & 255, c[k]); shown++; }
      for (unsigned j = 0; j < c[512] && j < 6; j++)
        printf("   a=0x%08x hw=0x%08x table=0x%08x\n", fh[3 * j], fh[3 * j + 1], fh[3 * j + 2]);
      if (kind == (argc > 3 ? atoi(argv[3]) : 2)) {
        CK(cudaMemcpy(h.data(), T, N * 4, cudaMemcpyDeviceToHost));
        char p[512]; snprintf(p, sizeof p, "%s/%s.bin", argv[2], NM[op]);
        FILE* f = fopen(p, "wb"); fwrite(h.data(), 4, N, f); fclose(f);
      }
    }
  return 0;
}
