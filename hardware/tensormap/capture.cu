// Records what the CUDA driver and an sm_90 GPU do with tensor maps and with bad host calls:
//  1. cuTensorMapEncodeTiled / cuTensorMapEncodeIm2col over a sweep of arguments: the CUresult and
//     the 128 bytes of every call                                           -> tiled.bin, im2col.bin
//  2. tensormap.replace of every field on encoded maps and on a zeroed block   -> replace.bin
//  3. tensormap.cp_fenceproxy, and TMA loads through maps built or edited by device code -> tma.bin
//  4. the CUresult of host calls the driver refuses (one child process each)   -> host.txt
// Every phase runs in a forked child (a call that kills the context loses only its phase).
// Build: nvcc -O2 -o capture capture.cu -lcuda ; run: ./capture OUTDIR
// Pack: python hardware/tensormap/pack.py OUTDIR tests/data/hardware/tensormap/tensormap_sm90.npz
#include <cuda.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include <sys/wait.h>
#include <unistd.h>

static std::string OUT;
static uint64_t rng_state = 0x5eed5eed12345678ull;
static uint64_t rnd() {  // splitmix64
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static uint64_t pick(std::initializer_list<uint64_t> v) { return v.begin()[rnd() % v.size()]; }

#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { fprintf(stderr, "%s:%d %s -> %d\n", __FILE__, __LINE__, #x, (int)r_); exit(3); } } while (0)

static int run_child(const char* name, void (*fn)(void*), void* arg) {
  fflush(stdout); fflush(stderr);
  pid_t p = fork();
  if (p == 0) { fn(arg); fflush(stdout); _exit(0); }
  int st = 0; waitpid(p, &st, 0);
  int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  fprintf(stderr, "phase %s: exit %d\n", name, code);
  return code;
}

static CUcontext init_ctx() {
  CUdevice dev; CUcontext ctx;
  CK(cuInit(0)); CK(cuDeviceGet(&dev, 0));
  CK(cuDevicePrimaryCtxRetain(&ctx, dev)); CK(cuCtxSetCurrent(ctx));
  return ctx;
}

// ------------------------------------------------------------------------------------ 1. encode
#pragma pack(push, 1)
struct EncRec {
  int32_t kind, result, dtype, rank, interleave, swizzle, l2, oob;
  uint64_t addr, dims[5], strides[4];
  uint32_t box[5], estr[5];
  int32_t lower[3], upper[3];
  uint32_t cpp, ppc;
  uint8_t map[128];
};
#pragma pack(pop)

static const int ESIZE[16] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4, 0, 0, 0};

static uint64_t rand_dim() {
  switch (rnd() % 8) {
    case 0: return 1 + rnd() % 4;
    case 1: return 1 + rnd() % 300;
    case 2: return 1 + rnd() % 70000;
    case 3: return pick({1ull << 32, (1ull << 32) - 1, 1ull << 31, 65536, 65535, 256, 257});
    case 4: return 128 * (1 + rnd() % 64);
    case 5: return 1 + rnd() % (1ull << 24);
    default: return 1 + rnd() % 4096;
  }
}

