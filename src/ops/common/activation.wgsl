// Activation functions shared by the kernels that apply one, and the helpers of the unary ops'
// expressions in src/ops/elementwise/table.rs: prepended after common.wgsl where a file needs
// it, with the generated `unary_op` after it.

// sin(v + quarter * pi / 2) with its own range reduction (v - k pi/2 in four parts,
// Cody-Waite) and polynomials on [-pi/4, pi/4]: builtin sin and cos are far less accurate on
// some adapters (SwiftShader: 1e-4 relative).
fn sin_(v: f32, quarter: i32) -> f32 {
    let k = round(v * 0.63661977236758134);
    // Cody-Waite: pi/2 in four parts, the first three of 11 bits, so that each k * part is
    // exact for |k| < 2^13 (|v| < 12867) without relying on a fused fma, which WGSL does not
    // promise (llvmpipe rounds the product).
    let r = (((v - k * 1.5703125) - k * 4.8375129699707031e-4) - k * 7.5495336204767227e-8)
            - k * 2.5633440682570896e-12;
    let z = r * r;
    let s = fma(fma(fma(-1.9515296e-4, z, 8.3321609e-3), z, -1.6666655e-1) * z, r, r);
    let c = fma(z * z, fma(fma(2.4433157e-5, z, -1.3887316e-3), z, 4.1666646e-2),
            fma(-0.5, z, 1.0));
    let q = (i32(k) + quarter) & 3;
    switch q {
        case 0: { return s; }
        case 1: { return c; }
        case 2: { return -s; }
        default: { return -c; }
    }
}

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
    let p = -z * z - 1.26551223
            + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806
        + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
    let r = t * exp(p);
    return select(2.0 - r, r, z >= 0.0);
}

// erf: near zero (|v| < 0.5, where 1 - erfc would cancel) its odd Taylor series to v^11,
// else sign(v) (1 - erfc(|v|)); as the CPU backend's `math::erf`.
fn erf_(v: f32) -> f32 {
    let z = v * v;
    let series = 1.1283791670955126 * v * (1.0 + z * (-0.33333334 + z * (0.1 + z * (-0.023809524 + z * (0.0046296296 + z * -0.0007575758)))));
    let a = abs(v);
    let tail = select(-1.0, 1.0, v >= 0.0) * (1.0 - erfc_(a));
    return select(tail, series, a < 0.5);
}

// log, sqrt and 1 / sqrt with their specials made explicit (negative: NaN; 0: -inf, 0, inf).
fn log_(v: f32) -> f32 {
    if (v < 0.0) { return nan_f32(); }
    if (v == 0.0) { return neg_inf_f32(); }
    return log(v);
}

fn sqrt_(v: f32) -> f32 {
    if (v < 0.0) { return nan_f32(); }
    return sqrt(v);
}

fn rsqrt_(v: f32) -> f32 {
    if (v < 0.0) { return nan_f32(); }
    if (v == 0.0) { return inf_f32(); }
    return 1.0 / sqrt(v);
}

// ln(1 + y) without cancellation near 0 (Taylor series to y^7 for |y| < 0.1, where the
// rounding of 1 + y would cost precision).
fn log1p_(y: f32) -> f32 {
    if (abs(y) < 0.1) {
        return y * (1.0 + y * (-0.5 + y * (0.33333333 + y * (-0.25 + y * (0.2 + y * (-0.16666667
            + y * 0.14285714))))));
    }
    return log(1.0 + y);
}

// unary_op(op, v), the switch over `UnaryOp::code` with each op's expression, is generated
// from the op table (src/ops/elementwise/table.rs) and appended to this file.
