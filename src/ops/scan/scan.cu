// Cumulative sums along the middle axis of a contiguous [outer, len, inner] input, one block
// per (outer, inner) line: each thread sums its contiguous segment of the line,
// the block scans the 256 segment sums, then each thread writes its segment's prefix sums
// starting from the inclusive scan of the segments before it (never a difference, so
// infinities and NaN stay exact: inf - inf would be NaN). VAL is float (summed in double)
// or int / unsigned / i64 (summed unsigned, wrapping: signed overflow is undefined in C++).

#define BLOCK 256
#ifndef VAL
#define VAL float
#endif

__device__ __forceinline__ double widen(float v) { return v; }
__device__ __forceinline__ unsigned widen(int v) { return (unsigned)v; }
__device__ __forceinline__ unsigned widen(unsigned v) { return v; }
__device__ __forceinline__ u64 widen(i64 v) { return (u64)v; }
typedef decltype(widen((VAL)0)) ACC;

extern "C" __global__ void __launch_bounds__(BLOCK) cumsum_main(
    const VAL* __restrict__ x, VAL* __restrict__ out, ScanParams p) {
    __shared__ ACC sums[BLOCK];
    const IDX len = (IDX)p.len, inner = (IDX)p.inner;
    const IDX seg = (len + BLOCK - 1) / BLOCK;
    for (IDX line = blockIdx.x; line < (IDX)p.outer * inner; line += gridDim.x) {
        const IDX base = (line / inner) * len * inner + line % inner;
        const IDX j0 = min((IDX)threadIdx.x * seg, len), j1 = min(j0 + seg, len);
        ACC s = 0;
        for (IDX j = j0; j < j1; ++j) s += widen(x[base + j * inner]);
        sums[threadIdx.x] = s;
        __syncthreads();
        // Inclusive scan of the segment sums (Hillis-Steele).
        for (u32 d = 1; d < BLOCK; d <<= 1) {
            const ACC add = threadIdx.x >= d ? sums[threadIdx.x - d] : (ACC)0;
            __syncthreads();
            sums[threadIdx.x] += add;
            __syncthreads();
        }
        ACC acc = threadIdx.x > 0 ? sums[threadIdx.x - 1] : (ACC)0;
        for (IDX j = j0; j < j1; ++j) {
            const IDX at = base + j * inner;
            acc += widen(x[at]);
            out[at] = (VAL)acc;
        }
        __syncthreads();
    }
}
