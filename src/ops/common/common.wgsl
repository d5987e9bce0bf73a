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

// NaN and the infinities. WGSL forbids them as constant values (browsers reject
// `bitcast<f32>(0x7f800000u)`), so each is built from a runtime zero read from `params`.
fn special_f32(bits: u32) -> f32 {
    return bitcast<f32>(bits | (params[0] & 0u));
}

fn nan_f32() -> f32 {
    return special_f32(0x7fc00000u);
}

fn inf_f32() -> f32 {
    return special_f32(0x7f800000u);
}

fn neg_inf_f32() -> f32 {
    return special_f32(0xff800000u);
}

// f32 -> f16 bits, rounding to nearest even; overflow gives inf, NaN stays NaN.
fn f32_to_f16(f: f32) -> u32 {
    let x = bitcast<u32>(f);
    let sign = (x >> 16u) & 0x8000u;
    let a = x & 0x7fffffffu;
    if (a > 0x7f800000u) { return sign | 0x7e00u; }
    if (a >= 0x477ff000u) { return sign | 0x7c00u; } // >= 65520 rounds to inf
    if (a < 0x38800000u) {
        // Below the smallest normal f16 (2^-14): a subnormal in units of 2^-24, or zero.
        if (a <= 0x33000000u) { return sign; }
        let e = a >> 23u;
        let m = (a & 0x7fffffu) | 0x800000u;
        let shift = 126u - e;
        let q = m >> shift;
        let rem = m & ((1u << shift) - 1u);
        let half = 1u << (shift - 1u);
        return sign | select(q, q + 1u, rem > half || (rem == half && (q & 1u) == 1u));
    }
    let b = a - 0x38000000u; // exponent rebiased from 127 to 15
    let q = b >> 13u;
    let rem = b & 0x1fffu;
    return sign | select(q, q + 1u, rem > 0x1000u || (rem == 0x1000u && (q & 1u) == 1u));
}

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
