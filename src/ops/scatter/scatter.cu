// Scatter into `out`, which holds a copy of the data (ONNX ScatterElements and ScatterND),
// without atomics: each thread owns the elements its updates can reach and walks those updates
// in order, so updates meeting at one element apply in order (under reduction none the last
// wins). p.reduction: 0 none (replace), 1 add, 2 mul, 3 max, 4 min (NaN if either is NaN);
// integers wrap (computed unsigned: signed overflow is undefined in C++). p.kind: 0 u32, 1 i32,
// 2 i64 indices (word pairs, low first), resolved by `index_entry` (common/index.cuh); an index
// outside its axis skips its update. VAL is float, int, unsigned or i64.

#ifndef VAL
#define VAL float
#endif

__device__ __forceinline__ float wrap(float v) { return v; }
__device__ __forceinline__ unsigned wrap(int v) { return (unsigned)v; }
__device__ __forceinline__ unsigned wrap(unsigned v) { return v; }
__device__ __forceinline__ u64 wrap(i64 v) { return (u64)v; }
typedef decltype(wrap((VAL)0)) WRAP;

__device__ __forceinline__ bool val_nan(float v) { return isnan(v); }
__device__ __forceinline__ bool val_nan(int) { return false; }
__device__ __forceinline__ bool val_nan(unsigned) { return false; }
__device__ __forceinline__ bool val_nan(i64) { return false; }

// `a` met by the update `b`.
__device__ __forceinline__ VAL combine(VAL a, VAL b, u32 reduction) {
    if (reduction == 1) return (VAL)(wrap(a) + wrap(b));
    if (reduction == 2) return (VAL)(wrap(a) * wrap(b));
    if (reduction >= 3 && (val_nan(a) || val_nan(b))) return (VAL)nan_f32();
    if (reduction == 3) return b > a ? b : a;
    if (reduction == 4) return b < a ? b : a;
    return b;
}

// ScatterElements: one thread per line of the indices along the axis (p.lines of them, shaped
// p.shape with the axis extent 1; p.len steps, p.inner elements apart), all landing in one line
// of `out` (p.strides: the data's; p.axis_stride along the axis of p.axis_len).
extern "C" __global__ void scatter_elements_main(
    VAL* __restrict__ out, const u32* __restrict__ indices, const VAL* __restrict__ updates,
    ScatterParams p) {
    const IDX inner = (IDX)p.inner, len = (IDX)p.len, axis_len = (IDX)p.axis_len;
    for (IDX line = grid_start(); line < (IDX)p.lines; line += grid_step()) {
        const IDX first = (line / inner) * len * inner + line % inner;
        const IDX base = strided_offset(line, p.rank, p.shape, p.strides);
        for (IDX j = 0; j < len; ++j) {
            const IDX at = first + j * inner;
            const IDX t = index_entry(indices, p.kind, at, axis_len, false);
            if (t == ~(IDX)0) continue;
            VAL* dst = out + base + t * (IDX)p.axis_stride;
            *dst = combine(*dst, updates[at], p.reduction);
        }
    }
}

// ScatterND: one thread per element of a slice (p.inner of them) walking the p.count index
// tuples (p.rank indices each, into the axes p.shape with strides p.strides).
extern "C" __global__ void scatter_nd_main(
    VAL* __restrict__ out, const u32* __restrict__ indices, const VAL* __restrict__ updates,
    ScatterParams p) {
    const IDX slice = (IDX)p.inner, depth = (IDX)p.rank;
    for (IDX s = grid_start(); s < slice; s += grid_step()) {
        for (IDX t = 0; t < (IDX)p.count; ++t) {
            IDX at = s;
            bool inside = true;
            for (IDX c = 0; c < depth; ++c) {
                const IDX e = index_entry(indices, p.kind, t * depth + c, (IDX)p.shape[c], false);
                inside = inside && e != ~(IDX)0;
                at += e * (IDX)p.strides[c];
            }
            if (inside) out[at] = combine(out[at], updates[t * slice + s], p.reduction);
        }
    }
}
