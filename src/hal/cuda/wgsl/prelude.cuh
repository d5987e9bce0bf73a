// Prelude of every WGSL kernel translated to CUDA C (src/hal/cuda/wgsl/): WGSL's vectors and
// the operations the translation calls, with WGSL's rules where C++'s differ:
// integer + - * wrap (computed unsigned: signed overflow is undefined in C++), x / 0 = x and
// x % 0 = 0 (MIN / -1 = MIN, MIN % -1 = 0), shifts take the count modulo 32, float-to-integer
// conversions saturate (NaN gives 0), and indices are clamped into their array.

// Labels and variables the translation declares for every loop and kernel may go unused.
#pragma nv_diag_suppress 177

typedef unsigned int u32;
typedef unsigned long long u64;

template <class T, int N>
struct vec {
    T v[N];
    __device__ __forceinline__ T& operator[](u32 i) { return v[i]; }
    __device__ __forceinline__ const T& operator[](u32 i) const { return v[i]; }
};

// The scalar type of a scalar or vector.
template <class T> struct scalar_of { typedef T type; };
template <class T, int N> struct scalar_of<vec<T, N>> { typedef T type; };

// Vectors built from scalars and vectors, flattened in order (WGSL's constructors).
template <class T, int N>
__device__ __forceinline__ void put(vec<T, N>& out, int& at, T s) { out.v[at++] = s; }
template <class T, int N, int M>
__device__ __forceinline__ void put(vec<T, N>& out, int& at, const vec<T, M>& s) {
    for (int i = 0; i < M; ++i) out.v[at++] = s.v[i];
}
template <class T, int N, class... A>
__device__ __forceinline__ vec<T, N> compose(A... parts) {
    vec<T, N> out;
    int at = 0;
    (put(out, at, parts), ...);
    return out;
}
template <int N, class T>
__device__ __forceinline__ vec<T, N> splat(T s) {
    vec<T, N> out;
    for (int i = 0; i < N; ++i) out.v[i] = s;
    return out;
}
template <int N, class T, int M, class... I>
__device__ __forceinline__ vec<T, N> swizzle(const vec<T, M>& a, I... index) {
    vec<T, N> out;
    int at = 0;
    ((out.v[at++] = a.v[index]), ...);
    return out;
}

// An index clamped into [0, n): WebGPU's robust access (n >= 1; a negative index is huge).
__device__ __forceinline__ u32 clamp_index(u32 i, u64 n) { return (u64)i < n ? i : (u32)(n - 1); }
__device__ __forceinline__ u32 clamp_index(int i, u64 n) { return clamp_index((u32)i, n); }

// Scalar operations with WGSL's rules.
__device__ __forceinline__ float op_add(float a, float b) { return a + b; }
__device__ __forceinline__ int op_add(int a, int b) { return (int)((u32)a + (u32)b); }
__device__ __forceinline__ u32 op_add(u32 a, u32 b) { return a + b; }
__device__ __forceinline__ float op_sub(float a, float b) { return a - b; }
__device__ __forceinline__ int op_sub(int a, int b) { return (int)((u32)a - (u32)b); }
__device__ __forceinline__ u32 op_sub(u32 a, u32 b) { return a - b; }
__device__ __forceinline__ float op_mul(float a, float b) { return a * b; }
__device__ __forceinline__ int op_mul(int a, int b) { return (int)((u32)a * (u32)b); }
__device__ __forceinline__ u32 op_mul(u32 a, u32 b) { return a * b; }
__device__ __forceinline__ float op_div(float a, float b) { return a / b; }
__device__ __forceinline__ int op_div(int a, int b) {
    return b == 0 ? a : (b == -1 ? (int)(0u - (u32)a) : a / b); }
