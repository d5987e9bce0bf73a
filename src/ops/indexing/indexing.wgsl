// Dtype casts, `where` selection and gather (index_select): they move 32-bit words of any
// dtype (i64 as pairs of words; its casts are cast64.wgsl's). Dtype codes are `DType::code`
// (0 f32, 1 i32, 2 u32, 3 f16, 4 bf16, 5 i64). 16-bit
// elements are packed two to a word, low half first; a cast to a 16-bit type writes whole
// words (one invocation per pair of outputs), so no two invocations share a word.
//
// cast_main / where_main params: `StridedWords` (src/ops/common/webgpu.rs), named S_<field>:
//   the operand views are S_a (x or cond), S_b (a) and S_c (b).
// gather_main params: `GatherWords` in webgpu.rs, named G_<field>. INDEX_KIND: 0 u32, 1 i32,
// 2 i64 indices (word pairs, low first); G_mode: 0 error (the least offending index position
// goes to `status`), 1 clip, 2 fill; `resolve_index` in mod.rs states the rule.

override FROM: u32 = 0u;
override TO: u32 = 0u;
override COND_F32: bool = false;
override INDEX_KIND: u32 = 0u;

@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read> src_a: array<u32>;
@group(0) @binding(3) var<storage, read> src_b: array<u32>;
@group(0) @binding(4) var<storage, read_write> dst: array<u32>;
@group(0) @binding(5) var<storage, read_write> status: array<atomic<u32>>;

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

@compute @workgroup_size(256)
fn where_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = index(wid, nwg, lid);
    if (i >= params[S_n]) {
        return;
    }
    var c = src[strided_offset(i, params[S_rank], S_shape, S_a)];
    if (COND_F32) {
        c = c & 0x7fffffffu; // -0.0 is false, NaN true
    }
    var v: u32;
    if (c != 0u) {
        v = src_a[strided_offset(i, params[S_rank], S_shape, S_b)];
    } else {
        v = src_b[strided_offset(i, params[S_rank], S_shape, S_c)];
    }
    dst[params[S_out] + i] = v;
}

// The entry of an axis of `len` that index `j` picks, or 0xffffffff for none.
fn gather_entry(j: u32, len: u32) -> u32 {
    let base = params[G_indices];
    var negative = false;
    var magnitude = 0u;
    var fits = true;
    if (INDEX_KIND == 2u) {
        let lo = src_a[base + 2u * j];
        let hi = src_a[base + 2u * j + 1u];
        negative = (hi >> 31u) == 1u;
        magnitude = select(lo, 0u - lo, negative);
        fits = (hi == 0u) || (hi == 0xffffffffu && lo != 0u);
    } else {
        let raw = src_a[base + j];
        negative = INDEX_KIND == 1u && (raw >> 31u) == 1u;
        magnitude = select(raw, 0u - raw, negative);
    }
    if (fits && !negative && magnitude < len) { return magnitude; }
    if (fits && negative && magnitude <= len) { return len - magnitude; }
    if (params[G_mode] == 1u && len > 0u) { return select(len - 1u, 0u, negative); }
    return 0xffffffffu;
}

@compute @workgroup_size(256)
fn gather_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = index(wid, nwg, lid);
    let len = params[G_len];
    let inner = params[G_inner];
    let count = params[G_count];
    if (i >= params[G_outer] * count * inner) {
        return;
    }
    let o = i / (count * inner);
    let j = (i / inner) % count;
    let t = gather_entry(j, len);
    var v = 0u;
    if (t != 0xffffffffu) {
        v = src[params[G_x] + (o * len + t) * inner + i % inner];
    } else if (params[G_mode] == 0u) {
        atomicMin(&status[0], j);
    }
    dst[params[G_out] + i] = v;
}
