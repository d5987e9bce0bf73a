// Layer / RMS normalisation of rows of `cols` elements of x (row r starts at
// (r / nb) * x_a + (r % nb) * x_b and steps x_col: strided views are read in place) into a
// contiguous [rows, cols] output, one block per
// row: the row mean (layer norm), then the mean of squared deviations (or of squares for
// RMS norm), then `(x - mean) * rsqrt(var + eps) * weight + bias`, then the activation.
// Sums are accumulated in double.
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

extern "C" __global__ void __launch_bounds__(BLOCK) norm_main(const float* __restrict__ x, const float* __restrict__ weight,
                                                              const float* __restrict__ bias, float* __restrict__ out, NormParams p) {
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
