// Unary math / activations and binary arithmetic (optionally fused with an activation).
//
// params: [0] n elements, [1] rank, [2] output offset, [3..11] output shape,
//         [11..20] view of x / a (offset, 8 strides), [20..29] view of b,
//         [29] period of x / a, [30] period of b (for access mode 2).
// Op codes are `UnaryOp::code` and `BinaryOp::code` in src/ops/elementwise.rs.
// A_MODE / B_MODE say how an operand is addressed: 0 strided (general), 1 contiguous,
// 2 a contiguous block repeated with the given period (a row broadcast over leading dims).

override OP: u32 = 0u;
override ACT: u32 = 0u;
override A_MODE: u32 = 0u;
override B_MODE: u32 = 0u;

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> y: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

// expm1 without cancellation near 0 (Taylor series to y^9 for |y| < 1).
fn expm1_(y: f32) -> f32 {
    if (abs(y) < 1.0) {
        return y * (1.0 + y / 2.0 * (1.0 + y / 3.0 * (1.0 + y / 4.0 * (1.0 + y / 5.0 * (1.0 + y / 6.0
            * (1.0 + y / 7.0 * (1.0 + y / 8.0 * (1.0 + y / 9.0))))))));
    }
    return exp(y) - 1.0;
}

fn tanh_(v: f32) -> f32 {
    if (abs(v) > 10.0) {
        return sign(v);
    }
    let e = expm1_(2.0 * abs(v));
    return sign(v) * e / (e + 2.0);
}

fn sigmoid_(v: f32) -> f32 {
    return 1.0 / (1.0 + exp(-v));
}

// erfc with fractional error below 1.2e-7 everywhere (Chebyshev fit, Numerical Recipes).
fn erfc_(z: f32) -> f32 {
    let t = 1.0 / (1.0 + 0.5 * abs(z));
    let p = -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806
        + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
    let r = t * exp(p);
    return select(2.0 - r, r, z >= 0.0);
}

fn unary_op(op: u32, v: f32) -> f32 {
    if (is_nan(v)) {
        return v;
    }
    switch op {
        case 1u: { return -v; }
        case 2u: { return abs(v); }
        case 3u: { return exp(v); }
        case 4u: {
            if (v < 0.0) { return nan_f32(); }
            if (v == 0.0) { return bitcast<f32>(0xff800000u); }
            return log(v);
        }
        case 5u: {
            if (v < 0.0) { return nan_f32(); }
            return sqrt(v);
        }
        case 6u: {
            if (v < 0.0) { return nan_f32(); }
            if (v == 0.0) { return bitcast<f32>(0x7f800000u); }
            return 1.0 / sqrt(v);
        }
        case 7u: { return sin(v); }
        case 8u: { return cos(v); }
        case 9u: { return tanh_(v); }
        case 10u: { return sigmoid_(v); }
        case 11u: { return select(v, 0.0, v < 0.0); }
        case 12u: { return 0.5 * v * erfc_(-v * 0.70710678118654752); }
        case 13u: {
            let z = 0.7978845608028654 * (v + 0.044715 * v * v * v);
            return v * sigmoid_(2.0 * z);
        }
        case 14u: { return v * sigmoid_(v); }
        default: { return v; }
    }
}

fn pow_(a: f32, b: f32) -> f32 {
    if (b == 0.0 || a == 1.0) {
        return 1.0;
    }
    if (is_nan(a) || is_nan(b)) {
        return nan_f32();
    }
    if (a == 0.0) {
        return select(bitcast<f32>(0x7f800000u), 0.0, b > 0.0);
    }
    let m = exp2(b * log2(abs(a)));
    if (a < 0.0) {
        if (b != floor(b)) {
            return nan_f32();
        }
        return select(m, -m, fract(b * 0.5) != 0.0);
    }
    return m;
}

fn binary_op(op: u32, a: f32, b: f32) -> f32 {
    switch op {
        case 0u: { return a + b; }
        case 1u: { return a - b; }
        case 2u: { return a * b; }
        case 3u: { return a / b; }
        case 4u: {
            if (is_nan(a) || is_nan(b)) { return nan_f32(); }
            return min(a, b);
        }
        case 5u: {
            if (is_nan(a) || is_nan(b)) { return nan_f32(); }
            return max(a, b);
        }
        default: { return pow_(a, b); }
    }
}

fn operand_offset(mode: u32, i: u32, view_at: u32, period_at: u32) -> u32 {
    switch mode {
        case 1u: { return params[view_at] + i; }
        case 2u: { return params[view_at] + i % params[period_at]; }
        default: { return strided_offset(i, params[1], 3u, view_at); }
    }
}

fn element(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return flat_workgroup(wid, nwg) * 256u + lid;
}

@compute @workgroup_size(256)
fn unary_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = element(wid, nwg, lid);
    if (i >= params[0]) {
        return;
    }
    out[params[2] + i] = unary_op(OP, x[operand_offset(A_MODE, i, 11u, 29u)]);
}

@compute @workgroup_size(256)
fn binary_main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = element(wid, nwg, lid);
    if (i >= params[0]) {
        return;
    }
    let ai = operand_offset(A_MODE, i, 11u, 29u);
    let bi = operand_offset(B_MODE, i, 20u, 30u);
    out[params[2] + i] = unary_op(ACT, binary_op(OP, x[ai], y[bi]));
}
