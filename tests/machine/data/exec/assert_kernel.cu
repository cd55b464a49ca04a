// nvcc -ptx -arch=compute_100a assert_kernel.cu  (nvcc 13.0): tests/machine/test_exec_assert.py
#include <cassert>
__global__ void check(const int* p, int n, int* out) {
  int i = threadIdx.x;
  assert(p[i] < n);
  if (p[i] == -1) __trap();
  out[i] = 2 * p[i];
}
