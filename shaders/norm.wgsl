// Layer / RMS normalisation of the rows of a contiguous [rows, cols] input, one workgroup
// per row: the row mean (layer norm), then the mean of squared deviations (or of squares
// for RMS norm), then `(x - mean) * inv_std * weight + bias`, then the activation.
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

var<workgroup> scratch: array<f32, 256>;

// Sum of `v` over the workgroup, returned to every invocation.
fn workgroup_sum(v: f32, lid: u32) -> f32 {
    scratch[lid] = v;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s >>= 1u) {
        if (lid < s) { scratch[lid] = scratch[lid] + scratch[lid + s]; }
        workgroupBarrier();
    }
    let total = scratch[0];
    workgroupBarrier();
    return total;
}

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

    var mean = 0.0;
    if (KIND == 0u) {
        var s = 0.0;
        if (in_range) {
            for (var j = lid; j < cols; j += 256u) { s += x[xin + j]; }
        }
        mean = workgroup_sum(s, lid) / n;
    }
    var ss = 0.0;
    if (in_range) {
        for (var j = lid; j < cols; j += 256u) {
            let d = x[xin + j] - mean;
            ss += d * d;
        }
    }
    let inv = inverseSqrt(workgroup_sum(ss, lid) / n + bitcast<f32>(params[6]));
    if (in_range) {
        for (var j = lid; j < cols; j += 256u) {
            var y = (x[xin + j] - mean) * inv;
            if (HAS_WEIGHT) { y *= weight[params[4] + j]; }
            if (HAS_BIAS) { y += bias[params[5] + j]; }
            out[o + j] = unary_op(ACT, y);
        }
    }
}
