// Scaled dot-product attention of f16 or bf16 tensors on the tensor cores (compute
// capability 8.0 and newer): FlashAttention-2's scheme with mma.sync.m16n8k16. A block of
// four warps takes 64 query rows, each warp 16 of them, and walks the keys 64 at a time:
// S = Q K^T on the tensor cores in f32, an online softmax on S in registers (running maximum
// and sum per row), then O += P V with P rounded to the inputs' type, as PyTorch's SDPA
// does. The [lq, lk] scores are never stored. Keys and values of a tile sit in shared
// memory (cp.async, the next tile's while this one computes), rows padded by 8 elements
// against bank conflicts; ldmatrix reads each thread's fragments, V's through its transpose.
//
// Defines: HEAD, the head dimension (a multiple of 16, at most 128, of q, k and v alike);
// BF16 (1: bf16, 0: f16); VEC (1 where every row of q, k and v starts 16-byte aligned: tiles
// load 8 elements at a time).

#ifndef BF16
#define BF16 1
#endif
#ifndef VEC
#define VEC 0
#endif

#define ROWS 64
#define KEYS 64
#define WARPS 4
#define KPAD (HEAD + 8)

typedef unsigned short u16;

__device__ __forceinline__ IDX at(const View4& w, IDX b, IDX h, IDX i, IDX j) {
    return b * (IDX)w.strides[0] + h * (IDX)w.strides[1] + i * (IDX)w.strides[2]
            + j * (IDX)w.strides[3];
}

// Two floats as one word of two 16-bit values, `lo` in the low half, rounded to nearest.
__device__ __forceinline__ u32 pack(float lo, float hi) {
    u32 r;
#if BF16
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#else
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#endif
    return r;
}

// c += a b for a 16x16 tile a (row major), a 16x8 tile b (column major), f32 c.
__device__ __forceinline__ void mma(float* c, const u32* a, u32 b0, u32 b1) {
#if BF16
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
#else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
#endif
            "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The 32-bit word of elements (j, j + 1) of row `i` of a view (j even).
__device__ __forceinline__ u32 word(const u16* t, const View4& w, IDX b, IDX h, IDX i, IDX j) {
    return *(const u32*)(t + at(w, b, h, i, j));
}

// Starts copying keys [j0, j0 + KEYS) of `src` (k or v) into `dst` (cp.async, 16 or 4 bytes
// a thread), zeros past lk, as one commit group.
__device__ __forceinline__ void copy_tile(const u16* src, const View4& w, IDX lk, IDX b, IDX h,
        IDX j0, u16 (*dst)[KPAD]) {
#if VEC
    const u32 per = 8;
#else
    const u32 per = 2;
#endif
    for (u32 n = threadIdx.x; n < KEYS * HEAD / per; n += WARPS * 32) {
        const u32 r = n / (HEAD / per), c = n % (HEAD / per) * per;
        const IDX j = j0 + r;
        const u32 to = (u32)__cvta_generic_to_shared(&dst[r][c]);
        const u16* from = src + at(w, b, h, j, c);
#if VEC
        if (j < lk) {
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(to), "l"(from));
        } else {
            *(uint4*)&dst[r][c] = make_uint4(0, 0, 0, 0);
        }
#else
        if (j < lk) {
            asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: "r"(to), "l"(from));
        } else {
            *(u32*)&dst[r][c] = 0u;
        }
#endif
    }
    asm volatile("cp.async.commit_group;");
}

// Waits until every commit group of this thread but the newest has landed.
__device__ __forceinline__ void wait_all_but_newest() {
    asm volatile("cp.async.wait_group 1;" ::: "memory");
}

