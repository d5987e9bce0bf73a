// log_softmax's epilogue to softmax.cu: (x - max) - log(sum). Subtracting the max first
// keeps x's rounding out: x - (max + log(sum)) rounds max + log(sum) at max's magnitude.
__device__ __forceinline__ float row_factor(float m, float sum) { return logf(sum); }
__device__ __forceinline__ float finish(float v, float m, float factor) { return (v - m) - factor; }
