// Records what the TMA engine writes to shared memory for a list of tile-mode loads, and a few
// mbarrier behaviours, on a real Hopper GPU (sm_90a: same cp.async.bulk.tensor tile mode and
// swizzles 32B/64B/128B as sm_100a). Input cases come from cases.txt (written by
// make_cases.py); output: out.bin (8192 bytes of shared memory per case, prefilled with 0xAB).
// Build: nvcc -arch=sm_90a -O2 -o tma_probe tma_probe.cu   (no -lcuda: the driver entry point is
// fetched through the runtime).
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <vector>

typedef CUresult (*EncodeFn)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                             const cuuint64_t*, const cuuint32_t*, const cuuint32_t*,
                             CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion,
                             CUtensorMapFloatOOBfill);

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  printf("CUDA error %s at line %d\n", cudaGetErrorString(e), __LINE__); return 1; } } while (0)

constexpr int SMEM = 8192;
constexpr int DST = 2048;

__global__ void tma_kernel(const __grid_constant__ CUtensorMap tm, int rank, int c0, int c1, int c2,
                           int c3, int c4, unsigned box_bytes, uint8_t* out) {
  __shared__ __align__(1024) uint8_t buf[SMEM];
  __shared__ __align__(8) uint64_t mbar;
  for (int i = threadIdx.x; i < SMEM; i += blockDim.x) buf[i] = 0xAB;
  __syncthreads();
  uint32_t b = (uint32_t)__cvta_generic_to_shared(&mbar);
  uint32_t d = (uint32_t)__cvta_generic_to_shared(buf + DST);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b));
    asm volatile("fence.proxy.async.shared::cta;");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(b), "r"(box_bytes));
    const void* p = &tm;
    if (rank == 1)
      asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2}], [%3];"
                   :: "r"(d), "l"(p), "r"(c0), "r"(b) : "memory");
    else if (rank == 2)
      asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                   :: "r"(d), "l"(p), "r"(c0), "r"(c1), "r"(b) : "memory");
    else if (rank == 3)
      asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
                   :: "r"(d), "l"(p), "r"(c0), "r"(c1), "r"(c2), "r"(b) : "memory");
    else if (rank == 4)
      asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];"
                   :: "r"(d), "l"(p), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(b) : "memory");
    else
      asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5, %6}], [%7];"
                   :: "r"(d), "l"(p), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(b) : "memory");
  }
  __syncthreads();
  uint32_t done = 0;
  long iters = 0;
  while (!done && ++iters < 20000000L)
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done) : "r"(b) : "memory");
  for (int i = threadIdx.x; i < SMEM; i += blockDim.x) out[i] = buf[i];
  if (threadIdx.x == 0) out[SMEM] = done ? 1 : 0;
}

// mbarrier probes: r[0] = try_wait.parity(1) on a fresh barrier, r[1] = parity(0) fresh,
// r[2] = pending_count of the token of the first of 3 arrivals (init 4), r[3] = parity(0) after
// complete_tx(64) before expect_tx(64) + last arrive, r[4] = test_wait(token) after completion
__global__ void mbar_kernel(uint32_t* r) {
  __shared__ __align__(8) uint64_t m;
  uint32_t b = (uint32_t)__cvta_generic_to_shared(&m);
  uint32_t v;
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 4;" :: "r"(b));
  asm volatile("{ .reg .pred p; mbarrier.test_wait.parity.shared::cta.b64 p, [%1], 1; selp.u32 %0, 1, 0, p; }" : "=r"(v) : "r"(b)); r[0] = v;
  asm volatile("{ .reg .pred p; mbarrier.test_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }" : "=r"(v) : "r"(b)); r[1] = v;
  uint64_t tok;
  asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1];" : "=l"(tok) : "r"(b));
  asm volatile("mbarrier.pending_count.b64 %0, %1;" : "=r"(v) : "l"(tok)); r[2] = v;
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0], 2;" :: "r"(b));
  asm volatile("mbarrier.complete_tx.shared::cta.b64 [%0], 64;" :: "r"(b));
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 64;" :: "r"(b));
  asm volatile("{ .reg .pred p; mbarrier.test_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }" : "=r"(v) : "r"(b)); r[3] = v;
  asm volatile("{ .reg .pred p; mbarrier.test_wait.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }" : "=r"(v) : "r"(b), "l"(tok)); r[4] = v;
  r[5] = (uint32_t)tok; r[6] = (uint32_t)(tok >> 32);
  uint64_t raw; asm volatile("ld.shared.b64 %0, [%1];" : "=l"(raw) : "r"(b));
  r[7] = (uint32_t)raw; r[8] = (uint32_t)(raw >> 32);
}

