// The WGSL types beyond 32-bit scalars and vectors, after prelude.cuh: f32 matrices with
// WGSL's column layout, and f16 (`h16`: 16 bits in memory, computed in f32 and rounded to
// f16 at each result, as the CPU executor does; NVRTC here has no cuda_fp16.h).

// A matrix column: a vecR, a vec3 padded to 16 bytes as WGSL lays it out.
template <int R> struct mcol { vec<float, R> v; };
template <> struct mcol<3> { vec<float, 3> v; float pad; };
template <int C, int R> struct mat { mcol<R> c[C]; };

template <int C, int R, class... A> __device__ __forceinline__ mat<C, R> mcompose(A... columns) {
    return mat<C, R>{{mcol<R>{columns}...}};
}
// +, - and negation column by column; a scalar times a matrix.
#define WGSL_MATRIX_COLUMNS(name)                                                                      \
    template <int C, int R> __device__ __forceinline__ mat<C, R> name(const mat<C, R>& a, const mat<C, R>& b) { \
        mat<C, R> out{};                                                                               \
        for (int i = 0; i < C; ++i) out.c[i].v = name(a.c[i].v, b.c[i].v);                             \
        return out;                                                                                    \
    }
WGSL_MATRIX_COLUMNS(op_add) WGSL_MATRIX_COLUMNS(op_sub)
template <int C, int R> __device__ __forceinline__ mat<C, R> op_neg(const mat<C, R>& a) {
    mat<C, R> out{};
    for (int i = 0; i < C; ++i) out.c[i].v = op_neg(a.c[i].v);
    return out;
}
template <int C, int R> __device__ __forceinline__ mat<C, R> op_mul(const mat<C, R>& a, float s) {
    mat<C, R> out{};
    for (int i = 0; i < C; ++i) out.c[i].v = op_mul(a.c[i].v, s);
    return out;
}
template <int C, int R> __device__ __forceinline__ mat<C, R> op_mul(float s, const mat<C, R>& a) {
    return op_mul(a, s); }
// The linear-algebra products.
template <int C, int R> __device__ __forceinline__ vec<float, R> op_mul(const mat<C, R>& a,
        const vec<float, C>& x) {
    vec<float, R> out;
    for (int r = 0; r < R; ++r) {
        float s = 0.0f;
        for (int k = 0; k < C; ++k) s += a.c[k].v.v[r] * x.v[k];
        out.v[r] = s;
    }
    return out;
}
template <int C, int R> __device__ __forceinline__ vec<float, C> op_mul(const vec<float, R>& x,
        const mat<C, R>& a) {
    vec<float, C> out;
    for (int c = 0; c < C; ++c) out.v[c] = m_dot(x, a.c[c].v);
    return out;
}
template <int K, int R, int C> __device__ __forceinline__ mat<C, R> op_mul(const mat<K, R>& a,
        const mat<C, K>& b) {
    mat<C, R> out{};
    for (int j = 0; j < C; ++j) out.c[j].v = op_mul(a, b.c[j].v);
    return out;
}
template <int C, int R> __device__ __forceinline__ mat<R, C> m_transpose(const mat<C, R>& a) {
    mat<R, C> out{};
    for (int c = 0; c < C; ++c)
        for (int r = 0; r < R; ++r) out.c[r].v.v[c] = a.c[c].v.v[r];
    return out;
}
__device__ __forceinline__ float m_determinant(const mat<2, 2>& m) {
    return m.c[0].v.v[0] * m.c[1].v.v[1] - m.c[1].v.v[0] * m.c[0].v.v[1];
}
// By cofactors along the first column.
template <int N> __device__ __forceinline__ float m_determinant(const mat<N, N>& m) {
    float d = 0.0f;
    for (int skip = 0; skip < N; ++skip) {
        mat<N - 1, N - 1> minor{};
        for (int c = 1; c < N; ++c)
            for (int r = 0; r < N - 1; ++r) minor.c[c - 1].v.v[r] = m.c[c].v.v[r < skip ? r
                    : r + 1];
        const float term = m.c[0].v.v[skip] * m_determinant(minor);
        d += skip % 2 == 0 ? term : -term;
    }
    return d;
}

// modf and frexp, each part on its own (the translation puts them in naga's result struct).
__device__ __forceinline__ float m_modf_fract(float a) { return a - truncf(a); }
__device__ __forceinline__ float m_frexp_fract(float a) { int e; return frexpf(a, &e); }
__device__ __forceinline__ int m_frexp_exp(float a) { int e; frexpf(a, &e);
return a == 0.0f ? 0 : e; }
WGSL_VECTOR_UNARY(m_modf_fract) WGSL_VECTOR_UNARY(m_frexp_fract) WGSL_VECTOR_UNARY(m_frexp_exp)

