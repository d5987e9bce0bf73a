// Unary math / activations and binary arithmetic (optionally fused with an activation).
//
// OP is `UnaryOp::code` (unary_main) or `BinaryOp::code` (binary_main), ACT a `UnaryOp::code`
// applied after a binary op (0: none); codes and expressions are in the op table
// (src/ops/elementwise/table.rs).
// A_MODE / B_MODE say how an operand is addressed: 0 strided (general), 1 contiguous,
// 2 a contiguous block repeated with a period (a row broadcast over leading dimensions).
// VEC4 (f32 only): every operand contiguous and 16-byte aligned, so each thread loads and
// stores four elements at a time (float4), VEC4_UNROLL of them in flight before their stores,
// and the last n % 4 elements go one by one.
// int_binary_main is integer arithmetic on VAL with the rules of `BinaryOp::eval_int` (WGSL's):
// + - * wrap (computed unsigned, as signed overflow is undefined in C++); / truncates, with
// x / 0 = x and MIN / -1 = MIN; pow by repeated squaring, 1 / a^|b| truncated for b < 0.

#ifndef OP
#define OP 0
#endif
#ifndef ACT
#define ACT 0
#endif
#ifndef A_MODE
#define A_MODE 0
#endif
#ifndef B_MODE
#define B_MODE 0
#endif
// int_binary_main's element type: int, unsigned or i64; UVAL its unsigned twin.
#ifndef VEC4
#define VEC4 0
#endif
#ifndef VAL
#define VAL int
#endif
__device__ __forceinline__ unsigned as_unsigned(int v) { return (unsigned)v; }
__device__ __forceinline__ unsigned as_unsigned(unsigned v) { return v; }
__device__ __forceinline__ u64 as_unsigned(i64 v) { return (u64)v; }
typedef decltype(as_unsigned((VAL)0)) UVAL;

template <int mode>
__device__ __forceinline__ IDX operand_index(IDX i, const ElementwiseParams& p,
        const u64* strides, u64 period) {
    if (mode == 1) return i;
    if (mode == 2) return i % (IDX)period;
    return strided_offset(i, p.rank, p.shape, strides);
}

#define VEC4_UNROLL 4

// First element the scalar loop handles: past the float4 part when VEC4.
__device__ __forceinline__ IDX vec4_end(IDX n) { return VEC4 ? n / 4 * 4 : 0; }

// out4[i] = compute(i) for the n4 float4s: each thread computes VEC4_UNROLL of them, a block
// apart, before it stores them (the loads of all in flight at once), in grid-stride steps.
template <typename F>
__device__ __forceinline__ void vec4_loop(IDX n4, float4* __restrict__ out4, F compute) {
    const IDX step = grid_step() * VEC4_UNROLL;
    for (IDX base = (IDX)blockIdx.x * blockDim.x * VEC4_UNROLL + threadIdx.x; base < n4; base += step) {
        float4 v[VEC4_UNROLL];
#pragma unroll
        for (int k = 0; k < VEC4_UNROLL; ++k) {
            const IDX i = base + (IDX)k * blockDim.x;
            if (i < n4) v[k] = compute(i);
        }
#pragma unroll
        for (int k = 0; k < VEC4_UNROLL; ++k) {
            const IDX i = base + (IDX)k * blockDim.x;
            if (i < n4) out4[i] = v[k];
        }
    }
}

template <int op>
__device__ __forceinline__ float4 unary4(float4 v) {
    return make_float4(unary_op<op>(v.x), unary_op<op>(v.y), unary_op<op>(v.z), unary_op<op>(v.w));
}

__device__ __forceinline__ float4 binary4(float4 a, float4 b) {
    return make_float4(unary_op<ACT>(binary_op<OP>(a.x, b.x)), unary_op<ACT>(binary_op<OP>(a.y, b.y)),
                       unary_op<ACT>(binary_op<OP>(a.z, b.z)), unary_op<ACT>(binary_op<OP>(a.w, b.w)));
}

extern "C" __global__ void unary_main(
    const float* __restrict__ x, float* __restrict__ out, ElementwiseParams p) {
    const IDX n = (IDX)p.n;
    if (VEC4) {
        const float4* __restrict__ x4 = (const float4*)x;
        vec4_loop(n / 4, (float4*)out, [&](IDX i) { return unary4<OP>(x4[i]); });
    }
    for (IDX i = vec4_end(n) + grid_start(); i < n; i += grid_step()) {
        out[i] = unary_op<OP>(x[operand_index<A_MODE>(i, p, p.a_strides, p.a_period)]);
    }
}

extern "C" __global__ void binary_main(
    const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out,
    ElementwiseParams p) {
    const IDX n = (IDX)p.n;
    if (VEC4) {
        const float4* __restrict__ a4 = (const float4*)a;
        const float4* __restrict__ b4 = (const float4*)b;
        vec4_loop(n / 4, (float4*)out, [&](IDX i) { return binary4(a4[i], b4[i]); });
    }
    for (IDX i = vec4_end(n) + grid_start(); i < n; i += grid_step()) {
        float va = a[operand_index<A_MODE>(i, p, p.a_strides, p.a_period)];
        float vb = b[operand_index<B_MODE>(i, p, p.b_strides, p.b_period)];
        out[i] = unary_op<ACT>(binary_op<OP>(va, vb));
    }
}

__device__ __forceinline__ VAL int_pow(VAL a, VAL b) {
    if (b < (VAL)0) {
        if (a == (VAL)1) return (VAL)1;
        if ((VAL)((UVAL)a + (UVAL)1) == (VAL)0) return (b & (VAL)1) ? a : (VAL)1;
        return (VAL)0;
    }
    UVAL result = 1, base = (UVAL)a, e = (UVAL)b;
    while (e != 0) {
        if (e & 1) result *= base;
        base *= base;
        e >>= 1;
    }
    return (VAL)result;
}

// Truncating division with x / 0 = x and MIN / -1 = MIN (computed unsigned: no overflow).
__device__ __forceinline__ VAL int_div(VAL a, VAL b) {
    if (b == (VAL)0) return a;
    if ((VAL)-1 < (VAL)0 && b == (VAL)-1) return (VAL)((UVAL)0 - (UVAL)a);
    return a / b;
}

template <int op>
__device__ __forceinline__ VAL int_op(VAL a, VAL b) {
    switch (op) {
        INT_CASES
        default: return a;
    }
}

extern "C" __global__ void int_binary_main(
    const VAL* __restrict__ a, const VAL* __restrict__ b, VAL* __restrict__ out,
    ElementwiseParams p) {
    const IDX n = (IDX)p.n;
    for (IDX i = grid_start(); i < n; i += grid_step()) {
        out[i] = int_op<OP>(a[operand_index<A_MODE>(i, p, p.a_strides, p.a_period)],
                b[operand_index<B_MODE>(i, p, p.b_strides, p.b_period)]);
    }
}
