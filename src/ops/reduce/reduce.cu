// Reductions of the middle axis of a contiguous [outer, len, inner] input.
//
// reduce_rows works in passes, like shaders/reduce.wgsl: each block reduces one chunk of one
// row to a partial; later passes reduce the partials ([rows, chunks] with inner = 1) until one
// value per row is left. Each thread combines a strided run, then the block combines its
// threads with warp shuffles, so sums are close to pairwise.
// reduce_cols (for inner >= 32) gives each thread one output column, so consecutive threads
// read consecutive addresses; float sums are accumulated in double.
//
// OP is `ReduceOp::code`, compared with the `OP_Sum`... definitions prepended from the op
// table (`reduce_ops!` in src/ops/reduce/mod.rs). FIRST is 1 on the first
// pass (indices are positions, not read from `xi`). VAL is the values' type: float, int,
// unsigned or i64; integer sums and products wrap (computed as unsigned: signed overflow is
// undefined in C++).

#ifndef OP
#define OP 0
#endif
#ifndef FIRST
#define FIRST 1
#endif

#ifndef VAL
#define VAL float
#endif

#define BLOCK 256

// What the kernels need of each value type.
__device__ __forceinline__ bool val_nan(float v) { return isnan(v); }
__device__ __forceinline__ bool val_nan(int) { return false; }
__device__ __forceinline__ bool val_nan(unsigned) { return false; }
__device__ __forceinline__ bool val_nan(i64) { return false; }
__device__ __forceinline__ float lowest(float) { return -inf_f32(); }
__device__ __forceinline__ int lowest(int) { return (int)0x80000000u; }
__device__ __forceinline__ unsigned lowest(unsigned) { return 0u; }
__device__ __forceinline__ i64 lowest(i64) { return (i64)0x8000000000000000ull; }
__device__ __forceinline__ float highest(float) { return inf_f32(); }
__device__ __forceinline__ int highest(int) { return 0x7fffffff; }
__device__ __forceinline__ unsigned highest(unsigned) { return 0xffffffffu; }
__device__ __forceinline__ i64 highest(i64) { return 0x7fffffffffffffffll; }
__device__ __forceinline__ double add(double a, double b) { return a + b; }
__device__ __forceinline__ float add(float a, float b) { return a + b; }
__device__ __forceinline__ int add(int a, int b) { return (int)((unsigned)a + (unsigned)b); }
__device__ __forceinline__ unsigned add(unsigned a, unsigned b) { return a + b; }
__device__ __forceinline__ i64 add(i64 a, i64 b) { return (i64)((u64)a + (u64)b); }
__device__ __forceinline__ double mul(double a, double b) { return a * b; }
__device__ __forceinline__ float mul(float a, float b) { return a * b; }
__device__ __forceinline__ int mul(int a, int b) { return (int)((unsigned)a * (unsigned)b); }
__device__ __forceinline__ unsigned mul(unsigned a, unsigned b) { return a * b; }
__device__ __forceinline__ i64 mul(i64 a, i64 b) { return (i64)((u64)a * (u64)b); }
// Column sums and products accumulate floats in double, integers in their own (wrapping)
// type.
__device__ __forceinline__ double widen(float v) { return v; }
__device__ __forceinline__ int widen(int v) { return v; }
__device__ __forceinline__ unsigned widen(unsigned v) { return v; }
__device__ __forceinline__ i64 widen(i64 v) { return v; }
// A result times the scale (a mean's 1 / len); integers are never scaled.
__device__ __forceinline__ float scaled(float v, float s) { return v * s; }
__device__ __forceinline__ float scaled(double v, float s) { return (float)(v * (double)s); }
__device__ __forceinline__ int scaled(int v, float) { return v; }
__device__ __forceinline__ unsigned scaled(unsigned v, float) { return v; }
__device__ __forceinline__ i64 scaled(i64 v, float) { return v; }

__device__ __forceinline__ VAL identity() {
    if (OP == OP_Max || OP == OP_Argmax) return lowest(VAL());
    if (OP == OP_Min) return highest(VAL());
    if (OP == OP_Prod) return (VAL)1;
    return (VAL)0;
}

