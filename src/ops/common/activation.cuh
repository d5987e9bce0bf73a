// Activation functions shared by the kernels that apply one (`UnaryOp::code` in
// src/ops/elementwise/mod.rs): prepended after common.cuh where a file needs it.

__device__ __forceinline__ float sigmoid_(float v) { return 1.0f / (1.0f + expf(-v)); }

template <int op>
__device__ __forceinline__ float unary_op(float v) {
    switch (op) {
        case 1: return -v;
        case 2: return fabsf(v);
        case 3: return expf(v);
        case 4: return logf(v);
        case 5: return sqrtf(v);
        case 6: return 1.0f / sqrtf(v);
        case 7: return sinf(v);
        case 8: return cosf(v);
        case 9: return tanhf(v);
        case 10: return sigmoid_(v);
        case 11: return v < 0.0f ? 0.0f : v;
        // 1 + erf(z) = erfc(-z) keeps full relative precision for negative v.
        case 12: return 0.5f * v * erfcf(-v * 0.70710678118654752f);
        // 1 + tanh(z) = 2 sigmoid(2z), likewise free of cancellation.
        case 13: {
            float z = 0.7978845608028654f * (v + 0.044715f * v * v * v);
            return v * sigmoid_(2.0f * z);
        }
        case 14: return v * sigmoid_(v);
        case 15: return erff(v);
        default: return v;
    }
}
