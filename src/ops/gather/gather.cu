// Gather (index_select) of 32-bit words of any dtype (i64 as pairs of words) along an axis.
// INDEX_KIND: 0 u32, 1 i32, 2 i64 indices as word pairs, low first; `index_entry`
// (common/index.cuh) resolves each index.

#ifndef INDEX_KIND
#define INDEX_KIND 0
#endif

// out[o, j, i] = x[o, entry(j), i]; 0 where there is none, and in mode 0 the least such j
// goes to status[0].
extern "C" __global__ void gather_main(
    const u32* __restrict__ x, const u32* __restrict__ indices, u32* __restrict__ out,
    u32* __restrict__ status, GatherParams p) {
    const IDX len = (IDX)p.len, inner = (IDX)p.inner, count = (IDX)p.count;
    const IDX n = (IDX)p.outer * count * inner;
    for (IDX i = grid_start(); i < n; i += grid_step()) {
        const IDX o = i / (count * inner), j = (i / inner) % count;
        const IDX t = index_entry(indices, INDEX_KIND, j, len, p.mode == 1);
        const bool ok = t != ~(IDX)0;
        if (!ok && p.mode == 0) atomicMin(status, (u32)j);
        out[i] = ok ? x[(o * len + t) * inner + i % inner] : 0u;
    }
}
