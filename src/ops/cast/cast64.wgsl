// Casts to and from i64 (dtype code 5), which need `shader-int64`: prepended by cast.wgsl,
// whose bindings, overrides (FROM, TO: one of them 5) and helpers for the other dtype it uses.
// 8-bit outputs are written four to a word, as cast_main writes them.
// i64 elements lie in the u32 words as pairs, low word first. Rust's `as`: i64 -> i32 / u32
// keeps the low word; i32 sign-extends and u32 zero-extends; i64 -> floats rounds to the
// nearest f32 first; floats -> i64 truncate and saturate, NaN -> 0.

// A u32 as the i64 of its value. The mask is needed: naga converts u32 to i64 with a signed
// conversion (OpSConvert), which llvmpipe sign-extends.
fn u32_to_i64(w: u32) -> i64 {
    return i64(w) & 0xffffffffli;
}

// Element `e` of an i64 source.
fn load64(e: u32) -> i64 {
    return (u32_to_i64(src[2u * e + 1u]) << 32u) | u32_to_i64(src[2u * e]);
}

fn f32_to_i64(v: f32) -> i64 {
    if (is_nan(v)) { return 0li; }
    if (v >= 9223372036854775808.0) { return 9223372036854775807li; }
    if (v < -9223372036854775808.0) { return -9223372036854775807li - 1li; }
    return i64(v);
}

// Element `e` of the source as an i64 (FROM is not 5).
fn to_i64(e: u32) -> i64 {
    let bits = load(e);
    switch FROM {
        case 1u, 8u: { return i64(bitcast<i32>(int_of(bits))); }
        case 2u, 6u, 7u: { return u32_to_i64(int_of(bits)); }
        default: { return f32_to_i64(to_f32(bits)); }
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
        let lo = from_f32(f32(load64(strided_offset(2u * i, params[S_rank], S_shape, S_a))));
        var hi = 0u;
        if (2u * i + 1u < n) {
            hi = from_f32(f32(load64(strided_offset(2u * i + 1u, params[S_rank], S_shape, S_a))));
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
            w = bitcast<u32>(f32(load64(e)));
        }
        dst[params[S_out] + i] = w;
        return;
    }
    let v = to_i64(e);
    let o = 2u * (params[S_out] + i);
    dst[o] = u32(v & 0xffffffffli);
    dst[o + 1u] = u32((v >> 32u) & 0xffffffffli);
}
