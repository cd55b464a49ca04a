// The ptxsim f32 MUFU model (src/ptxsim/isa/floating.py, _F32_APPROX) transcribed to CUDA C, for
// the full-range check on the device (mufu.cu verify). Tables: raw u32 result bits of the .ftz
// instructions, expanded from src/ptxsim/data/mufu_sm90_f32.npz by expand.py.
#pragma once
struct Tabs { const unsigned *rcp, *rsqrt, *sqrt, *ex2, *lg2_e0, *lg2_em1; };
#define QNAN 0x7fffffffu
#define INF 0x7f800000u

__device__ unsigned m_rcp(unsigned u, const Tabs& t) {
  unsigned s = u & 0x80000000u, f = u & 0x7fffffu; int E = (u >> 23) & 0xff;
  if (E == 255) return f ? QNAN : s;
  if (E == 0) return s | INF;
  long long r = (long long)t.rcp[f] + ((long long)(127 - E) << 23);
  if (r < 0x800000) r = 0;                       // below 2^-126: flushed
  return (unsigned)r | s;
}
__device__ unsigned m_sqrt_rsq(unsigned u, const unsigned* T, bool rsq) {
  unsigned s = u & 0x80000000u, f = u & 0x7fffffu; int E = (u >> 23) & 0xff;
  if (E == 0) return s | (rsq ? INF : 0u);
  if (s || (E == 255 && f)) return QNAN;
  if (E == 255) return rsq ? 0u : INF;
  int e = E - 127, p = e & 1, k = (e - p) / 2;
  return T[(p << 23) | f] + (unsigned)((rsq ? -k : k) * (1 << 23));
}
__device__ unsigned m_ex2(unsigned u, const Tabs& t) {
  unsigned s = u >> 31, f = u & 0x7fffffu; int E = (u >> 23) & 0xff;
  if (E == 255 && f) return QNAN;
  long long m = f | 0x800000, M; int sh = E - 127;
  if (E == 0) M = 0;
  else if (sh >= 0) M = m << (sh < 17 ? sh : 17);
  else M = (-sh >= 63) ? 0 : (m >> (-sh));
  if (M > (1ll << 40)) M = 1ll << 40;
  long long F = s ? (-M - ((M & 0x7fffff) != 0)) : M;
  long long r = (long long)t.ex2[F & 0x7fffff] + ((F >> 23) - 1) * (1ll << 23);
  if (r >= (long long)INF) return INF;
  if (r < 0x800000) return 0;
  return (unsigned)r;
}
__device__ unsigned m_lg2(unsigned u, const Tabs& t) {
  unsigned s = u >> 31, f = u & 0x7fffffu; int E = (u >> 23) & 0xff;
  if (E == 0) return 0xff800000u;
  if (s) return QNAN;
  if (E == 255) return f ? QNAN : INF;
  int e = E - 127;
  if (e == 0) return t.lg2_e0[f];
  if (e == -1) return t.lg2_em1[f];
  double L = (double)__uint_as_float(t.lg2_e0[f]);
  if (e >= 1) return __float_as_uint(__double2float_rz((double)e + L));   // exact sum, RZ
  double mag = (double)(-e) - L;
  float q = __double2float_rz(mag);
  unsigned qb = __float_as_uint(q) - ((double)q == mag ? 1u : 0u);   // strictly below |e| - L
  return qb | 0x80000000u;
}
// .ftz: the MUFU alone
__device__ unsigned model_rcp_ftz(unsigned u, const Tabs& t) { return m_rcp(u, t); }
__device__ unsigned model_rsqrt_ftz(unsigned u, const Tabs& t) { return m_sqrt_rsq(u, t.rsqrt, true); }
__device__ unsigned model_sqrt_ftz(unsigned u, const Tabs& t) { return m_sqrt_rsq(u, t.sqrt, false); }
__device__ unsigned model_ex2_ftz(unsigned u, const Tabs& t) { return m_ex2(u, t); }
__device__ unsigned model_lg2_ftz(unsigned u, const Tabs& t) { return m_lg2(u, t); }
// non-.ftz: the SASS ptxas 13.0 emits around the MUFU (FMUL/FADD here are IEEE, denormals kept)
__device__ unsigned model_rcp(unsigned u, const Tabs& t) {
  float x = __uint_as_float(u), a = fabsf(x);
  float sc = a < 1.175494350822287508e-38f ? 16777216.f : 1.f;
  sc = a > 8.50705917302346158658e+37f ? 0.25f : sc;
  return __float_as_uint(__fmul_rn(sc, __uint_as_float(m_rcp(__float_as_uint(__fmul_rn(x, sc)), t))));
}
#define SCALED(NAME, MUFU, POST)                                                                  \
  __device__ unsigned model_##NAME(unsigned u, const Tabs& t) {                                   \
    float x = __uint_as_float(u);                                                                 \
    bool tiny = fabsf(x) < 1.175494350822287508e-38f;                                                  \
    float y = __uint_as_float(MUFU(__float_as_uint(tiny ? __fmul_rn(x, 16777216.f) : x)));        \
    return __float_as_uint(tiny ? POST : y);                                                      \
  }
SCALED(rsqrt, [&](unsigned v) { return m_sqrt_rsq(v, t.rsqrt, true); }, __fmul_rn(y, 4096.f))
SCALED(sqrt, [&](unsigned v) { return m_sqrt_rsq(v, t.sqrt, false); }, __fmul_rn(y, 0.000244140625f))
SCALED(lg2, [&](unsigned v) { return m_lg2(v, t); }, __fadd_rn(y, -24.f))
__device__ unsigned model_ex2(unsigned u, const Tabs& t) {
  float x = __uint_as_float(u);
  bool small = x < -126.f;
  float y = __uint_as_float(m_ex2(__float_as_uint(small ? __fmul_rn(x, 0.5f) : x), t));
  return __float_as_uint(small ? __fmul_rn(y, y) : y);
}
