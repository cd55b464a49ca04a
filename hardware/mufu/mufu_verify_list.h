// verify kernels and driver for mufu.cu (WITH_MODEL)
VER(rcp_ftz) VER(rcp) VER(rsqrt_ftz) VER(rsqrt) VER(sqrt_ftz) VER(sqrt) VER(ex2_ftz) VER(ex2)
VER(lg2_ftz) VER(lg2)
typedef void (*VerK)(Tabs, unsigned long long*, unsigned*);
static VerK VK[] = {verify_rcp_ftz, verify_rcp, verify_rsqrt_ftz, verify_rsqrt, verify_sqrt_ftz,
  verify_sqrt, verify_ex2_ftz, verify_ex2, verify_lg2_ftz, verify_lg2};

static const unsigned* load_table(const char* dir, const char* name, size_t n) {
  char path[512]; snprintf(path, sizeof path, "%s/%s.bin", dir, name);
  FILE* f = fopen(path, "rb"); if (!f) { fprintf(stderr, "no %s\n", path); exit(4); }
  std::vector<unsigned> h(n); if (fread(h.data(), 4, n, f) != n) { fprintf(stderr, "short %s\n", path); exit(4); }
  fclose(f);
  unsigned* d; CK(cudaMalloc(&d, n * 4)); CK(cudaMemcpy(d, h.data(), n * 4, cudaMemcpyHostToDevice));
  return d;
}

static int verify_main(int op, const char* dir, const char* name) {
  static Tabs t; static bool loaded = false;
  if (!loaded) {
    const size_t P = 1u << 23;
    t.rcp = load_table(dir, "rcp", P); t.rsqrt = load_table(dir, "rsqrt", 2 * P);
    t.sqrt = load_table(dir, "sqrt", 2 * P); t.ex2 = load_table(dir, "ex2", P);
    t.lg2_e0 = load_table(dir, "lg2_e0", P); t.lg2_em1 = load_table(dir, "lg2_em1", P);
    loaded = true;
  }
  unsigned long long* cnt; unsigned* first;
  CK(cudaMalloc(&cnt, 513 * 8)); CK(cudaMalloc(&first, 48 * 4));
  CK(cudaMemset(cnt, 0, 513 * 8)); CK(cudaMemset(first, 0, 48 * 4));
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b); cudaEventRecord(a);
  VK[op]<<<1u << 24, 256>>>(t, cnt, first);                 // 2^32 threads, one input each
  CK(cudaGetLastError()); cudaEventRecord(b); CK(cudaDeviceSynchronize());
  float ms; cudaEventElapsedTime(&ms, a, b);
  unsigned long long h[513]; unsigned fh[48];
  CK(cudaMemcpy(h, cnt, sizeof h, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(fh, first, sizeof fh, cudaMemcpyDeviceToHost));
  printf("VERIFY %-22s inputs 4294967296 mismatches %llu (%.1f ms)\n", name, h[512], ms);
  int shown = 0;
  for (int k = 0; k < 512 && shown < 24; k++)
    if (h[k]) { printf("  sign %d exponent %3d: %llu\n", k >> 8, k & 255, h[k]); shown++; }
  for (unsigned k = 0; k < 16 && k < h[512]; k++)
    printf("  a=0x%08x hw=0x%08x model=0x%08x\n", fh[3 * k], fh[3 * k + 1], fh[3 * k + 2]);
  return 0;
}
