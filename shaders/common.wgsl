// Prelude of every built-in kernel (see README.md).

@group(0) @binding(0) var<storage, read> params: array<u32>;

// Index of this workgroup in a 1-D problem dispatched as a 2-D grid.
fn flat_workgroup(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.y * nwg.x + wid.x;
}

// Element offset of row-major linear index `i` in a strided view.
// The shape is params[shape_at .. shape_at + rank]; the view is params[view_at] (offset)
// followed by `rank` strides.
fn strided_offset(i: u32, rank: u32, shape_at: u32, view_at: u32) -> u32 {
    var rem = i;
    var off = params[view_at];
    for (var d = i32(rank) - 1; d >= 0; d--) {
        let n = params[shape_at + u32(d)];
        off += (rem % n) * params[view_at + 1u + u32(d)];
        rem = rem / n;
    }
    return off;
}

fn is_nan(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}

fn nan_f32() -> f32 {
    return bitcast<f32>(0x7fc00000u);
}