static void make_case(EncRec& c, bool im2col) {
  memset(&c, 0, sizeof c);
  c.kind = im2col;
  c.dtype = (rnd() % 10 == 0) ? 13 + rnd() % 3 : rnd() % 13;
  c.rank = im2col ? 3 + rnd() % 3 : 1 + rnd() % 5;
  c.interleave = (c.rank >= 3 && rnd() % 6 == 0) ? 1 + rnd() % 2 : 0;
  c.swizzle = rnd() % 10 < 7 ? rnd() % 4 : 4 + rnd() % 3;
  if (c.interleave == 2 && rnd() % 3) c.swizzle = 1;
  c.l2 = rnd() % 4;
  c.oob = rnd() % 4 == 0;
  int es = ESIZE[c.dtype] ? ESIZE[c.dtype] : 1;
  for (int i = 0; i < c.rank; i++) c.dims[i] = rand_dim();
  if (c.dtype >= 13 && rnd() % 2) c.dims[0] = 128 * (1 + rnd() % 8);
  bool bad = rnd() % 12 == 0;
  uint64_t align = (c.interleave == 2 || c.dtype == 14 || c.dtype == 15) ? 32 : 16;
  uint64_t s = (c.dtype >= 13 ? (c.dims[0] / 2 + 1) : c.dims[0] * es);
  for (int i = 0; i + 1 < c.rank; i++) {
    s = (s + align - 1) / align * align + align * (rnd() % 3 == 0 ? rnd() % 8 : 0);
    if (bad && rnd() % 3 == 0) s = pick({8, 24, 1ull << 40, (1ull << 40) - 16, 0, s + 8});
    c.strides[i] = s;
    s = s * c.dims[i + 1];
    if (s >= (1ull << 40)) s = (1ull << 39) + 16 * (rnd() % 1000);
  }
  c.addr = pick({0ull, 16ull, 0x7f0000000000ull, 0x10000ull}) + 16 * (rnd() % (1ull << 36));
  if (rnd() % 5 == 0) c.addr = 32 * (rnd() % (1ull << 43));
  if (bad && rnd() % 3 == 0) c.addr += pick({8, 4, 1});
  // box
  int span = c.swizzle == 0 ? 256 : c.swizzle == 1 ? 32 : c.swizzle == 2 ? 64 : 128;
  for (int i = 0; i < c.rank; i++) c.box[i] = 1 + rnd() % (rnd() % 2 ? 16 : 256);
  if (c.interleave == 0 && ESIZE[c.dtype]) {
    uint32_t unit = 16 / es;
    uint32_t maxb = (c.swizzle ? span : 256 * es) / es;
    if (maxb > 256) maxb = 256;
    c.box[0] = unit * (1 + rnd() % (maxb / unit ? maxb / unit : 1));
  }
  if (c.dtype == 14 || c.dtype == 15) c.box[0] = 128;
  if (c.dtype == 13 && rnd() % 2) c.box[0] = 32 * (1 + rnd() % 8);
  for (int i = 0; i < c.rank; i++) c.estr[i] = rnd() % 3 ? 1 : 1 + rnd() % 8;
  if (bad) {
    switch (rnd() % 6) {
      case 0: c.box[rnd() % c.rank] = pick({0, 257, 300}); break;
      case 1: c.estr[rnd() % c.rank] = pick({0, 9}); break;
      case 2: c.dims[rnd() % c.rank] = pick({0, (1ull << 32) + 1}); break;
      case 3: c.box[0] += 1; break;
      case 4: c.oob = 1; c.dtype = rnd() % 6; break;
      default: c.rank = pick({0, 6}); break;
    }
  }
  if (im2col) {
    int nsp = c.rank - 2;
    int lim = c.rank == 3 ? 32768 : c.rank == 4 ? 128 : 16;
    for (int i = 0; i < nsp; i++) {
      c.lower[i] = (int)(rnd() % (2 * lim)) - lim;
      c.upper[i] = (int)(rnd() % (2 * lim)) - lim;
      if (rnd() % 4 == 0) { c.lower[i] = -(int)(rnd() % 4); c.upper[i] = (int)(rnd() % 4); }
    }
    if (bad && rnd() % 2) c.lower[0] = pick({(uint64_t)lim, (uint64_t)(-lim - 1)});
    c.cpp = ESIZE[c.dtype] && c.swizzle ? (uint32_t)(span / es) : (uint32_t)(1 + rnd() % 256);
    if (rnd() % 3 == 0) c.cpp = 1 + rnd() % 256;
    if (c.dtype == 14 || c.dtype == 15) c.cpp = 128;
    c.ppc = 1 + rnd() % (rnd() % 2 ? 64 : 1024);
    if (bad && rnd() % 2) c.ppc = pick({0, 1025});
  }
}

static void encode(EncRec& c) {
  CUtensorMap m; memset(&m, 0xA5, sizeof m);
  cuuint64_t dims[5]; cuuint64_t str[4]; cuuint32_t box[5], es[5];
  for (int i = 0; i < 5; i++) { dims[i] = c.dims[i]; box[i] = c.box[i]; es[i] = c.estr[i]; }
  for (int i = 0; i < 4; i++) str[i] = c.strides[i];
  CUresult r;
  if (!c.kind)
    r = cuTensorMapEncodeTiled(&m, (CUtensorMapDataType)c.dtype, c.rank, (void*)c.addr, dims, str,
                               box, es, (CUtensorMapInterleave)c.interleave,
                               (CUtensorMapSwizzle)c.swizzle, (CUtensorMapL2promotion)c.l2,
                               (CUtensorMapFloatOOBfill)c.oob);
  else
    r = cuTensorMapEncodeIm2col(&m, (CUtensorMapDataType)c.dtype, c.rank, (void*)c.addr, dims,
                                str, c.lower, c.upper, c.cpp, c.ppc, es,
                                (CUtensorMapInterleave)c.interleave, (CUtensorMapSwizzle)c.swizzle,
                                (CUtensorMapL2promotion)c.l2, (CUtensorMapFloatOOBfill)c.oob);
  c.result = r;
  memcpy(c.map, &m, 128);
}

