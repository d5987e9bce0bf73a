// Dtype casts of 32- and 16-bit elements (i64's are cast64.wgsl's). Dtype codes are
// `DType::code` (0 f32, 1 i32, 2 u32, 3 f16, 4 bf16, 5 i64). 16-bit elements are packed two
// to a word, low half first; a cast to a 16-bit type writes whole words (one invocation per
// pair of outputs), so no two invocations share a word. A cast between equal dtypes copies
// (the copy family's 16-bit copies).
//
// params: `StridedWords` (src/ops/common/webgpu.rs), named S_<field>: the source view is S_a.

override FROM: u32 = 0u;
override TO: u32 = 0u;

@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(4) var<storage, read_write> dst: array<u32>;

// f16 bits -> f32, exactly (subnormals included).
fn f16_to_f32(h: u32) -> f32 {
    let sign = (h & 0x8000u) << 16u;
    let e = (h >> 10u) & 0x1fu;
    let m = h & 0x3ffu;
    if (e == 0u) {
        let v = f32(m) * 5.9604645e-8; // m * 2^-24
        return select(v, -v, sign != 0u);
    }
    if (e == 31u) {
        return bitcast<f32>(sign | 0x7f800000u | (m << 13u));
    }
    return bitcast<f32>(sign | ((e + 112u) << 23u) | (m << 13u));
}

// f32 -> bf16 bits, rounding to nearest even; NaN stays NaN.
fn f32_to_bf16(f: f32) -> u32 {
    let x = bitcast<u32>(f);
    if (is_nan(f)) { return ((x >> 16u) & 0x8000u) | 0x7fc0u; }
    return (x + 0x7fffu + ((x >> 16u) & 1u)) >> 16u;
}

fn to_f32(bits: u32) -> f32 {
    switch FROM {
        case 1u: { return f32(bitcast<i32>(bits)); }
        case 2u: { return f32(bits); }
        case 3u: { return f16_to_f32(bits); }
        case 4u: { return bitcast<f32>(bits << 16u); }
        default: { return bitcast<f32>(bits); }
    }
}

// Rust's `as` from f32: integers truncate and saturate (NaN -> 0).
fn from_f32(v: f32) -> u32 {
    switch TO {
        case 1u: {
            if (is_nan(v)) { return 0u; }
            if (v >= 2147483648.0) { return 0x7fffffffu; }
            return bitcast<u32>(i32(max(v, -2147483648.0)));
        }
        case 2u: {
            if (is_nan(v)) { return 0u; }
            if (v >= 4294967296.0) { return 0xffffffffu; }
            return u32(max(v, 0.0));
        }
        case 3u: { return f32_to_f16(v); }
        case 4u: { return f32_to_bf16(v); }
        default: { return bitcast<u32>(v); }
    }
}

// One element: i32 <-> u32 keep their bits, everything else goes through f32.
fn convert(bits: u32) -> u32 {
    if (FROM == TO || (FROM == 1u && TO == 2u) || (FROM == 2u && TO == 1u)) {
        return bits;
    }
    return from_f32(to_f32(bits));
}

// The bits of source element `e` (16-bit elements zero-extended).
fn load(e: u32) -> u32 {
    if (FROM >= 3u) {
        return (src[e / 2u] >> ((e & 1u) * 16u)) & 0xffffu;
    }
    return src[e];
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
    let n = params[S_n];
    if (TO >= 3u) {
        // Invocation i writes output word i: elements 2i and 2i + 1 (the output starts at an
        // even element; past the end, the upper half is padding).
        if (2u * i >= n) {
            return;
        }
        let lo = convert(load(strided_offset(2u * i, params[S_rank], S_shape, S_a)));
        var hi = 0u;
        if (2u * i + 1u < n) {
            hi = convert(load(strided_offset(2u * i + 1u, params[S_rank], S_shape, S_a)));
        }
        dst[params[S_out] / 2u + i] = lo | (hi << 16u);
        return;
    }
    if (i >= n) {
        return;
    }
    dst[params[S_out] + i] = convert(load(strided_offset(i, params[S_rank], S_shape, S_a)));
}