__device__ __forceinline__ u32 op_div(u32 a, u32 b) { return b == 0u ? a : a / b; }
__device__ __forceinline__ float op_rem(float a, float b) { return a - b * truncf(a / b); }
__device__ __forceinline__ int op_rem(int a, int b) { return (b == 0 || b == -1) ? 0 : a % b; }
__device__ __forceinline__ u32 op_rem(u32 a, u32 b) { return b == 0u ? 0u : a % b; }
__device__ __forceinline__ int op_and(int a, int b) { return a & b; }
__device__ __forceinline__ u32 op_and(u32 a, u32 b) { return a & b; }
__device__ __forceinline__ bool op_and(bool a, bool b) { return a & b; }
__device__ __forceinline__ int op_or(int a, int b) { return a | b; }
__device__ __forceinline__ u32 op_or(u32 a, u32 b) { return a | b; }
__device__ __forceinline__ bool op_or(bool a, bool b) { return a | b; }
__device__ __forceinline__ int op_xor(int a, int b) { return a ^ b; }
__device__ __forceinline__ u32 op_xor(u32 a, u32 b) { return a ^ b; }
__device__ __forceinline__ int op_shl(int a, u32 b) { return (int)((u32)a << (b & 31u)); }
__device__ __forceinline__ u32 op_shl(u32 a, u32 b) { return a << (b & 31u); }
__device__ __forceinline__ int op_shr(int a, u32 b) { return a >> (b & 31u); }
__device__ __forceinline__ u32 op_shr(u32 a, u32 b) { return a >> (b & 31u); }
__device__ __forceinline__ bool op_land(bool a, bool b) { return a && b; }
__device__ __forceinline__ bool op_lor(bool a, bool b) { return a || b; }
// Comparisons of scalars (overloads, not a template: a template would also match vectors and
// make their comparison below ambiguous).
#define WGSL_COMPARE(name, op)                                                \
    __device__ __forceinline__ bool name(float a, float b) { return a op b; } \
    __device__ __forceinline__ bool name(int a, int b) { return a op b; }     \
    __device__ __forceinline__ bool name(u32 a, u32 b) { return a op b; }     \
    __device__ __forceinline__ bool name(bool a, bool b) { return a op b; }
WGSL_COMPARE(op_eq, ==) WGSL_COMPARE(op_ne, !=) WGSL_COMPARE(op_lt, <) WGSL_COMPARE(op_le, <=)
WGSL_COMPARE(op_gt, >) WGSL_COMPARE(op_ge, >=)
__device__ __forceinline__ float op_neg(float a) { return -a; }
__device__ __forceinline__ int op_neg(int a) { return (int)(0u - (u32)a); }
__device__ __forceinline__ bool op_not(bool a) { return !a; }
__device__ __forceinline__ int op_bnot(int a) { return ~a; }
__device__ __forceinline__ u32 op_bnot(u32 a) { return ~a; }

// Each binary operation on vectors, componentwise, and on a vector with a scalar.
#define WGSL_VECTOR_BINARY(name)                                                   \
    template <class T, class U, int N>                                             \
    __device__ __forceinline__ auto name(const vec<T, N>& a, const vec<U, N>& b) { \
        vec<decltype(name(a.v[0], b.v[0])), N> out;                                \
        for (int i = 0; i < N; ++i) out.v[i] = name(a.v[i], b.v[i]);               \
        return out;                                                                \
    }                                                                              \
    template <class T, class U, int N>                                             \
    __device__ __forceinline__ auto name(const vec<T, N>& a, U b) {                \
        vec<decltype(name(a.v[0], b)), N> out;                                     \
        for (int i = 0; i < N; ++i) out.v[i] = name(a.v[i], b);                    \
        return out;                                                                \
    }                                                                              \
    template <class T, class U, int N>                                             \
    __device__ __forceinline__ auto name(T a, const vec<U, N>& b) {                \
        vec<decltype(name(a, b.v[0])), N> out;                                     \
        for (int i = 0; i < N; ++i) out.v[i] = name(a, b.v[i]);                    \
        return out;                                                                \
    }
#define WGSL_VECTOR_UNARY(name)                                \
    template <class T, int N>                                  \
    __device__ __forceinline__ auto name(const vec<T, N>& a) { \
        vec<decltype(name(a.v[0])), N> out;                    \
        for (int i = 0; i < N; ++i) out.v[i] = name(a.v[i]);   \
        return out;                                            \
    }
WGSL_VECTOR_BINARY(op_add) WGSL_VECTOR_BINARY(op_sub) WGSL_VECTOR_BINARY(op_mul)
WGSL_VECTOR_BINARY(op_div)
WGSL_VECTOR_BINARY(op_rem) WGSL_VECTOR_BINARY(op_and) WGSL_VECTOR_BINARY(op_or)
WGSL_VECTOR_BINARY(op_xor)
WGSL_VECTOR_BINARY(op_shl) WGSL_VECTOR_BINARY(op_shr) WGSL_VECTOR_BINARY(op_eq)
WGSL_VECTOR_BINARY(op_ne)
WGSL_VECTOR_BINARY(op_lt) WGSL_VECTOR_BINARY(op_le) WGSL_VECTOR_BINARY(op_gt)
WGSL_VECTOR_BINARY(op_ge)
WGSL_VECTOR_BINARY(op_land) WGSL_VECTOR_BINARY(op_lor)
WGSL_VECTOR_UNARY(op_neg) WGSL_VECTOR_UNARY(op_not) WGSL_VECTOR_UNARY(op_bnot)

