// Batched matrix product C[b] = A[b] @ B[b] with strided, broadcast operands.
// Each workgroup computes a TM x TN tile of C; each invocation an RM x RN block held in
// registers. K advances in steps of TK through workgroup memory.
//
// The tile configuration is a named variant (`VARIANTS` in
// webgpu.rs beside this file): its `const TM / TN / RM / RN` are prepended to this file, as
// is STORE, the dtype of A, B, C and the bias in memory (f32, or f16 on adapters with
// shader-f16); tiles and accumulators are f32.
//
// params: `MatmulWords` in webgpu.rs, each field's first word named P_<field>. P_flags
//         (k-split): bit 0 adds the f32 sums of earlier dispatches from `partial`, bit 1
//         finishes (epilogue, store to C) instead of storing the sums to `partial`.
// Epilogue (the fused linear layer): HAS_BIAS adds bias[col] (bias[row] with BIAS_ROWS: a
// pointwise convolution's, one per output channel), ACT applies an activation
// (`UnaryOp::code`, 0: none) before each tile is stored. One dispatch over all of k has
// flags 2; devices that end long loops early (`Limits::max_loop_iterations`) take k in
// pieces, flags 0, then 1, ..., then 3, with `partial` holding [batch][M][N] f32 sums.

override HAS_BIAS: bool = false;
override BIAS_ROWS: bool = false;
override ACT: u32 = 0u;

const TK: u32 = 16u;
const WX: u32 = TN / RN;
const WY: u32 = TM / RM;
const THREADS: u32 = WX * WY;

// A and B (bindings 1 and 2) and the tile loads come from matmul_loads_scalar.wgsl, or
// matmul_loads_vec4.wgsl when both operands are rows of whole vec4s (prepended, see ops.rs).
@group(0) @binding(3) var<storage, read_write> c: array<STORE>;
@group(0) @binding(4) var<storage, read> bias: array<STORE>;
@group(0) @binding(5) var<storage, read_write> partial: array<f32>;

var<workgroup> a_tile: array<f32, TK * TM>; // [k][m]
var<workgroup> b_tile: array<f32, TK * TN>; // [k][n]

fn batch_offset(batch: u32, strides_at: u32) -> u32 {
    var rem = batch;
    var off = 0u;
    for (var d = i32(params[P_batch_rank]) - 1; d >= 0; d--) {
        let n = params[P_batch_shape + u32(d)];
        off += (rem % n) * params[strides_at + u32(d)];
        rem = rem / n;
    }
    return off;
}

// Element (r, col) of C[batch] (M x N, rows P_c_row apart) from its sum `v` over this
// dispatch's k: add the sums of earlier dispatches (flag bit 0), then keep the total in
// `partial` (no bit 1) or finish: bias, activation, store.
fn finish(batch: u32, m: u32, n: u32, r: u32, col: u32, sum: f32) {
    let flags = params[P_flags];
    let p = batch * m * n + r * n + col;
    var v = sum;
    if ((flags & 1u) != 0u) { v += partial[p]; }
    if ((flags & 2u) == 0u) {
        partial[p] = v;
        return;
    }
    if (HAS_BIAS) { v += f32(bias[params[P_bias] + select(col, r, BIAS_ROWS)]); }
    let c_row = params[P_c_row];
    c[params[P_c] + (batch * m + r) * c_row + col] = to_store(unary_op(ACT, v));
}