// O += P V for keys [16 kk, 16 kk + 16) of the tile: V's fragments of two 8-column tiles at a
// time by one ldmatrix.x4.trans, whose matrices are keys +0..7 and +8..15 of columns +0..7,
// then of columns +8..15 (lanes 8 i .. 8 i + 7 give matrix i's row addresses).
__device__ __forceinline__ void add_pv(float (*o)[4], const u32* pa, u16 (*vs)[KPAD], u32 kk) {
    const u32 lane = threadIdx.x % 32, i = lane / 8;
#pragma unroll
    for (u32 t = 0; t < HEAD / 16; ++t) {
        const u16* row = &vs[16 * kk + lane % 8 + 8 * (i % 2)][16 * t + 8 * (i / 2)];
        const u32 addr = (u32)__cvta_generic_to_shared(row);
        u32 b0, b1, b2, b3;
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                : "=r"(b0), "=r"(b1), "=r"(b2), "=r"(b3) : "r"(addr));
        mma(o[2 * t], pa, b0, b1);
        mma(o[2 * t + 1], pa, b2, b3);
    }
}

// The largest of a row's values across the four threads that hold it.
__device__ __forceinline__ float row_max(float x) {
    x = fmaxf(x, __shfl_xor_sync(0xffffffff, x, 1));
    return fmaxf(x, __shfl_xor_sync(0xffffffff, x, 2));
}

__device__ __forceinline__ float row_sum(float x) {
    x += __shfl_xor_sync(0xffffffff, x, 1);
    return x + __shfl_xor_sync(0xffffffff, x, 2);
}

// This thread's part of S = Q K^T for the tile: s[t][e] is the score of row g + 8 (e / 2)
// and key 8 t + 2 c + e % 2 (g = lane / 4, c = lane % 4), scaled to base 2 and masked.
__device__ __forceinline__ void scores(float (*s)[4], const u32 (*qa)[4], u16 (*ks)[KPAD],
        const AttentionParams& p, IDX row0, IDX j0, float scale2) {
    const u32 g = threadIdx.x % 32 / 4, c = threadIdx.x % 4;
#pragma unroll
    for (u32 t = 0; t < KEYS / 8; ++t) {
        s[t][0] = s[t][1] = s[t][2] = s[t][3] = 0.0f;
#pragma unroll
        for (u32 kk = 0; kk < HEAD / 16; ++kk) {
            // Lanes 0..7 and 8..15 give the rows of K's columns +0..7 and +8..15.
            const u32 lane = threadIdx.x % 32;
            const u16* row = &ks[8 * t + lane % 8][16 * kk + 8 * (lane / 8 % 2)];
            u32 b0, b1;
            asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
                    : "=r"(b0), "=r"(b1) : "r"((u32)__cvta_generic_to_shared(row)));
            mma(s[t], qa[kk], b0, b1);
        }
#pragma unroll
        for (u32 e = 0; e < 4; ++e) {
            const IDX j = j0 + 8 * t + 2 * c + e % 2, i = row0 + g + 8 * (e / 2);
            const bool out = j >= (IDX)p.lk || (p.causal && j > i);
            s[t][e] = out ? -inf_f32() : s[t][e] * scale2;
        }
    }
}

