// Direct 2-D convolution (NCHW) with a fused bias and activation, and 2-D max / average
// pooling; one invocation per output element.
//
// params: [0] n, [1] c, [2] h, [3] w, [4] o, [5] kh, [6] kw, [7] oh, [8] ow, [9] stride y,
//         [10] stride x, [11] pad y, [12] pad x, [13] dilation y, [14] dilation x,
//         [15] groups, [16] x offset, [17] weight offset, [18] bias offset, [19] out offset,
//         [20..26] the taps of this dispatch: begin and end of the input channel (of the
//         group), of ky and of kx, [26] flags: bit 0 continues from the partial result in
//         `out`, bit 1 finishes (bias and activation; the average of a pool).
// HAS_BIAS adds bias[oc]; ACT is a `UnaryOp::code` (0: none); POOL is `PoolKind::code`.
// One dispatch over all taps has flags 2; devices that end long loops early
// (`Limits::max_loop_iterations`) take the taps in boxes, flags 0, then 1, ..., then 3.

override HAS_BIAS: bool = false;
override ACT: u32 = 0u;
override POOL: u32 = 0u;

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> weight: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

// Input coordinate of output position `o`, tap `k` on an axis, or -1 in the padding.
fn input_at(o: u32, k: u32, stride: u32, dilation: u32, pad: u32, extent: u32) -> i32 {
    let i = i32(o * stride + k * dilation) - i32(pad);
    if (i < 0 || i >= i32(extent)) { return -1; }
    return i;
}

fn output_index(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return flat_workgroup(wid, nwg) * 256u + lid;
}

@compute @workgroup_size(256)
fn conv2d_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = output_index(wid, nwg, lid);
    let c = params[1]; let h = params[2]; let w = params[3]; let o = params[4];
    let kh = params[5]; let kw = params[6]; let oh = params[7]; let ow = params[8];
    if (i >= params[0] * o * oh * ow) { return; }
    let ox = i % ow;
    let oy = (i / ow) % oh;
    let oc = (i / (ow * oh)) % o;
    let nb = i / (ow * oh * o);
    let cg = c / params[15];
    let g = oc / (o / params[15]);
    var acc = 0.0;
    if ((params[26] & 1u) != 0u) { acc = out[params[19] + i]; }
    for (var ci = params[20]; ci < params[21]; ci++) {
        let plane = params[16] + (nb * c + g * cg + ci) * h * w;
        let taps = params[17] + (oc * cg + ci) * kh * kw;
        for (var ky = params[22]; ky < params[23]; ky++) {
            let iy = input_at(oy, ky, params[9], params[13], params[11], h);
            if (iy < 0) { continue; }
            for (var kx = params[24]; kx < params[25]; kx++) {
                let ix = input_at(ox, kx, params[10], params[14], params[12], w);
                if (ix < 0) { continue; }
                acc = fma(x[plane + u32(iy) * w + u32(ix)], weight[taps + ky * kw + kx], acc);
            }
        }
    }
    if ((params[26] & 2u) == 0u) {
        out[params[19] + i] = acc;
        return;
    }
    if (HAS_BIAS) { acc += bias[params[18] + oc]; }
    out[params[19] + i] = unary_op(ACT, acc);
}

@compute @workgroup_size(256)
fn pool2d_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = output_index(wid, nwg, lid);
    let h = params[2]; let w = params[3];
    let kh = params[5]; let kw = params[6]; let oh = params[7]; let ow = params[8];
    if (i >= params[0] * params[1] * oh * ow) { return; }
    let ox = i % ow;
    let oy = (i / ow) % oh;
    let plane = params[16] + (i / (ow * oh)) * h * w;
    var acc = 0.0;
    if (POOL == 0u) { acc = neg_inf_f32(); }
    if ((params[26] & 1u) != 0u) { acc = out[params[19] + i]; }
    for (var ky = params[22]; ky < params[23]; ky++) {
        let iy = input_at(oy, ky, params[9], 1u, params[11], h);
        if (iy < 0) { continue; }
        for (var kx = params[24]; kx < params[25]; kx++) {
            let ix = input_at(ox, kx, params[10], 1u, params[12], w);
            if (ix < 0) { continue; }
            let v = x[plane + u32(iy) * w + u32(ix)];
            if (POOL == 0u) {
                if (is_nan(v) || is_nan(acc)) { acc = nan_f32(); } else { acc = max(acc, v); }
            } else {
                acc += v;
            }
        }
    }
    if (POOL == 1u && (params[26] & 2u) != 0u) { acc = acc / f32(kh * kw); }
    out[params[19] + i] = acc;
}
