// Layer / RMS normalisation of rows of `cols` elements of x (row r starts at
// (r / nb) * x_a + (r % nb) * x_b and steps x_col: strided views are read in place) into a
// contiguous [rows, cols] output, one block per
// row: the row mean (layer norm), then the mean of squared deviations (or of squares for
// RMS norm), then `(x - mean) * rsqrt(var + eps) * weight + bias`, then the activation.
// Sums are accumulated in double.
// norm_cached_main does the same from registers: for rows of contiguous, 16-byte aligned
// float4s (weight, bias and output too), at most ROW_VECS of them per thread, each element is
// read once.
//
// KIND is `NormKind::code` (0 layer, 1 rms); ACT a `UnaryOp::code` (0: none); HAS_WEIGHT and
// HAS_BIAS say whether those pointers are used.

#ifndef KIND
#define KIND 0
#endif
#ifndef ACT
#define ACT 0
#endif
#ifndef HAS_WEIGHT
#define HAS_WEIGHT 0
#endif
#ifndef HAS_BIAS
#define HAS_BIAS 0
#endif

#define BLOCK 256
#ifndef ROW_VECS
#define ROW_VECS 1
#endif

// Sum over the block, returned to every thread.
__device__ __forceinline__ double block_sum(double v) {
    __shared__ double partial[BLOCK / 32];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    const u32 lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    double total = 0.0;
    for (int w = 0; w < BLOCK / 32; ++w) total += partial[w];
    __syncthreads();
    return total;
}

extern "C" __global__ void __launch_bounds__(BLOCK) norm_main(
    const float* __restrict__ x, const float* __restrict__ weight, const float* __restrict__ bias,
    float* __restrict__ out, NormParams p) {
    const IDX cols = (IDX)p.cols;
    const double n = (double)p.cols;
    for (IDX row = blockIdx.x; row < (IDX)p.rows; row += gridDim.x) {
        const float* xr = x + (row / (IDX)p.nb) * (IDX)p.x_a + (row % (IDX)p.nb) * (IDX)p.x_b;
        const IDX xs = (IDX)p.x_col;
        double mean = 0.0;
        if (KIND == 0) {
            double s = 0.0;
            for (IDX j = threadIdx.x; j < cols; j += BLOCK) s += (double)xr[j * xs];
            mean = block_sum(s) / n;
        }
        double ss = 0.0;
        for (IDX j = threadIdx.x; j < cols; j += BLOCK) {
            const double d = (double)xr[j * xs] - mean;
            ss += d * d;
        }
        const double inv = 1.0 / sqrt(block_sum(ss) / n + (double)p.eps);
        for (IDX j = threadIdx.x; j < cols; j += BLOCK) {
            float y = (float)(((double)xr[j * xs] - mean) * inv);
            if (HAS_WEIGHT) y *= weight[j];
            if (HAS_BIAS) y += bias[j];
            out[row * cols + j] = unary_op<ACT>(y);
        }
    }
}

__device__ __forceinline__ float4 norm4(float4 v, double mean, double inv, const float4* weight4,
                                        const float4* bias4, IDX j) {
    float y[4] = {(float)(((double)v.x - mean) * inv), (float)(((double)v.y - mean) * inv),
                  (float)(((double)v.z - mean) * inv), (float)(((double)v.w - mean) * inv)};
    if (HAS_WEIGHT) {
        const float4 w = weight4[j];
        y[0] *= w.x, y[1] *= w.y, y[2] *= w.z, y[3] *= w.w;
    }
    if (HAS_BIAS) {
        const float4 b = bias4[j];
        y[0] += b.x, y[1] += b.y, y[2] += b.z, y[3] += b.w;
    }
    return make_float4(unary_op<ACT>(y[0]), unary_op<ACT>(y[1]), unary_op<ACT>(y[2]),
                       unary_op<ACT>(y[3]));
}

extern "C" __global__ void __launch_bounds__(BLOCK)
    norm_cached_main(const float* __restrict__ x, const float* __restrict__ weight,
                     const float* __restrict__ bias, float* __restrict__ out, NormParams p) {
    const IDX cols4 = (IDX)p.cols / 4;
    const double n = (double)p.cols;
    for (IDX row = blockIdx.x; row < (IDX)p.rows; row += gridDim.x) {
        const IDX start = (row / (IDX)p.nb) * (IDX)p.x_a + (row % (IDX)p.nb) * (IDX)p.x_b;
        const float4* xr = (const float4*)(x + start);
        float4 v[ROW_VECS];
        double s = 0.0;
#pragma unroll
        for (int k = 0; k < ROW_VECS; ++k) {
            const IDX j = threadIdx.x + (IDX)k * BLOCK;
            v[k] = j < cols4 ? xr[j] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            s += ((double)v[k].x + (double)v[k].y) + ((double)v[k].z + (double)v[k].w);
        }
        const double mean = KIND == 0 ? block_sum(s) / n : 0.0;
        double ss = 0.0;
#pragma unroll
        for (int k = 0; k < ROW_VECS; ++k) {
            if (threadIdx.x + (IDX)k * BLOCK >= cols4) continue;
            const double d0 = (double)v[k].x - mean, d1 = (double)v[k].y - mean;
            const double d2 = (double)v[k].z - mean, d3 = (double)v[k].w - mean;
            ss += (d0 * d0 + d1 * d1) + (d2 * d2 + d3 * d3);
        }
        const double inv = 1.0 / sqrt(block_sum(ss) / n + (double)p.eps);
        float4* orow = (float4*)(out + row * (IDX)p.cols);
#pragma unroll
        for (int k = 0; k < ROW_VECS; ++k) {
            const IDX j = threadIdx.x + (IDX)k * BLOCK;
            if (j < cols4) {
                orow[j] = norm4(v[k], mean, inv, (const float4*)weight, (const float4*)bias, j);
            }
        }
    }
}