static void structured(std::vector<EncRec>& out) {
  // one field at a time from a base (2-D bf16 64 x 64, box 64 x 16): every dtype x swizzle x
  // interleave x l2 x oob code, every rank, boxes and strides at their edges
  for (int dt = 0; dt < 16; dt++)
    for (int sw = 0; sw < 7; sw++)
      for (int il = 0; il < 3; il++)
        for (int l2 = 0; l2 < 4; l2 += (il ? 3 : 1))
          for (int oob = 0; oob < 2; oob++) {
            EncRec c; memset(&c, 0, sizeof c);
            c.dtype = dt; c.rank = 3; c.interleave = il; c.swizzle = sw; c.l2 = l2; c.oob = oob;
            c.addr = 0x7f1234560000ull;
            c.dims[0] = 256; c.dims[1] = 64; c.dims[2] = 3;
            int es = ESIZE[dt] ? ESIZE[dt] : 1;
            c.strides[0] = dt >= 13 ? 256 : 256 * es; c.strides[1] = c.strides[0] * 64;
            int span = sw == 0 ? 128 : sw == 1 ? 32 : sw == 2 ? 64 : 128;
            c.box[0] = dt >= 13 ? 128 : span / es; c.box[1] = 16; c.box[2] = 2;
            for (int i = 0; i < 5; i++) c.estr[i] = 1;
            encode(c); out.push_back(c);
          }
  for (int rank = 1; rank <= 5; rank++)
    for (int k = 0; k < 24; k++) {
      EncRec c; memset(&c, 0, sizeof c);
      c.dtype = 9; c.rank = rank; c.addr = 0x100000ull * (k + 1);
      uint64_t s = 0;
      for (int i = 0; i < rank; i++) {
        c.dims[i] = (k % 4 == 0) ? (1ull << 32) - i : 1 + (rnd() % 5000);
        c.box[i] = 1 + (k * 37 + i * 11) % 256;
        c.estr[i] = 1 + (k + i) % 8;
      }
      c.box[0] = 8 * (1 + k % 32);
      s = ((c.dims[0] * 2 + 15) / 16) * 16;
      for (int i = 0; i + 1 < rank; i++) { c.strides[i] = s; s *= c.dims[i + 1]; if (s >= (1ull << 40)) s = (1ull << 40) - 16 * (k + 1); }
      encode(c); out.push_back(c);
    }
}

static void phase_encode(void*) {
  init_ctx();
  std::vector<EncRec> tiled, im2col;
  structured(tiled);
  for (int i = 0; i < 3000; i++) { EncRec c; make_case(c, false); encode(c); tiled.push_back(c); }
  for (int i = 0; i < 1200; i++) { EncRec c; make_case(c, true); encode(c); im2col.push_back(c); }
  FILE* f = fopen((OUT + "/tiled.bin").c_str(), "wb");
  fwrite(tiled.data(), sizeof(EncRec), tiled.size(), f); fclose(f);
  f = fopen((OUT + "/im2col.bin").c_str(), "wb");
  fwrite(im2col.data(), sizeof(EncRec), im2col.size(), f); fclose(f);
  int ok = 0; for (auto& c : tiled) ok += c.result == 0;
  int ok2 = 0; for (auto& c : im2col) ok2 += c.result == 0;
  printf("encode: %zu tiled (%d ok), %zu im2col (%d ok)\n", tiled.size(), ok, im2col.size(), ok2);
}

// ------------------------------------------------------------------------------ 2. replace
static const char* FIELD[] = {"global_address", "rank", "box_dim", "global_dim", "global_stride",
                              "element_stride", "elemtype", "interleave_layout", "swizzle_mode",
                              "fill_mode", "swizzle_atomicity"};
#pragma pack(push, 1)
struct RepRec {
  int32_t base, field, ord, loaded;   // loaded: 0 = the kernel did not JIT (value: CUresult)
  uint64_t value;
  uint8_t before[128], after[128];
};
#pragma pack(pop)

static std::string replace_ptx(int field, int ord, uint64_t imm) {
  char buf[2048];
  const char* ty = (field == 0 || field == 4) ? "b64" : "b32";
  char op[256];
  if (field <= 1) snprintf(op, sizeof op, "[%%rd1], %s;", field == 0 ? "%rd2" : "%r1");
  else if (field <= 5) snprintf(op, sizeof op, "[%%rd1], %d, %s;", ord, field == 4 ? "%rd2" : "%r1");
  else snprintf(op, sizeof op, "[%%rd1], %llu;", (unsigned long long)imm);
  snprintf(buf, sizeof buf,
           ".version 8.3\n.target sm_90a\n.address_size 64\n"
           ".visible .entry rep(.param .u64 p_map, .param .u64 p_val) {\n"
           " .reg .b64 %%rd<4>; .reg .b32 %%r<2>;\n"
           " ld.param.u64 %%rd1, [p_map]; ld.param.u64 %%rd2, [p_val]; cvt.u32.u64 %%r1, %%rd2;\n"
           " tensormap.replace.tile.%s.global.b1024.%s %s\n ret;\n}\n",
           FIELD[field], ty, op);
  return buf;
}

