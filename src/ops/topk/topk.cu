// TopK along the middle axis of a contiguous [outer, len, inner] input, as topk.wgsl: each
// thread takes one element (a grid-stride loop), counts the elements of its row that rank
// before it (strictly: larger, or with LARGEST 0 smaller, or equal at a lower index; NaN
// above every number) and, if fewer than k do, writes its value and index at that rank of
// the [outer, k, inner] outputs. The ranks of a row are distinct: each output is written
// once. VAL is float, int, unsigned or i64.

#ifndef VAL
#define VAL float
#endif
#ifndef LARGEST
#define LARGEST 1
#endif

__device__ __forceinline__ bool val_nan(float v) { return isnan(v); }
__device__ __forceinline__ bool val_nan(int) { return false; }
__device__ __forceinline__ bool val_nan(unsigned) { return false; }
__device__ __forceinline__ bool val_nan(i64) { return false; }

// Whether `a` at position i ranks before `b` at position j.
__device__ __forceinline__ bool before(VAL a, IDX i, VAL b, IDX j) {
    const bool an = val_nan(a), bn = val_nan(b);
    if (an || bn) {
        if (an && bn) return i < j;
        // NaN is the largest: first when the largest come first, else last.
        return an == (LARGEST != 0);
    }
    if (a == b) return i < j;
    return LARGEST ? a > b : a < b;
}

extern "C" __global__ void topk_main(const VAL* __restrict__ x, VAL* __restrict__ values,
                                     u32* __restrict__ indices, TopkParams p) {
    const IDX len = (IDX)p.len, inner = (IDX)p.inner, k = (IDX)p.k;
    const IDX n = (IDX)p.outer * len * inner;
    for (IDX t = grid_start(); t < n; t += grid_step()) {
        const IDX i = t % inner, j = (t / inner) % len, o = t / (inner * len);
        const IDX base = o * len * inner + i;
        const VAL v = x[base + j * inner];
        IDX rank = 0;
        for (IDX m = 0; m < len; ++m) rank += before(x[base + m * inner], m, v, j) ? 1 : 0;
        if (rank < k) {
            const IDX at = (o * k + rank) * inner + i;
            values[at] = v;
            indices[at] = (u32)j;
        }
    }
}