// WGSL's select(reject, accept, condition), componentwise for a vector condition.
template <class T> __device__ __forceinline__ T wsel(bool c, T accept, T reject) {
    return c ? accept : reject; }
template <class T, int N>
__device__ __forceinline__ vec<T, N> wsel(const vec<bool, N>& c, const vec<T, N>& accept,
        const vec<T, N>& reject) {
    vec<T, N> out;
    for (int i = 0; i < N; ++i) out.v[i] = c.v[i] ? accept.v[i] : reject.v[i];
    return out;
}
__device__ __forceinline__ bool rel_all(bool a) { return a; }
__device__ __forceinline__ bool rel_any(bool a) { return a; }
template <int N> __device__ __forceinline__ bool rel_all(const vec<bool, N>& a) {
    bool r = true;
    for (int i = 0; i < N; ++i) r = r && a.v[i];
    return r;
}
template <int N> __device__ __forceinline__ bool rel_any(const vec<bool, N>& a) {
    bool r = false;
    for (int i = 0; i < N; ++i) r = r || a.v[i];
    return r;
}

// Conversions (value-preserving, float to integer saturating) and bitcasts.
template <class To> __device__ __forceinline__ To convert(float a);
template <> __device__ __forceinline__ float convert<float>(float a) { return a; }
// WGSL clamps to the integers that f32 holds exactly: at most 2^31 - 128 and 2^32 - 256.
template <> __device__ __forceinline__ int convert<int>(float a) {
    return a != a ? 0 : __float2int_rz(fminf(a, 2147483520.0f));
}
template <> __device__ __forceinline__ u32 convert<u32>(float a) {
    return a != a ? 0u : __float2uint_rz(fminf(a, 4294967040.0f));
}
template <> __device__ __forceinline__ bool convert<bool>(float a) { return a != 0.0f; }
template <class To> __device__ __forceinline__ To convert(int a) { return (To)a; }
template <class To> __device__ __forceinline__ To convert(u32 a) { return (To)a; }
template <class To> __device__ __forceinline__ To convert(bool a) { return (To)(a ? 1 : 0); }
template <class To, class T, int N>
__device__ __forceinline__ vec<To, N> convert(const vec<T, N>& a) {
    vec<To, N> out;
    for (int i = 0; i < N; ++i) out.v[i] = convert<To>(a.v[i]);
    return out;
}
template <class To> __device__ __forceinline__ To bitcast(float a);
template <> __device__ __forceinline__ float bitcast<float>(float a) { return a; }
template <> __device__ __forceinline__ int bitcast<int>(float a) { return __float_as_int(a); }
template <> __device__ __forceinline__ u32 bitcast<u32>(float a) { return __float_as_uint(a); }
template <class To> __device__ __forceinline__ To bitcast(int a);
template <> __device__ __forceinline__ float bitcast<float>(int a) { return __int_as_float(a); }
template <> __device__ __forceinline__ int bitcast<int>(int a) { return a; }
template <> __device__ __forceinline__ u32 bitcast<u32>(int a) { return (u32)a; }
template <class To> __device__ __forceinline__ To bitcast(u32 a);
template <> __device__ __forceinline__ float bitcast<float>(u32 a) { return __uint_as_float(a); }
template <> __device__ __forceinline__ int bitcast<int>(u32 a) { return (int)a; }
template <> __device__ __forceinline__ u32 bitcast<u32>(u32 a) { return a; }
template <class To, class T, int N>
__device__ __forceinline__ vec<To, N> bitcast(const vec<T, N>& a) {
    vec<To, N> out;
    for (int i = 0; i < N; ++i) out.v[i] = bitcast<To>(a.v[i]);
    return out;
}

