#include <cuda_runtime.h>
#include "cuda/cuda_check.cuh"

__global__ void add_one(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}

extern "C" int cudacmk_add_one(int n) {
  float* x = nullptr;
  CHECK(cudaMalloc(&x, n * sizeof(float)));
  add_one<<<(n + 255) / 256, 256>>>(x, n);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(x));
  return 0;
}
