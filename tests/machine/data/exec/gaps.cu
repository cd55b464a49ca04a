// Kernels for tests/machine/test_exec_gaps.py (nvcc 13.0: nvcc -arch=sm_100a -ptx gaps.cu).
#include <cstdio>

// alloca: a per-thread buffer of n + (t & 3) ints on the stack, filled and read back permuted
extern "C" __global__ void vla(int *out, int n) {
    int t = threadIdx.x;
    int m = n + (t & 3);
    int *buf = (int *)alloca(m * sizeof(int));
    for (int i = 0; i < m; ++i) buf[i] = t * 100 + i;
    int s = 0;
    for (int i = 0; i < m; ++i) s += buf[(i * 7) % m] * (i + 1);
    out[t] = s;
}

// printf: conversions, widths, lengths, a string argument; the return value (arguments parsed)
extern "C" __global__ void pf(int *out, float x, long long big) {
    int t = threadIdx.x;
    int r = printf("t=%d b=%d x=%f h=%x s=%s\n", t, blockIdx.x, x * t, t * 255, "ok");
    int r2 = printf("[%-4d|%5.2f|%lld|%c|%%|%e|%g|%u|%08X]\n", t, x, big + t, 'A' + t,
                    (double)x * 1e10, x / 3, -t, 0xBEEF);
    out[2 * t] = r;
    out[2 * t + 1] = r2;
}

// recursion: a __noinline__ device function calling itself (nvcc keeps the call)
__device__ __noinline__ int fib(int n) {
    if (n < 2) return n;
    return fib(n - 1) + fib(n - 2);
}

// mutual recursion with two parameters
__device__ __noinline__ int odd_sum(int n, int acc);
__device__ __noinline__ int even_sum(int n, int acc) {
    return n == 0 ? acc : odd_sum(n - 1, acc + 2 * n);
}
__device__ __noinline__ int odd_sum(int n, int acc) {
    return n == 0 ? acc : even_sum(n - 1, acc + 3 * n);
}

extern "C" __global__ void recur(int *out) {
    int t = threadIdx.x;
    out[t] = fib(t % 12);
    out[blockDim.x + t] = even_sum(t % 9, t);
}