static std::vector<uint64_t> values_for(int field) {
  switch (field) {
    case 0: return {0, 16, 0x1000, 0x7f0000001230ull, (1ull << 47) - 16, 8, 1, 0xFFFFFFFFFFFFFFF0ull};
    case 1: return {0, 1, 2, 3, 4, 5, 6, 7};
    case 2: return {0, 1, 2, 16, 255, 256, 257, 512};
    case 3: return {0, 1, 2, 1000, 65536, 1ull << 31, 0xFFFFFFFFull};
    case 4: return {0, 16, 32, 48, 1024, 1ull << 36, (1ull << 40) - 16, 1ull << 40, 8, 17};
    case 5: return {0, 1, 2, 7, 8, 9};
    default: return {};
  }
}
static int ncodes(int field) { return field == 6 ? 16 : field == 7 ? 4 : field == 8 ? 5 : field == 9 ? 2 : 4; }

static void phase_replace(void* arg) {
  int field = (int)(intptr_t)arg;
  init_ctx();
  // base maps: encoded variety + a zeroed block
  std::vector<std::vector<uint8_t>> bases;
  bases.push_back(std::vector<uint8_t>(128, 0));
  rng_state = 777;
  while (bases.size() < 21) {
    EncRec c; make_case(c, false); encode(c);
    if (c.result == 0) bases.push_back(std::vector<uint8_t>(c.map, c.map + 128));
  }
  std::vector<RepRec> recs;
  CUdeviceptr slot; CK(cuMemAlloc(&slot, 128));
  int nord = field == 4 ? 4 : (field >= 2 && field <= 5) ? 5 : 1;
  std::vector<std::pair<int, uint64_t>> jobs;  // (ord, value or code)
  if (field <= 5) { for (int o = 0; o < nord; o++) for (auto v : values_for(field)) jobs.push_back({o, v}); }
  else for (int code = 0; code < ncodes(field); code++) jobs.push_back({0, (uint64_t)code});
  CUmodule mod = 0; CUfunction fn = 0; int cur_ord = -1; uint64_t cur_imm = ~0ull; CUresult lr = CUDA_SUCCESS;
  for (auto& j : jobs) {
    bool imm = field >= 6;
    if (j.first != cur_ord || (imm && j.second != cur_imm)) {
      if (mod) cuModuleUnload(mod);
      mod = 0;
      std::string ptx = replace_ptx(field, j.first, j.second);
      lr = cuModuleLoadData(&mod, ptx.c_str());
      if (lr == CUDA_SUCCESS) CK(cuModuleGetFunction(&fn, mod, "rep"));
      cur_ord = j.first; cur_imm = j.second;
    }
    for (size_t b = 0; b < bases.size(); b++) {
      RepRec r; memset(&r, 0, sizeof r);
      r.base = (int)b; r.field = field; r.ord = j.first; r.value = j.second;
      memcpy(r.before, bases[b].data(), 128);
      if (lr != CUDA_SUCCESS) { r.loaded = -(int)lr; recs.push_back(r); continue; }
      CK(cuMemcpyHtoD(slot, r.before, 128));
      uint64_t v = j.second; void* args[] = {&slot, &v};
      CUresult e = cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, 0, args, 0);
      if (e == CUDA_SUCCESS) e = cuCtxSynchronize();
      if (e != CUDA_SUCCESS) { r.loaded = -1000 - (int)e; recs.push_back(r); break; }
      CK(cuMemcpyDtoH(r.after, slot, 128));
      r.loaded = 1;
      recs.push_back(r);
    }
  }
  char name[256]; snprintf(name, sizeof name, "%s/replace_%02d.bin", OUT.c_str(), field);
  FILE* f = fopen(name, "wb"); fwrite(recs.data(), sizeof(RepRec), recs.size(), f); fclose(f);
  printf("replace %s: %zu records\n", FIELD[field], recs.size());
}

