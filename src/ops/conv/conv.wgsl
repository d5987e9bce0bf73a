// Direct 2-D convolution (NCHW) and transposed convolution with a fused bias and activation,
// and 2-D max / average pooling; one invocation per output element.
//
// params: `ConvWords` in webgpu.rs, each field's first word named P_<field>. The taps of
//         one dispatch are the ranges P_ci (input channels of the group), P_ky and P_kx;
//         P_flags: bit 0 continues from the partial result in `out`, bit 1 finishes (bias
//         and activation; the average of a pool).
// HAS_BIAS adds bias[oc]; ACT is a `UnaryOp::code` (0: none); POOL is `Pool2d::code` (0 max,
// 1 average over the window within the padded input, 2 over the taps within the input);
// OCB (1 or 4) is the output channels of one conv2d_main invocation (of four output columns).
// One dispatch over all taps has flags 2; devices that end long loops early
// (`Limits::max_loop_iterations`) take the taps in boxes, flags 0, then 1, ..., then 3.

override HAS_BIAS: bool = false;
override ACT: u32 = 0u;
override POOL: u32 = 0u;
override OCB: u32 = 1u;

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

// Input coordinate that output position `o` reads through tap `k` of a transposed
// convolution: (o + pad - k * dilation) / stride where that divides exactly and lies in the
// input, else -1. The host keeps o + pad and k * dilation within u32.
fn transposed_input_at(o: u32, k: u32, stride: u32, dilation: u32, pad: u32, extent: u32) -> i32 {
    let reach = o + pad;
    let tap = k * dilation;
    if (reach < tap) { return -1; }
    let t = reach - tap;
    if (t % stride != 0u || t / stride >= extent) { return -1; }
    return i32(t / stride);
}

// The divisor of an average along one axis at output `o`: the window's `k` taps, `dilation`
// apart, within the padded input (POOL 1) or within the input (POOL 2).
fn pool_count(o: u32, k: u32, stride: u32, dilation: u32, pad: u32, pad_end: u32, extent: u32)
    -> i32 {
    let start = i32(o * stride) - i32(pad);
    let d = i32(dilation);
    var end = i32(extent);
    var first = 0;
    if (POOL == 1u) {
        end = i32(extent + pad_end);
    } else if (start < 0) {
        first = (d - 1 - start) / d;
    }
    if (end <= start) { return 0; }
    return max(min(i32(k), (end - start + d - 1) / d) - first, 0);
}

fn output_index(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return flat_workgroup(wid, nwg) * 256u + lid;
}

// OCB output channels (4 where each group's output channels come in fours, else 1) of four
// neighbouring output columns per invocation: every input value read feeds OCB accumulators
// and every weight read four.
fn conv_weights(t: u32, ws: u32) -> vec4<f32> {
    if (OCB == 4u) {
        return vec4<f32>(weight[t], weight[t + ws], weight[t + 2u * ws], weight[t + 3u * ws]);
    }
    return vec4<f32>(weight[t], 0.0, 0.0, 0.0);
}

// Input column `ix` of the input row starting at `xr`, 0 in the padding.
fn conv_input(xr: u32, ix: i32, w: u32) -> vec4<f32> {
    if (ix < 0 || ix >= i32(w)) { return vec4<f32>(0.0); }
    return vec4<f32>(x[xr + u32(ix)]);
}

@compute @workgroup_size(256)
fn conv2d_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    // i runs over (batch, block of OCB output channels, oy, block of 4 output columns).
    let i = output_index(wid, nwg, lid);
    let c = params[P_c]; let h = params[P_h]; let w = params[P_w]; let o = params[P_o];
    let kh = params[P_kh]; let kw = params[P_kw]; let oh = params[P_oh]; let ow = params[P_ow];
    let blocks = o / OCB;
    let xblocks = (ow + 3u) / 4u;
    if (i >= params[P_n] * blocks * oh * xblocks) { return; }
    let ox0 = (i % xblocks) * 4u;
    let oy = (i / xblocks) % oh;
    let oc0 = ((i / (xblocks * oh)) % blocks) * OCB;
    let nb = i / (xblocks * oh * blocks);
    let cg = c / params[P_groups];
    let g = oc0 / (o / params[P_groups]);
    let sy = params[P_stride_y]; let sx = i32(params[P_stride_x]); let dy = params[P_dilation_y];
    let dx = params[P_dilation_x];
    let iy0 = i32(oy * sy) - i32(params[P_pad_y]);
    let ix0 = i32(ox0) * sx - i32(params[P_pad_x]);
    let ky0 = params[P_ky]; let ky1 = params[P_ky + 1u]; let kx0 = params[P_kx];
    let kx1 = params[P_kx + 1u];
    // Weights of consecutive output channels are `ws` apart; outputs `plane` apart.
    let ws = cg * kh * kw;
    let plane = oh * ow;
    let at = params[P_out] + ((nb * o + oc0) * oh + oy) * ow + ox0;
    let flags = params[P_flags];
    var acc: array<vec4<f32>, 4>;
    var a0 = vec4<f32>(0.0);
    var a1 = vec4<f32>(0.0);
    var a2 = vec4<f32>(0.0);
    var a3 = vec4<f32>(0.0);
    for (var ci = params[P_ci]; ci < params[P_ci + 1u]; ci++) {
        let xp = params[P_x] + (nb * c + g * cg + ci) * h * w;
        let taps = params[P_weight] + oc0 * ws + ci * kh * kw;
        for (var ky = ky0; ky < ky1; ky++) {
            let iy = iy0 + i32(ky * dy);
            if (iy < 0 || iy >= i32(h)) { continue; }
            let xr = xp + u32(iy) * w;
            let tr = taps + ky * kw;
            for (var kx = kx0; kx < kx1; kx++) {
                let wv = conv_weights(tr + kx, ws);
                let ix = ix0 + i32(kx * dx);
                a0 = fma(conv_input(xr, ix, w), wv, a0);
                a1 = fma(conv_input(xr, ix + sx, w), wv, a1);
                a2 = fma(conv_input(xr, ix + 2 * sx, w), wv, a2);
                a3 = fma(conv_input(xr, ix + 3 * sx, w), wv, a3);
            }
        }
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
    for (var p = 0u; p < 4u; p++) {
        if (ox0 + p >= ow) { break; }
        for (var k = 0u; k < OCB; k++) {
            let to = at + k * plane + p;
            var v = acc[p][k];
            if ((flags & 1u) != 0u) { v += out[to]; }
            if ((flags & 2u) != 0u) {
                if (HAS_BIAS) { v += bias[params[P_bias] + oc0 + k]; }
                v = unary_op(ACT, v);
            }
            out[to] = v;
        }
    }
}

