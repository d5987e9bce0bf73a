// Scatter into `dst`, which holds a copy of the data (ONNX ScatterElements and ScatterND),
// without atomics: each invocation owns the elements its updates can reach and walks those
// updates in order, so updates meeting at one element apply in order (under reduction none
// the last wins). C_reduction: 0 none (replace), 1 add, 2 mul, 3 max, 4 min (NaN if either
// is NaN); integers wrap. C_kind: 0 u32, 1 i32, 2 i64 indices (word pairs, low first),
// resolved by `index_entry` (common/index.wgsl); an index outside its axis skips its update.
// Each launch takes the steps [C_begin, C_end) of every invocation's walk: devices that end
// long loops early (`Limits::max_loop_iterations`) split the walk across launches.
// params: `ScatterWords` in webgpu.rs, named C_<field>. VAL (prepended): f32, i32, u32, i64.

@group(0) @binding(1) var<storage, read_write> dst: array<VAL>;
@group(0) @binding(2) var<storage, read> idx: array<u32>;
@group(0) @binding(3) var<storage, read> upd: array<VAL>;

// `a` met by the update `b`.
fn combine(a: VAL, b: VAL) -> VAL {
    let r = params[C_reduction];
    if (r == 1u) { return a + b; }
    if (r == 2u) { return a * b; }
    if (r >= 3u && (val_nan(a) || val_nan(b))) { return val_nan_value(); }
    if (r == 3u) { return select(a, b, b > a); }
    if (r == 4u) { return select(a, b, b < a); }
    return b;
}

// The entry of an axis of `len` that index `j` picks, or 0xffffffffu for none.
fn entry(j: u32, len: u32) -> u32 {
    let kind = params[C_kind];
    let at = params[C_indices] + select(j, 2u * j, kind == 2u);
    var hi = 0u;
    if (kind == 2u) { hi = idx[at + 1u]; }
    return index_entry(kind, idx[at], hi, len, false);
}

// `dst[at]` met by update `u`.
fn meet(at: u32, u: u32) {
    dst[at] = combine(dst[at], upd[params[C_updates] + u]);
}

// ScatterElements: one invocation per line of the indices along the axis (C_lines of them,
// shaped C_shape with the axis extent 1; C_len steps, C_inner elements apart), all landing
// in one line of `dst` (C_view: the offset and strides of the data, C_axis_stride along the
// axis of C_axis_len).
@compute @workgroup_size(64)
fn scatter_elements_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let line = flat_workgroup(wid, nwg) * 64u + lid;
    if (line >= params[C_lines]) {
        return;
    }
    let inner = params[C_inner];
    let first = (line / inner) * params[C_len] * inner + line % inner;
    let base = strided_offset(line, params[C_rank], C_shape, C_view);
    for (var j = params[C_begin]; j < params[C_end]; j++) {
        let p = first + j * inner;
        let t = entry(p, params[C_axis_len]);
        if (t != 0xffffffffu) {
            meet(base + t * params[C_axis_stride], p);
        }
    }
}

// ScatterND: one invocation per element of a slice (C_lines = C_inner of them) walking the
// index tuples (C_rank indices each, into the axes C_shape with strides C_view + 1).
@compute @workgroup_size(64)
fn scatter_nd_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let s = flat_workgroup(wid, nwg) * 64u + lid;
    let slice = params[C_inner];
    if (s >= slice) {
        return;
    }
    let depth = params[C_rank];
    for (var t = params[C_begin]; t < params[C_end]; t++) {
        var at = params[C_view] + s;
        var inside = true;
        for (var c = 0u; c < depth; c++) {
            let e = entry(t * depth + c, params[C_shape + c]);
            inside = inside && e != 0xffffffffu;
            at += e * params[C_view + 1u + c];
        }
        if (inside) {
            meet(at, t * slice + s);
        }
    }
}