// f16: its bits; every operation widens to f32 and rounds its result back.
struct h16 { unsigned short bits; };
__device__ __forceinline__ float wide(h16 a) { return f16_value(a.bits); }
__device__ __forceinline__ h16 narrow(float a) { return h16{(unsigned short)f16_bits(a)}; }
#define WGSL_HALF_UNARY(name) __device__ __forceinline__ h16 name(h16 a) { return narrow(name(wide(a))); }
#define WGSL_HALF_BINARY(name) __device__ __forceinline__ h16 name(h16 a, h16 b) { return narrow(name(wide(a), wide(b))); }
#define WGSL_HALF_TERNARY(name) \
    __device__ __forceinline__ h16 name(h16 a, h16 b, h16 c) { return narrow(name(wide(a), wide(b), wide(c))); }
#define WGSL_HALF_COMPARE(name) __device__ __forceinline__ bool name(h16 a, h16 b) { return name(wide(a), wide(b)); }
WGSL_HALF_BINARY(op_add) WGSL_HALF_BINARY(op_sub) WGSL_HALF_BINARY(op_mul) WGSL_HALF_BINARY(op_div)
WGSL_HALF_BINARY(op_rem) WGSL_HALF_UNARY(op_neg)
WGSL_HALF_COMPARE(op_eq) WGSL_HALF_COMPARE(op_ne) WGSL_HALF_COMPARE(op_lt) WGSL_HALF_COMPARE(op_le)
WGSL_HALF_COMPARE(op_gt) WGSL_HALF_COMPARE(op_ge)
WGSL_HALF_UNARY(m_abs) WGSL_HALF_BINARY(m_min) WGSL_HALF_BINARY(m_max) WGSL_HALF_UNARY(m_saturate)
WGSL_HALF_UNARY(m_cos) WGSL_HALF_UNARY(m_cosh) WGSL_HALF_UNARY(m_sin) WGSL_HALF_UNARY(m_sinh)
WGSL_HALF_UNARY(m_tan) WGSL_HALF_UNARY(m_tanh) WGSL_HALF_UNARY(m_acos) WGSL_HALF_UNARY(m_asin)
WGSL_HALF_UNARY(m_atan) WGSL_HALF_BINARY(m_atan2) WGSL_HALF_UNARY(m_asinh) WGSL_HALF_UNARY(m_acosh)
WGSL_HALF_UNARY(m_atanh) WGSL_HALF_UNARY(m_radians) WGSL_HALF_UNARY(m_degrees)
WGSL_HALF_UNARY(m_ceil)
WGSL_HALF_UNARY(m_floor) WGSL_HALF_UNARY(m_round) WGSL_HALF_UNARY(m_fract) WGSL_HALF_UNARY(m_trunc)
WGSL_HALF_UNARY(m_exp) WGSL_HALF_UNARY(m_exp2) WGSL_HALF_UNARY(m_log) WGSL_HALF_UNARY(m_log2)
WGSL_HALF_BINARY(m_pow) WGSL_HALF_UNARY(m_sqrt) WGSL_HALF_UNARY(m_inverse_sqrt)
WGSL_HALF_UNARY(m_sign)
WGSL_HALF_BINARY(m_step) WGSL_HALF_TERNARY(m_fma) WGSL_HALF_TERNARY(m_mix)
WGSL_HALF_TERNARY(m_smoothstep)
WGSL_HALF_UNARY(m_length) WGSL_HALF_BINARY(m_distance) WGSL_HALF_UNARY(m_quantize_to_f16)
__device__ __forceinline__ h16 m_clamp(h16 x, h16 lo, h16 hi) { return m_min(m_max(x, lo), hi); }
__device__ __forceinline__ h16 m_ldexp(h16 x, int e) { return narrow(m_ldexp(wide(x), e)); }
template <int N> __device__ __forceinline__ h16 m_length(const vec<h16, N>& a) {
    return m_sqrt(m_dot(a, a)); }
// Conversions to and from f16 go through f32 (exact for every f16, and for the integers
// that f16 holds).
template <> __device__ __forceinline__ h16 convert<h16>(float a) { return narrow(a); }
template <> __device__ __forceinline__ h16 convert<h16>(int a) { return narrow((float)a); }
template <> __device__ __forceinline__ h16 convert<h16>(u32 a) { return narrow((float)a); }
template <> __device__ __forceinline__ h16 convert<h16>(bool a) { return narrow(a ? 1.0f : 0.0f); }
template <class To> __device__ __forceinline__ To convert(h16 a) { return convert<To>(wide(a)); }
template <> __device__ __forceinline__ h16 convert<h16>(h16 a) { return a; }
// Bitcasts between 32-bit values and pairs of f16.
template <class To, class T> __device__ __forceinline__ To bits_as(const T& a) {
    To out;
    __builtin_memcpy(&out, &a, sizeof(To));
    return out;
}
