/* The fused dot-product-add model of fdpa.py, compiled: the same arithmetic, output for output.
 *
 * fdpa.py is the specification (and the fallback when this module is not built); this file is
 * its inner loop.  Every step below names the fdpa.py function it mirrors, and the tests run
 * both on the same inputs and require identical bits (tests/numerics/test_backend.py).
 *
 * Exactness is argued in fdpa.py and holds here unchanged: products of two decoded elements
 * are exact doubles, scaling by 2^shift is exact (no double overflow or subnormal can occur for
 * these formats), truncated terms are integers < 2^(F+2) (group terms < 2^(F+12)), and at most
 * 65 are summed, so every sum is an exact double.  Inf/NaN propagate through the same float
 * operations fdpa.py uses (trunc(inf) = inf, 0 * inf = NaN).
 *
 * Inputs arrive as Python buffers (C-contiguous, dtype checked by the caller, fdpa.py); the
 * module needs neither numpy's headers nor anything but a C99 compiler.  Built with
 * -ffp-contract=off: no fused multiply-add may merge the (exact) operations.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(_MSC_VER) && !defined(__clang__)
#define restrict __restrict
#endif

#define ZERO_EXP (-4000)       /* unpack.ZERO_EXP: zeros and specials never win a max */
#define NO_TERM (-1000000)     /* an exponent below every sum of two real ones */

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && \
    !defined(PTXSIM_NO_CLONES)
#define HOT __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define HOT
#endif

