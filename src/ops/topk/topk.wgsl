// TopK along the middle axis of a contiguous [outer, len, inner] input: one invocation per
// element counts the elements of its row that rank before it (strictly: larger, or with
// LARGEST false smaller, or equal at a lower index; NaN above every number) and, if fewer
// than k do, writes its value and index at that rank of the [outer, k, inner] outputs. The
// ranks of a row are distinct, so each output is written once.
//
// params: `TopkWords` in webgpu.rs, each field's first word named P_<field>. The count runs
// over the row positions [P_range, P_range + 1) of one launch: where the device ends long
// loops early, a long row is counted in pieces, the partial counts kept in `ranks` (flags
// bit 0: add to the stored count; bit 1: the last piece, which writes the outputs). VAL
// (prepended: f32, i32, u32 or i64) is the values' type.

override LARGEST: bool = true;

@group(0) @binding(1) var<storage, read> x: array<VAL>;
@group(0) @binding(2) var<storage, read_write> values: array<VAL>;
@group(0) @binding(3) var<storage, read_write> indices: array<u32>;
@group(0) @binding(4) var<storage, read_write> ranks: array<u32>;

// Whether `a` at position i ranks before `b` at position j.
fn before(a: VAL, i: u32, b: VAL, j: u32) -> bool {
    let an = val_nan(a);
    let bn = val_nan(b);
    if (an || bn) {
        if (an && bn) { return i < j; }
        // NaN is the largest: first when the largest come first, else last.
        return an == LARGEST;
    }
    if (a == b) { return i < j; }
    if (LARGEST) { return a > b; }
    return a < b;
}

@compute @workgroup_size(64)
fn topk_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let t = flat_workgroup(wid, nwg) * 64u + lid;
    let len = params[P_len];
    let inner = params[P_inner];
    if (t >= params[P_outer] * len * inner) { return; }
    let i = t % inner;
    let j = (t / inner) % len;
    let o = t / (inner * len);
    let base = params[P_x] + o * len * inner + i;
    let v = x[base + j * inner];
    let flags = params[P_flags];
    var rank = 0u;
    if ((flags & 1u) != 0u) { rank = ranks[t]; }
    for (var m = params[P_range]; m < params[P_range + 1u]; m++) {
        if (before(x[base + m * inner], m, v, j)) { rank++; }
    }
    if ((flags & 2u) == 0u) {
        ranks[t] = rank;
        return;
    }
    let k = params[P_k];
    if (rank < k) {
        let at = (o * k + rank) * inner + i;
        values[params[P_values] + at] = v;
        indices[params[P_indices] + at] = j;
    }
}
