// Copy of a strided view of any 4-byte dtype into a contiguous output of the same shape.

struct CopyParams {
    u64 n;
    u32 rank;
    u32 pad;
    u64 shape[MAX_RANK];
    u64 strides[MAX_RANK];
};

extern "C" __global__ void copy_main(const u32* __restrict__ x, u32* __restrict__ out, CopyParams p) {
    const IDX n = (IDX)p.n;
    for (IDX i = grid_start(); i < n; i += grid_step()) {
        out[i] = x[strided_offset(i, p.rank, p.shape, p.strides)];
    }
}
