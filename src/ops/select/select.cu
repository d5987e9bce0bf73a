// `where` selection: `cond ? a : b` on 32-bit words of any dtype (i64 as pairs of words).
// COND_F32: the condition is f32 (-0.0 false, NaN true), else an integer word.

#ifndef COND_F32
#define COND_F32 0
#endif

extern "C" __global__ void where_main(
    const u32* __restrict__ cond, const u32* __restrict__ a, const u32* __restrict__ b,
    u32* __restrict__ out, SelectParams p) {
    const IDX n = (IDX)p.n;
    for (IDX i = grid_start(); i < n; i += grid_step()) {
        u32 c = cond[strided_offset(i, p.rank, p.shape, p.strides[0])];
        if (COND_F32) c &= 0x7fffffffu; // -0.0 is false, NaN true
        out[i] = c != 0u ? a[strided_offset(i, p.rank, p.shape, p.strides[1])]
                : b[strided_offset(i, p.rank, p.shape, p.strides[2])];
    }
}
