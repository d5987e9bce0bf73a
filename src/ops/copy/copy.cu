// Copy of a strided view of any 4-byte dtype into another view of the same shape:
// contiguous, or strided when OUT_CONTIGUOUS is 0 (a slice of a larger tensor, as concat
// writes). `out` arrives advanced to the destination view's first element.

#ifndef OUT_CONTIGUOUS
#define OUT_CONTIGUOUS 1
#endif

extern "C" __global__ void copy_main(
    const u32* __restrict__ x, u32* __restrict__ out, CopyParams p) {
    const IDX n = (IDX)p.n;
    for (IDX i = grid_start(); i < n; i += grid_step()) {
        const IDX at = OUT_CONTIGUOUS ? i : strided_offset(i, p.rank, p.shape, p.out_strides);
        out[at] = x[strided_offset(i, p.rank, p.shape, p.strides)];
    }
}
