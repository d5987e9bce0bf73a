// Dtype casts (i64 included). Dtype codes are `DType::code` (0 f32, 1 i32, 2 u32, 3 f16,
// 4 bf16, 5 i64, 6 bool, 7 u8, 8 i8): FROM / TO. 16-bit elements are packed two to a word,
// 8-bit ones four, lowest bits first; a cast to a narrow type writes whole words (one thread
// per word of outputs). cast_main gets the source's block base and the view's element
// offset, since a narrow view may start inside a word. A cast between equal dtypes copies
// (the copy family's 16- and 8-bit copies).

#ifndef FROM
#define FROM 0
#endif
#ifndef TO
#define TO 0
#endif

// An integer or bool source element (not i64) as its value (i8 sign-extended, bool 0 / 1).
__device__ __forceinline__ i64 int_of(u32 bits) {
    switch (FROM) {
        case 1: return (i64)(int)bits;
        case 6: return bits != 0u ? 1 : 0;
        case 8: return (i64)(signed char)(unsigned char)bits;
        default: return (i64)bits;
    }
}

__device__ __forceinline__ float to_f32(u32 bits) {
    switch (FROM) {
        case 1: case 6: case 7: case 8: return (float)int_of(bits);
        case 2: return (float)bits;
        case 3: return f16_to_f32(bits);
        case 4: return __uint_as_float(bits << 16);
        default: return __uint_as_float(bits);
    }
}

// Rust's `as` from f32: integers truncate and saturate (NaN -> 0).
__device__ __forceinline__ u32 from_f32(float v) {
    switch (TO) {
        case 1: return isnan(v) ? 0u : (v >= 2147483648.0f ? 0x7fffffffu
                : (u32)(int)fmaxf(v, -2147483648.0f));
        case 2: return isnan(v) ? 0u : (v >= 4294967296.0f ? 0xffffffffu : (u32)fmaxf(v, 0.0f));
        case 3: return f32_to_f16(v);
        case 4: return f32_to_bf16(v);
        case 6: return (__float_as_uint(v) & 0x7fffffffu) != 0u ? 1u : 0u; // NaN is true
        case 7: return isnan(v) ? 0u : (u32)fminf(fmaxf(v, 0.0f), 255.0f);
        case 8: return isnan(v) ? 0u : (u32)(int)fminf(fmaxf(v, -128.0f), 127.0f) & 0xffu;
        default: return __float_as_uint(v);
    }
}

// Rust's `as` from f32 to i64: truncate and saturate, NaN -> 0.
__device__ __forceinline__ u64 f32_to_i64(float v) {
    if (isnan(v)) return 0ull;
    if (v >= 9223372036854775808.0f) return 0x7fffffffffffffffull;
    if (v <= -9223372036854775808.0f) return 0x8000000000000000ull;
    return (u64)(i64)v;
}

// One element (i64 whole, others in the low bits): between integer types Rust's `as` on the
// bits (truncating or extending), i64 to floats rounded to the nearest f32 first, everything
// else through f32.
__device__ __forceinline__ u64 convert(u64 bits) {
    const bool int_from = FROM == 1 || FROM == 2 || FROM >= 5,
            int_to = TO == 1 || TO == 2 || TO >= 5;
    if (FROM == TO) return bits;
    if (int_from && int_to) {
        const i64 v = FROM == 5 ? (i64)bits : int_of((u32)bits);
        if (TO == 6) return v != 0 ? 1u : 0u;
        if (TO == 7 || TO == 8) return (u64)v & 0xffu;
        return TO == 5 ? (u64)v : (u64)(u32)v;
    }
    const float f = FROM == 5 ? (float)(i64)bits : to_f32((u32)bits);
    return TO == 5 ? f32_to_i64(f) : (u64)from_f32(f);
}

// The bits of source element `e` of a block (16- and 8-bit elements zero-extended).
__device__ __forceinline__ u64 load(const u32* x, IDX e) {
    if (FROM == 5) return ((const u64*)x)[e];
    if (FROM >= 6) return (x[e / 4] >> ((e & 3) * 8)) & 0xffu;
    if (FROM >= 3) return (x[e / 2] >> ((e & 1) * 16)) & 0xffffu;
    return x[e];
}

// Elements of dtype TO in a word: 4 of 8-bit types, 2 of 16-bit ones.
#define PER_WORD (TO >= 6 ? 4 : 2)

extern "C" __global__ void cast_main(
    const u32* __restrict__ x, u32* __restrict__ out, CastParams p) {
    const IDX n = (IDX)p.n, off = (IDX)p.offset;
    if (TO == 3 || TO == 4 || TO >= 6) {
        // Thread i writes output word i: elements PER_WORD i onwards (past the end, padding).
        for (IDX i = grid_start(); PER_WORD * i < n; i += grid_step()) {
            u32 word = 0u;
            for (IDX j = 0; j < PER_WORD && PER_WORD * i + j < n; ++j) {
                const IDX e = off + strided_offset(PER_WORD * i + j, p.rank, p.shape, p.strides);
                word |= (u32)convert(load(x, e)) << (j * (32 / PER_WORD));
            }
            out[i] = word;
        }
        return;
    }
    if (TO == 5) {
        for (IDX i = grid_start(); i < n; i += grid_step()) ((u64*)out)[i] = convert(load(x, off + strided_offset(i, p.rank, p.shape, p.strides)));
        return;
    }
    for (IDX i = grid_start(); i < n; i += grid_step()) out[i] = (u32)convert(load(x, off + strided_offset(i, p.rank, p.shape, p.strides)));
}
