// A function of each row's softmax statistics over rows of `cols` elements, one block per row:
// row r = (a, b) = (r / nb, r % nb) starts at a * x_a + b * x_b in x and steps x_col (strided
// views are read in place), and likewise in out (`Steps` in mod.rs). One pass keeps a running
// (maximum, sum of exp(x - maximum)) per
// thread ("online softmax"); the block merges them with warp shuffles; a second pass writes
// finish(x, max, row_factor(max, sum)). The op's epilogue, prepended, defines those two
// functions: softmax writes exp(x - max) / sum, log_softmax x - max - log(sum).
// softmax_cached_main does the same from registers: for rows of contiguous, 16-byte aligned
// float4s, at most ROW_VECS of them per thread, each element is read once.

#define BLOCK 256
#ifndef ROW_VECS
#define ROW_VECS 1
#endif

__device__ __forceinline__ float max_nan(float a, float b) {
    return (isnan(a) || isnan(b)) ? nan_f32() : fmaxf(a, b); }

// Merge two (max, sum) pairs.
__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
    const float mm = max_nan(m, m2);
    // Equal maxima skip the exp, so -inf - -inf never makes a NaN.
    const float a = m == mm ? s : s * expf(m - mm);
    const float b = m2 == mm ? s2 : s2 * expf(m2 - mm);
    m = mm;
    s = a + b;
}

extern "C" __global__ void __launch_bounds__(BLOCK) softmax_main(
    const float* __restrict__ x, float* __restrict__ out, SoftmaxParams p) {
    __shared__ float sm[BLOCK / 32];
    __shared__ float ss[BLOCK / 32];
    const IDX cols = (IDX)p.cols;
    const u32 lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (IDX row = blockIdx.x; row < (IDX)p.rows; row += gridDim.x) {
        const IDX a = row / (IDX)p.nb, b = row % (IDX)p.nb;
        const float* xr = x + a * (IDX)p.x_a + b * (IDX)p.x_b;
        float* orow = out + a * (IDX)p.out_a + b * (IDX)p.out_b;
        const IDX xs = (IDX)p.x_col, os = (IDX)p.out_col;
        float m = -inf_f32(), s = 0.0f;
        for (IDX j = threadIdx.x; j < cols; j += BLOCK) merge(m, s, xr[j * xs], 1.0f);
        for (int o = 16; o > 0; o >>= 1) merge(m, s, __shfl_down_sync(0xffffffffu, m, o),
                __shfl_down_sync(0xffffffffu, s, o));
        if (lane == 0) {
            sm[warp] = m;
            ss[warp] = s;
        }
        __syncthreads();
        if (warp == 0) {
            m = lane < BLOCK / 32 ? sm[lane] : -inf_f32();
            s = lane < BLOCK / 32 ? ss[lane] : 0.0f;
            for (int o = 16; o > 0; o >>= 1) merge(m, s, __shfl_down_sync(0xffffffffu, m, o),
                    __shfl_down_sync(0xffffffffu, s, o));
            if (lane == 0) {
                sm[0] = m;
                ss[0] = s;
            }
        }
        __syncthreads();
        m = sm[0];
        // A +inf maximum makes exp(x - max) NaN for that element, as in the reference.
        const float factor = m == inf_f32() ? nan_f32() : row_factor(m, ss[0]);
        for (IDX j = threadIdx.x; j < cols; j += BLOCK) orow[j * os] = finish(xr[j * xs], m,
                factor);
        __syncthreads();
    }
}

// The block's merged (max, sum) pair, returned to every thread.
__device__ __forceinline__ void block_merge(float& m, float& s) {
    __shared__ float sm[BLOCK / 32];
    __shared__ float ss[BLOCK / 32];
    const u32 lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int o = 16; o > 0; o >>= 1) {
        merge(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
    }
    if (lane == 0) {
        sm[warp] = m;
        ss[warp] = s;
    }
    __syncthreads();
    m = -inf_f32();
    s = 0.0f;
    for (int w = 0; w < BLOCK / 32; ++w) merge(m, s, sm[w], ss[w]);
    __syncthreads();
}

// exp(v - m), where v == m counts 1 (as `merge` does, so -inf rows agree with softmax_main).
__device__ __forceinline__ float term(float v, float m) { return v == m ? 1.0f : expf(v - m); }

extern "C" __global__ void __launch_bounds__(BLOCK)
    softmax_cached_main(const float* __restrict__ x, float* __restrict__ out, SoftmaxParams p) {
    const IDX cols4 = (IDX)p.cols / 4;
    for (IDX row = blockIdx.x; row < (IDX)p.rows; row += gridDim.x) {
        const IDX a = row / (IDX)p.nb, b = row % (IDX)p.nb;
        const float4* xr = (const float4*)(x + a * (IDX)p.x_a + b * (IDX)p.x_b);
        float4* orow = (float4*)(out + a * (IDX)p.out_a + b * (IDX)p.out_b);
        float4 v[ROW_VECS];
        float m = -inf_f32();
#pragma unroll
        for (int k = 0; k < ROW_VECS; ++k) {
            const IDX j = threadIdx.x + (IDX)k * BLOCK;
            v[k] = j < cols4 ? xr[j] : make_float4(-inf_f32(), -inf_f32(), -inf_f32(), -inf_f32());
            m = max_nan(max_nan(m, v[k].x), max_nan(v[k].y, max_nan(v[k].z, v[k].w)));
        }
        float s = 0.0f;
#pragma unroll
        for (int k = 0; k < ROW_VECS; ++k) {
            if (threadIdx.x + (IDX)k * BLOCK < cols4) {
                s += term(v[k].x, m) + term(v[k].y, m) + term(v[k].z, m) + term(v[k].w, m);
            }
        }
        block_merge(m, s);
        // A +inf maximum makes exp(x - max) NaN for that element, as in the reference.
        const float factor = m == inf_f32() ? nan_f32() : row_factor(m, s);
#pragma unroll
        for (int k = 0; k < ROW_VECS; ++k) {
            const IDX j = threadIdx.x + (IDX)k * BLOCK;
            if (j < cols4) {
                orow[j] = make_float4(finish(v[k].x, m, factor), finish(v[k].y, m, factor),
                                      finish(v[k].z, m, factor), finish(v[k].w, m, factor));
            }
        }
    }
}
