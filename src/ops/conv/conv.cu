// Direct 2-D convolution (NCHW) and transposed convolution with a fused bias and activation,
// and 2-D max / average pooling; one thread per output element (grid-stride), the CUDA twin
// of shaders/conv.wgsl.
// HAS_BIAS adds bias[oc]; ACT is a `UnaryOp::code` (0: none); POOL is `Pool2d::code` (0 max,
// 1 average over the window within the padded input, 2 over the taps within the input).

#ifndef HAS_BIAS
#define HAS_BIAS 0
#endif
#ifndef ACT
#define ACT 0
#endif
#ifndef POOL
#define POOL 0
#endif

// Input coordinate of output position `o`, tap `k` on an axis, or -1 in the padding.
__device__ __forceinline__ long long input_at(IDX o, IDX k, u64 stride, u64 dilation, u64 pad,
        u64 extent) {
    // In 64 bits: a stride or dilation past 32 bits must not wrap. The op's geometry keeps
    // (out - 1) * stride + (k - 1) * dilation within the padded extent, so this cannot overflow.
    const long long i = (long long)((u64)o * stride + (u64)k * dilation) - (long long)pad;
    return (i < 0 || i >= (long long)extent) ? -1 : i;
}

extern "C" __global__ void conv2d_main(
    const float* __restrict__ x, const float* __restrict__ weight, const float* __restrict__ bias,
    float* __restrict__ out, ConvParams p) {
    const IDX c = (IDX)p.c, h = (IDX)p.h, w = (IDX)p.w, o = (IDX)p.o, kh = (IDX)p.kh,
            kw = (IDX)p.kw, oh = (IDX)p.oh, ow = (IDX)p.ow;
    const IDX total = (IDX)p.n * o * oh * ow;
    const IDX cg = c / (IDX)p.groups, og = o / (IDX)p.groups;
    for (IDX i = grid_start(); i < total; i += grid_step()) {
        const IDX ox = i % ow, oy = (i / ow) % oh, oc = (i / (ow * oh)) % o, nb = i / (ow * oh * o);
        const IDX g = oc / og;
        float acc = 0.0f;
        for (IDX ci = 0; ci < cg; ++ci) {
            const float* plane = x + (nb * c + g * cg + ci) * h * w;
            const float* taps = weight + (oc * cg + ci) * kh * kw;
            for (IDX ky = 0; ky < kh; ++ky) {
                const long long iy = input_at(oy, ky, p.stride[0], p.dilation[0], p.pad[0], p.h);
                if (iy < 0) continue;
                for (IDX kx = 0; kx < kw; ++kx) {
                    const long long ix = input_at(ox, kx, p.stride[1], p.dilation[1], p.pad[1],
                            p.w);
                    if (ix < 0) continue;
                    acc = fmaf(plane[(IDX)iy * w + (IDX)ix], taps[ky * kw + kx], acc);
                }
            }
        }
        if (HAS_BIAS) acc += bias[oc];
        out[i] = unary_op<ACT>(acc);
    }
}

// Input coordinate that output position `o` reads through tap `k` of a transposed
// convolution: (o + pad - k * dilation) / stride where that divides exactly and lies in the
// input, else -1. In 64 bits: the op's geometry keeps o + pad and k * dilation within the
// full output.
__device__ __forceinline__ long long transposed_input_at(IDX o, IDX k, u64 stride, u64 dilation,
        u64 pad, u64 extent) {
    const long long t = (long long)((u64)o + pad) - (long long)((u64)k * dilation);
    if (t < 0 || (u64)t % stride != 0) return -1;
    const u64 i = (u64)t / stride;
    return i >= extent ? -1 : (long long)i;
}