// The math built-ins on scalars; WGSL_VECTOR_* extends them componentwise.
__device__ __forceinline__ float m_abs(float a) { return fabsf(a); }
__device__ __forceinline__ int m_abs(int a) { return a < 0 ? op_neg(a) : a; }
__device__ __forceinline__ u32 m_abs(u32 a) { return a; }
__device__ __forceinline__ float m_min(float a, float b) { return fminf(a, b); }
__device__ __forceinline__ int m_min(int a, int b) { return a < b ? a : b; }
__device__ __forceinline__ u32 m_min(u32 a, u32 b) { return a < b ? a : b; }
__device__ __forceinline__ float m_max(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ int m_max(int a, int b) { return a < b ? b : a; }
__device__ __forceinline__ u32 m_max(u32 a, u32 b) { return a < b ? b : a; }
template <class T> __device__ __forceinline__ T m_clamp(T x, T lo, T hi) {
    return m_min(m_max(x, lo), hi); }
template <class T, int N>
__device__ __forceinline__ vec<T, N> m_clamp(const vec<T, N>& x, const vec<T, N>& lo,
        const vec<T, N>& hi) { return m_min(m_max(x, lo), hi); }
__device__ __forceinline__ float m_saturate(float a) { return m_clamp(a, 0.0f, 1.0f); }
__device__ __forceinline__ float m_cos(float a) { return cosf(a); }
__device__ __forceinline__ float m_cosh(float a) { return coshf(a); }
__device__ __forceinline__ float m_sin(float a) { return sinf(a); }
__device__ __forceinline__ float m_sinh(float a) { return sinhf(a); }
__device__ __forceinline__ float m_tan(float a) { return tanf(a); }
__device__ __forceinline__ float m_tanh(float a) { return tanhf(a); }
__device__ __forceinline__ float m_acos(float a) { return acosf(a); }
__device__ __forceinline__ float m_asin(float a) { return asinf(a); }
__device__ __forceinline__ float m_atan(float a) { return atanf(a); }
__device__ __forceinline__ float m_atan2(float a, float b) { return atan2f(a, b); }
__device__ __forceinline__ float m_asinh(float a) { return asinhf(a); }
__device__ __forceinline__ float m_acosh(float a) { return acoshf(a); }
__device__ __forceinline__ float m_atanh(float a) { return atanhf(a); }
__device__ __forceinline__ float m_radians(float a) { return a * 0.017453292519943295f; }
__device__ __forceinline__ float m_degrees(float a) { return a * 57.29577951308232f; }
__device__ __forceinline__ float m_ceil(float a) { return ceilf(a); }
__device__ __forceinline__ float m_floor(float a) { return floorf(a); }
__device__ __forceinline__ float m_round(float a) { return rintf(a); }
__device__ __forceinline__ float m_fract(float a) { return a - floorf(a); }
__device__ __forceinline__ float m_trunc(float a) { return truncf(a); }
__device__ __forceinline__ float m_exp(float a) { return expf(a); }
__device__ __forceinline__ float m_exp2(float a) { return exp2f(a); }
__device__ __forceinline__ float m_log(float a) { return logf(a); }
__device__ __forceinline__ float m_log2(float a) { return log2f(a); }
__device__ __forceinline__ float m_pow(float a, float b) { return powf(a, b); }
__device__ __forceinline__ float m_sqrt(float a) { return sqrtf(a); }
__device__ __forceinline__ float m_inverse_sqrt(float a) { return rsqrtf(a); }
__device__ __forceinline__ float m_sign(float a) {
    return a > 0.0f ? 1.0f : (a < 0.0f ? -1.0f : 0.0f); }
__device__ __forceinline__ int m_sign(int a) { return a > 0 ? 1 : (a < 0 ? -1 : 0); }
__device__ __forceinline__ float m_fma(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ float m_step(float edge, float x) { return x < edge ? 0.0f : 1.0f; }
__device__ __forceinline__ float m_mix(float a, float b, float t) { return a * (1.0f - t) + b * t; }
__device__ __forceinline__ u32 m_count_one_bits(u32 a) { return (u32)__popc(a); }
__device__ __forceinline__ int m_count_one_bits(int a) { return __popc((u32)a); }
__device__ __forceinline__ u32 m_count_leading_zeros(u32 a) { return (u32)__clz(a); }
__device__ __forceinline__ int m_count_leading_zeros(int a) { return __clz(a); }
__device__ __forceinline__ u32 m_count_trailing_zeros(u32 a) {
    return a == 0u ? 32u : (u32)(__ffs(a) - 1); }
__device__ __forceinline__ int m_count_trailing_zeros(int a) {
    return (int)m_count_trailing_zeros((u32)a); }
__device__ __forceinline__ u32 m_reverse_bits(u32 a) { return __brev(a); }
__device__ __forceinline__ int m_reverse_bits(int a) { return (int)__brev((u32)a); }
WGSL_VECTOR_UNARY(m_abs) WGSL_VECTOR_BINARY(m_min) WGSL_VECTOR_BINARY(m_max)
WGSL_VECTOR_UNARY(m_saturate)
WGSL_VECTOR_UNARY(m_cos) WGSL_VECTOR_UNARY(m_cosh) WGSL_VECTOR_UNARY(m_sin)
WGSL_VECTOR_UNARY(m_sinh)
WGSL_VECTOR_UNARY(m_tan) WGSL_VECTOR_UNARY(m_tanh) WGSL_VECTOR_UNARY(m_acos)
WGSL_VECTOR_UNARY(m_asin)
WGSL_VECTOR_UNARY(m_atan) WGSL_VECTOR_BINARY(m_atan2) WGSL_VECTOR_UNARY(m_asinh)
WGSL_VECTOR_UNARY(m_acosh)
WGSL_VECTOR_UNARY(m_atanh) WGSL_VECTOR_UNARY(m_radians) WGSL_VECTOR_UNARY(m_degrees)
WGSL_VECTOR_UNARY(m_ceil)
WGSL_VECTOR_UNARY(m_floor) WGSL_VECTOR_UNARY(m_round) WGSL_VECTOR_UNARY(m_fract)
WGSL_VECTOR_UNARY(m_trunc)
WGSL_VECTOR_UNARY(m_exp) WGSL_VECTOR_UNARY(m_exp2) WGSL_VECTOR_UNARY(m_log)
WGSL_VECTOR_UNARY(m_log2)
WGSL_VECTOR_BINARY(m_pow) WGSL_VECTOR_UNARY(m_sqrt) WGSL_VECTOR_UNARY(m_inverse_sqrt)
WGSL_VECTOR_UNARY(m_sign)
WGSL_VECTOR_BINARY(m_step) WGSL_VECTOR_UNARY(m_count_one_bits)
WGSL_VECTOR_UNARY(m_count_leading_zeros)
WGSL_VECTOR_UNARY(m_count_trailing_zeros) WGSL_VECTOR_UNARY(m_reverse_bits)
template <class T, int N>
__device__ __forceinline__ vec<T, N> m_fma(const vec<T, N>& a, const vec<T, N>& b,
        const vec<T, N>& c) {
    vec<T, N> out;
    for (int i = 0; i < N; ++i) out.v[i] = m_fma(a.v[i], b.v[i], c.v[i]);
    return out;
}
template <class T> __device__ __forceinline__ T component(T s, int) { return s; }
template <class T, int N> __device__ __forceinline__ T component(const vec<T, N>& v, int i) {
    return v.v[i]; }
template <class T, int N, class U>
__device__ __forceinline__ vec<T, N> m_mix(const vec<T, N>& a, const vec<T, N>& b, const U& t) {
    vec<T, N> out;
    for (int i = 0; i < N; ++i) out.v[i] = m_mix(a.v[i], b.v[i], component(t, i));
    return out;
}
template <class T, int N>
__device__ __forceinline__ T m_dot(const vec<T, N>& a, const vec<T, N>& b) {
    T r = op_mul(a.v[0], b.v[0]);
    for (int i = 1; i < N; ++i) r = op_add(r, op_mul(a.v[i], b.v[i]));
    return r;
}
__device__ __forceinline__ float m_length(float a) { return fabsf(a); }
template <int N> __device__ __forceinline__ float m_length(const vec<float, N>& a) {
    return sqrtf(m_dot(a, a)); }
// Geometry on float vectors, as WGSL defines it.
template <int N> __device__ __forceinline__ vec<float, N> m_normalize(const vec<float, N>& a) {
    const float l = m_length(a);
    vec<float, N> out;
    for (int i = 0; i < N; ++i) out.v[i] = a.v[i] / l;
    return out;
}
__device__ __forceinline__ float m_distance(float a, float b) { return fabsf(a - b); }
template <int N> __device__ __forceinline__ float m_distance(const vec<float, N>& a,
        const vec<float, N>& b) {
    float s = 0.0f;
    for (int i = 0; i < N; ++i) s += (a.v[i] - b.v[i]) * (a.v[i] - b.v[i]);
    return sqrtf(s);
}
__device__ __forceinline__ vec<float, 3> m_cross(const vec<float, 3>& a, const vec<float, 3>& b) {
    return vec<float, 3>{{a.v[1] * b.v[2] - a.v[2] * b.v[1], a.v[2] * b.v[0] - a.v[0] * b.v[2],
            a.v[0] * b.v[1] - a.v[1] * b.v[0]}};
}
__device__ __forceinline__ float m_smoothstep(float lo, float hi, float x) {
    const float t = m_saturate((x - lo) / (hi - lo));
    return t * t * (3.0f - 2.0f * t);
}
template <int N>
__device__ __forceinline__ vec<float, N> m_smoothstep(const vec<float, N>& lo,
        const vec<float, N>& hi, const vec<float, N>& x) {
    vec<float, N> out;
    for (int i = 0; i < N; ++i) out.v[i] = m_smoothstep(lo.v[i], hi.v[i], x.v[i]);
    return out;
}
template <int N> __device__ __forceinline__ vec<float, N> m_reflect(const vec<float, N>& e,
        const vec<float, N>& n) {
    const float d = m_dot(n, e);
    vec<float, N> out;
    for (int i = 0; i < N; ++i) out.v[i] = e.v[i] - 2.0f * d * n.v[i];
    return out;
}
template <int N>
__device__ __forceinline__ vec<float, N> m_face_forward(const vec<float, N>& e1,
        const vec<float, N>& e2, const vec<float, N>& e3) {
    if (m_dot(e2, e3) < 0.0f) return e1;
    vec<float, N> out;
    for (int i = 0; i < N; ++i) out.v[i] = -e1.v[i];
    return out;
}
__device__ __forceinline__ float m_ldexp(float x, int e) {
    return ldexpf(x, e < -300 ? -300 : (e > 300 ? 300 : e)); }
template <int N> __device__ __forceinline__ vec<float, N> m_ldexp(const vec<float, N>& x,
        const vec<int, N>& e) {
    vec<float, N> out;
    for (int i = 0; i < N; ++i) out.v[i] = m_ldexp(x.v[i], e.v[i]);
    return out;
}

// Bit fields: offset at most 32 and count at most 32 - offset, as WGSL clamps them.
__device__ __forceinline__ u32 field_mask(u32 o, u32 c) {
    return c == 0u ? 0u : (0xffffffffu >> (32u - c)) << o; }
__device__ __forceinline__ u32 m_extract_bits(u32 x, u32 offset, u32 count) {
    const u32 o = offset < 32u ? offset : 32u, c = count < 32u - o ? count : 32u - o;
    return c == 0u ? 0u : (x << (32u - o - c)) >> (32u - c);
}
__device__ __forceinline__ int m_extract_bits(int x, u32 offset, u32 count) {
    const u32 o = offset < 32u ? offset : 32u, c = count < 32u - o ? count : 32u - o;
    return c == 0u ? 0 : ((int)((u32)x << (32u - o - c))) >> (32u - c);
}
__device__ __forceinline__ u32 m_insert_bits(u32 x, u32 y, u32 offset, u32 count) {
    const u32 o = offset < 32u ? offset : 32u, c = count < 32u - o ? count : 32u - o;
    const u32 m = field_mask(o, c);
    return (x & ~m) | ((o < 32u ? y << o : 0u) & m);
}
__device__ __forceinline__ int m_insert_bits(int x, int y, u32 offset, u32 count) {
    return (int)m_insert_bits((u32)x, (u32)y, offset, count); }
template <class T, int N> __device__ __forceinline__ vec<T, N> m_extract_bits(const vec<T, N>& x,
        u32 offset, u32 count) {
    vec<T, N> out;
    for (int i = 0; i < N; ++i) out.v[i] = m_extract_bits(x.v[i], offset, count);
    return out;
}
template <class T, int N>
__device__ __forceinline__ vec<T, N> m_insert_bits(const vec<T, N>& x, const vec<T, N>& y,
        u32 offset, u32 count) {
    vec<T, N> out;
    for (int i = 0; i < N; ++i) out.v[i] = m_insert_bits(x.v[i], y.v[i], offset, count);
    return out;
}
__device__ __forceinline__ u32 m_first_leading_bit(u32 x) {
    return x == 0u ? 0xffffffffu : 31u - (u32)__clz(x); }
__device__ __forceinline__ int m_first_leading_bit(int x) {
    return (int)m_first_leading_bit(x < 0 ? ~(u32)x : (u32)x); }
__device__ __forceinline__ u32 m_first_trailing_bit(u32 x) {
    return x == 0u ? 0xffffffffu : (u32)(__ffs(x) - 1); }
__device__ __forceinline__ int m_first_trailing_bit(int x) {
    return (int)m_first_trailing_bit((u32)x); }
WGSL_VECTOR_UNARY(m_first_leading_bit) WGSL_VECTOR_UNARY(m_first_trailing_bit)

// f32 <-> f16 bits with the hardware's conversions (round to nearest even).
__device__ __forceinline__ u32 f16_bits(float f) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}
__device__ __forceinline__ float f16_value(u32 bits) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"((unsigned short)bits));
    return f;
}
__device__ __forceinline__ u32 m_pack2x16float(const vec<float, 2>& a) {
    return f16_bits(a.v[0]) | (f16_bits(a.v[1]) << 16); }
