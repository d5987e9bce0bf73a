// Prelude of the kernels that resolve indices held on the device (gather, scatter), as
// `resolve_index` in gather/mod.rs states the rule: negative indices count from the end.

// The entry of an axis of `len` that index `j` of `indices` picks, or ~0 for none: `kind` 0
// u32, 1 i32, 2 i64 (word pairs, low first); with `clip`, an index outside the axis picks
// its nearest end (none on an empty axis).
__device__ __forceinline__ IDX index_entry(const u32* __restrict__ indices, u32 kind, IDX j,
        IDX len, bool clip) {
    bool negative, fits = true;
    u32 magnitude;
    if (kind == 2) {
        const u32 lo = indices[2 * j], hi = indices[2 * j + 1];
        negative = (hi >> 31) == 1u;
        magnitude = negative ? 0u - lo : lo;
        fits = hi == 0u || (hi == 0xffffffffu && lo != 0u);
    } else {
        const u32 raw = indices[j];
        negative = kind == 1 && (raw >> 31) == 1u;
        magnitude = negative ? 0u - raw : raw;
    }
    if (fits && !negative && (IDX)magnitude < len) return (IDX)magnitude;
    if (fits && negative && (IDX)magnitude <= len) return len - (IDX)magnitude;
    if (clip && len > 0) return negative ? 0 : len - 1;
    return ~(IDX)0;
}
