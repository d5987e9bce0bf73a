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
