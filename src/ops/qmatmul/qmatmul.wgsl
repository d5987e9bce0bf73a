// Matmul with block-quantised weights (onnxruntime's MatMulNBits):
// out[m, n] = a[m, k] · dequant(w)ᵀ (+ bias), w's row n stored as `blocks` blocks of
// `block_words` u32 words of BITS-bit values (lowest bits first; the last block padded past
// k), value q of block b dequantised to (q - zero) * scales[n · blocks + b] in registers.
// ZERO: 0 none (2^(BITS - 1)), 1 packed like the values (rows of `zero_row` bytes), 2 f32.
// On software adapters, barrier-free: one invocation per output column and one row of A
// (qmatmul_gemv_main) or four (qmatmul_tiled_main, each weight read once for the four). On
// GPUs, qmatmul_group_main: eight invocations per column take its words in turn (neighbours
// read neighbouring words), four rows each, and add their sums in workgroup memory. Each
// over a range of blocks: devices that end long loops early take k in pieces, bit 0 of
// `flags` adding to the stored sums.
//
// params: `QMatmulWords` (src/ops/qmatmul/webgpu.rs), named Q_<field>.

override BITS: u32 = 4u;
override ZERO: u32 = 0u;
override HAS_BIAS: bool = false;

@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> packed: array<u32>;
@group(0) @binding(3) var<storage, read> scales: array<f32>;
@group(0) @binding(4) var<storage, read> zeros: array<u32>;
@group(0) @binding(5) var<storage, read> bias: array<f32>;
@group(0) @binding(6) var<storage, read_write> out: array<f32>;

// Values 4j .. 4j + 3 of a packed word.
fn quad(word: u32, j: u32) -> vec4<f32> {
    let shifts = (vec4<u32>(0u, 1u, 2u, 3u) + 4u * j) * BITS;
    return vec4<f32>((vec4<u32>(word) >> shifts) & vec4<u32>((1u << BITS) - 1u));
}

// The zero point of block b of column col.
fn zero_point(col: u32, b: u32) -> f32 {
    if (ZERO == 1u) {
        let byte = col * params[Q_zero_row] + b * BITS / 8u;
        let shift = (byte % 4u) * 8u + (b * BITS) % 8u;
        return f32((zeros[params[Q_zero] + byte / 4u] >> shift) & ((1u << BITS) - 1u));
    }
    if (ZERO == 2u) {
        return bitcast<f32>(zeros[params[Q_zero] + col * params[Q_blocks] + b]);
    }
    return f32(1u << (BITS - 1u));
}

// Element j of the row of A starting at `start`, 0 past k.
fn a_at(start: u32, j: u32) -> f32 {
    return select(0.0, a[start + min(j, params[Q_k] - 1u)], j < params[Q_k]);
}

// Elements k0 .. k0 + 3 of the row of A starting at `start`, 0 past k.
fn a_quad(start: u32, k0: u32) -> vec4<f32> {
    if (k0 + 4u <= params[Q_k]) {
        let i = start + k0;
        return vec4<f32>(a[i], a[i + 1u], a[i + 2u], a[i + 3u]);
    }
    return vec4<f32>(
        a_at(start, k0),
        a_at(start, k0 + 1u),
        a_at(start, k0 + 2u),
        a_at(start, k0 + 3u),
    );
}

// The four rows' sums (A's rows from `starts`) of one packed word's weights, less zero
// point `z`, times A's elements from `k0` on.
fn word_sums(word: u32, z: vec4<f32>, starts: vec4<u32>, k0: u32) -> vec4<f32> {
    var s = vec4<f32>(0.0);
    for (var j = 0u; j < 32u / BITS / 4u; j++) {
        let w = quad(word, j) - z;
        let kq = k0 + 4u * j;
        s += vec4<f32>(
            dot(w, a_quad(starts.x, kq)),
            dot(w, a_quad(starts.y, kq)),
            dot(w, a_quad(starts.z, kq)),
            dot(w, a_quad(starts.w, kq)),
        );
    }
    return s;
}

// Where row `row` of A starts (rows past m read the last one).
fn a_row(row: u32) -> u32 {
    return params[Q_a] + min(row, params[Q_m] - 1u) * params[Q_k];
}

