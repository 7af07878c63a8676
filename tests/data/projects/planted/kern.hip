#include <hip/hip_runtime.h>
__global__ void scale(float* x, float a) { x[threadIdx.x] *= a; }
extern "C" int planted_launch(float* x) { hipLaunchKernelGGL(scale, 1, 32, 0, 0, x, 2.0f); return 0; }