/* 2^e as a double from its exponent bits, clamped to the normal range (fdpa._pow2). */
static inline double pow2(int e)
{
    e = e < -1022 ? -1022 : e;
    e = e > 1023 ? 1023 : e;
    uint64_t u = (uint64_t)(int64_t)(e + 1023) << 52;
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* floor(log2 |v|) for a finite nonzero double (always normal here). */
static inline int ilog2(double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return (int)((u >> 52) & 0x7FF) - 1023;
}

/* Alignment exponent of an accumulator value c of a format whose subnormals align at emin
 * (unpack.unpack: f32 -126, f16 -14); ZERO_EXP for zeros and specials. */
static inline int c_exponent(double c, int emin)
{
    int e = ilog2(c);                                  /* 0: -1023; Inf/NaN: 1024 */
    int none = (c == 0.0) | (e == 1024);
    e = e < emin ? emin : e;
    return none ? ZERO_EXP : e;
}

/* rounding.round_exact: the exact block result v -> D's raw bits, and (via *value) the value
 * those bits hold, which is the c of the next block.  frac / emin: fraction bits and smallest
 * normal exponent of the rounding grid; rne: to nearest even (else toward zero); out16: f16
 * bits (else f32).  Overflow of the rounded value gives +-Inf; -0 gives +0; NaN the canonical
 * NaN. */
static inline uint32_t round_bits(double v, int frac, int emin, int rne, int out16,
                                  double *value)
{
    if (isnan(v)) {
        *value = NAN;
        return out16 ? 0x7FFFu : 0x7FFFFFFFu;
    }
    if (v == 0.0) {
        *value = 0.0;
        return 0u;
    }
    uint32_t sign = v < 0 ? 1u : 0u;
    double r;
    if (isinf(v)) {
        r = v;
    } else {
        int e = ilog2(v);
        int q = (e > emin ? e : emin) - frac;         /* exponent of the last kept bit */
        double scaled = v * pow2(-q);                  /* exact: a power-of-two scaling */
        double kept = rne ? nearbyint(scaled) : trunc(scaled);
        r = kept * pow2(q);
        if (r == 0.0) {
            *value = 0.0;
            return 0u;
        }
    }
    if (out16) {
        double a = fabs(r);
        uint32_t bits;
        if (a >= 65536.0) {                            /* rounded past the largest f16 */
            bits = 0x7C00u;
            r = copysign(INFINITY, r);
        } else {
            int e = ilog2(a);
            if (e < -14)                               /* subnormal: multiples of 2^-24 */
                bits = (uint32_t)(a * 16777216.0);
            else
                bits = ((uint32_t)(e + 15) << 10) | ((uint32_t)(a * pow2(10 - e)) - 1024u);
        }
        *value = r;
        return bits | (sign << 15);
    }
    if (fabs(r) >= 0x1p128) r = copysign(INFINITY, r);
    float f = (float)r;                                /* exact: r has <= 24 bits in range */
    union { float f; uint32_t u; } x;
    x.f = f;
    *value = (double)f;
    return x.u;
}

/* ---- shared steps, written as branch-free loops over one row of N outputs (they vectorise) -- */

/* The grid of each output: emax -> scale 2^(F - emax) (grid units) and its inverse. */
HOT static void set_scale(Py_ssize_t N, const int32_t *restrict em, int F,
                          double *restrict scale, double *restrict inv, double *restrict acc)
{
    for (Py_ssize_t j = 0; j < N; j++) {
        scale[j] = pow2(F - em[j]);
        inv[j] = pow2(em[j] - F);
        acc[j] = 0.0;
    }
}

/* fdpa._finish + rounding.round_exact for f32 results rounded toward zero to `frac` fraction
 * bits (RZ-FP32: 23, RZ-E8M13: 13), subnormal grid 2^(-126 - frac): the exact sum plus c
 * truncated to the grid, scaled back, truncated to the output grid; +-Inf past 2^128, +0 for
 * -0, the canonical NaN.  cval receives the rounded values (the next block's c). */
HOT static void finish_rz_f32(Py_ssize_t N, const double *restrict acc,
                              const double *restrict scale, const double *restrict inv,
                              double *restrict cval, uint32_t *restrict out, int frac)
{
    for (Py_ssize_t j = 0; j < N; j++) {
        double total = acc[j] + trunc(cval[j] * scale[j]);
        double v = total * inv[j];                     /* exact: a power-of-two scaling */
        int e = ilog2(v);                              /* 0: -1023; Inf/NaN: 1024 */
        int q = (e > -126 ? e : -126) - frac;          /* exponent of the last kept bit */
        double r = trunc(v * pow2(-q)) * pow2(q);      /* Inf/NaN stay Inf/NaN */
        float f = (float)r + 0.0f;                     /* exact below 2^128, else Inf */
        uint32_t u;
        memcpy(&u, &f, sizeof u);
        out[j] = f != f ? 0x7FFFFFFFu : u;
        cval[j] = (double)f;
    }
}

/* The same for any rounding (round_bits), one output at a time: f16 results, RNE. */
static void finish_any(Py_ssize_t N, const double *acc, const double *scale, const double *inv,
                       double *cval, uint32_t *out, int frac, int emin, int rne, int out16)
{
    for (Py_ssize_t j = 0; j < N; j++) {
        double total = acc[j] + trunc(cval[j] * scale[j]);
        out[j] = round_bits(total * inv[j], frac, emin, rne, out16, &cval[j]);
    }
}

/* ---- fdpa.fused_batch / fdpa.fused_rows ------------------------------------------------- */

typedef struct {
    int F, L, e_zero, c_emin, d_emin, frac, rnd_emin, rne, out16;
} fused_params;

typedef struct {                 /* per-row work arrays, N each */
    int32_t *em;
    double *scale, *inv, *acc, *cval;
    double *zeros;                /* N zeros (any element type) */
    int32_t *none;                /* N times NO_TERM */
    uint32_t *amask;              /* grouped: one nonzero mask per group of the row */
} row_work;

/* One row i of one MMA: A's row a (K), its exponents ae, B's K x N block (bv, and bex / zcol
 * from prepare_b), initial c (N) and its exponents ce0 (unpack's; NULL: computed here, C's
 * subnormals aligning at c_emin) -> out (N).  Later blocks' c is the previous block's rounded D,
 * whose subnormals align at d_emin. */
HOT static void fused_row(const double *restrict a, const int32_t *restrict ae,
                          const double *restrict bv, const int32_t *restrict bex,
                          const int32_t *restrict zcol, const double *restrict c0,
                          const int32_t *restrict ce0, uint32_t *restrict out, Py_ssize_t N,
                          Py_ssize_t K, const fused_params *p, const row_work *w)
{
    int32_t *restrict em = w->em;
    double *restrict acc = w->acc, *restrict cval = w->cval;
    const double *restrict scale = w->scale;
    const int32_t ez = p->e_zero;
    memcpy(cval, c0, N * sizeof *cval);
    for (Py_ssize_t k0 = 0; k0 < K; k0 += p->L) {
        Py_ssize_t k1 = k0 + p->L < K ? k0 + p->L : K;
        const int32_t *restrict zc = zcol + (k0 / p->L) * N;
        /* fdpa._emax: the largest alignment exponent over the products, c, and e_zero for
         * every zero term: a product with a zero factor (a zero a_k: every output; a zero
         * b_kj: zcol), or a zero c */
        int32_t base = NO_TERM;
        for (Py_ssize_t k = k0; k < k1; k++)
            base = a[k] == 0.0 ? ez : base;
        int cemin = k0 == 0 ? p->c_emin : p->d_emin;
        for (Py_ssize_t j = 0; j < N; j++) {
            int32_t ce = (k0 == 0 && ce0) ? ce0[j] : c_exponent(cval[j], cemin);
            int32_t m = cval[j] == 0.0 ? ez : base;
            m = m > zc[j] ? m : zc[j];
            em[j] = ce > m ? ce : m;
        }
        /* products of finite nonzero factors: e_a + e_b (bex is NO_TERM for zero / Inf / NaN
         * b; so is e for such an a) -- four rows of B per pass */
        for (Py_ssize_t k = k0; k < k1; k += 4) {
            int32_t e[4];
            const int32_t *restrict be[4];
            for (int q = 0; q < 4; q++) {
                Py_ssize_t kq = k + q < k1 ? k + q : k0;   /* past the end: repeat row k0 */
                double aq = a[kq];
                e[q] = (aq != 0.0 && isfinite(aq)) ? ae[kq] : NO_TERM;
                be[q] = bex + kq * N;
            }
            for (Py_ssize_t j = 0; j < N; j++) {
                int32_t t01 = e[0] + be[0][j] > e[1] + be[1][j] ? e[0] + be[0][j] : e[1] + be[1][j];
                int32_t t23 = e[2] + be[2][j] > e[3] + be[3][j] ? e[2] + be[2][j] : e[3] + be[3][j];
                int32_t t = t01 > t23 ? t01 : t23;
                em[j] = t > em[j] ? t : em[j];
            }
        }
        set_scale(N, em, p->F, w->scale, w->inv, acc);
        /* fdpa._sum_units: each product scaled to grid units, truncated toward zero, summed;
         * four rows of B per pass over the sums (every partial sum is an exact integer, so the
         * grouping cannot change it; Inf/NaN propagate alike in any order) */
        Py_ssize_t k = k0;
        for (; k + 4 <= k1; k += 4) {
            double a0 = a[k], a1 = a[k + 1], a2 = a[k + 2], a3 = a[k + 3];
            const double *restrict b0 = bv + k * N, *restrict b1 = b0 + N,
                         *restrict b2 = b1 + N, *restrict b3 = b2 + N;
            for (Py_ssize_t j = 0; j < N; j++)
                acc[j] += (trunc(a0 * b0[j] * scale[j]) + trunc(a1 * b1[j] * scale[j])) +
                          (trunc(a2 * b2[j] * scale[j]) + trunc(a3 * b3[j] * scale[j]));
        }
        for (; k < k1; k++) {
            double ak = a[k];
            const double *restrict b = bv + k * N;
            for (Py_ssize_t j = 0; j < N; j++)
                acc[j] += trunc(ak * b[j] * scale[j]);
        }
        /* fdpa._finish: c truncated to the grid, scaled back, rounded once */
        if (!p->rne && !p->out16)
            finish_rz_f32(N, acc, scale, w->inv, cval, out, p->frac);
        else
            finish_any(N, acc, scale, w->inv, cval, out, p->frac, p->rnd_emin, p->rne,
                       p->out16);
    }
}

static void free_work(row_work *w)
{
    free(w->em); free(w->scale); free(w->inv); free(w->acc); free(w->cval);
    free(w->zeros); free(w->none); free(w->amask);
}

/* B's alignment exponents with NO_TERM for zeros and specials, and per block of L rows and
 * column j: e_zero if the block has a zero b_kj (a zero term in every output of column j),
 * else NO_TERM. */
static void prepare_b(const double *bv, const int32_t *be, int32_t *bex, int32_t *zcol,
                      Py_ssize_t K, Py_ssize_t N, int L, int e_zero)
{
    for (Py_ssize_t x = 0; x < K * N; x++) {
        double v = bv[x];
        bex[x] = (v == 0.0 || !isfinite(v)) ? NO_TERM : be[x];
    }
    for (Py_ssize_t k0 = 0; k0 < K; k0 += L) {
        int32_t *z = zcol + (k0 / L) * N;
        for (Py_ssize_t j = 0; j < N; j++)
            z[j] = NO_TERM;
        for (Py_ssize_t k = k0; k < K && k < k0 + L; k++)
            for (Py_ssize_t j = 0; j < N; j++)
                z[j] = bv[k * N + j] == 0.0 ? e_zero : z[j];
    }
}

static int alloc_work(row_work *w, Py_ssize_t N, Py_ssize_t groups)
{
    w->amask = malloc((groups > 0 ? groups : 1) * sizeof *w->amask);
    w->em = malloc(N * sizeof *w->em);
    w->scale = malloc(N * sizeof(double));
    w->inv = malloc(N * sizeof(double));
    w->acc = malloc(N * sizeof(double));
    w->cval = malloc(N * sizeof(double));
    w->zeros = calloc(N, sizeof(double));
    w->none = malloc(N * sizeof(int32_t));
    if (w->em && w->scale && w->inv && w->acc && w->cval && w->zeros && w->none && w->amask) {
        for (Py_ssize_t j = 0; j < N; j++)
            w->none[j] = NO_TERM;
        return 0;
    }
    free_work(w);
    return -1;
}

/* Checked size arithmetic: a huge dimension must be refused, not wrap to a small size. */
static Py_ssize_t cmul(Py_ssize_t a, Py_ssize_t b, int *bad)
{
    if (a < 0 || b < 0 || (b != 0 && a > PY_SSIZE_T_MAX / b)) {
        *bad = 1;
        return 0;
    }
    return a * b;
}

static Py_ssize_t cadd(Py_ssize_t a, Py_ssize_t b, int *bad)
{
    if (a < 0 || b < 0 || a > PY_SSIZE_T_MAX - b) {
        *bad = 1;
        return 0;
    }
    return a + b;
}

/* Elements spanned by per-row blocks of `block` elements at t*s_t + i*s_i (t < T, i < M). */
static Py_ssize_t span(Py_ssize_t T, Py_ssize_t M, Py_ssize_t s_t, Py_ssize_t s_i,
                       Py_ssize_t block, int *bad)
{
    if (T == 0 || M == 0)
        return 0;
    return cadd(cadd(cmul(T - 1, s_t, bad), cmul(M - 1, s_i, bad), bad), block, bad);
}

/* C given as f32 values: widened row by row (exact). */
static const double *widen(const float *c, double *row, Py_ssize_t N)
{
    for (Py_ssize_t j = 0; j < N; j++)
        row[j] = (double)c[j];
    return row;
}

static int get_buffers(Py_buffer *bufs, int n, Py_ssize_t *need, const char **names)
{
    for (int x = 0; x < n; x++) {
        if (bufs[x].len < need[x]) {
            PyErr_Format(PyExc_ValueError, "_fdpa_c: buffer %s has %zd bytes, needs %zd",
                         names[x], bufs[x].len, need[x]);
            return -1;
        }
    }
    return 0;
}

static void release(Py_buffer *bufs, int n)
{
    for (int x = 0; x < n; x++)
        PyBuffer_Release(&bufs[x]);
}

PyDoc_STRVAR(fused_doc,
"fused(av, ae, bv, be, cv, ce, out, T, M, N, K, b_t, b_i, F, L, e_zero, c_emin, d_emin,\n"
"      frac, rnd_emin, rne, out16)\n\n"
"fdpa.fused_batch / fused_rows: av, ae (T, M, K) float64 / int32; B's K x N block of row i of\n"
"MMA t starts at element t*b_t + i*b_i of bv (float64) / be (int32); cv, ce (T, M, N)\n"
"float64 / int32: C's values and alignment exponents (ce empty: computed from cv, C's\n"
"subnormals aligning at c_emin); c32 (optional, default 0): cv holds float32 values.\n"
"out (T, M, N) uint32 receives D's bits.");

static PyObject *py_fused(PyObject *self, PyObject *args)
{
    Py_buffer buf[7];
    Py_ssize_t T, M, N, K, b_t, b_i;
    fused_params p;
    memset(buf, 0, sizeof buf);
    int c32 = 0;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*w*nnnnnniiiiiiiii|p", &buf[0], &buf[1], &buf[2],
                          &buf[3], &buf[4], &buf[5], &buf[6], &T, &M, &N, &K, &b_t, &b_i,
                          &p.F, &p.L, &p.e_zero, &p.c_emin, &p.d_emin, &p.frac, &p.rnd_emin,
                          &p.rne, &p.out16, &c32))
        return NULL;
    if (T < 0 || M < 0 || N < 1 || K < 1 || p.L < 1 || b_t < 0 || b_i < 0) {
        release(buf, 7);
        PyErr_SetString(PyExc_ValueError, "_fdpa_c.fused: bad dimensions");
        return NULL;
    }
    int bad = 0, have_ce = buf[5].len > 0;
    Py_ssize_t tmk = cmul(cmul(T, M, &bad), K, &bad), tmn = cmul(cmul(T, M, &bad), N, &bad);
    Py_ssize_t last_b = span(T, M, b_t, b_i, cmul(K, N, &bad), &bad);
    Py_ssize_t need[7] = {cmul(tmk, 8, &bad), cmul(tmk, 4, &bad), cmul(last_b, 8, &bad),
                          cmul(last_b, 4, &bad), cmul(tmn, c32 ? 4 : 8, &bad),
                          have_ce ? cmul(tmn, 4, &bad) : 0, cmul(tmn, 4, &bad)};
    if (bad) {
        release(buf, 7);
        PyErr_SetString(PyExc_ValueError, "_fdpa_c.fused: dimensions too large");
        return NULL;
    }
    const char *names[7] = {"av", "ae", "bv", "be", "cv", "ce", "out"};
    if (get_buffers(buf, 7, need, names) < 0) {
        release(buf, 7);
        return NULL;
    }
    const double *av = buf[0].buf, *bv = buf[2].buf, *cv = buf[4].buf;
    const float *cf = buf[4].buf;
    const int32_t *ae = buf[1].buf, *be = buf[3].buf, *ce = buf[5].buf;
    uint32_t *out = buf[6].buf;
    Py_ssize_t nblocks = (K + p.L - 1) / p.L;
    int32_t *bex = malloc(K * N * sizeof *bex), *zcol = malloc(nblocks * N * sizeof *zcol);
    double *crow = malloc(N * sizeof *crow);
    row_work w;
    if (!bex || !zcol || !crow || alloc_work(&w, N, 0) < 0) {
        free(bex); free(zcol); free(crow);
        release(buf, 7);
        return PyErr_NoMemory();
    }
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t prepared = -1;
    for (Py_ssize_t t = 0; t < T; t++) {
        for (Py_ssize_t i = 0; i < M; i++) {
            Py_ssize_t boff = t * b_t + i * b_i;
            if (boff != prepared) {
                prepare_b(bv + boff, be + boff, bex, zcol, K, N, p.L, p.e_zero);
                prepared = boff;
            }
            Py_ssize_t r = t * M + i;
            const double *c0 = cv + r * N;
            if (c32) {                                 /* C given as f32: exact in a double */
                widen(cf + r * N, crow, N);
                c0 = crow;
            }
            fused_row(av + r * K, ae + r * K, bv + boff, bex, zcol, c0,
                      have_ce ? ce + r * N : NULL,
                      out + r * N, N, K, &p, &w);
        }
    }
    Py_END_ALLOW_THREADS
    free(bex); free(zcol); free(crow); free_work(&w);
    release(buf, 7);
    Py_RETURN_NONE;
}

