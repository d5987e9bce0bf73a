// Layer / RMS normalisation of the rows of a contiguous [rows, cols] input, one workgroup
// per row, reading the row twice: one pass gathers the statistics (Welford's running count,
// mean and sum of squared deviations for layer norm, the sum of squares for RMS norm) and the
// workgroup merges them; the second writes `(x - mean) * inv_std * weight + bias` through
// the activation.
//
// params: [0] rows, [1] cols, [2] x offset, [3] out offset, [4] weight offset,
//         [5] bias offset, [6] eps as f32 bits.
// KIND is `NormKind::code` (0 layer, 1 rms); ACT a `UnaryOp::code` (0: none).

override KIND: u32 = 0u;
override HAS_WEIGHT: bool = false;
override HAS_BIAS: bool = false;
override ACT: u32 = 0u;

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> weight: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

var<workgroup> counts: array<f32, 256>;
var<workgroup> means: array<f32, 256>;
var<workgroup> squares: array<f32, 256>;

@compute @workgroup_size(256)
fn norm_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let row = flat_workgroup(wid, nwg);
    let cols = params[1];
    let in_range = row < params[0];
    let xin = params[2] + row * cols;
    let o = params[3] + row * cols;
    let n = f32(cols);

    // Per invocation: count, mean and sum of squared deviations (layer norm), or the sum of
    // squares around 0 (RMS norm).
    var cnt = 0.0;
    var mean = 0.0;
    var m2 = 0.0;
    if (in_range) {
        for (var j = lid; j < cols; j += 256u) {
            let v = x[xin + j];
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
            let nb = counts[lid + s];
            let na = counts[lid];
            let total = na + nb;
            if (KIND == 0u && nb > 0.0) {
                let delta = means[lid + s] - means[lid];
                means[lid] = means[lid] + delta * nb / total;
                squares[lid] = squares[lid] + squares[lid + s] + delta * delta * na * nb / total;
                counts[lid] = total;
            } else if (KIND != 0u) {
                squares[lid] = squares[lid] + squares[lid + s];
            }
        }
        workgroupBarrier();
    }
    mean = means[0];
    let inv = inverseSqrt(squares[0] / n + bitcast<f32>(params[6]));
    if (in_range) {
        for (var j = lid; j < cols; j += 256u) {
            var y = (x[xin + j] - mean) * inv;
            if (HAS_WEIGHT) { y *= weight[params[4] + j]; }
            if (HAS_BIAS) { y += bias[params[5] + j]; }
            out[o + j] = unary_op(ACT, y);
        }
    }
}