// --------------------------------------------------------------- 3. cp_fenceproxy and TMA loads
static const char* TMA_PTX =
    ".version 8.3\n.target sm_90a\n.address_size 64\n"
    ".visible .entry cpfp(.param .u64 p_dst, .param .u64 p_src) {\n"
    " .shared .align 128 .b8 sm[128];\n .reg .b64 %rd<8>; .reg .b32 %r<4>;\n"
    " ld.param.u64 %rd1, [p_dst]; ld.param.u64 %rd2, [p_src]; mov.u32 %r1, %tid.x;\n"
    " mul.wide.u32 %rd3, %r1, 4; add.s64 %rd4, %rd2, %rd3; ld.global.u32 %r2, [%rd4];\n"
    " mov.u64 %rd5, sm; cvt.u32.u64 %r3, %rd3; st.shared.u32 [sm+0], 0; add.s64 %rd6, %rd5, %rd3;\n"
    " st.shared.u32 [%rd6], %r2; bar.sync 0;\n"
    " tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [%rd1], [sm], 128;\n"
    " ret;\n}\n"
    ".visible .entry tma(.param .u64 p_map, .param .u64 p_out, .param .u32 c0, .param .u32 c1, .param .u32 nbytes) {\n"
    " .shared .align 1024 .b8 smem[8192];\n .shared .align 8 .b64 bar;\n"
    " .reg .b64 %rd<8>; .reg .b32 %r<10>; .reg .pred %p<3>;\n"
    " ld.param.u64 %rd1, [p_map]; ld.param.u64 %rd2, [p_out]; ld.param.u32 %r1, [c0]; ld.param.u32 %r2, [c1];\n"
    " ld.param.u32 %r3, [nbytes]; mov.u32 %r4, %tid.x; setp.ne.u32 %p1, %r4, 0; @%p1 bra DONE;\n"
    " fence.proxy.tensormap::generic.acquire.gpu [%rd1], 128;\n"
    " mbarrier.init.shared.b64 [bar], 1; fence.proxy.async.shared::cta;\n"
    " mbarrier.arrive.expect_tx.shared.b64 %rd3, [bar], %r3;\n"
    " cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [smem], [%rd1, {%r1, %r2}], [bar];\n"
    "WAIT:\n mbarrier.try_wait.parity.shared.b64 %p2, [bar], 0; @!%p2 bra WAIT;\n"
    " mov.u32 %r5, 0;\nCOPY:\n cvt.u64.u32 %rd4, %r5; mov.u64 %rd5, smem; add.s64 %rd5, %rd5, %rd4;\n"
    " ld.shared.u32 %r6, [%rd5]; add.s64 %rd6, %rd2, %rd4; st.global.u32 [%rd6], %r6;\n"
    " add.u32 %r5, %r5, 4; setp.lt.u32 %p2, %r5, 8192; @%p2 bra COPY;\n"
    "DONE:\n ret;\n}\n";

#pragma pack(push, 1)
struct TmaRec {
  int32_t kind, result, c0, c1;   // kind 0: cp_fenceproxy; 1..: TMA variants
  uint8_t map[128];
  uint8_t out[8192];
};
#pragma pack(pop)

