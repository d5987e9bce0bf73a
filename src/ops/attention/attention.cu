// Scaled dot-product attention, one block of 64 threads per query row, the CUDA twin of
// shaders/attention.wgsl: keys 64 at a time, an online softmax (running maximum, sum and
// output rescaled per tile), so the [lq, lk] scores are never stored. Each thread owns up
// to four output columns (dv <= 256); the query row sits in shared memory (d <= 256).

#ifndef HAS_MASK
#define HAS_MASK 0
#endif

#define BLOCK 64

__device__ __forceinline__ IDX at(const View4& w, IDX b, IDX h, IDX i, IDX j) {
    return (IDX)w.offset + b * (IDX)w.strides[0] + h * (IDX)w.strides[1] + i * (IDX)w.strides[2]
            + j * (IDX)w.strides[3];
}

__device__ __forceinline__ float max_nan(float a, float b) {
    return (isnan(a) || isnan(b)) ? nan_f32() : fmaxf(a, b); }

extern "C" __global__ void __launch_bounds__(BLOCK) attention_main(
    const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
    const float* __restrict__ mask, float* __restrict__ out, AttentionParams p) {
    __shared__ float qrow[256];
    __shared__ float probs[BLOCK];
    __shared__ float red[BLOCK];
    const u32 lid = threadIdx.x;
    const IDX lq = (IDX)p.lq, d = (IDX)p.d, dv = (IDX)p.dv;
    for (IDX row = blockIdx.x; row < (IDX)p.bh * lq; row += gridDim.x) {
        const IDX bh = row / lq, i = row % lq, b = bh / (IDX)p.heads, h = bh % (IDX)p.heads;
        for (IDX t = lid; t < d; t += BLOCK) qrow[t] = q[at(p.q, b, h, i, t)];
        __syncthreads();
        const IDX keys = p.causal ? min((IDX)p.lk, i + 1) : (IDX)p.lk;
        float m = -inf_f32(), l = 0.0f;
        float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (IDX j0 = 0; j0 < keys; j0 += BLOCK) {
            const IDX j = j0 + lid;
            float s = -inf_f32();
            if (j < keys) {
                float dot = 0.0f;
                for (IDX t = 0; t < d; ++t) dot = fmaf(qrow[t], k[at(p.k, b, h, j, t)], dot);
                s = dot * p.scale;
                if (HAS_MASK) s += mask[at(p.mask, b, h, i, j)];
            }
            red[lid] = s;
            __syncthreads();
            for (u32 w = BLOCK / 2; w > 0; w >>= 1) {
                if (lid < w) red[lid] = max_nan(red[lid], red[lid + w]);
                __syncthreads();
            }
            const float m_new = max_nan(m, red[0]);
            __syncthreads();
            const float pj = m_new == -inf_f32() ? 0.0f : expf(s - m_new);
            probs[lid] = pj;
            red[lid] = pj;
            __syncthreads();
            for (u32 w = BLOCK / 2; w > 0; w >>= 1) {
                if (lid < w) red[lid] += red[lid + w];
                __syncthreads();
            }
            // Equal maxima (also both -inf) keep the running values as they are.
            const float alpha = m == m_new ? 1.0f : expf(m - m_new);
            l = l * alpha + red[0];
            const IDX tile = min((IDX)BLOCK, keys - j0);
#pragma unroll
            for (u32 r = 0; r < 4; ++r) {
                const IDX c = lid + BLOCK * r;
                if (c < dv) {
                    float a = acc[r] * alpha;
                    for (IDX jj = 0; jj < tile; ++jj) a = fmaf(probs[jj],
                            v[at(p.v, b, h, j0 + jj, c)], a);
                    acc[r] = a;
                }
            }
            m = m_new;
            __syncthreads();
        }
#pragma unroll
        for (u32 r = 0; r < 4; ++r) {
            const IDX c = lid + BLOCK * r;
            // l is 0 only when every key is masked out: the output is 0 (ONNX).
            if (c < dv) out[row * dv + c] = l == 0.0f ? 0.0f : acc[r] / l;
        }
        __syncthreads();
    }
}