extern "C" __global__ void __launch_bounds__(WARPS * 32) attention_matrix_main(
        const u16* __restrict__ q, const u16* __restrict__ k, const u16* __restrict__ v,
        u16* __restrict__ out, AttentionParams p) {
    __shared__ __align__(16) u16 ks[KEYS][KPAD];
    __shared__ __align__(16) u16 vs[KEYS][KPAD];
    const u32 warp = threadIdx.x / 32, g = threadIdx.x % 32 / 4, c = threadIdx.x % 4;
    const IDX tiles = ((IDX)p.lq + ROWS - 1) / ROWS;
    // The heaviest tiles (the last rows, under a causal mask) first.
    const IDX bh = blockIdx.x % (IDX)p.bh, tile = tiles - 1 - blockIdx.x / (IDX)p.bh;
    const IDX b = bh / (IDX)p.heads, h = bh % (IDX)p.heads;
    const IDX row0 = tile * ROWS + 16 * warp;
    const float scale2 = p.scale * 1.4426950408889634f;
    // Q's fragments for all of HEAD, held through the walk (rows past lq read as 0).
    u32 qa[HEAD / 16][4];
#pragma unroll
    for (u32 kk = 0; kk < HEAD / 16; ++kk) {
#pragma unroll
        for (u32 r = 0; r < 4; ++r) {
            const IDX i = row0 + g + 8 * (r % 2), j = 16 * kk + 2 * c + 8 * (r / 2);
            qa[kk][r] = i < (IDX)p.lq ? word(q, p.q, b, h, i, j) : 0u;
        }
    }
    float o[HEAD / 8][4];
#pragma unroll
    for (u32 t = 0; t < HEAD / 8; ++t) o[t][0] = o[t][1] = o[t][2] = o[t][3] = 0.0f;
    float m[2] = {-inf_f32(), -inf_f32()}, l[2] = {0.0f, 0.0f};
    IDX keys = (IDX)p.lk;
    if (p.causal) keys = min(keys, tile * ROWS + ROWS);
    // K and V of the next tile load while this one computes: K's while the softmax and
    // P V run, V's while the next S does. Every thread commits the same groups, empty ones
    // past the last tile.
    copy_tile(k, p.k, (IDX)p.lk, b, h, 0, ks);
    copy_tile(v, p.v, (IDX)p.lk, b, h, 0, vs);
    for (IDX j0 = 0; j0 < keys; j0 += KEYS) {
        const IDX next = j0 + KEYS < keys ? j0 + KEYS : (IDX)p.lk;
        wait_all_but_newest();
        __syncthreads();
        float s[KEYS / 8][4];
        scores(s, qa, ks, p, row0, j0, scale2);
        __syncthreads();
        copy_tile(k, p.k, (IDX)p.lk, b, h, next, ks);
        float alpha[2];
#pragma unroll
        for (u32 half = 0; half < 2; ++half) {
            float x = -inf_f32();
#pragma unroll
            for (u32 t = 0; t < KEYS / 8; ++t) {
                x = fmaxf(x, fmaxf(s[t][2 * half], s[t][2 * half + 1]));
            }
            const float m_new = fmaxf(m[half], row_max(x));
            // Subtracting 0 where every score so far is -inf keeps exp2 off -inf - -inf.
            const float base = m_new == -inf_f32() ? 0.0f : m_new;
            float sum = 0.0f;
#pragma unroll
            for (u32 t = 0; t < KEYS / 8; ++t) {
#pragma unroll
                for (u32 e = 2 * half; e < 2 * half + 2; ++e) {
                    s[t][e] = exp2f(s[t][e] - base);
                    sum += s[t][e];
                }
            }
            alpha[half] = exp2f(m[half] - base);
            l[half] = l[half] * alpha[half] + row_sum(sum);
            m[half] = m_new;
        }
#pragma unroll
        for (u32 t = 0; t < HEAD / 8; ++t) {
            o[t][0] *= alpha[0]; o[t][1] *= alpha[0];
            o[t][2] *= alpha[1]; o[t][3] *= alpha[1];
        }
        wait_all_but_newest();
        __syncthreads();
        // P's fragments are S's accumulators, rounded: keys [16 kk, 16 kk + 16).
#pragma unroll
        for (u32 kk = 0; kk < KEYS / 16; ++kk) {
            const u32 pa[4] = {pack(s[2 * kk][0], s[2 * kk][1]), pack(s[2 * kk][2], s[2 * kk][3]),
                    pack(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                    pack(s[2 * kk + 1][2], s[2 * kk + 1][3])};
            add_pv(o, pa, vs, kk);
        }
        __syncthreads();
        copy_tile(v, p.v, (IDX)p.lk, b, h, next, vs);
    }
    // Rows whose keys were all masked out (l = 0) are 0, as in ONNX.
#pragma unroll
    for (u32 half = 0; half < 2; ++half) {
        const IDX i = row0 + g + 8 * half;
        if (i >= (IDX)p.lq) continue;
        const float inv = l[half] == 0.0f ? 0.0f : 1.0f / l[half];
        u16* row = out + (bh * (IDX)p.lq + i) * HEAD;
#pragma unroll
        for (u32 t = 0; t < HEAD / 8; ++t) {
            *(u32*)(row + 8 * t + 2 * c) =
                    pack(o[t][2 * half] * inv, o[t][2 * half + 1] * inv);
        }
    }
}