__device__ __forceinline__ vec<float, 2> m_unpack2x16float(u32 a) {
    return vec<float, 2>{{f16_value(a & 0xffffu), f16_value(a >> 16)}}; }
__device__ __forceinline__ float m_quantize_to_f16(float a) { return f16_value(f16_bits(a)); }
WGSL_VECTOR_UNARY(m_quantize_to_f16)
template <int N>
__device__ __forceinline__ vec<float, N> m_refract(const vec<float, N>& e, const vec<float, N>& n,
        float eta) {
    const float d = m_dot(n, e), k = 1.0f - eta * eta * (1.0f - d * d);
    vec<float, N> out;
    for (int i = 0; i < N; ++i) out.v[i] = k < 0.0f ? 0.0f
            : eta * e.v[i] - (eta * d + sqrtf(k)) * n.v[i];
    return out;
}

// Packing: component i at bits i * size; normalized floats as WGSL's floor(0.5 + scale x).
__device__ __forceinline__ u32 norm_bits(float x, float lo, float scale) {
    return (u32)(int)floorf(0.5f + scale * fminf(1.0f, fmaxf(lo, x))); }
__device__ __forceinline__ u32 m_pack4x8snorm(const vec<float, 4>& e) {
    u32 r = 0u;
    for (int i = 0; i < 4; ++i) r |= (norm_bits(e.v[i], -1.0f, 127.0f) & 0xffu) << (8 * i);
    return r;
}
__device__ __forceinline__ u32 m_pack4x8unorm(const vec<float, 4>& e) {
    u32 r = 0u;
    for (int i = 0; i < 4; ++i) r |= (norm_bits(e.v[i], 0.0f, 255.0f) & 0xffu) << (8 * i);
    return r;
}
__device__ __forceinline__ u32 m_pack2x16snorm(const vec<float, 2>& e) {
    return (norm_bits(e.v[0], -1.0f, 32767.0f) & 0xffffu) | (norm_bits(e.v[1], -1.0f, 32767.0f) << 16); }
