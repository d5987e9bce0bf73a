// Dtype casts, `where` selection and gather (index_select): they move 32-bit words of any
// dtype. Dtype codes are `DType::code` (0 f32, 1 i32, 2 u32).
//
// cast_main / where_main params: as elementwise.wgsl ([0] n, [1] rank, [2] output offset,
//   [3..11] shape), then the operand views (offset, 8 strides): [11..20] x or cond,
//   [20..29] a, [29..38] b.
// gather_main params: [0] outer, [1] len, [2] inner, [3] count, [4] x offset,
//   [5] indices offset, [6] output offset, [7] fill word for out-of-range indices.

override FROM: u32 = 0u;
override TO: u32 = 0u;
override COND_F32: bool = false;
override SIGNED: bool = false;

@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read> src_a: array<u32>;
@group(0) @binding(3) var<storage, read> src_b: array<u32>;
@group(0) @binding(4) var<storage, read_write> dst: array<u32>;

// Rust's `as`: floats to integers truncate and saturate (NaN -> 0); i32 <-> u32 keep bits.
fn convert(bits: u32) -> u32 {
    if (FROM == TO) {
        return bits;
    }
    if (TO == 0u) {
        if (FROM == 1u) {
            return bitcast<u32>(f32(bitcast<i32>(bits)));
        }
        return bitcast<u32>(f32(bits));
    }
    if (FROM == 0u) {
        let v = bitcast<f32>(bits);
        if (is_nan(v)) {
            return 0u;
        }
        // Saturate at the integer limits (every f32 below 2^31 / 2^32 converts exactly).
        if (TO == 1u) {
            if (v >= 2147483648.0) { return 0x7fffffffu; }
            return bitcast<u32>(i32(max(v, -2147483648.0)));
        }
        if (v >= 4294967296.0) { return 0xffffffffu; }
        return u32(max(v, 0.0));
    }
    return bits;
}

fn index(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return flat_workgroup(wid, nwg) * 256u + lid;
}

@compute @workgroup_size(256)
fn cast_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = index(wid, nwg, lid);
    if (i >= params[0]) {
        return;
    }
    dst[params[2] + i] = convert(src[strided_offset(i, params[1], 3u, 11u)]);
}

@compute @workgroup_size(256)
fn where_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = index(wid, nwg, lid);
    if (i >= params[0]) {
        return;
    }
    var c = src[strided_offset(i, params[1], 3u, 11u)];
    if (COND_F32) {
        c = c & 0x7fffffffu; // -0.0 is false, NaN true
    }
    var v: u32;
    if (c != 0u) {
        v = src_a[strided_offset(i, params[1], 3u, 20u)];
    } else {
        v = src_b[strided_offset(i, params[1], 3u, 29u)];
    }
    dst[params[2] + i] = v;
}

@compute @workgroup_size(256)
fn gather_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = index(wid, nwg, lid);
    let len = params[1];
    let inner = params[2];
    let count = params[3];
    if (i >= params[0] * count * inner) {
        return;
    }
    let o = i / (count * inner);
    let j = (i / inner) % count;
    let raw = src_a[params[5] + j];
    var ok = raw < len;
    if (SIGNED) {
        ok = bitcast<i32>(raw) >= 0 && raw < len;
    }
    var v = params[7];
    if (ok) {
        v = src[params[4] + (o * len + raw) * inner + i % inner];
    }
    dst[params[6] + i] = v;
}
