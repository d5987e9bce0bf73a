// Layer / RMS normalisation of rows of `cols` elements of x (row r starts at
// (r / nb) * x_a + (r % nb) * x_b and steps x_col: strided views are read in place) into a
// contiguous [rows, cols] output, one workgroup per row, reading the row twice: one pass gathers the statistics (Welford's running count,
// mean and sum of squared deviations for layer norm, the sum of squares for RMS norm) and the
// workgroup merges them; the second writes `(x - mean) * inv_std * weight + bias` through
// the activation.
//
// params: `NormWords` in webgpu.rs, each field's first word named P_<field>.
// KIND is `NormKind::code` (0 layer, 1 rms); ACT a `UnaryOp::code` (0: none).
// PASS 0 takes whole rows (one chunk of all columns). Devices that end long loops early
// (`Limits::max_loop_iterations`) split rows into chunks, one workgroup per (row, chunk):
// PASS 1 stores each chunk's statistics in `stats` ([row][chunk][3]), PASS 2 merges its
// row's and writes its chunk.

override PASS: u32 = 0u;
override KIND: u32 = 0u;
override HAS_WEIGHT: bool = false;
override HAS_BIAS: bool = false;
override ACT: u32 = 0u;

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> weight: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
@group(0) @binding(5) var<storage, read_write> stats: array<f32>;

var<workgroup> counts: array<f32, 256>;
var<workgroup> means: array<f32, 256>;
var<workgroup> squares: array<f32, 256>;

// Merge of two (count, mean, sum of squared deviations) statistics (Chan et al.); RMS norm
// only adds the sums of squares.
fn merge(a: vec3<f32>, b: vec3<f32>) -> vec3<f32> {
    if (KIND != 0u) { return vec3<f32>(a.x, a.y, a.z + b.z); }
    if (b.x == 0.0) { return a; }
    let total = a.x + b.x;
    let delta = b.y - a.y;
    return vec3<f32>(total, a.y + delta * b.x / total,
            a.z + b.z + delta * delta * a.x * b.x / total);
}

@compute @workgroup_size(256)
fn norm_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let g = flat_workgroup(wid, nwg);
    let chunks = params[P_chunks];
    let row = g / chunks;
    let j0 = (g % chunks) * params[P_chunk_cols];
    let cols = params[P_cols];
    let j1 = min(j0 + params[P_chunk_cols], cols);
    let in_range = row < params[P_rows];
    let xin = params[P_x] + (row / params[P_nb]) * params[P_x_a]
            + (row % params[P_nb]) * params[P_x_b];
    let xs = params[P_x_col];
    let o = params[P_out] + row * cols;
    let n = f32(cols);

    // Per invocation: count, mean and sum of squared deviations (layer norm), or the sum of
    // squares around 0 (RMS norm).
    var cnt = 0.0;
    var mean = 0.0;
    var m2 = 0.0;
    if (in_range && PASS == 2u) {
        var r = vec3<f32>(0.0);
        for (var c = row * chunks + lid; c < (row + 1u) * chunks; c += 256u) {
            r = merge(r, vec3<f32>(stats[3u * c], stats[3u * c + 1u], stats[3u * c + 2u]));
        }
        cnt = r.x;
        mean = r.y;
        m2 = r.z;
    } else if (in_range) {
        for (var j = j0 + lid; j < j1; j += 256u) {
            let v = x[xin + j * xs];
            if (KIND == 0u) {
                cnt += 1.0;
                let d = v - mean;
                mean += d / cnt;
                m2 += d * (v - mean);
            } else {
                m2 += v * v;
            }
        }
    }
    counts[lid] = cnt;
    means[lid] = mean;
    squares[lid] = m2;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s >>= 1u) {
        if (lid < s) {
            let r = merge(vec3<f32>(counts[lid], means[lid], squares[lid]),
                    vec3<f32>(counts[lid + s], means[lid + s], squares[lid + s]));
            counts[lid] = r.x;
            means[lid] = r.y;
            squares[lid] = r.z;
        }
        workgroupBarrier();
    }
    if (PASS == 1u) {
        if (in_range && lid == 0u) {
            stats[3u * g] = counts[0];
            stats[3u * g + 1u] = means[0];
            stats[3u * g + 2u] = squares[0];
        }
        return;
    }
    mean = means[0];
    let inv = inverseSqrt(squares[0] / n + bitcast<f32>(params[P_eps]));
    if (in_range) {
        for (var j = j0 + lid; j < j1; j += 256u) {
            var y = (x[xin + j * xs] - mean) * inv;
            if (HAS_WEIGHT) { y *= weight[params[P_weight] + j]; }
            if (HAS_BIAS) { y += bias[params[P_bias] + j]; }
            out[o + j] = unary_op(ACT, y);
        }
    }
}

// The software adapters' variant (`DeviceOptions::software_kernels`): no workgroup memory and
// no barriers. One invocation per (row, chunk) takes its chunk alone: the mean, then the sum
// of squared deviations from it (two walks, no division per element as in Welford's
// update), or the sum of squares for RMS norm, then the output. PASS and `stats` as above.
@compute @workgroup_size(64)
fn norm_serial_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let g = flat_workgroup(wid, nwg) * 64u + lid;
    let chunks = params[P_chunks];
    let row = g / chunks;
    if (row >= params[P_rows]) { return; }
    let cols = params[P_cols];
    let j0 = (g % chunks) * params[P_chunk_cols];
    let j1 = min(j0 + params[P_chunk_cols], cols);
    let xin = params[P_x] + (row / params[P_nb]) * params[P_x_a]
            + (row % params[P_nb]) * params[P_x_b];
    let xs = params[P_x_col];
    let o = params[P_out] + row * cols;

    var r = vec3<f32>(0.0);
    if (PASS == 2u) {
        for (var c = row * chunks; c < (row + 1u) * chunks; c++) {
            r = merge(r, vec3<f32>(stats[3u * c], stats[3u * c + 1u], stats[3u * c + 2u]));
        }
    } else if (KIND == 0u) {
        var s = 0.0;
        for (var j = j0; j < j1; j++) { s += x[xin + j * xs]; }
        let cnt = f32(j1 - j0);
        let mean = s / max(cnt, 1.0);
        var m2 = 0.0;
        for (var j = j0; j < j1; j++) {
            let d = x[xin + j * xs] - mean;
            m2 = fma(d, d, m2);
        }
        r = vec3<f32>(cnt, mean, m2);
    } else {
        var m2 = 0.0;
        for (var j = j0; j < j1; j++) {
            let v = x[xin + j * xs];
            m2 = fma(v, v, m2);
        }
        r = vec3<f32>(0.0, 0.0, m2);
    }
    if (PASS == 1u) {
        stats[3u * g] = r.x;
        stats[3u * g + 1u] = r.y;
        stats[3u * g + 2u] = r.z;
        return;
    }
    let mean = r.y;
    let inv = inverseSqrt(r.z / f32(cols) + bitcast<f32>(params[P_eps]));
    for (var j = j0; j < j1; j++) {
        var y = (x[xin + j * xs] - mean) * inv;
        if (HAS_WEIGHT) { y *= weight[params[P_weight] + j]; }
        if (HAS_BIAS) { y += bias[params[P_bias] + j]; }
        out[o + j] = unary_op(ACT, y);
    }
}