__device__ __forceinline__ u32 m_pack2x16unorm(const vec<float, 2>& e) {
    return (norm_bits(e.v[0], 0.0f, 65535.0f) & 0xffffu) | (norm_bits(e.v[1], 0.0f, 65535.0f) << 16); }
template <class T> __device__ __forceinline__ u32 m_pack4x8(const vec<T, 4>& e) {
    u32 r = 0u;
    for (int i = 0; i < 4; ++i) r |= ((u32)e.v[i] & 0xffu) << (8 * i);
    return r;
}
__device__ __forceinline__ u32 m_pack4xi8_clamp(const vec<int, 4>& e) {
    u32 r = 0u;
    for (int i = 0; i < 4; ++i) r |= ((u32)(e.v[i] < -128 ? -128 : (e.v[i] > 127 ? 127 : e.v[i])) & 0xffu) << (8 * i);
    return r;
}
__device__ __forceinline__ u32 m_pack4xu8_clamp(const vec<u32, 4>& e) {
    u32 r = 0u;
    for (int i = 0; i < 4; ++i) r |= (e.v[i] > 255u ? 255u : e.v[i]) << (8 * i);
    return r;
}
__device__ __forceinline__ vec<float, 4> m_unpack4x8snorm(u32 a) {
    vec<float, 4> out;
    for (int i = 0; i < 4; ++i) out.v[i] = fmaxf((float)(signed char)(a >> (8 * i)) / 127.0f,
            -1.0f);
    return out;
}
__device__ __forceinline__ vec<float, 4> m_unpack4x8unorm(u32 a) {
    vec<float, 4> out;
    for (int i = 0; i < 4; ++i) out.v[i] = (float)((a >> (8 * i)) & 0xffu) / 255.0f;
    return out;
}
__device__ __forceinline__ vec<float, 2> m_unpack2x16snorm(u32 a) {
    return vec<float, 2>{{fmaxf((float)(short)(a & 0xffffu) / 32767.0f, -1.0f),
            fmaxf((float)(short)(a >> 16) / 32767.0f, -1.0f)}};
}
__device__ __forceinline__ vec<float, 2> m_unpack2x16unorm(u32 a) {
    return vec<float, 2>{{(float)(a & 0xffffu) / 65535.0f, (float)(a >> 16) / 65535.0f}}; }