// Stores the sum of (row, col): added to the stored partial sum (flags bit 0), else with the
// bias.
fn finish(row: u32, col: u32, sum: f32) {
    if (row >= params[Q_m]) {
        return;
    }
    let at = params[Q_out] + row * params[Q_n] + col;
    var v = sum;
    if ((params[Q_flags] & 1u) != 0u) {
        v += out[at];
    } else if (HAS_BIAS) {
        v += bias[params[Q_bias] + col];
    }
    out[at] = v;
}

@compute @workgroup_size(64)
fn qmatmul_gemv_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let col = wid.x * 64u + lid;
    if (col >= params[Q_n]) {
        return;
    }
    let row = params[Q_first_row] + wid.y;
    let start = a_row(row);
    let per_word = 32u / BITS;
    let words = params[Q_block_words];
    var sum = 0.0;
    for (var b = params[Q_block_range]; b < params[Q_block_range + 1u]; b++) {
        let first = params[Q_packed] + (col * params[Q_blocks] + b) * words;
        let z = vec4<f32>(zero_point(col, b));
        var s = 0.0;
        for (var i = 0u; i < words; i++) {
            let word = packed[first + i];
            let k0 = (b * words + i) * per_word;
            for (var j = 0u; j < per_word / 4u; j++) {
                s += dot(quad(word, j) - z, a_quad(start, k0 + 4u * j));
            }
        }
        sum += s * scales[params[Q_scales] + col * params[Q_blocks] + b];
    }
    finish(row, col, sum);
}

@compute @workgroup_size(64)
fn qmatmul_tiled_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let col = wid.x * 64u + lid;
    if (col >= params[Q_n]) {
        return;
    }
    let row = params[Q_first_row] + wid.y * 4u;
    let starts = vec4<u32>(a_row(row), a_row(row + 1u), a_row(row + 2u), a_row(row + 3u));
    let per_word = 32u / BITS;
    let words = params[Q_block_words];
    var sum = vec4<f32>(0.0);
    for (var b = params[Q_block_range]; b < params[Q_block_range + 1u]; b++) {
        let first = params[Q_packed] + (col * params[Q_blocks] + b) * words;
        let z = vec4<f32>(zero_point(col, b));
        var s = vec4<f32>(0.0);
        for (var i = 0u; i < words; i++) {
            s += word_sums(packed[first + i], z, starts, (b * words + i) * per_word);
        }
        sum += s * scales[params[Q_scales] + col * params[Q_blocks] + b];
    }
    finish(row, col, sum.x);
    finish(row + 1u, col, sum.y);
    finish(row + 2u, col, sum.z);
    finish(row + 3u, col, sum.w);
}

// The sums of qmatmul_group_main's invocations, eight a column.
var<workgroup> partial: array<vec4<f32>, 64>;

@compute @workgroup_size(64)
fn qmatmul_group_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let col = wid.x * 8u + lid / 8u;
    let lane = lid % 8u;
    let row = params[Q_first_row] + wid.y * 4u;
    let starts = vec4<u32>(a_row(row), a_row(row + 1u), a_row(row + 2u), a_row(row + 3u));
    let per_word = 32u / BITS;
    let words = params[Q_block_words];
    var sum = vec4<f32>(0.0);
    if (col < params[Q_n]) {
        let first = params[Q_packed] + col * params[Q_blocks] * words;
        let end = params[Q_block_range + 1u] * words;
        for (var i = params[Q_block_range] * words + lane; i < end; i += 8u) {
            let b = i / words;
            let z = vec4<f32>(zero_point(col, b));
            let s = word_sums(packed[first + i], z, starts, i * per_word);
            sum += s * scales[params[Q_scales] + col * params[Q_blocks] + b];
        }
    }
    partial[lid] = sum;
    workgroupBarrier();
    if (lane == 0u && col < params[Q_n]) {
        var total = partial[lid];
        for (var l = 1u; l < 8u; l++) {
            total += partial[lid + l];
        }
        finish(row, col, total.x);
        finish(row + 1u, col, total.y);
        finish(row + 2u, col, total.z);
        finish(row + 3u, col, total.w);
    }
}
