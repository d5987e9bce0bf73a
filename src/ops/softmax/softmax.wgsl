// A function of each row's softmax statistics over rows of `cols` elements, one workgroup per
// row: row r = (a, b) = (r / nb, r % nb) starts at a * x_a + b * x_b in x and steps x_col
// (strided views are read in place), and likewise in out (`Steps` in mod.rs). Each workgroup
// reads its row reading the row twice: one pass keeps a running (maximum,
// sum of exp(x - maximum)) per invocation ("online softmax"), the workgroup merges them, and
// a second pass writes finish(x, max, row_factor(max, sum)). The op's epilogue, prepended,
// defines those two functions: softmax writes exp(x - max) / sum, log_softmax
// x - max - log(sum).
//
// params: `SoftmaxWords` in webgpu.rs, each field's first word named P_<field>.
// PASS 0 takes whole rows (one chunk of all columns). Devices that end long loops early
// (`Limits::max_loop_iterations`) split rows into chunks, one workgroup per (row, chunk):
// PASS 1 stores each chunk's (maximum, sum) in `stats` ([row][chunk][2]), PASS 2 merges its
// row's and writes its chunk.

override PASS: u32 = 0u;

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<storage, read_write> stats: array<f32>;

var<workgroup> maxima: array<f32, 256>;
var<workgroup> sums: array<f32, 256>;

// Where row `row` starts in x and in out.
fn row_at(row: u32) -> vec2<u32> {
    let a = row / params[P_nb];
    let b = row % params[P_nb];
    return vec2<u32>(params[P_x] + a * params[P_x_a] + b * params[P_x_b],
            params[P_out] + a * params[P_out_a] + b * params[P_out_b]);
}

fn max_nan(a: f32, b: f32) -> f32 {
    if (is_nan(a) || is_nan(b)) { return nan_f32(); }
    return max(a, b);
}

// Merge two (maximum, sum) pairs; equal maxima skip the exp, so -inf - -inf never makes NaN.
fn merge(m1: f32, s1: f32, m2: f32, s2: f32) -> vec2<f32> {
    let m = max_nan(m1, m2);
    var a = s1;
    if (m1 != m) { a = s1 * exp(m1 - m); }
    var b = s2;
    if (m2 != m) { b = s2 * exp(m2 - m); }
    return vec2<f32>(m, a + b);
}

@compute @workgroup_size(256)
fn softmax_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let g = flat_workgroup(wid, nwg);
    let chunks = params[P_chunks];
    let row = g / chunks;
    let cols = params[P_cols];
    let in_range = row < params[P_rows];
    let at = row_at(row);
    let xin = at.x;
    let xs = params[P_x_col];
    let o = at.y;
    let os = params[P_out_col];
    let j0 = (g % chunks) * params[P_chunk_cols];
    let j1 = min(j0 + params[P_chunk_cols], cols);

    var acc = vec2<f32>(neg_inf_f32(), 0.0);
    if (in_range && PASS == 2u) {
        for (var c = row * chunks + lid; c < (row + 1u) * chunks; c += 256u) {
            acc = merge(acc.x, acc.y, stats[2u * c], stats[2u * c + 1u]);
        }
    } else if (in_range) {
        for (var j = j0 + lid; j < j1; j += 256u) {
            acc = merge(acc.x, acc.y, x[xin + j * xs], 1.0);
        }
    }
    maxima[lid] = acc.x;
    sums[lid] = acc.y;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s >>= 1u) {
        if (lid < s) {
            let r = merge(maxima[lid], sums[lid], maxima[lid + s], sums[lid + s]);
            maxima[lid] = r.x;
            sums[lid] = r.y;
        }
        workgroupBarrier();
    }
    if (PASS == 1u) {
        if (in_range && lid == 0u) {
            stats[2u * g] = maxima[0];
            stats[2u * g + 1u] = sums[0];
        }
        return;
    }
    let m = maxima[0];
    // A +inf maximum makes exp(x - max) NaN for that element, and so the whole row, as in
    // the reference; so does an all -inf row (exp(-inf - -inf)) and a NaN. All three
    // explicitly: SwiftShader's exp(NaN) is not NaN.
    var factor = row_factor(m, sums[0]);
    if (m == inf_f32() || m == neg_inf_f32() || is_nan(m)) { factor = nan_f32(); }
    if (in_range) {
        for (var j = j0 + lid; j < j1; j += 256u) {
            out[o + j * os] = finish(x[xin + j * xs], m, factor);
        }
    }
}

// The software adapters' variant (`DeviceOptions::software_kernels`): no workgroup memory and
// no barriers. One invocation per (row, chunk) takes its chunk alone, in three walks (the
// maximum, the sum of exp(x - maximum), the output) rather than the online merge, which
// costs an exp per element per walk in divergent branches. PASS and `stats` as above.
@compute @workgroup_size(64)
fn softmax_serial_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let g = flat_workgroup(wid, nwg) * 64u + lid;
    let chunks = params[P_chunks];
    let row = g / chunks;
    if (row >= params[P_rows]) { return; }
    let cols = params[P_cols];
    let at = row_at(row);
    let xin = at.x;
    let xs = params[P_x_col];
    let o = at.y;
    let os = params[P_out_col];
    let j0 = (g % chunks) * params[P_chunk_cols];
    let j1 = min(j0 + params[P_chunk_cols], cols);

    var m = neg_inf_f32();
    var sum = 0.0;
    if (PASS == 2u) {
        for (var c = row * chunks; c < (row + 1u) * chunks; c++) {
            let r = merge(m, sum, stats[2u * c], stats[2u * c + 1u]);
            m = r.x;
            sum = r.y;
        }
    } else {
        for (var j = j0; j < j1; j++) { m = max_nan(m, x[xin + j * xs]); }
        // An empty chunk keeps (-inf, 0), which merging ignores.
        if (m != neg_inf_f32()) {
            for (var j = j0; j < j1; j++) { sum += exp(x[xin + j * xs] - m); }
        }
    }
    if (PASS == 1u) {
        stats[2u * g] = m;
        stats[2u * g + 1u] = sum;
        return;
    }
    // An infinite maximum gives NaN (+inf: exp(x - max) is NaN for that element; an all -inf
    // row: every exp is NaN), as the workgroup variant and the reference do; a NaN maximum
    // too, explicitly (SwiftShader's exp(NaN) is not NaN).
    var factor = row_factor(m, sum);
    if (m == inf_f32() || m == neg_inf_f32() || is_nan(m)) { factor = nan_f32(); }
    for (var j = j0; j < j1; j++) {
        out[o + j * os] = finish(x[xin + j * xs], m, factor);
    }
}
