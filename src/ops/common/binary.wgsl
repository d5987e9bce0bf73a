// Helpers of the binary ops' expressions in src/ops/elementwise/table.rs, prepended (before
// the generated `binary_op` and `int_op`) to the files that apply a binary op: elementwise
// and chain. int_pow computes on VAL, which the launch's prelude declares.

fn pow_(a: f32, b: f32) -> f32 {
    if (b == 0.0 || a == 1.0) {
        return 1.0;
    }
    if (is_nan(a) || is_nan(b)) {
        return nan_f32();
    }
    if (a == 0.0) {
        return select(inf_f32(), 0.0, b > 0.0);
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

// min and max that give NaN when either operand is NaN.
fn min_(a: f32, b: f32) -> f32 {
    if (is_nan(a) || is_nan(b)) { return nan_f32(); }
    return min(a, b);
}

fn max_(a: f32, b: f32) -> f32 {
    if (is_nan(a) || is_nan(b)) { return nan_f32(); }
    return max(a, b);
}

// Integer powers with the rules of `BinaryOp::eval_int`: by repeated squaring (wrapping), a
// negative exponent giving 1 / a^|b| truncated toward zero.
fn int_pow(a: VAL, b: VAL) -> VAL {
    if (b < VAL(0)) {
        if (a == VAL(1)) { return VAL(1); }
        if (a + VAL(1) == VAL(0)) { return select(VAL(1), a, (b & VAL(1)) != VAL(0)); }
        return VAL(0);
    }
    var result = VAL(1);
    var base = a;
    var e = b;
    loop {
        if (e == VAL(0)) { break; }
        if ((e & VAL(1)) != VAL(0)) { result *= base; }
        base *= base;
        e = e >> 1u;
    }
    return result;
}