__device__ __forceinline__ vec<int, 4> m_unpack4xi8(u32 a) {
    vec<int, 4> out;
    for (int i = 0; i < 4; ++i) out.v[i] = (int)(signed char)(a >> (8 * i));
    return out;
}
__device__ __forceinline__ vec<u32, 4> m_unpack4xu8(u32 a) {
    vec<u32, 4> out;
    for (int i = 0; i < 4; ++i) out.v[i] = (a >> (8 * i)) & 0xffu;
    return out;
}

// Atomics: a WGSL atomic is a plain int or unsigned; loads and stores go through volatile
// accesses and atomicExch.
template <class T> __device__ __forceinline__ T atomic_load(T* p) { return *(volatile T*)p; }
template <class T> __device__ __forceinline__ void atomic_store(T* p, T v) { atomicExch(p, v); }

// Subgroups are warps: a value from lane `src` of the active lanes `m` (a bool as an int; a
// vector component by component), collective operations over the active lanes in lane order,
// and the lane's own index.
__device__ __forceinline__ u32 lane_id() {
    u32 l;
    asm("mov.u32 %0, %%laneid;" : "=r"(l));
    return l;
}
template <class T> __device__ __forceinline__ T shfl(u32 m, T v, u32 src) {
    return __shfl_sync(m, v, (int)src); }