/* ---- fdpa.grouped / fdpa.grouped_rows (kind::mxf4, mxf4nvf4) ------------------------------ */

typedef struct {
    int F, L, G, e_zero, block;
} grouped_params;

/* The grouped kinds take e2m1 elements only (Table 55): twice each is an integer in
 * [-12, 12] (the caller passes these "halves"), so a product is an integer number of quarters,
 * |.| <= 144, and a group sum of G <= 16 of them fits an int16 exactly (|.| <= 2304): the group
 * sums run in 16-bit integer lanes.  Returns -1 if some element is out of that range. */
#define E2M1_MAX2 12
HOT static int check_halves(const int16_t *restrict h, Py_ssize_t n)
{
    int bad = 0;
    for (Py_ssize_t x = 0; x < n; x++)
        bad |= (h[x] > E2M1_MAX2) | (h[x] < -E2M1_MAX2);
    return bad ? -1 : 0;
}

/* Which of a group's G elements are nonzero, as bits (one word per group and column). */
HOT static void nonzero_masks(const int16_t *restrict h, uint32_t *restrict mask,
                              Py_ssize_t ng, Py_ssize_t G, Py_ssize_t N)
{
    memset(mask, 0, ng * N * sizeof *mask);
    for (Py_ssize_t g = 0; g < ng; g++)
        for (Py_ssize_t k = 0; k < G; k++) {
            const int16_t *restrict row = h + (g * G + k) * N;
            uint32_t *restrict m = mask + g * N;
            for (Py_ssize_t j = 0; j < N; j++)
                m[j] |= (uint32_t)(row[j] != 0) << k;
        }
}