// Whether (v, vi) replaces the accumulator (acc, ai); NaN wins, ties go to the lower index.
__device__ __forceinline__ bool better(VAL v, u32 vi, VAL acc, u32 ai) {
    if (val_nan(acc)) return val_nan(v) && vi < ai;
    if (val_nan(v)) return true;
    if (OP == OP_Min) return v < acc || (v == acc && vi < ai);
    return v > acc || (v == acc && vi < ai);
}

__device__ __forceinline__ void combine(VAL& acc, u32& ai, VAL v, u32 vi) {
    if (OP == OP_Sum || OP == OP_Mean) {
        acc = add(acc, v);
    } else if (OP == OP_Prod) {
        acc = mul(acc, v);
    } else if (better(v, vi, acc, ai)) {
        acc = v;
        ai = vi;
    }
}

// Combine the values of all threads of the block; thread 0 gets the result.
__device__ __forceinline__ void block_combine(VAL& acc, u32& ai) {
    __shared__ VAL sv[BLOCK / 32];
    __shared__ u32 si[BLOCK / 32];
    for (int s = 16; s > 0; s >>= 1) {
        VAL v = __shfl_down_sync(0xffffffffu, acc, s);
        u32 vi = __shfl_down_sync(0xffffffffu, ai, s);
        combine(acc, ai, v, vi);
    }
    const u32 lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) {
        sv[warp] = acc;
        si[warp] = ai;
    }
    __syncthreads();
    if (warp == 0) {
        acc = lane < BLOCK / 32 ? sv[lane] : identity();
        ai = lane < BLOCK / 32 ? si[lane] : 0xffffffffu;
        for (int s = 16; s > 0; s >>= 1) {
            VAL v = __shfl_down_sync(0xffffffffu, acc, s);
            u32 vi = __shfl_down_sync(0xffffffffu, ai, s);
            combine(acc, ai, v, vi);
        }
    }
    __syncthreads();
}

extern "C" __global__ void __launch_bounds__(BLOCK) reduce_rows(
    const VAL* __restrict__ x, const u32* __restrict__ xi, VAL* __restrict__ out,
    u32* __restrict__ outi, ReduceParams p) {
    const IDX len = (IDX)p.len, inner = (IDX)p.inner, chunks = (IDX)p.chunks, chunk = (IDX)p.chunk;
    const IDX groups = (IDX)p.outer * inner * chunks;
    for (IDX g = blockIdx.x; g < groups; g += gridDim.x) {
        const IDX row = g / chunks;
        const IDX base = (row / inner) * len * inner + row % inner;
        const IDX j0 = (g % chunks) * chunk;
        const IDX j1 = min(j0 + chunk, len);
        VAL acc = identity();
        u32 ai = 0xffffffffu;
        for (IDX j = j0 + threadIdx.x; j < j1; j += BLOCK) {
            const IDX at = base + j * inner;
            const u32 vi = (FIRST || OP != OP_Argmax) ? (u32)j : xi[at];
            combine(acc, ai, x[at], vi);
        }
        block_combine(acc, ai);
        if (threadIdx.x == 0) {
            if (p.write_values) out[g] = scaled(acc, p.scale);
            if (OP == OP_Argmax) outi[g] = ai;
        }
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK) reduce_cols(
    const VAL* __restrict__ x, VAL* __restrict__ out, u32* __restrict__ outi, ReduceParams p) {
    const IDX len = (IDX)p.len, inner = (IDX)p.inner;
    const IDX outputs = (IDX)p.outer * inner;
    for (IDX g = grid_start(); g < outputs; g += grid_step()) {
        const IDX base = (g / inner) * len * inner + g % inner;
        if (OP == OP_Sum || OP == OP_Mean) {
            auto acc = widen((VAL)0);
            for (IDX j = 0; j < len; ++j) acc = add(acc, widen(x[base + j * inner]));
            out[g] = scaled(acc, p.scale);
        } else if (OP == OP_Prod) {
            auto acc = widen((VAL)1);
            for (IDX j = 0; j < len; ++j) acc = mul(acc, widen(x[base + j * inner]));
            out[g] = scaled(acc, p.scale);
        } else {
            VAL acc = identity();
            u32 ai = 0xffffffffu;
            for (IDX j = 0; j < len; ++j) combine(acc, ai, x[base + j * inner], (u32)j);
            if (OP == OP_Argmax) outi[g] = ai;
            else out[g] = acc;
        }
    }
}
