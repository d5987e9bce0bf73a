// Dtype casts, `where` selection and gather (index_select): they move 32-bit words of any
// dtype. Dtype codes are `DType::code` (0 f32, 1 i32, 2 u32): FROM / TO for cast_main,
// COND_F32 for where_main's condition, SIGNED for gather_main's indices.

#ifndef FROM
#define FROM 0
#endif
#ifndef TO
#define TO 0
#endif
#ifndef COND_F32
#define COND_F32 0
#endif
#ifndef SIGNED
#define SIGNED 0
#endif

struct ViewsParams {
    u64 n;
    u32 rank;
    u32 pad;
    u64 shape[MAX_RANK];
    u64 strides[3][MAX_RANK]; // x (or cond), a, b
};

// Rust's `as`: floats to integers truncate and saturate (NaN -> 0); i32 <-> u32 keep bits.
__device__ __forceinline__ u32 convert(u32 bits) {
    if (FROM == TO) return bits;
    if (TO == 0) return FROM == 1 ? __float_as_uint((float)(int)bits) : __float_as_uint((float)bits);
    if (FROM == 0) {
        const float v = __uint_as_float(bits);
        if (isnan(v)) return 0u;
        // Saturate at the integer limits (every f32 below 2^31 / 2^32 converts exactly).
        if (TO == 1) return v >= 2147483648.0f ? 0x7fffffffu : (u32)(int)fmaxf(v, -2147483648.0f);
        return v >= 4294967296.0f ? 0xffffffffu : (u32)fmaxf(v, 0.0f);
    }
    return bits;
}

extern "C" __global__ void cast_main(const u32* __restrict__ x, u32* __restrict__ out, ViewsParams p) {
    const IDX n = (IDX)p.n;
    for (IDX i = grid_start(); i < n; i += grid_step()) out[i] = convert(x[strided_offset(i, p.rank, p.shape, p.strides[0])]);
}

extern "C" __global__ void where_main(const u32* __restrict__ cond, const u32* __restrict__ a, const u32* __restrict__ b,
                                      u32* __restrict__ out, ViewsParams p) {
    const IDX n = (IDX)p.n;
    for (IDX i = grid_start(); i < n; i += grid_step()) {
        u32 c = cond[strided_offset(i, p.rank, p.shape, p.strides[0])];
        if (COND_F32) c &= 0x7fffffffu; // -0.0 is false, NaN true
        out[i] = c != 0u ? a[strided_offset(i, p.rank, p.shape, p.strides[1])] : b[strided_offset(i, p.rank, p.shape, p.strides[2])];
    }
}

struct GatherParams {
    u64 outer;
    u64 len;
    u64 inner;
    u64 count;
    u32 fill;
    u32 pad;
};

extern "C" __global__ void gather_main(const u32* __restrict__ x, const u32* __restrict__ indices, u32* __restrict__ out, GatherParams p) {
    const IDX len = (IDX)p.len, inner = (IDX)p.inner, count = (IDX)p.count;
    const IDX n = (IDX)p.outer * count * inner;
    for (IDX i = grid_start(); i < n; i += grid_step()) {
        const IDX o = i / (count * inner), j = (i / inner) % count;
        const u32 raw = indices[j];
        const bool ok = SIGNED ? ((int)raw >= 0 && (IDX)raw < len) : (IDX)raw < len;
        out[i] = ok ? x[(o * len + raw) * inner + i % inner] : p.fill;
    }
}
