// A shared-memory exchange between the two warps of a block: each thread stores its input,
// then reads the word the thread 32 places on stored. Built with -DMUTANT the __syncthreads()
// between the store and the load is missing: a read of shared memory another warp writes with
// nothing ordering the two (compute-sanitizer's racecheck class; ptxsim: race-shared).
#include <cstdio>

__global__ void exchange(const int* in, int* out) {
    __shared__ int buf[64];
    int t = threadIdx.x;
    buf[t] = in[t];
#ifndef MUTANT
    __syncthreads();
#endif
    out[t] = buf[(t + 32) % 64];
}

int main() {
    int h_in[64], h_out[64];
    for (int i = 0; i < 64; ++i) h_in[i] = 100 + i;
    int *d_in, *d_out;
    cudaMalloc(&d_in, sizeof h_in);
    cudaMalloc(&d_out, sizeof h_out);
    cudaMemcpy(d_in, h_in, sizeof h_in, cudaMemcpyHostToDevice);
    exchange<<<1, 64>>>(d_in, d_out);
    cudaError_t e = cudaDeviceSynchronize();
    cudaMemcpy(h_out, d_out, sizeof h_out, cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int i = 0; i < 64; ++i) bad += h_out[i] != 100 + (i + 32) % 64;
    printf("%s mismatches %d\n", cudaGetErrorString(e), bad);
    return 0;
}
