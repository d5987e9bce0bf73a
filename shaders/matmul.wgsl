// Batched matrix product C[b] = A[b] @ B[b] with strided, broadcast operands.
// Each 16x16 workgroup computes a 64x64 tile of C; each thread a 4x4 block held in registers.
// K advances in steps of 16 through workgroup memory.
//
// params: [0] M, [1] N, [2] K, [3] batch rank, [4] first batch of this dispatch,
//         [5] A offset, [6] A row stride, [7] A column stride,
//         [8] B offset, [9] B row stride, [10] B column stride, [11] C offset,
//         [12..18] batch shape, [18..24] A batch strides, [24..30] B batch strides,
//         [30] bias offset.
// Epilogue (the fused linear layer): HAS_BIAS adds bias[col], ACT applies an activation
// (`UnaryOp::code`, 0: none) before each tile is stored.

override HAS_BIAS: bool = false;
override ACT: u32 = 0u;

@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;

var<workgroup> a_tile: array<f32, 1024>; // [k][m], 16 x 64
var<workgroup> b_tile: array<f32, 1024>; // [k][n], 16 x 64

fn batch_offset(batch: u32, strides_at: u32) -> u32 {
    var rem = batch;
    var off = 0u;
    for (var d = i32(params[3]) - 1; d >= 0; d--) {
        let n = params[12u + u32(d)];
        off += (rem % n) * params[strides_at + u32(d)];
        rem = rem / n;
    }
    return off;
}

@compute @workgroup_size(16, 16)
fn matmul_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid3: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let m = params[0];
    let n = params[1];
    let k = params[2];
    let batch = params[4] + wid.z;
    let a_base = params[5] + batch_offset(batch, 18u);
    let b_base = params[8] + batch_offset(batch, 24u);
    let row0 = wid.y * 64u;
    let col0 = wid.x * 64u;
    let tx = lid3.x;
    let ty = lid3.y;

    var acc: array<f32, 16>;
    for (var i = 0u; i < 16u; i++) {
        acc[i] = 0.0;
    }
    for (var k0 = 0u; k0 < k; k0 += 16u) {
        for (var l = 0u; l < 4u; l++) {
            let e = lid + l * 256u;
            // A tile: 64 rows x 16 k, k fastest so contiguous rows load together.
            let am = e / 16u;
            let ak = e % 16u;
            var av = 0.0;
            if (row0 + am < m && k0 + ak < k) {
                av = a[a_base + (row0 + am) * params[6] + (k0 + ak) * params[7]];
            }
            a_tile[ak * 64u + am] = av;
            // B tile: 16 k x 64 columns, columns fastest.
            let bk = e / 64u;
            let bn = e % 64u;
            var bv = 0.0;
            if (k0 + bk < k && col0 + bn < n) {
                bv = b[b_base + (k0 + bk) * params[9] + (col0 + bn) * params[10]];
            }
            b_tile[bk * 64u + bn] = bv;
        }
        workgroupBarrier();
        for (var kk = 0u; kk < 16u; kk++) {
            var ar: array<f32, 4>;
            var br: array<f32, 4>;
            for (var i = 0u; i < 4u; i++) {
                ar[i] = a_tile[kk * 64u + ty * 4u + i];
                br[i] = b_tile[kk * 64u + tx * 4u + i];
            }
            for (var i = 0u; i < 4u; i++) {
                for (var j = 0u; j < 4u; j++) {
                    acc[i * 4u + j] = fma(ar[i], br[j], acc[i * 4u + j]);
                }
            }
        }
        workgroupBarrier();
    }
    let c_base = params[11] + batch * m * n;
    for (var i = 0u; i < 4u; i++) {
        let r = row0 + ty * 4u + i;
        for (var j = 0u; j < 4u; j++) {
            let col = col0 + tx * 4u + j;
            if (r < m && col < n) {
                var v = acc[i * 4u + j];
                if (HAS_BIAS) { v += bias[params[30] + col]; }
                c[c_base + r * n + col] = unary_op(ACT, v);
            }
        }
    }
}
