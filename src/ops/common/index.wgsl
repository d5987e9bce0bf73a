// Prelude of the kernels that resolve indices held on the device (gather, scatter), as
// `resolve_index` in gather/mod.rs states the rule: negative indices count from the end.

// The entry of an axis of `len` that an index picks, or 0xffffffffu for none: `kind` 0 u32,
// 1 i32, 2 i64 (`lo` and `hi` its words); with `clip`, an index outside the axis picks its
// nearest end (none on an empty axis).
fn index_entry(kind: u32, lo: u32, hi: u32, len: u32, clip: bool) -> u32 {
    var negative = kind == 1u && (lo >> 31u) == 1u;
    var fits = true;
    if (kind == 2u) {
        negative = (hi >> 31u) == 1u;
        fits = (hi == 0u) || (hi == 0xffffffffu && lo != 0u);
    }
    let magnitude = select(lo, 0u - lo, negative);
    if (fits && !negative && magnitude < len) { return magnitude; }
    if (fits && negative && magnitude <= len) { return len - magnitude; }
    if (clip && len > 0u) { return select(len - 1u, 0u, negative); }
    return 0xffffffffu;
}