static void tma_case(void* arg) {
  int variant = (int)(intptr_t)arg;
  init_ctx();
  CUmodule mod; CK(cuModuleLoadData(&mod, TMA_PTX));
  CUfunction cpfp, tma; CK(cuModuleGetFunction(&cpfp, mod, "cpfp")); CK(cuModuleGetFunction(&tma, mod, "tma"));
  TmaRec r; memset(&r, 0, sizeof r);
  r.kind = variant;
  // a bf16 tensor 96 x 64 with known values, a 2-D map, box 32 x 16, swizzle 64B
  const int W = 96, H = 64;
  std::vector<uint16_t> host(W * H);
  for (int i = 0; i < W * H; i++) host[i] = (uint16_t)(i * 2654435761u >> 16);
  CUdeviceptr g, mapd, out; CK(cuMemAlloc(&g, W * H * 2)); CK(cuMemAlloc(&mapd, 256)); CK(cuMemAlloc(&out, 8192));
  CK(cuMemcpyHtoD(g, host.data(), W * H * 2)); CK(cuMemsetD8(out, 0xEE, 8192));
  CUtensorMap m; cuuint64_t dims[2] = {W, H}, str[1] = {W * 2}; cuuint32_t box[2] = {32, 16}, es[2] = {1, 1};
  CK(cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, (void*)g, dims, str, box, es,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_64B,
                            CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  uint8_t* mb = (uint8_t*)&m;
  r.c0 = 32; r.c1 = 16;
  if (variant == 0) {  // cp_fenceproxy: shared -> global, 128 bytes
    uint8_t pat[128]; for (int i = 0; i < 128; i++) pat[i] = (uint8_t)(i * 7 + 3);
    CUdeviceptr src; CK(cuMemAlloc(&src, 128)); CK(cuMemcpyHtoD(src, pat, 128));
    CK(cuMemsetD8(mapd, 0, 256));
    void* a[] = {&mapd, &src};
    r.result = cuLaunchKernel(cpfp, 1, 1, 1, 32, 1, 1, 0, 0, a, 0);
    if (!r.result) r.result = cuCtxSynchronize();
    if (!r.result) CK(cuMemcpyDtoH(r.out, mapd, 256));
    memcpy(r.map, pat, 128);
  } else {
    uint8_t mm[128]; memcpy(mm, mb, 128);
    if (variant == 2) memset(mm + 64, 0, 64);          // words 8..15 zeroed
    if (variant == 3) memset(mm + 72, 0, 8);           // word 9 only
    if (variant == 4) memset(mm + 64, 0, 8);           // word 8 only
    if (variant == 5) { r.c0 = 40; r.c1 = 3; }         // unaligned inner coordinate: fault?
    if (variant == 6) { r.c0 = 80; r.c1 = 56; }        // OOB on both axes
    memcpy(r.map, mm, 128);
    CK(cuMemcpyHtoD(mapd, mm, 128));
    uint32_t c0 = r.c0, c1 = r.c1, nb = 32 * 16 * 2;
    void* a[] = {&mapd, &out, &c0, &c1, &nb};
    r.result = cuLaunchKernel(tma, 1, 1, 1, 32, 1, 1, 0, 0, a, 0);
    if (!r.result) r.result = cuCtxSynchronize();
    if (!r.result) CK(cuMemcpyDtoH(r.out, out, 8192));
  }
  char name[256]; snprintf(name, sizeof name, "%s/tma_%02d.bin", OUT.c_str(), variant);
  FILE* f = fopen(name, "wb"); fwrite(&r, sizeof r, 1, f); fclose(f);
  if (variant == 1) {   // the source tensor, for the replay
    FILE* g2 = fopen((OUT + "/tma_tensor.bin").c_str(), "wb"); fwrite(host.data(), 2, W * H, g2); fclose(g2);
  }
}

// ----------------------------------------------------------------------------- 4. host calls
static const char* HOST_PTX =
    ".version 8.3\n.target sm_90a\n.address_size 64\n"
    ".visible .entry k(.param .u64 p) { .reg .b64 %rd<3>; .reg .b32 %r<2>;\n"
    " ld.param.u64 %rd1, [p]; mov.u32 %r1, %tid.x; st.global.u32 [%rd1], %r1; ret; }\n"
    ".visible .entry kb(.param .u64 p) .maxntid 128, 1, 1 { ret; }\n"
    ".visible .entry kc(.param .u64 p) .reqnctapercluster 2, 1, 1 { ret; }\n"
    ".visible .entry ke(.param .u64 p) .explicitcluster { ret; }\n"
    ".visible .entry kt(.param .u64 p) { trap; ret; }\n"
    ".visible .entry kbad(.param .u64 p) { .reg .b64 %rd<3>; .reg .b32 %r<2>;\n"
    " mov.u64 %rd1, 0x10; mov.u32 %r1, 1; st.global.u32 [%rd1], %r1; ret; }\n"
    ".visible .entry kmis(.param .u64 p) { .reg .b64 %rd<3>; .reg .b32 %r<2>;\n"
    " ld.param.u64 %rd1, [p]; add.s64 %rd1, %rd1, 2; mov.u32 %r1, 1; st.global.u32 [%rd1], %r1; ret; }\n";

static int host_case_id;
static void host_case(void*) {
  int id = host_case_id;
  CUresult r = CUDA_SUCCESS, r2 = CUDA_SUCCESS;
  if (id == 0) { CUdeviceptr p; r = cuMemAlloc(&p, 16); goto done; }               // before cuInit
  if (id == 1) { r = cuInit(1); goto done; }
  if (id == 2) { CK(cuInit(0)); CUdeviceptr p; r = cuMemAlloc(&p, 16); goto done; } // no context
  if (id == 3) { CK(cuInit(0)); CUdevice d; r = cuDeviceGet(&d, 7); goto done; }
  {
    init_ctx();
    CUmodule mod; CK(cuModuleLoadData(&mod, HOST_PTX));
    CUfunction k, kb, kc, ke, kt, kbad, kmis;
    CK(cuModuleGetFunction(&k, mod, "k")); CK(cuModuleGetFunction(&kb, mod, "kb"));
    CK(cuModuleGetFunction(&kc, mod, "kc")); CK(cuModuleGetFunction(&ke, mod, "ke"));
    CK(cuModuleGetFunction(&kt, mod, "kt")); CK(cuModuleGetFunction(&kbad, mod, "kbad"));
    CK(cuModuleGetFunction(&kmis, mod, "kmis"));
    CUdeviceptr p; CK(cuMemAlloc(&p, 4096));
    void* args[] = {&p};
    CUlaunchConfig cfg; memset(&cfg, 0, sizeof cfg);
    CUlaunchAttribute at[2]; memset(at, 0, sizeof at);
    cfg.gridDimX = 16; cfg.gridDimY = 1; cfg.gridDimZ = 1; cfg.blockDimX = 32; cfg.blockDimY = 1; cfg.blockDimZ = 1;
    cfg.attrs = at; cfg.numAttrs = 1; at[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    at[0].value.clusterDim.x = 16; at[0].value.clusterDim.y = 1; at[0].value.clusterDim.z = 1;
    char hostbuf[64];
    switch (id) {
      case 10: { CUdeviceptr q; CK(cuMemAlloc(&q, 64)); CK(cuMemFree(q)); r = cuMemFree(q); break; }
      case 11: r = cuMemFree(0); break;
      case 12: r = cuMemFree(p + 16); break;
      case 13: { CUdeviceptr q; r = cuMemAlloc(&q, 0); break; }
      case 14: r = cuMemcpyHtoD(p + 4096 - 16, hostbuf, 32); break;
      case 15: { CUdeviceptr q; CK(cuMemAlloc(&q, 64)); CK(cuMemFree(q)); r = cuMemcpyDtoH(hostbuf, q, 16); break; }
      case 16: { CUfunction f; r = cuModuleGetFunction(&f, mod, "nope"); break; }
      case 17: r = cuLaunchKernel(k, 1, 1, 1, 32, 1, 1, 60000, 0, args, 0); break;
      case 18: r = cuFuncSetAttribute(k, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 232448 + 1); break;
      case 19: CK(cuFuncSetAttribute(k, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 100000));
               r = cuLaunchKernel(k, 1, 1, 1, 32, 1, 1, 100001, 0, args, 0); break;
      case 20: r = cuLaunchKernelEx(&cfg, k, args, 0); break;                       // cluster 16
      case 21: CK(cuFuncSetAttribute(k, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1));
               r = cuLaunchKernelEx(&cfg, k, args, 0); if (!r) r = cuCtxSynchronize(); break;
      case 22: CK(cuFuncSetAttribute(k, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1));
               cfg.gridDimX = 32; at[0].value.clusterDim.x = 32; r = cuLaunchKernelEx(&cfg, k, args, 0); break;
      case 23: cfg.gridDimX = 6; at[0].value.clusterDim.x = 4; r = cuLaunchKernelEx(&cfg, k, args, 0); break;
      case 24: at[0].value.clusterDim.x = 4; r = cuLaunchKernelEx(&cfg, kc, args, 0); break;   // != .reqnctapercluster 2
      case 25: r = cuLaunchKernel(kc, 3, 1, 1, 32, 1, 1, 0, 0, args, 0); if (!r) r = cuCtxSynchronize(); break;
      case 26: r = cuLaunchKernel(k, 1, 1, 1, 1025, 1, 1, 0, 0, args, 0); break;
      case 27: r = cuLaunchKernel(kb, 1, 1, 1, 256, 1, 1, 0, 0, args, 0); break;      // > .maxntid
      case 28: r = cuLaunchKernel(k, 1, 1, 1, 1, 1, 65, 0, 0, args, 0); break;
      case 29: r = cuLaunchKernel(k, 1, 65536, 1, 1, 1, 1, 0, 0, args, 0); break;
      case 30: { CUmodule m2; r = cuModuleLoadData(&m2, ".version 8.6\n.target sm_100a\n.address_size 64\n.visible .entry z() { ret; }\n"); break; }
      case 31: { CUmodule m2; r = cuModuleLoadData(&m2, ".version 9.9\n.target sm_90\n.address_size 64\n.visible .entry z() { ret; }\n"); break; }
      case 32: { CUmodule m2; r = cuModuleLoadData(&m2, ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry z() { bogus; }\n"); break; }
      case 33: { CUevent a, b; CK(cuEventCreate(&a, 0)); CK(cuEventCreate(&b, 0)); float ms; r = cuEventElapsedTime(&ms, a, b); break; }
      case 34: { CUevent a, b; CK(cuEventCreate(&a, 0)); CK(cuEventCreate(&b, CU_EVENT_DISABLE_TIMING));
                 CK(cuEventRecord(a, 0)); CK(cuEventRecord(b, 0)); CK(cuCtxSynchronize()); float ms; r = cuEventElapsedTime(&ms, a, b); break; }
      case 35: { CUdeviceptr q; r = cuMemHostGetDevicePointer(&q, hostbuf, 0); break; }
      case 36: r = cuMemFreeHost((void*)p); break;
      case 37: { int v; r = cuFuncGetAttribute(&v, (CUfunction_attribute)99, k); break; }
      case 38: { int v; r = cuDeviceGetAttribute(&v, (CUdevice_attribute)9999, 0); break; }
      case 39: { CUstream s; CK(cuStreamCreate(&s, 0)); CK(cuStreamDestroy(s)); r = cuStreamDestroy((CUstream)0); break; }
      case 40: { size_t sz = 8; void* ex[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &p, CU_LAUNCH_PARAM_BUFFER_SIZE, &sz, CU_LAUNCH_PARAM_END};
                 r = cuLaunchKernel(k, 1, 1, 1, 32, 1, 1, 0, 0, args, ex); break; }
      case 41: r = cuLaunchKernel(kbad, 1, 1, 1, 32, 1, 1, 0, 0, args, 0); if (!r) r = cuCtxSynchronize();
               { CUdeviceptr q; r2 = cuMemAlloc(&q, 16); } break;               // sticky?
      case 42: r = cuLaunchKernel(kt, 1, 1, 1, 32, 1, 1, 0, 0, args, 0); if (!r) r = cuCtxSynchronize(); break;
      case 43: r = cuLaunchKernel(kmis, 1, 1, 1, 1, 1, 1, 0, 0, args, 0); if (!r) r = cuCtxSynchronize(); break;
      case 44: r = cuLaunchKernel(ke, 2, 1, 1, 32, 1, 1, 0, 0, args, 0); if (!r) r = cuCtxSynchronize(); break;
      case 45: { CUlaunchAttribute c2; memset(&c2, 0, sizeof c2); c2.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE; c2.value.cooperative = 1;
                 cfg.attrs = &c2; cfg.gridDimX = 100000; r = cuLaunchKernelEx(&cfg, k, args, 0); break; }
      case 46: { int v; CK(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, k)); r = (CUresult)0; r2 = (CUresult)v; break; }
      case 47: { int v; CK(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, k)); r2 = (CUresult)v; break; }
      case 48: { CUdeviceptr q; r = cuMemAlloc(&q, 1ull << 50); break; }
      case 49: { CUdeviceptr q; CK(cuMemAlloc(&q, 1000)); r2 = (CUresult)(q % 4096); CUdeviceptr q2; CK(cuMemAlloc(&q2, 1000)); r = (CUresult)((q2 - q) & 0x7fffffff); break; }
      case 50: { CUdeviceptr q; void* hp; CK(cuMemHostAlloc(&hp, 64, CU_MEMHOSTALLOC_DEVICEMAP)); CK(cuMemHostGetDevicePointer(&q, hp, 0)); r = (CUresult)(q == (CUdeviceptr)hp); break; }
      case 51: { CUtensorMap m; cuuint64_t d[1] = {64}; cuuint32_t b[1] = {64}, e[1] = {1};
                 r = cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, (void*)0, d, nullptr, b, e, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                            CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE); break; }
      case 52: { CUmodule m2; CK(cuModuleLoadData(&m2, HOST_PTX)); CK(cuModuleUnload(m2)); CUfunction f; r = cuModuleGetFunction(&f, m2, "k"); break; }
      case 53: { r = cuLaunchKernel(k, 1, 1, 1, 32, 1, 1, 0, 0, nullptr, 0); if (!r) r = cuCtxSynchronize(); break; }
      default: r = (CUresult)-1;
    }
  }
done:
  printf("host %d %d %d\n", id, (int)r, (int)r2);
}

int main(int argc, char** argv) {
  OUT = argc > 1 ? argv[1] : ".";
  run_child("encode", phase_encode, nullptr);
  for (int f = 0; f < 11; f++) run_child(FIELD[f], phase_replace, (void*)(intptr_t)f);
  for (int v = 0; v < 7; v++) run_child("tma", tma_case, (void*)(intptr_t)v);
  FILE* hf = freopen((OUT + "/host.txt").c_str(), "w", stdout);
  (void)hf;
  int ids[] = {0, 1, 2, 3, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30,
               31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53};
  for (int id : ids) {
    host_case_id = id;
    int code = run_child("host", host_case, nullptr);
    if (code) printf("host %d crashed %d\n", id, code);
  }
  return 0;
}
