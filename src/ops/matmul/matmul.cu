// Batched matrix product C[b] = A[b] @ B[b] with strided, broadcast operands: the fallback
// for layouts cuBLAS cannot take (and for when cuBLAS is missing). Each 16x16 block computes
// a 64x64 tile of C, each thread a 4x4 block held in registers; K advances in steps of 16
// through shared memory. gridDim.z walks the batches (grid-stride past 65,535).
// Epilogue (the fused linear layer): HAS_BIAS adds bias[col], ACT applies an activation
// (`UnaryOp::code`, 0: none) before each tile is stored. bias_act_main applies the same
// epilogue in place after a cuBLAS GEMM, which has none.

#ifndef HAS_BIAS
#define HAS_BIAS 0
#endif
#ifndef ACT
#define ACT 0
#endif

#define TILE 64
#define KSTEP 16
#define MAX_BATCH_RANK 6

__device__ __forceinline__ IDX batch_offset(IDX batch, const MatmulParams& p, const u64* strides) {
    return strided_offset(batch, p.batch_rank, p.batch_shape, strides);
}

__device__ __forceinline__ float epilogue(float v, const float* bias, IDX col) {
    if (HAS_BIAS) v += bias[col];
    return unary_op<ACT>(v);
}

extern "C" __global__ void __launch_bounds__(256) matmul_main(
    const float* __restrict__ a, const float* __restrict__ b, const float* __restrict__ bias,
    float* __restrict__ c, MatmulParams p) {
    __shared__ float at[KSTEP][TILE];
    __shared__ float bt[KSTEP][TILE];
    const IDX m = (IDX)p.m, n = (IDX)p.n, k = (IDX)p.k;
    const u32 tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
    const IDX row0 = (IDX)blockIdx.y * TILE, col0 = (IDX)blockIdx.x * TILE;
    for (IDX batch = blockIdx.z; batch < (IDX)p.batches; batch += gridDim.z) {
        const float* ab = a + batch_offset(batch, p, p.a_batch);
        const float* bb = b + batch_offset(batch, p, p.b_batch);
        float acc[4][4] = {};
        for (IDX k0 = 0; k0 < k; k0 += KSTEP) {
            // 256 threads load the 64x16 slice of A (k fastest, so a row-major A reads
            // consecutive addresses) and the 16x64 slice of B (columns fastest), four each.
            for (u32 e = tid; e < KSTEP * TILE; e += 256) {
                const u32 kk = e % KSTEP, mm = e / KSTEP;
                const IDX r = row0 + mm, kr = k0 + kk;
                at[kk][mm] = (r < m && kr < k) ? ab[r * (IDX)p.a_row + kr * (IDX)p.a_col] : 0.0f;
            }
            for (u32 e = tid; e < KSTEP * TILE; e += 256) {
                const u32 kk = e / TILE, nn = e % TILE;
                const IDX kr = k0 + kk, cc = col0 + nn;
                bt[kk][nn] = (cc < n && kr < k) ? bb[kr * (IDX)p.b_row + cc * (IDX)p.b_col] : 0.0f;
            }
            __syncthreads();
#pragma unroll
            for (u32 kk = 0; kk < KSTEP; ++kk) {
                float av[4], bv[4];
#pragma unroll
                for (u32 i = 0; i < 4; ++i) {
                    av[i] = at[kk][ty * 4 + i];
                    bv[i] = bt[kk][tx * 4 + i];
                }
#pragma unroll
                for (u32 i = 0; i < 4; ++i)
#pragma unroll
                    for (u32 j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
            }
            __syncthreads();
        }
        float* cb = c + batch * m * n;
#pragma unroll
        for (u32 i = 0; i < 4; ++i) {
            const IDX r = row0 + ty * 4 + i;
            if (r >= m) continue;
#pragma unroll
            for (u32 j = 0; j < 4; ++j) {
                const IDX cc = col0 + tx * 4 + j;
                if (cc < n) cb[r * n + cc] = epilogue(acc[i][j], bias, cc);
            }
        }
    }
}

// out[i] = act(out[i] + bias[i % cols]) over a contiguous [rows, cols] output.
extern "C" __global__ void bias_act_main(
    float* out, const float* __restrict__ bias, BiasActParams p) {
    const IDX n = (IDX)p.n_total, cols = (IDX)p.cols;
    for (IDX i = grid_start(); i < n; i += grid_step()) out[i] = epilogue(out[i], bias, i % cols);
}