int main() {
  EncodeFn enc = nullptr;
  cudaDriverEntryPointQueryResult q;
  CK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", (void**)&enc, 12000, cudaEnableDefault, &q));
  if (!enc) { printf("no cuTensorMapEncodeTiled\n"); return 1; }
  FILE* f = fopen("cases.txt", "r");
  FILE* o = fopen("out.bin", "wb");
  uint8_t* dout; CK(cudaMalloc(&dout, SMEM + 4));
  std::vector<uint8_t> host(SMEM);
  int ncase = 0;
  for (;;) {
    int dtype, rank, sw, oob, esize; unsigned long long nbytes;
    if (fscanf(f, "%d %d %d %d %d %llu", &dtype, &rank, &sw, &oob, &esize, &nbytes) != 6) break;
    cuuint64_t dims[5], strides[4]; cuuint32_t box[5], es[5]; int c[5] = {0, 0, 0, 0, 0};
    for (int i = 0; i < rank; i++) fscanf(f, "%llu", (unsigned long long*)&dims[i]);
    for (int i = 0; i < rank - 1; i++) fscanf(f, "%llu", (unsigned long long*)&strides[i]);
    for (int i = 0; i < rank; i++) fscanf(f, "%u", &box[i]);
    for (int i = 0; i < rank; i++) fscanf(f, "%u", &es[i]);
    for (int i = 0; i < rank; i++) fscanf(f, "%d", &c[i]);
    unsigned box_bytes; fscanf(f, "%u", &box_bytes);
    // input: word w of the buffer holds pattern(w) (see make_cases.py)
    std::vector<uint8_t> in(nbytes);
    for (unsigned long long w = 0; w * esize < nbytes; w++) {
      if (esize == 2) { uint16_t v = (uint16_t)(w % 30000 + 1); memcpy(&in[w * 2], &v, 2); }
      else { float fv = (float)(w + 1); uint32_t v; memcpy(&v, &fv, 4); memcpy(&in[w * 4], &v, 4); }
    }
    void* dg; CK(cudaMalloc(&dg, nbytes)); CK(cudaMemcpy(dg, in.data(), nbytes, cudaMemcpyHostToDevice));
    CUtensorMap tm;
    CUresult r = enc(&tm, (CUtensorMapDataType)dtype, rank, dg, dims, strides, box, es,
                     CU_TENSOR_MAP_INTERLEAVE_NONE, (CUtensorMapSwizzle)sw,
                     CU_TENSOR_MAP_L2_PROMOTION_NONE, (CUtensorMapFloatOOBfill)oob);
    if (r != CUDA_SUCCESS) { printf("case %d: encode error %d\n", ncase, (int)r); memset(host.data(), 0xEE, SMEM); }
    else {
      tma_kernel<<<1, 128>>>(tm, rank, c[0], c[1], c[2], c[3], c[4], box_bytes, dout);
      CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
      CK(cudaMemcpy(host.data(), dout, SMEM, cudaMemcpyDeviceToHost));
      uint8_t st; CK(cudaMemcpy(&st, dout + SMEM, 1, cudaMemcpyDeviceToHost));
      printf("case %d %s\n", ncase, st ? "ok" : "TIMEOUT (complete_tx bytes != expect_tx)");
    }
    fwrite(host.data(), 1, SMEM, o);
    cudaFree(dg);
    ncase++;
  }
  fclose(o);
  uint32_t* dr; CK(cudaMalloc(&dr, 64)); mbar_kernel<<<1, 1>>>(dr); CK(cudaDeviceSynchronize());
  uint32_t hr[9]; CK(cudaMemcpy(hr, dr, 36, cudaMemcpyDeviceToHost));
  printf("mbar");
  for (int i = 0; i < 9; i++) printf(" %u", hr[i]);
  printf("\n");
  return 0;
}
