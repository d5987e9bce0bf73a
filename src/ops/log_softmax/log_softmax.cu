// log_softmax's epilogue to softmax.cu: x - (max + log(sum)).
__device__ __forceinline__ float row_factor(float m, float sum) { return m + logf(sum); }
__device__ __forceinline__ float finish(float v, float m, float factor) { return v - factor; }
