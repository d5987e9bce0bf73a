// Softmax over the rows of a contiguous [rows, cols] input, one workgroup per row:
// row maximum, then the sum of exp(x - max), then the normalised outputs.
//
// params: [0] rows, [1] cols, [2] input offset, [3] output offset.

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

var<workgroup> scratch: array<f32, 256>;

fn max_nan(a: f32, b: f32) -> f32 {
    if (is_nan(a) || is_nan(b)) { return nan_f32(); }
    return max(a, b);
}

@compute @workgroup_size(256)
fn softmax_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let row = flat_workgroup(wid, nwg);
    let cols = params[1];
    let in_range = row < params[0];
    let xin = params[2] + row * cols;
    let o = params[3] + row * cols;

    var m = bitcast<f32>(0xff800000u);
    if (in_range) {
        for (var j = lid; j < cols; j += 256u) {
            m = max_nan(m, x[xin + j]);
        }
    }
    scratch[lid] = m;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s >>= 1u) {
        if (lid < s) { scratch[lid] = max_nan(scratch[lid], scratch[lid + s]); }
        workgroupBarrier();
    }
    m = scratch[0];
    workgroupBarrier();

    var total = 0.0;
    if (in_range) {
        for (var j = lid; j < cols; j += 256u) {
            total += exp(x[xin + j] - m);
        }
    }
    scratch[lid] = total;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s >>= 1u) {
        if (lid < s) { scratch[lid] = scratch[lid] + scratch[lid + s]; }
        workgroupBarrier();
    }
    let inv = 1.0 / scratch[0];
    if (in_range) {
        for (var j = lid; j < cols; j += 256u) {
            out[o + j] = exp(x[xin + j] - m) * inv;
        }
    }
}
