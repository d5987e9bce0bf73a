// Casts to and from i64 (dtype code 5) as pairs of u32 words, low word first, with 32-bit
// arithmetic only (no module names i64: browsers' adapters lack `shader-int64`). Prepended by
// cast.wgsl, whose bindings, overrides (FROM, TO: one of them 5) and helpers for the other
// dtype it uses. 8-bit outputs are written four to a word, as cast_main writes them.
// Rust's `as`: i64 -> i32 / u32 keeps the low word; i32 / i8 sign-extend, u32 / u8 / bool
// zero-extend; i64 -> floats rounds the exact value to the nearest f32 (then f16 / bf16);
// floats -> i64 truncate and saturate, NaN -> 0.

// The words of -w (two's complement).
fn neg_words(w: vec2<u32>) -> vec2<u32> {
    let lo = ~w.x + 1u;
    return vec2<u32>(lo, ~w.y + select(0u, 1u, lo == 0u));
}

// Element `e` of an i64 source as its words.
fn load_words(e: u32) -> vec2<u32> {
    return vec2<u32>(src[2u * e], src[2u * e + 1u]);
}

// The f32 nearest the i64 of words `w` (ties to even): the top 24 bits of its magnitude,
// rounded by the bit below them (guard) and whether any bit under that is set (sticky).
fn words_to_f32(w: vec2<u32>) -> f32 {
    let negative = (w.y >> 31u) != 0u;
    let m = select(w, neg_words(w), negative);
    if (m.y == 0u && m.x < 0x1000000u) {
        let small = f32(m.x);
        return select(small, -small, negative);
    }
    // The top bit p (24 to 63) and the shift s = p - 23 (1 to 40) that leaves 24 bits.
    var p = 31u - countLeadingZeros(m.x);
    if (m.y != 0u) {
        p = 63u - countLeadingZeros(m.y);
    }
    let s = p - 23u;
    var mant: u32;
    if (s < 32u) {
        mant = (m.x >> s) | (m.y << (32u - s));
    } else {
        mant = m.y >> (s - 32u);
    }
    // The guard bit g = s - 1 and the sticky bits below it (every shift below 32).
    let g = s - 1u;
    var guard: u32;
    var sticky: bool;
    if (g < 32u) {
        guard = (m.x >> g) & 1u;
        sticky = (m.x & ((1u << g) - 1u)) != 0u;
    } else {
        guard = (m.y >> (g - 32u)) & 1u;
        sticky = m.x != 0u || (m.y & ((1u << (g - 32u)) - 1u)) != 0u;
    }
    if (guard == 1u && (sticky || (mant & 1u) == 1u)) {
        mant += 1u;
    }
    // A mantissa rounded up to 2^24 carries into the exponent.
    let v = bitcast<f32>(((p + 127u) << 23u) + (mant - 0x800000u));
    return select(v, -v, negative);
}

// The words of `v` as an i64: truncated toward zero and saturated, NaN -> 0. Below 2^63 a
// whole f32 of 2^32 or more splits exactly into its multiple of 2^32 and the rest.
fn f32_to_words(v: f32) -> vec2<u32> {
    if (is_nan(v)) { return vec2<u32>(0u, 0u); }
    if (v >= 9223372036854775808.0) { return vec2<u32>(0xffffffffu, 0x7fffffffu); }
    if (v < -9223372036854775808.0) { return vec2<u32>(0u, 0x80000000u); }
    let a = trunc(abs(v));
    var w = vec2<u32>(u32(a), 0u);
    if (a >= 4294967296.0) {
        let hi = floor(a / 4294967296.0);
        w = vec2<u32>(u32(a - hi * 4294967296.0), u32(hi));
    }
    return select(w, neg_words(w), v < 0.0);
}

// Element `e` of the source as the words of an i64 (FROM is not 5).
fn to_words(e: u32) -> vec2<u32> {
    let bits = load(e);
    switch FROM {
        case 1u, 8u: {
            let v = int_of(bits);
            return vec2<u32>(v, select(0u, 0xffffffffu, (v >> 31u) != 0u));
        }
        case 2u, 6u, 7u: { return vec2<u32>(int_of(bits), 0u); }
        default: { return f32_to_words(to_f32(bits)); }
    }
}

@compute @workgroup_size(256)
fn cast64_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = index(wid, nwg, lid);
    let n = params[S_n];
    if (FROM == 5u && TO >= 6u) {
        // An 8-bit output a word (four elements) per invocation, as cast_main writes it: the
        // low byte of the low word, or for bool whether either word is non-zero.
        if (4u * i >= n) {
            return;
        }
        var word = 0u;
        for (var j = 0u; j < 4u; j++) {
            if (4u * i + j < n) {
                let e = strided_offset(4u * i + j, params[S_rank], S_shape, S_a);
                var b = src[2u * e] & 0xffu;
                if (TO == 6u) {
                    b = select(0u, 1u, (src[2u * e] | src[2u * e + 1u]) != 0u);
                }
                word |= b << (8u * j);
            }
        }
        dst[params[S_out] / 4u + i] = word;
        return;
    }
    if (FROM == 5u && TO >= 3u) {
        // A 16-bit output a word (two elements) per invocation, as cast_main writes it.
        if (2u * i >= n) {
            return;
        }
        let first = strided_offset(2u * i, params[S_rank], S_shape, S_a);
        let lo = from_f32(words_to_f32(load_words(first)));
        var hi = 0u;
        if (2u * i + 1u < n) {
            let second = strided_offset(2u * i + 1u, params[S_rank], S_shape, S_a);
            hi = from_f32(words_to_f32(load_words(second)));
        }
        dst[params[S_out] / 2u + i] = lo | (hi << 16u);
        return;
    }
    if (i >= n) {
        return;
    }
    let e = strided_offset(i, params[S_rank], S_shape, S_a);
    if (FROM == 5u) {
        var w = src[2u * e];
        if (TO == 0u) {
            w = bitcast<u32>(words_to_f32(load_words(e)));
        }
        dst[params[S_out] + i] = w;
        return;
    }
    let w = to_words(e);
    let o = 2u * (params[S_out] + i);
    dst[o] = w.x;
    dst[o + 1u] = w.y;
}