/* One row: group sums of G exact products, each times SF_A * SF_B, aligned with c on the
 * largest exponent, truncated, summed, rounded toward zero to f32 (fdpa._grouped_tail).
 * a2: the row's elements in halves; b2 / bmask: B's K x N elements in halves and its nonzero
 * masks (the caller's halves, nonzero_masks); sbez: SF_B's exponents, NO_TERM for zero scales. */
HOT static void grouped_row(const int16_t *restrict a2, const int16_t *restrict b2,
                            const uint32_t *restrict bmask, const double *restrict sav,
                            const int32_t *restrict sae, const double *restrict sbv,
                            const int32_t *restrict sbez, const double *restrict c0,
                            uint32_t *restrict out, Py_ssize_t N, Py_ssize_t K,
                            const grouped_params *p, int16_t *restrict gsum,
                            const row_work *w)
{
    int32_t *restrict em = w->em;
    double *restrict acc = w->acc, *restrict cval = w->cval;
    const double *restrict scale = w->scale;
    Py_ssize_t ng = K / p->G, per_block = p->L / p->G;
    const int32_t ez = p->e_zero;
    uint32_t *restrict amask = w->amask;               /* ng words */
    /* every group sum, in quarters, 64 columns at a time (the sums stay in registers) */
    for (Py_ssize_t g = 0; g < ng; g++) {
        const int16_t *restrict ag = a2 + g * p->G;
        amask[g] = 0;
        for (Py_ssize_t k = 0; k < p->G; k++)
            amask[g] |= (uint32_t)(ag[k] != 0) << k;
        Py_ssize_t j0 = 0;
        for (; j0 + 64 <= N; j0 += 64) {
            int16_t t[64] = {0};
            for (Py_ssize_t k = 0; k < p->G; k++) {
                const int16_t *restrict b = b2 + (g * p->G + k) * N + j0;
                int16_t ak = ag[k];
                for (int jj = 0; jj < 64; jj++)
                    t[jj] += (int16_t)(ak * b[jj]);
            }
            memcpy(gsum + g * N + j0, t, sizeof t);
        }
        for (Py_ssize_t j = j0; j < N; j++) {
            int16_t t = 0;
            for (Py_ssize_t k = 0; k < p->G; k++)
                t += (int16_t)(ag[k] * b2[(g * p->G + k) * N + j]);
            gsum[g * N + j] = t;
        }
    }
    memcpy(cval, c0, N * sizeof *cval);
    for (Py_ssize_t g0 = 0; g0 < ng; g0 += per_block) {
        Py_ssize_t g1 = g0 + per_block < ng ? g0 + per_block : ng;
        for (Py_ssize_t j = 0; j < N; j++) {
            int32_t ce = c_exponent(cval[j], -126);
            em[j] = cval[j] == 0.0 ? ez : ce;
        }
        /* four groups per pass over the outputs; past g1 a group reads the zero rows of w and
         * counts for nothing (NO_TERM, a +0 term) */
        for (Py_ssize_t q0 = g0; q0 < g1; q0 += 4) {
            int32_t ea[4], act[4];
            const int32_t *restrict eb[4];
            const uint32_t *restrict bm[4];
            uint32_t am[4];
            for (int q = 0; q < 4; q++) {
                Py_ssize_t g = q0 + q, s = g * p->G / p->block;   /* the scale it uses */
                act[q] = g < g1;
                ea[q] = !act[q] ? NO_TERM : sav[s] == 0.0 ? NO_TERM : sae[s];
                eb[q] = act[q] ? sbez + s * N : w->none;
                bm[q] = act[q] ? bmask + g * N : (const uint32_t *)w->none;
                am[q] = act[q] ? amask[g] : 0;
            }
            /* a group with no nonzero product, or a zero scale, is a zero term */
            for (Py_ssize_t j = 0; j < N; j++) {
                int32_t m = em[j];
                for (int q = 0; q < 4; q++) {
                    int32_t zero = ((am[q] & bm[q][j]) == 0) | (ea[q] == NO_TERM) |
                                   (eb[q][j] == NO_TERM);
                    int32_t e = zero ? ez : ea[q] + eb[q][j];
                    e = act[q] ? e : NO_TERM;
                    m = e > m ? e : m;
                }
                em[j] = m;
            }
        }
        set_scale(N, em, p->F, w->scale, w->inv, acc);
        for (Py_ssize_t q0 = g0; q0 < g1; q0 += 4) {
            double sa[4];
            const double *restrict sb[4];
            const int16_t *restrict gs[4];
            for (int q = 0; q < 4; q++) {
                Py_ssize_t g = q0 + q, s = g * p->G / p->block;
                int on = g < g1;
                sa[q] = on ? sav[s] : 0.0;
                sb[q] = on ? sbv + s * N : w->zeros;
                gs[q] = on ? gsum + g * N : (const int16_t *)w->zeros;
            }
            /* exact integers: the grouping of the sum cannot change it */
            for (Py_ssize_t j = 0; j < N; j++)
                acc[j] += (trunc((double)gs[0][j] * 0.25 * sa[0] * sb[0][j] * scale[j]) +
                           trunc((double)gs[1][j] * 0.25 * sa[1] * sb[1][j] * scale[j])) +
                          (trunc((double)gs[2][j] * 0.25 * sa[2] * sb[2][j] * scale[j]) +
                           trunc((double)gs[3][j] * 0.25 * sa[3] * sb[3][j] * scale[j]));
        }
        finish_rz_f32(N, acc, scale, w->inv, cval, out, 23);
    }
}