__device__ __forceinline__ bool shfl(u32 m, bool v, u32 src) {
    return __shfl_sync(m, (int)v, (int)src) != 0; }
template <class T, int N>
__device__ __forceinline__ vec<T, N> shfl(u32 m, const vec<T, N>& v, u32 src) {
    vec<T, N> out;
    for (int i = 0; i < N; ++i) out.v[i] = shfl(m, v.v[i], src);
    return out;
}
// `combine` over the active lanes up to `last` (all of them: 31), starting from `first`'s value
// or, for an exclusive scan of the first lane, `identity`.
template <class T, class F>
__device__ __forceinline__ T sg_fold(T v, F combine, u32 upto, bool exclusive, T identity) {
    const u32 m = __activemask();
    const u32 me = lane_id();
    T acc = identity;
    bool any = false;
    for (u32 l = 0; l < 32u; ++l) {
        if (!((m >> l) & 1u)) continue;
        const T x = shfl(m, v, l);
        if (l > upto || (exclusive && l == me)) continue;
        acc = any ? combine(acc, x) : x;
        any = true;
    }
    return any ? acc : identity;
}
// The operations of subgroup folds, as function objects.
#define WGSL_FOLD(name, f) \
    struct name { template <class T> __device__ __forceinline__ T operator()(const T& a, const T& b) const { return f(a, b); } };
WGSL_FOLD(fold_add, op_add) WGSL_FOLD(fold_mul, op_mul) WGSL_FOLD(fold_min,
        m_min) WGSL_FOLD(fold_max, m_max)
WGSL_FOLD(fold_and, op_and) WGSL_FOLD(fold_or, op_or) WGSL_FOLD(fold_xor, op_xor)
template <class T> __device__ __forceinline__ T sg_one(T) { return (T)1; }
template <class T, int N> __device__ __forceinline__ vec<T, N> sg_one(const vec<T, N>&) {
    return splat<N>((T)1); }
__device__ __forceinline__ vec<u32, 4> sg_ballot(bool p) {
    return vec<u32, 4>{{__ballot_sync(__activemask(), p), 0u, 0u, 0u}}; }
template <class T> __device__ __forceinline__ T sg_gather(T v, u32 src) {
    const u32 m = __activemask();
    return shfl(m, v, src & 31u);
}
template <class T> __device__ __forceinline__ T sg_broadcast_first(T v) {
    const u32 m = __activemask();
    return shfl(m, v, (u32)(__ffs(m) - 1));
}
