// The im2col corner rule (docs/cuda.md): cuTensorMapEncodeIm2col on argument sets chosen to
// confirm int32(globalDim + upper) > lower per spatial dimension (dimensions 1 .. rank-2, or
// 0 .. rank-3 with interleave). Reads cases from probe_im2col.txt (one call per line:
// dtype rank addr dims[5] strides[4] lower[3] upper[3] cpp ppc estr[5] interleave swizzle l2
// oob), prints "CURESULT <128 bytes hex>" per line.
//   nvcc -O2 -o probe probe_im2col.cu -lcuda && ./probe probe_im2col.txt
#include <cuda.h>
#include <cstdio>
int main(int argc, char **argv) {
  cuInit(0);
  CUdevice dev; cuDeviceGet(&dev, 0);
  CUcontext ctx; cuDevicePrimaryCtxRetain(&ctx, dev); cuCtxSetCurrent(ctx);
  FILE *f = fopen(argv[1], "r");
  unsigned long long a[29]; int n = 0;
  for (;;) {
    int k;
    for (k = 0; k < 29; k++) if (fscanf(f, "%lli", &a[k]) != 1) break;
    if (k < 29) break;
    cuuint64_t dims[5], strides[4]; int lo[3], up[3]; cuuint32_t es[5];
    for (int i = 0; i < 5; i++) dims[i] = a[3 + i];
    for (int i = 0; i < 4; i++) strides[i] = a[8 + i];
    for (int i = 0; i < 3; i++) { lo[i] = (int)(long long)a[12 + i]; up[i] = (int)(long long)a[15 + i]; }
    for (int i = 0; i < 5; i++) es[i] = (cuuint32_t)a[20 + i];
    alignas(64) CUtensorMap m = {};
    CUresult r = cuTensorMapEncodeIm2col(&m, (CUtensorMapDataType)a[0], (cuuint32_t)a[1],
        (void *)a[2], dims, strides, lo, up, (cuuint32_t)a[18], (cuuint32_t)a[19], es,
        (CUtensorMapInterleave)a[25], (CUtensorMapSwizzle)a[26],
        (CUtensorMapL2promotion)a[27], (CUtensorMapFloatOOBfill)a[28]);
    printf("%d ", (int)r);
    const unsigned char *b = (const unsigned char *)&m;
    for (int i = 0; i < 128; i++) printf("%02x", b[i]);
    printf("\n");
    n++;
  }
  fprintf(stderr, "%d calls\n", n);
  return 0;
}