// A transposed convolution: weight [c, o / groups, kh, kw]; each output gathers the inputs
// whose taps land on it (no atomics), over the taps of this dispatch.
@compute @workgroup_size(256)
fn conv_transpose2d_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = output_index(wid, nwg, lid);
    let c = params[P_c]; let h = params[P_h]; let w = params[P_w]; let o = params[P_o];
    let kh = params[P_kh]; let kw = params[P_kw]; let oh = params[P_oh]; let ow = params[P_ow];
    if (i >= params[P_n] * o * oh * ow) { return; }
    let ox = i % ow;
    let oy = (i / ow) % oh;
    let oc = (i / (ow * oh)) % o;
    let nb = i / (ow * oh * o);
    let cg = c / params[P_groups];
    let og = o / params[P_groups];
    let g = oc / og;
    let sy = params[P_stride_y]; let sx = params[P_stride_x]; let dy = params[P_dilation_y];
    let dx = params[P_dilation_x]; let py = params[P_pad_y]; let px = params[P_pad_x];
    let kx0 = params[P_kx]; let kx1 = params[P_kx + 1u];
    let at = params[P_out] + i;
    let flags = params[P_flags];
    var acc = 0.0;
    for (var ci = params[P_ci]; ci < params[P_ci + 1u]; ci++) {
        let xp = params[P_x] + (nb * c + g * cg + ci) * h * w;
        let taps = params[P_weight] + ((g * cg + ci) * og + oc % og) * kh * kw;
        for (var ky = params[P_ky]; ky < params[P_ky + 1u]; ky++) {
            let iy = transposed_input_at(oy, ky, sy, dy, py, h);
            if (iy < 0) { continue; }
            let xr = xp + u32(iy) * w;
            let tr = taps + ky * kw;
            for (var kx = kx0; kx < kx1; kx++) {
                let ix = transposed_input_at(ox, kx, sx, dx, px, w);
                if (ix < 0) { continue; }
                acc = fma(x[xr + u32(ix)], weight[tr + kx], acc);
            }
        }
    }
    if ((flags & 1u) != 0u) { acc += out[at]; }
    if ((flags & 2u) != 0u) {
        if (HAS_BIAS) { acc += bias[params[P_bias] + oc]; }
        acc = unary_op(ACT, acc);
    }
    out[at] = acc;
}

@compute @workgroup_size(256)
fn pool2d_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = output_index(wid, nwg, lid);
    let h = params[P_h]; let w = params[P_w];
    let kh = params[P_kh]; let kw = params[P_kw]; let oh = params[P_oh]; let ow = params[P_ow];
    if (i >= params[P_n] * params[P_c] * oh * ow) { return; }
    let ox = i % ow;
    let oy = (i / ow) % oh;
    let plane = params[P_x] + (i / (ow * oh)) * h * w;
    var acc = 0.0;
    if (POOL == 0u) { acc = neg_inf_f32(); }
    if ((params[P_flags] & 1u) != 0u) { acc = out[params[P_out] + i]; }
    for (var ky = params[P_ky]; ky < params[P_ky + 1u]; ky++) {
        let iy = input_at(oy, ky, params[P_stride_y], params[P_dilation_y], params[P_pad_y], h);
        if (iy < 0) { continue; }
        for (var kx = params[P_kx]; kx < params[P_kx + 1u]; kx++) {
            let ix = input_at(ox, kx, params[P_stride_x], params[P_dilation_x], params[P_pad_x], w);
            if (ix < 0) { continue; }
            let v = x[plane + u32(iy) * w + u32(ix)];
            if (POOL == 0u) {
                if (is_nan(v) || is_nan(acc)) { acc = nan_f32(); } else { acc = max(acc, v); }
            } else {
                acc += v;
            }
        }
    }
    if (POOL != 0u && (params[P_flags] & 2u) != 0u) {
        let rows = pool_count(oy, kh, params[P_stride_y], params[P_dilation_y], params[P_pad_y],
            params[P_pad_end_y], h);
        let cols = pool_count(ox, kw, params[P_stride_x], params[P_dilation_x], params[P_pad_x],
            params[P_pad_end_x], w);
        acc = acc / f32(rows * cols);
    }
    out[params[P_out] + i] = acc;
}
