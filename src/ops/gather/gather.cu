// Gather (index_select) of 32-bit words of any dtype (i64 as pairs of words) along an axis.
// INDEX_KIND: 0 u32, 1 i32, 2 i64 indices as word pairs, low first; `resolve_index` in
// mod.rs states the rule.

#ifndef INDEX_KIND
#define INDEX_KIND 0
#endif

// The entry of an axis of `len` that index `j` picks, or ~0 for none (mode 1 clips).
__device__ __forceinline__ IDX gather_entry(const u32* __restrict__ indices, IDX j, IDX len,
        u32 mode) {
    bool negative, fits = true;
    u32 magnitude;
    if (INDEX_KIND == 2) {
        const u32 lo = indices[2 * j], hi = indices[2 * j + 1];
        negative = (hi >> 31) == 1u;
        magnitude = negative ? 0u - lo : lo;
        fits = hi == 0u || (hi == 0xffffffffu && lo != 0u);
    } else {
        const u32 raw = indices[j];
        negative = INDEX_KIND == 1 && (raw >> 31) == 1u;
        magnitude = negative ? 0u - raw : raw;
    }
    if (fits && !negative && (IDX)magnitude < len) return (IDX)magnitude;
    if (fits && negative && (IDX)magnitude <= len) return len - (IDX)magnitude;
    if (mode == 1 && len > 0) return negative ? 0 : len - 1;
    return ~(IDX)0;
}

// out[o, j, i] = x[o, entry(j), i]; 0 where there is none, and in mode 0 the least such j
// goes to status[0].
extern "C" __global__ void gather_main(
    const u32* __restrict__ x, const u32* __restrict__ indices, u32* __restrict__ out,
    u32* __restrict__ status, GatherParams p) {
    const IDX len = (IDX)p.len, inner = (IDX)p.inner, count = (IDX)p.count;
    const IDX n = (IDX)p.outer * count * inner;
    for (IDX i = grid_start(); i < n; i += grid_step()) {
        const IDX o = i / (count * inner), j = (i / inner) % count;
        const IDX t = gather_entry(indices, j, len, p.mode);
        const bool ok = t != ~(IDX)0;
        if (!ok && p.mode == 0) atomicMin(status, (u32)j);
        out[i] = ok ? x[(o * len + t) * inner + i % inner] : 0u;
    }
}