@compute @workgroup_size(WX, WY)
fn matmul_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid3: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let m = params[P_m];
    let n = params[P_n];
    let batch = params[P_first_batch] + wid.z;
    let a_base = params[P_a] + batch_offset(batch, P_a_batch);
    let b_base = params[P_b] + batch_offset(batch, P_b_batch);
    let row0 = wid.y * TM;
    let col0 = wid.x * TN;
    let tx = lid3.x;
    let ty = lid3.y;

    var acc: array<f32, RM * RN>;
    for (var k0 = params[P_k_range]; k0 < params[P_k_range + 1u]; k0 += TK) {
        load_tiles(a_base, b_base, row0, col0, k0, lid);
        workgroupBarrier();
        for (var kk = 0u; kk < TK; kk++) {
            var ar: array<f32, RM>;
            var br: array<f32, RN>;
            for (var i = 0u; i < RM; i++) { ar[i] = a_tile[kk * TM + ty * RM + i]; }
            for (var j = 0u; j < RN; j++) { br[j] = b_tile[kk * TN + tx * RN + j]; }
            for (var i = 0u; i < RM; i++) {
                for (var j = 0u; j < RN; j++) {
                    acc[i * RN + j] = fma(ar[i], br[j], acc[i * RN + j]);
                }
            }
        }
        workgroupBarrier();
    }
    for (var i = 0u; i < RM; i++) {
        let r = row0 + ty * RM + i;
        for (var j = 0u; j < RN; j++) {
            let col = col0 + tx * RN + j;
            if (r < m && col < n) { finish(batch, m, n, r, col, acc[i * RN + j]); }
        }
    }
}

// The `direct` variant, the default on every adapter (on hardware GPUs their caches serve
// the rereads; software adapters switch coroutines at barriers): no workgroup memory and no
// barriers. Each invocation reads its four rows of A and four
// columns of B straight from memory, four k at a time (`a_k4` and `b_n4` come with the tile
// loads), and keeps its 4 x 4 block in four vec4s. Its configuration has RM = RN = 4.
@compute @workgroup_size(WX, WY)
fn matmul_direct_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid3: vec3<u32>,
) {
    let m = params[P_m];
    let n = params[P_n];
    let batch = params[P_first_batch] + wid.z;
    let a_base = params[P_a] + batch_offset(batch, P_a_batch);
    let b_base = params[P_b] + batch_offset(batch, P_b_batch);
    let row0 = wid.y * TM + lid3.y * 4u;
    let col0 = wid.x * TN + lid3.x * 4u;
    // Rows past m read the last row; their results are not stored.
    let r0 = min(row0, m - 1u);
    let r1 = min(row0 + 1u, m - 1u);
    let r2 = min(row0 + 2u, m - 1u);
    let r3 = min(row0 + 3u, m - 1u);
    var acc: array<vec4<f32>, 4>;
    var c0 = vec4<f32>(0.0);
    var c1 = vec4<f32>(0.0);
    var c2 = vec4<f32>(0.0);
    var c3 = vec4<f32>(0.0);
    // The k ranges of a split start and end on multiples of 16 (or at k).
    for (var k0 = params[P_k_range]; k0 < params[P_k_range + 1u]; k0 += 4u) {
        let b0 = b_n4(b_base, k0, col0);
        let b1 = b_n4(b_base, k0 + 1u, col0);
        let b2 = b_n4(b_base, k0 + 2u, col0);
        let b3 = b_n4(b_base, k0 + 3u, col0);
        let a0 = a_k4(a_base, r0, k0);
        c0 = fma(vec4<f32>(a0.x), b0,
                fma(vec4<f32>(a0.y), b1, fma(vec4<f32>(a0.z), b2, fma(vec4<f32>(a0.w), b3, c0))));
        let a1 = a_k4(a_base, r1, k0);
        c1 = fma(vec4<f32>(a1.x), b0,
                fma(vec4<f32>(a1.y), b1, fma(vec4<f32>(a1.z), b2, fma(vec4<f32>(a1.w), b3, c1))));
        let a2 = a_k4(a_base, r2, k0);
        c2 = fma(vec4<f32>(a2.x), b0,
                fma(vec4<f32>(a2.y), b1, fma(vec4<f32>(a2.z), b2, fma(vec4<f32>(a2.w), b3, c2))));
        let a3 = a_k4(a_base, r3, k0);
        c3 = fma(vec4<f32>(a3.x), b0,
                fma(vec4<f32>(a3.y), b1, fma(vec4<f32>(a3.z), b2, fma(vec4<f32>(a3.w), b3, c3))));
    }
    acc[0] = c0;
    acc[1] = c1;
    acc[2] = c2;
    acc[3] = c3;
    for (var i = 0u; i < 4u; i++) {
        let r = row0 + i;
        for (var j = 0u; j < 4u; j++) {
            let col = col0 + j;
            if (r < m && col < n) { finish(batch, m, n, r, col, acc[i][j]); }
        }
    }
}
