// Matmul with block-quantised weights (onnxruntime's MatMulNBits):
// out[m, n] = a[m, k] · dequant(w)ᵀ (+ bias), w's row n stored as `blocks` blocks of
// `block_words` u32 words of BITS-bit values (lowest bits first; the last block padded past
// k), value q of block b dequantised to (q - zero) * scales[n · blocks + b] in registers.
// ZERO: 0 none (2^(BITS - 1)), 1 packed like the values (rows of `zero_row` bytes), 2 f32.
// One warp per output column: its lanes read consecutive words of the column's packed row
// (coalesced), each keeps sums for ROWS rows of A (1: qmatmul_gemv, 4: qmatmul_tiled), and
// the warp adds them with shuffles. Blocks of 4 warps; grid y over groups of rows.

#ifndef BITS
#define BITS 4
#endif
#ifndef ZERO
#define ZERO 0
#endif
#ifndef HAS_BIAS
#define HAS_BIAS 0
#endif

#define PER_WORD (32 / BITS)

// The zero point of block b of column col.
__device__ __forceinline__ float zero_point(const u32* __restrict__ zeros, const QMatmulParams& p,
        u32 col, u32 b) {
#if ZERO == 1
    const u32 byte = col * p.zero_row + b * BITS / 8u;
    const u32 shift = (byte % 4u) * 8u + (b * BITS) % 8u;
    return (float)((zeros[byte / 4u] >> shift) & ((1u << BITS) - 1u));
#elif ZERO == 2
    return __uint_as_float(zeros[(u64)col * p.blocks + b]);
#else
    (void)zeros, (void)p, (void)col, (void)b;
    return (float)(1u << (BITS - 1));
#endif
}

// Elements k0 .. k0 + PER_WORD - 1 of a row of A (0 past k) times the word's values less z.
__device__ __forceinline__ float word_dot(const float* __restrict__ row, u32 k, u32 k0, u32 word,
        float z) {
    float s = 0.0f;
    if (k0 + PER_WORD <= k) {
#pragma unroll
        for (u32 j = 0; j < PER_WORD; ++j) {
            s = fmaf((float)((word >> (j * BITS)) & ((1u << BITS) - 1u)) - z, row[k0 + j], s);
        }
    } else {
        for (u32 j = 0; j < PER_WORD && k0 + j < k; ++j) {
            s = fmaf((float)((word >> (j * BITS)) & ((1u << BITS) - 1u)) - z, row[k0 + j], s);
        }
    }
    return s;
}

// Rows first_row + ROWS · blockIdx.y ... of column 4 · blockIdx.x + warp.
template <int ROWS>
__device__ __forceinline__ void qmatmul_rows(const float* __restrict__ a,
        const u32* __restrict__ packed, const float* __restrict__ scales,
        const u32* __restrict__ zeros, const float* __restrict__ bias, float* __restrict__ out,
        const QMatmulParams& p) {
    const u32 col = blockIdx.x * 4u + threadIdx.x / 32u, lane = threadIdx.x % 32u;
    if (col >= p.n) return;
    const u32 row = p.first_row + blockIdx.y * ROWS;
    const u32 words = p.blocks * p.block_words;
    const u32* __restrict__ w = packed + (u64)col * words;
    float sum[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) sum[r] = 0.0f;
    for (u32 i = lane; i < words; i += 32u) {
        const u32 b = i / p.block_words, word = w[i];
        const float z = zero_point(zeros, p, col, b), s = scales[(u64)col * p.blocks + b];
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
            const u32 at = min(row + (u32)r, p.m - 1u);
            sum[r] = fmaf(s, word_dot(a + (u64)at * p.k, p.k, i * PER_WORD, word, z), sum[r]);
        }
    }
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        float v = sum[r];
        for (int d = 16; d > 0; d /= 2) v += __shfl_down_sync(0xffffffffu, v, d);
        if (lane == 0 && row + (u32)r < p.m) {
            if (HAS_BIAS) v += bias[col];
            out[(u64)(row + r) * p.n + col] = v;
        }
    }
}

extern "C" __global__ void qmatmul_gemv(const float* __restrict__ a,
        const u32* __restrict__ packed, const float* __restrict__ scales,
        const u32* __restrict__ zeros, const float* __restrict__ bias, float* __restrict__ out,
        QMatmulParams p) {
    qmatmul_rows<1>(a, packed, scales, zeros, bias, out, p);
}

extern "C" __global__ void qmatmul_tiled(const float* __restrict__ a,
        const u32* __restrict__ packed, const float* __restrict__ scales,
        const u32* __restrict__ zeros, const float* __restrict__ bias, float* __restrict__ out,
        QMatmulParams p) {
    qmatmul_rows<4>(a, packed, scales, zeros, bias, out, p);
}
