// Unary math / activations and binary arithmetic (optionally fused with an activation).
//
// OP is `UnaryOp::code` (unary_main) or `BinaryOp::code` (binary_main), ACT a `UnaryOp::code`
// applied after a binary op (0: none); codes are in src/ops/elementwise/mod.rs.
// A_MODE / B_MODE say how an operand is addressed: 0 strided (general), 1 contiguous,
// 2 a contiguous block repeated with a period (a row broadcast over leading dimensions).
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
#ifndef VAL
#define VAL int
#endif
__device__ __forceinline__ unsigned as_unsigned(int v) { return (unsigned)v; }
__device__ __forceinline__ unsigned as_unsigned(unsigned v) { return v; }
__device__ __forceinline__ u64 as_unsigned(i64 v) { return (u64)v; }
typedef decltype(as_unsigned((VAL)0)) UVAL;

template <int op>
__device__ __forceinline__ float binary_op(float a, float b) {
    switch (op) {
        case 0: return a + b;
        case 1: return a - b;
        case 2: return a * b;
        case 3: return a / b;
        case 4: return (isnan(a) || isnan(b)) ? nan_f32() : fminf(a, b);
        case 5: return (isnan(a) || isnan(b)) ? nan_f32() : fmaxf(a, b);
        default: return powf(a, b);
    }
}

template <int mode>
__device__ __forceinline__ IDX operand_index(IDX i, const ElementwiseParams& p, const u64* strides, u64 period) {
    if (mode == 1) return i;
    if (mode == 2) return i % (IDX)period;
    return strided_offset(i, p.rank, p.shape, strides);
}

extern "C" __global__ void unary_main(const float* __restrict__ x, float* __restrict__ out, ElementwiseParams p) {
    const IDX n = (IDX)p.n;
    for (IDX i = grid_start(); i < n; i += grid_step()) {
        out[i] = unary_op<OP>(x[operand_index<A_MODE>(i, p, p.a_strides, p.a_period)]);
    }
}

extern "C" __global__ void binary_main(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out,
                                       ElementwiseParams p) {
    const IDX n = (IDX)p.n;
    for (IDX i = grid_start(); i < n; i += grid_step()) {
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

template <int op>
__device__ __forceinline__ VAL int_op(VAL a, VAL b) {
    switch (op) {
        case 0: return (VAL)((UVAL)a + (UVAL)b);
        case 1: return (VAL)((UVAL)a - (UVAL)b);
        case 2: return (VAL)((UVAL)a * (UVAL)b);
        case 3:
            if (b == (VAL)0) return a;
            if ((VAL)-1 < (VAL)0 && b == (VAL)-1) return (VAL)((UVAL)0 - (UVAL)a);
            return a / b;
        case 4: return a < b ? a : b;
        case 5: return a < b ? b : a;
        default: return int_pow(a, b);
    }
}

extern "C" __global__ void int_binary_main(const VAL* __restrict__ a, const VAL* __restrict__ b, VAL* __restrict__ out,
                                           ElementwiseParams p) {
    const IDX n = (IDX)p.n;
    for (IDX i = grid_start(); i < n; i += grid_step()) {
        out[i] = int_op<OP>(a[operand_index<A_MODE>(i, p, p.a_strides, p.a_period)], b[operand_index<B_MODE>(i, p, p.b_strides, p.b_period)]);
    }
}
