// Dtype casts of 32-, 16- and 8-bit elements (i64's are cast64.wgsl's). Dtype codes are
// `DType::code` (0 f32, 1 i32, 2 u32, 3 f16, 4 bf16, 5 i64, 6 bool, 7 u8, 8 i8). 16-bit
// elements are packed two to a word, 8-bit ones four, lowest bits first; a cast to a narrow
// type writes whole words (one invocation per word of outputs), so no two invocations share
// a word. A cast between equal dtypes copies (the copy family's 16- and 8-bit copies).
//
// params: `StridedWords` (src/ops/common/webgpu.rs), named S_<field>: the source view is S_a.

override FROM: u32 = 0u;
override TO: u32 = 0u;

@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(4) var<storage, read_write> dst: array<u32>;

// An integer or bool source element as its 32-bit two's complement value (i8 sign-extended,
// bool 0 or 1).
fn int_of(bits: u32) -> u32 {
    switch FROM {
        case 6u: { return select(0u, 1u, bits != 0u); }
        case 8u: { return bitcast<u32>(bitcast<i32>(bits << 24u) >> 24u); }
        default: { return bits; }
    }
}

fn to_f32(bits: u32) -> f32 {
    switch FROM {
        case 1u, 8u: { return f32(bitcast<i32>(int_of(bits))); }
        case 2u, 6u, 7u: { return f32(int_of(bits)); }
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
        // bool: non-zero (NaN included), by its bits.
        case 6u: { return select(0u, 1u, (bitcast<u32>(v) & 0x7fffffffu) != 0u); }
        case 7u: {
            if (is_nan(v)) { return 0u; }
            return u32(clamp(v, 0.0, 255.0));
        }
        case 8u: {
            if (is_nan(v)) { return 0u; }
            return bitcast<u32>(i32(clamp(v, -128.0, 127.0))) & 0xffu;
        }
        default: { return bitcast<u32>(v); }
    }
}

fn is_int(code: u32) -> bool {
    return code == 1u || code == 2u || code >= 6u;
}

// One element: between integer types the low bits of the value (bool: value != 0),
// everything else goes through f32.
fn convert(bits: u32) -> u32 {
    if (FROM == TO) {
        return bits;
    }
    if (is_int(FROM) && is_int(TO)) {
        let v = int_of(bits);
        switch TO {
            case 6u: { return select(0u, 1u, v != 0u); }
            case 7u, 8u: { return v & 0xffu; }
            default: { return v; }
        }
    }
    return from_f32(to_f32(bits));
}

// Elements of dtype `code` in a word: 4 of 8-bit types, 2 of 16-bit ones, else 1.
fn per_word(code: u32) -> u32 {
    if (code >= 6u) { return 4u; }
    if (code == 3u || code == 4u) { return 2u; }
    return 1u;
}

// The bits of source element `e` (16- and 8-bit elements zero-extended).
fn load(e: u32) -> u32 {
    let k = per_word(FROM);
    if (k > 1u) {
        let width = 32u / k;
        return (src[e / k] >> ((e % k) * width)) & ((1u << width) - 1u);
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
    let k = per_word(TO);
    if (k > 1u) {
        // Invocation i writes output word i: elements ki .. ki + k - 1 (the output starts at a
        // word; past the end, the upper bits are padding).
        if (k * i >= n) {
            return;
        }
        var word = 0u;
        for (var j = 0u; j < k; j++) {
            if (k * i + j < n) {
                let e = strided_offset(k * i + j, params[S_rank], S_shape, S_a);
                word |= convert(load(e)) << (j * (32u / k));
            }
        }
        dst[params[S_out] / k + i] = word;
        return;
    }
    if (i >= n) {
        return;
    }
    dst[params[S_out] + i] = convert(load(strided_offset(i, params[S_rank], S_shape, S_a)));
}