PyDoc_STRVAR(grouped_doc,
"grouped(a2, b2, sav, sae, sbv, sbe, cv, out, T, M, N, K, nsf, b_t, b_i, sb_t, sb_i, F, L, G,\n"
"        e_zero, block)\n\n"
"fdpa.grouped / grouped_rows on e2m1 elements given as int16 halves (2x the value):\n"
"a2 (T, M, K), sav / sae (T, M, nsf) float64 / int32; row i of MMA t uses B's\n"
"K x N block at t*b_t + i*b_i of b2 and the nsf x N scales at t*sb_t + i*sb_i of sbv / sbe;\n"
"cv (T, M, N) float64 (f32 values), or float32 with c32 = 1; out (T, M, N) uint32 receives D's\n"
"f32 bits.");

static PyObject *py_grouped(PyObject *self, PyObject *args)
{
    Py_buffer buf[8];
    Py_ssize_t T, M, N, K, nsf, b_t, b_i, sb_t, sb_i;
    grouped_params p;
    memset(buf, 0, sizeof buf);
    int c32 = 0;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*w*nnnnnnnnniiiii|p", &buf[0], &buf[1], &buf[2],
                          &buf[3], &buf[4], &buf[5], &buf[6], &buf[7], &T, &M, &N, &K, &nsf,
                          &b_t, &b_i, &sb_t, &sb_i, &p.F, &p.L, &p.G, &p.e_zero, &p.block, &c32))
        return NULL;
    if (T < 0 || M < 0 || N < 1 || K < 1 || p.G < 1 || p.G > 16 || p.L < p.G || K % p.G ||
        p.block < 1 || nsf * p.block != K || b_t < 0 || b_i < 0 || sb_t < 0 ||
        sb_i < 0) {
        release(buf, 8);
        PyErr_SetString(PyExc_ValueError, "_fdpa_c.grouped: bad dimensions");
        return NULL;
    }
    int ovf = 0;
    Py_ssize_t tm = cmul(T, M, &ovf), tmk = cmul(tm, K, &ovf), tmn = cmul(tm, N, &ovf),
               tms = cmul(tm, nsf, &ovf);
    Py_ssize_t last_b = span(T, M, b_t, b_i, cmul(K, N, &ovf), &ovf);
    Py_ssize_t last_sb = span(T, M, sb_t, sb_i, cmul(nsf, N, &ovf), &ovf);
    Py_ssize_t need[8] = {cmul(tmk, 2, &ovf), cmul(last_b, 2, &ovf), cmul(tms, 8, &ovf),
                          cmul(tms, 4, &ovf), cmul(last_sb, 8, &ovf), cmul(last_sb, 4, &ovf),
                          cmul(tmn, c32 ? 4 : 8, &ovf), cmul(tmn, 4, &ovf)};
    if (ovf) {
        release(buf, 8);
        PyErr_SetString(PyExc_ValueError, "_fdpa_c.grouped: dimensions too large");
        return NULL;
    }
    const char *names[8] = {"a2", "b2", "sav", "sae", "sbv", "sbe", "cv", "out"};
    if (get_buffers(buf, 8, need, names) < 0) {
        release(buf, 8);
        return NULL;
    }
    const int16_t *a2 = buf[0].buf, *b2 = buf[1].buf;
    const double *sav = buf[2].buf, *sbv = buf[4].buf, *cv = buf[6].buf;
    const float *cf = buf[6].buf;
    const int32_t *sae = buf[3].buf, *sbe = buf[5].buf;
    uint32_t *out = buf[7].buf;
    Py_ssize_t ng = K / p.G;
    int16_t *gsum = malloc(ng * N * sizeof *gsum);
    uint32_t *bmask = malloc(ng * N * sizeof *bmask);
    int32_t *sbez = malloc(nsf * N * sizeof *sbez);
    double *crow = malloc(N * sizeof *crow);
    row_work w;
    if (!gsum || !bmask || !sbez || !crow || alloc_work(&w, N, ng) < 0) {
        free(gsum); free(bmask); free(sbez); free(crow);
        release(buf, 8);
        return PyErr_NoMemory();
    }
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t prepared = -1, prepared_sb = -1;
    for (Py_ssize_t t = 0; t < T && !bad; t++) {
        for (Py_ssize_t i = 0; i < M && !bad; i++) {
            Py_ssize_t r = t * M + i, boff = t * b_t + i * b_i, sboff = t * sb_t + i * sb_i;
            if (boff != prepared) {
                bad |= check_halves(b2 + boff, K * N);
                nonzero_masks(b2 + boff, bmask, ng, p.G, N);
                prepared = boff;
            }
            if (sboff != prepared_sb) {
                for (Py_ssize_t x = 0; x < nsf * N; x++)
                    sbez[x] = sbv[sboff + x] == 0.0 ? NO_TERM : sbe[sboff + x];
                prepared_sb = sboff;
            }
            bad |= check_halves(a2 + r * K, K);
            grouped_row(a2 + r * K, b2 + boff, bmask, sav + r * nsf, sae + r * nsf, sbv + sboff, sbez,
                        c32 ? widen(cf + r * N, crow, N) : cv + r * N, out + r * N, N, K, &p,
                        gsum, &w);
        }
    }
    Py_END_ALLOW_THREADS
    free(gsum); free(bmask); free(sbez); free(crow); free_work(&w);
    release(buf, 8);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "_fdpa_c.grouped: the grouped kinds take e2m1 "
                        "elements: halves (2x the value) in [-12, 12]");
        return NULL;
    }
    Py_RETURN_NONE;
}