// A transposed convolution: weight [c, o / groups, kh, kw]; each output gathers the inputs
// whose taps land on it (no atomics).
extern "C" __global__ void conv_transpose2d_main(
    const float* __restrict__ x, const float* __restrict__ weight, const float* __restrict__ bias,
    float* __restrict__ out, ConvParams p) {
    const IDX c = (IDX)p.c, h = (IDX)p.h, w = (IDX)p.w, o = (IDX)p.o, kh = (IDX)p.kh,
            kw = (IDX)p.kw, oh = (IDX)p.oh, ow = (IDX)p.ow;
    const IDX total = (IDX)p.n * o * oh * ow;
    const IDX cg = c / (IDX)p.groups, og = o / (IDX)p.groups;
    for (IDX i = grid_start(); i < total; i += grid_step()) {
        const IDX ox = i % ow, oy = (i / ow) % oh, oc = (i / (ow * oh)) % o, nb = i / (ow * oh * o);
        const IDX g = oc / og;
        float acc = 0.0f;
        for (IDX ci = g * cg; ci < (g + 1) * cg; ++ci) {
            const float* plane = x + (nb * c + ci) * h * w;
            const float* taps = weight + (ci * og + oc % og) * kh * kw;
            for (IDX ky = 0; ky < kh; ++ky) {
                const long long iy = transposed_input_at(oy, ky, p.stride[0], p.dilation[0],
                        p.pad[0], p.h);
                if (iy < 0) continue;
                for (IDX kx = 0; kx < kw; ++kx) {
                    const long long ix = transposed_input_at(ox, kx, p.stride[1], p.dilation[1],
                            p.pad[1], p.w);
                    if (ix < 0) continue;
                    acc = fmaf(plane[(IDX)iy * w + (IDX)ix], taps[ky * kw + kx], acc);
                }
            }
        }
        if (HAS_BIAS) acc += bias[oc];
        out[i] = unary_op<ACT>(acc);
    }
}

// The divisor of an average along one axis at output `o`: the window's `k` taps, `dilation`
// apart, within the padded input (POOL 1) or within the input (POOL 2).
__device__ long long pool_count(u64 o, u64 k, u64 stride, u64 dilation, u64 pad, u64 pad_end,
                                u64 n) {
    const long long start = (long long)(o * stride) - (long long)pad;
    const long long d = (long long)dilation;
    const long long end = POOL == 1 ? (long long)(n + pad_end) : (long long)n;
    const long long first = (POOL == 1 || start >= 0) ? 0 : (d - 1 - start) / d;
    if (end <= start) return 0;
    return max(min((long long)k, (end - start + d - 1) / d) - first, 0LL);
}

extern "C" __global__ void pool2d_main(
    const float* __restrict__ x, float* __restrict__ out, ConvParams p) {
    const IDX h = (IDX)p.h, w = (IDX)p.w, kh = (IDX)p.kh, kw = (IDX)p.kw, oh = (IDX)p.oh,
            ow = (IDX)p.ow;
    const IDX total = (IDX)p.n * (IDX)p.c * oh * ow;
    for (IDX i = grid_start(); i < total; i += grid_step()) {
        const IDX ox = i % ow, oy = (i / ow) % oh;
        const float* plane = x + (i / (ow * oh)) * h * w;
        float acc = POOL == 0 ? -inf_f32() : 0.0f;
        for (IDX ky = 0; ky < kh; ++ky) {
            const long long iy = input_at(oy, ky, p.stride[0], p.dilation[0], p.pad[0], p.h);
            if (iy < 0) continue;
            for (IDX kx = 0; kx < kw; ++kx) {
                const long long ix = input_at(ox, kx, p.stride[1], p.dilation[1], p.pad[1],
                                                 p.w);
                if (ix < 0) continue;
                const float v = plane[(IDX)iy * w + (IDX)ix];
                if (POOL == 0) acc = (isnan(v) || isnan(acc)) ? nan_f32() : fmaxf(acc, v);
                else acc += v;
            }
        }
        if (POOL != 0) {
            const long long rows = pool_count(oy, p.kh, p.stride[0], p.dilation[0], p.pad[0],
                                              p.pad_end[0], p.h);
            const long long cols = pool_count(ox, p.kw, p.stride[1], p.dilation[1], p.pad[1],
                                              p.pad_end[1], p.w);
            acc = acc / (float)(rows * cols);
        }
        out[i] = acc;
    }
}
