// Prelude of every built-in CUDA kernel (see README.md).

typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;

#ifndef IDX
#define IDX unsigned int
#endif

#define MAX_RANK 8

// Row-major linear index `i` of a `rank`-dimensional `shape` to an offset through `strides`.
__device__ __forceinline__ IDX strided_offset(IDX i, u32 rank, const u64* shape,
        const u64* strides) {
    IDX off = 0;
    for (int d = (int)rank - 1; d >= 0; --d) {
        IDX n = (IDX)shape[d];
        off += (i % n) * (IDX)strides[d];
        i /= n;
    }
    return off;
}

__device__ __forceinline__ float nan_f32() { return __int_as_float(0x7fc00000); }
__device__ __forceinline__ float inf_f32() { return __int_as_float(0x7f800000); }

// Index of the first element this thread handles, and the grid-stride step.
__device__ __forceinline__ IDX grid_start() { return (IDX)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ IDX grid_step() { return (IDX)gridDim.x * blockDim.x; }

// f16 bits -> f32, exactly (subnormals included).
__device__ __forceinline__ float f16_to_f32(u32 h) {
    const u32 sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0) {
        const float v = (float)m * 5.9604645e-8f; // m * 2^-24
        return sign ? -v : v;
    }
    if (e == 31) return __uint_as_float(sign | 0x7f800000u | (m << 13));
    return __uint_as_float(sign | ((e + 112u) << 23) | (m << 13));
}

// f32 -> f16 bits, rounding to nearest even; overflow gives inf, NaN stays NaN.
__device__ __forceinline__ u32 f32_to_f16(float f) {
    const u32 x = __float_as_uint(f), sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
    if (a > 0x7f800000u) return sign | 0x7e00u;
    if (a >= 0x477ff000u) return sign | 0x7c00u; // >= 65520 rounds to inf
    if (a < 0x38800000u) {
        // Below the smallest normal f16 (2^-14): a subnormal in units of 2^-24, or zero.
        if (a <= 0x33000000u) return sign;
        const u32 e = a >> 23, m = (a & 0x7fffffu) | 0x800000u, shift = 126u - e;
        const u32 q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
        return sign | ((rem > half || (rem == half && (q & 1u))) ? q + 1u : q);
    }
    const u32 b = a - 0x38000000u; // exponent rebiased from 127 to 15
    const u32 q = b >> 13, rem = b & 0x1fffu;
    return sign | ((rem > 0x1000u || (rem == 0x1000u && (q & 1u))) ? q + 1u : q);
}

// f32 -> bf16 bits, rounding to nearest even; NaN stays NaN.
__device__ __forceinline__ u32 f32_to_bf16(float f) {
    const u32 x = __float_as_uint(f);
    if (isnan(f)) return ((x >> 16) & 0x8000u) | 0x7fc0u;
    return (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
}