/* The arithmetic above relies on IEEE subnormals in float (f32 results below 2^-126) and on
 * exact doubles: a thread whose floating-point control flushes subnormals (x86 MXCSR FTZ/DAZ,
 * set by code built with -ffast-math) would give wrong bits silently.  Checked per call. */
static volatile float tiny_f32 = 0x1p-140f;

static PyObject *py_subnormals_ok(PyObject *self, PyObject *noargs)
{
    volatile float half = tiny_f32 * 0.5f, back = half * 2.0f;
    return PyBool_FromLong(half != 0.0f && back == tiny_f32);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <xmmintrin.h>
/* Test hook: set (1) or clear (0) FTZ and DAZ in this thread's MXCSR; returns the old MXCSR. */
static PyObject *py_set_flush(PyObject *self, PyObject *args)
{
    int on;
    if (!PyArg_ParseTuple(args, "p", &on))
        return NULL;
    unsigned int old = _mm_getcsr();
    _mm_setcsr(on ? (old | 0x8040u) : (old & ~0x8040u));
    return PyLong_FromUnsignedLong(old);
}
#endif

static PyMethodDef methods[] = {
    {"fused", py_fused, METH_VARARGS, fused_doc},
    {"grouped", py_grouped, METH_VARARGS, grouped_doc},
    {"subnormals_ok", py_subnormals_ok, METH_NOARGS,
     "True if this thread's float arithmetic keeps subnormals (no FTZ/DAZ)."},
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    {"_set_flush", py_set_flush, METH_VARARGS, "test hook: FTZ/DAZ on (1) or off (0)"},
#endif
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fdpa_c",
    "Compiled inner loop of ptxsim.numerics.fdpa (same arithmetic; see _fdpa.c).", -1, methods,
};

PyMODINIT_FUNC PyInit__fdpa_c(void)
{
    return PyModule_Create(&module);
}
