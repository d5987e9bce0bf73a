// A chain of elementwise ops (src/ops/chain/): the code generated from the chain's plan
// (codegen.rs, cuda.rs) comes before this file as three definitions: CHAIN_INPUTS, the
// parameters `in0`, `in1`, ... (`const float*`, or `const unsigned short*` for f16 / bf16,
// each advanced to its view's first element); CHAIN_OUT, the output's element type; and
// CHAIN_BODY, the statements that compute `v0`, `v1`, ... for element i, ending with
// CHAIN_RESULT, the output value. Inputs are addressed through `ChainParams` (the output's
// shape, each input's strides and period).

__device__ __forceinline__ float bf16_to_f32(u32 h) { return __uint_as_float(h << 16); }

// f32 values rounded to f16 and bf16, to nearest even.
__device__ __forceinline__ float round_f16(float v) { return f16_to_f32(f32_to_f16(v)); }
__device__ __forceinline__ float round_bf16(float v) { return bf16_to_f32(f32_to_bf16(v)); }

// Element offsets of input k's view: contiguous, a repeated block, or strided.
__device__ __forceinline__ IDX repeated_at(const ChainParams& p, int k, IDX i) {
    return i % (IDX)p.periods[k];
}
__device__ __forceinline__ IDX strided_at(const ChainParams& p, int k, IDX i) {
    return strided_offset(i, p.rank, p.shape, p.strides[k]);
}

// The output's element: f32, or the 16 bits of an f16 / bf16.
__device__ __forceinline__ void store(float* out, IDX i, float v) { out[i] = v; }
__device__ __forceinline__ void store(unsigned short* out, IDX i, float v) {
    out[i] = (unsigned short)(CHAIN_OUT_DTYPE == 3 ? f32_to_f16(v) : f32_to_bf16(v));
}

extern "C" __global__ void chain_main(CHAIN_INPUTS, CHAIN_OUT* __restrict__ out, ChainParams p) {
    const IDX n = (IDX)p.n;
    for (IDX i = grid_start(); i < n; i += grid_step()) {
        CHAIN_BODY
        store(out, i, CHAIN_RESULT);
    }
}
