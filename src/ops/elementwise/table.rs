//! The op tables of the elementwise family: one row per unary and per binary op, with its
//! name, JS method, kernel code and its expression on every backend. Everything else is
//! generated from the rows: the `UnaryOp` / `BinaryOp` enums (with their f64 references),
//! the CPU kernels' match arms (`cpu.rs`), the WGSL switch functions and the CUDA `case` lists
//! (prepended to the kernel sources, so each op code is written once, here), the JS methods
//! (`src/wasm/ops.rs` hands the names to `npm/api.js`) and the TypeScript unions.
//!
//! A row's `reference` is the op in the precision of `F` (f64 for the tests, f32 where the CPU
//! kernel has no `cpu` expression of its own); `cpu` is an optional faster f32 body, where
//! `F` is the const `FUSED` of [`crate::ops::common::math::twin`]. `wgsl` and `cuda` are
//! expressions of the f32 `v` (unary) or `a` and `b` (binary; `_int` on `VAL` integers), and
//! may call the helpers of `common/activation.{wgsl,cuh}` and `common/binary.wgsl`.

/// The unary ops (activations too: every row can be fused after a binary op, a matmul, a
/// conv or a norm). Codes start at 1: 0 means "no activation". NaN inputs give NaN on the
/// GPU kernels before the row's expression runs.
macro_rules! unary_ops {
    ($($then:ident)::+ $(; $($extra:tt)*)?) => {
        $crate::ops::elementwise::table::unary_ops! { @rows [$($then)::+] [$($($extra)*)?]
            /// `-x`
            Neg = 1 { name: neg, js: "neg", reference: |x| -x, wgsl: "-v", cuda: "-v" }
            /// `|x|`
            Abs = 2 {
                name: abs, js: "abs", reference: |x| x.abs(),
                wgsl: "abs(v)", cuda: "fabsf(v)"
            }
            /// `e^x`
            Exp = 3 {
                name: exp, js: "exp", reference: |x| x.exp(), cpu: |x| math::exp::<F>(x),
                wgsl: "exp(v)", cuda: "expf(v)"
            }
            /// natural logarithm
            Log = 4 {
                name: log, js: "log", reference: |x| x.ln(),
                wgsl: "log_(v)", cuda: "logf(v)"
            }
            /// square root
            Sqrt = 5 {
                name: sqrt, js: "sqrt", reference: |x| x.sqrt(),
                wgsl: "sqrt_(v)", cuda: "sqrtf(v)"
            }
            /// `1 / sqrt(x)`
            Rsqrt = 6 {
                name: rsqrt, js: "rsqrt", reference: |x| x.sqrt().recip(),
                wgsl: "rsqrt_(v)", cuda: "1.0f / sqrtf(v)"
            }
            /// sine
            Sin = 7 {
                name: sin, js: "sin", reference: |x| x.sin(),
                wgsl: "sin_(v, 0)", cuda: "sinf(v)"
            }
            /// cosine
            Cos = 8 {
                name: cos, js: "cos", reference: |x| x.cos(),
                wgsl: "sin_(v, 1)", cuda: "cosf(v)"
            }
            /// hyperbolic tangent
            Tanh = 9 {
                name: tanh, js: "tanh", reference: |x| x.tanh(),
                wgsl: "tanh_(v)", cuda: "tanhf(v)"
            }
            /// `1 / (1 + e^-x)`
            Sigmoid = 10 {
                name: sigmoid, js: "sigmoid", reference: |x| sigmoid(x),
                cpu: |x| math::sigmoid::<F>(x), wgsl: "sigmoid_(v)", cuda: "sigmoid_(v)"
            }
            /// `max(x, 0)`
            Relu = 11 {
                name: relu, js: "relu", reference: |x| if x < F::zero() { F::zero() } else { x },
                wgsl: "select(v, 0.0, v < 0.0)", cuda: "v < 0.0f ? 0.0f : v"
            }
            /// GELU with the exact erf: `x/2 (1 + erf(x/sqrt 2))`
            GeluErf = 12 {
                name: gelu, js: "gelu", reference: |x| gelu_erf(x),
                cpu: |x| 0.5 * x * math::erfc::<F>(-x * std::f32::consts::FRAC_1_SQRT_2),
                // 1 + erf(z) = erfc(-z) keeps full relative precision for negative v.
                wgsl: "0.5 * v * erfc_(-v * 0.70710678118654752)",
                cuda: "0.5f * v * erfcf(-v * 0.70710678118654752f)"
            }
            /// GELU, tanh approximation: `x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`
            GeluTanh = 13 {
                name: gelu_tanh, js: "geluTanh", reference: |x| gelu_tanh(x),
                cpu: |x| {
                    let z = 0.797_884_6 * math::madd::<F>(0.044_715 * x * x, x, x);
                    x * math::sigmoid::<F>(z + z)
                },
                // 1 + tanh(z) = 2 sigmoid(2z), likewise free of cancellation.
                wgsl: "v * sigmoid_(2.0 * (0.7978845608028654 * (v + 0.044715 * v * v * v)))",
                cuda: "v * sigmoid_(2.0f * (0.7978845608028654f * (v + 0.044715f * v * v * v)))"
            }
            /// `x * sigmoid(x)`
            Silu = 14 {
                name: silu, js: "silu", reference: |x| x * sigmoid(x),
                cpu: |x| x * math::sigmoid::<F>(x), wgsl: "v * sigmoid_(v)", cuda: "v * sigmoid_(v)"
            }
            /// the error function, `2/sqrt(pi) * integral of e^(-t^2) from 0 to x`
            Erf = 15 {
                name: erf, js: "erf", reference: |x| x.erf(), cpu: |x| math::erf::<F>(x),
                wgsl: "erf_(v)", cuda: "erff(v)"
            }
            /// `ln(1 + e^x)`, computed as `max(x, 0) + ln(1 + e^-|x|)`: no overflow for large
            /// `x`, full relative precision for very negative `x` (ONNX Softplus)
            Softplus = 16 {
                name: softplus, js: "softplus",
                reference: |x| x.max(F::zero()) + (-x.abs()).exp().ln_1p(),
                wgsl: "max(v, 0.0) + log1p_(exp(-abs(v)))",
                cuda: "fmaxf(v, 0.0f) + log1pf(expf(-fabsf(v)))"
            }
            /// `x * relu6(x + 3) / 6`: 0 for `x <= -3`, `x` for `x >= 3` (ONNX HardSwish)
            Hardswish = 17 {
                name: hardswish, js: "hardswish",
                reference: |x| {
                    let three = F::from(3.0).unwrap_or_else(F::zero);
                    match x {
                        x if x <= -three => F::zero(),
                        x if x >= three => x,
                        x => x * (x + three) / (three + three),
                    }
                },
                wgsl: "select(select(v * (v + 3.0) / 6.0, v, v >= 3.0), 0.0, v <= -3.0)",
                cuda: "v <= -3.0f ? 0.0f : v >= 3.0f ? v : v * (v + 3.0f) / 6.0f"
            }
            /// largest integer `<= x` (ONNX Floor)
            Floor = 18 {
                name: floor, js: "floor", reference: |x| x.floor(),
                wgsl: "floor(v)", cuda: "floorf(v)"
            }
            /// smallest integer `>= x` (ONNX Ceil)
            Ceil = 19 {
                name: ceil, js: "ceil", reference: |x| x.ceil(),
                wgsl: "ceil(v)", cuda: "ceilf(v)"
            }
            /// nearest integer, halves to the even one: `round(2.5) = 2` (ONNX Round)
            Round = 20 {
                name: round, js: "round", reference: |x| round_half_even(x),
                // WGSL's round and CUDA's rintf (in the default rounding mode) take halves
                // to even.
                wgsl: "round(v)", cuda: "rintf(v)"
            }
            /// 1 for `x > 0`, -1 for `x < 0`, `x` itself for ±0 (ONNX Sign)
            Sign = 21 {
                name: sign, js: "sign",
                reference: |x| match x {
                    x if x > F::zero() => F::one(),
                    x if x < F::zero() => -F::one(),
                    x => x,
                },
                wgsl: "select(select(v, 1.0, v > 0.0), -1.0, v < 0.0)",
                cuda: "v > 0.0f ? 1.0f : v < 0.0f ? -1.0f : v"
            }
            /// `min(max(x, 0), 6)` (ONNX Clip to `[0, 6]`, MobileNet's activation)
            Relu6 = 22 {
                name: relu6, js: "relu6",
                reference: |x| {
                    let six = F::from(6.0).unwrap_or_else(F::zero);
                    match x {
                        x if x < F::zero() => F::zero(),
                        x if x > six => six,
                        x => x,
                    }
                },
                wgsl: "clamp(v, 0.0, 6.0)",
                // Not fminf/fmaxf: they return the number for a NaN operand.
                cuda: "v < 0.0f ? 0.0f : v > 6.0f ? 6.0f : v"
            }
        }
    };
    // Each row normalised into bracketed fields, for the consumer macro `$then`.
    (@rows [$($then:ident)::+] [$($extra:tt)*] $(
        $(#[doc = $doc:literal])*
        $v:ident = $code:literal {
            name: $name:ident, js: $js:literal, reference: |$x:ident| $reference:expr,
            $(cpu: |$cx:ident| $cpu:expr,)?
            wgsl: $wgsl:literal, cuda: $cuda:literal
        }
    )*) => {
        $($then)::+! { [$($extra)*] $(
            [$($doc)*] $v $code $name $js [$x $reference] [$($cx $cpu)?] $wgsl $cuda
        )* }
    };
}
pub(crate) use unary_ops;

/// The binary ops. Float operands compute in f32 (`reference`, `wgsl`, `cuda`); integer ones
/// (i32, u32, i64) on `VAL` with WGSL's rules, which `integer` states for every backend (see
/// [`super::BinaryOp::eval_int`]). The comparisons and logical ops (codes from 7) compute 1 or
/// 0 in the operands' dtype, which `binary` returns as bool.
macro_rules! binary_ops {
    ($($then:ident)::+ $(; $($extra:tt)*)?) => {
        $crate::ops::elementwise::table::binary_ops! { @rows [$($then)::+] [$($($extra)*)?]
            /// `a + b`
            Add = 0 {
                name: "add", reference: |a, b| a + b, integer: |a, b| a.wrapping_add(&b),
                wgsl: "a + b", wgsl_int: "a + b",
                cuda: "a + b", cuda_int: "(VAL)((UVAL)a + (UVAL)b)"
            }
            /// `a - b`
            Sub = 1 {
                name: "sub", reference: |a, b| a - b, integer: |a, b| a.wrapping_sub(&b),
                wgsl: "a - b", wgsl_int: "a - b",
                cuda: "a - b", cuda_int: "(VAL)((UVAL)a - (UVAL)b)"
            }
            /// `a * b`
            Mul = 2 {
                name: "mul", reference: |a, b| a * b, integer: |a, b| a.wrapping_mul(&b),
                wgsl: "a * b", wgsl_int: "a * b",
                cuda: "a * b", cuda_int: "(VAL)((UVAL)a * (UVAL)b)"
            }
            /// `a / b`
            Div = 3 {
                name: "div", reference: |a, b| a / b,
                integer: |a, b| a.checked_div(&b).unwrap_or(a),
                wgsl: "a / b", wgsl_int: "a / b", cuda: "a / b", cuda_int: "int_div(a, b)"
            }
            /// smaller of `a` and `b`; NaN if either is NaN
            Min = 4 {
                name: "minimum", reference: |a, b| nan_or(a, b, a.min(b)), integer: |a, b| a.min(b),
                wgsl: "min_(a, b)", wgsl_int: "min(a, b)",
                cuda: "(isnan(a) || isnan(b)) ? nan_f32() : fminf(a, b)", cuda_int: "a < b ? a : b"
            }
            /// larger of `a` and `b`; NaN if either is NaN
            Max = 5 {
                name: "maximum", reference: |a, b| nan_or(a, b, a.max(b)), integer: |a, b| a.max(b),
                wgsl: "max_(a, b)", wgsl_int: "max(a, b)",
                cuda: "(isnan(a) || isnan(b)) ? nan_f32() : fmaxf(a, b)", cuda_int: "a < b ? b : a"
            }
            /// `a` to the power `b` (negative `a` with an integer `b` is defined)
            Pow = 6 {
                name: "pow", reference: |a, b| a.powf(b), integer: |a, b| int_pow(a, b),
                wgsl: "pow_(a, b)", wgsl_int: "int_pow(a, b)", cuda: "powf(a, b)",
                cuda_int: "int_pow(a, b)"
            }
            /// `a == b`: 1 or 0 (a bool result; false where either is NaN)
            Equal = 7 {
                name: "equal", reference: |a, b| truth(a == b),
                integer: |a, b| int_truth(a == b),
                wgsl: "select(0.0, 1.0, a == b)", wgsl_int: "select(VAL(0), VAL(1), a == b)",
                cuda: "(a == b) ? 1.0f : 0.0f", cuda_int: "(a == b) ? (VAL)1 : (VAL)0"
            }
            /// `a < b`: 1 or 0 (a bool result; false where either is NaN)
            Less = 8 {
                name: "less", reference: |a, b| truth(a < b),
                integer: |a, b| int_truth(a < b),
                wgsl: "select(0.0, 1.0, a < b)", wgsl_int: "select(VAL(0), VAL(1), a < b)",
                cuda: "(a < b) ? 1.0f : 0.0f", cuda_int: "(a < b) ? (VAL)1 : (VAL)0"
            }
            /// `a <= b`: 1 or 0 (a bool result; false where either is NaN)
            LessEqual = 9 {
                name: "lessEqual", reference: |a, b| truth(a <= b),
                integer: |a, b| int_truth(a <= b),
                wgsl: "select(0.0, 1.0, a <= b)", wgsl_int: "select(VAL(0), VAL(1), a <= b)",
                cuda: "(a <= b) ? 1.0f : 0.0f", cuda_int: "(a <= b) ? (VAL)1 : (VAL)0"
            }
            /// `a > b`: 1 or 0 (a bool result; false where either is NaN)
            Greater = 10 {
                name: "greater", reference: |a, b| truth(a > b),
                integer: |a, b| int_truth(a > b),
                wgsl: "select(0.0, 1.0, a > b)", wgsl_int: "select(VAL(0), VAL(1), a > b)",
                cuda: "(a > b) ? 1.0f : 0.0f", cuda_int: "(a > b) ? (VAL)1 : (VAL)0"
            }
            /// `a >= b`: 1 or 0 (a bool result; false where either is NaN)
            GreaterEqual = 11 {
                name: "greaterEqual", reference: |a, b| truth(a >= b),
                integer: |a, b| int_truth(a >= b),
                wgsl: "select(0.0, 1.0, a >= b)", wgsl_int: "select(VAL(0), VAL(1), a >= b)",
                cuda: "(a >= b) ? 1.0f : 0.0f", cuda_int: "(a >= b) ? (VAL)1 : (VAL)0"
            }
            /// `a and b`, each true where non-zero (NaN too): 1 or 0 (a bool result)
            And = 12 {
                name: "logicalAnd", reference: |a, b| truth(a != F::zero() && b != F::zero()),
                integer: |a, b| int_truth(a != I::zero() && b != I::zero()),
                wgsl: "select(0.0, 1.0, !(a == 0.0) && !(b == 0.0))",
                wgsl_int: "select(VAL(0), VAL(1), a != VAL(0) && b != VAL(0))",
                cuda: "(a != 0.0f && b != 0.0f) ? 1.0f : 0.0f",
                cuda_int: "(a != (VAL)0 && b != (VAL)0) ? (VAL)1 : (VAL)0"
            }
            /// `a or b`, each true where non-zero (NaN too): 1 or 0 (a bool result)
            Or = 13 {
                name: "logicalOr", reference: |a, b| truth(a != F::zero() || b != F::zero()),
                integer: |a, b| int_truth(a != I::zero() || b != I::zero()),
                wgsl: "select(0.0, 1.0, !(a == 0.0) || !(b == 0.0))",
                wgsl_int: "select(VAL(0), VAL(1), a != VAL(0) || b != VAL(0))",
                cuda: "(a != 0.0f || b != 0.0f) ? 1.0f : 0.0f",
                cuda_int: "(a != (VAL)0 || b != (VAL)0) ? (VAL)1 : (VAL)0"
            }
            /// `a xor b`, each true where non-zero (NaN too): 1 or 0 (a bool result)
            Xor = 14 {
                name: "logicalXor", reference: |a, b| truth((a != F::zero()) != (b != F::zero())),
                integer: |a, b| int_truth((a != I::zero()) != (b != I::zero())),
                wgsl: "select(0.0, 1.0, (a == 0.0) != (b == 0.0))",
                wgsl_int: "select(VAL(0), VAL(1), (a == VAL(0)) != (b == VAL(0)))",
                cuda: "((a != 0.0f) != (b != 0.0f)) ? 1.0f : 0.0f",
                cuda_int: "((a != (VAL)0) != (b != (VAL)0)) ? (VAL)1 : (VAL)0"
            }
        }
    };
    (@rows [$($then:ident)::+] [$($extra:tt)*] $(
        $(#[doc = $doc:literal])*
        $v:ident = $code:literal {
            name: $name:literal, reference: |$a:ident, $b:ident| $reference:expr,
            integer: |$ia:ident, $ib:ident| $integer:expr,
            wgsl: $wgsl:literal, wgsl_int: $wgsl_int:literal,
            cuda: $cuda:literal, cuda_int: $cuda_int:literal
        }
    )*) => {
        $($then)::+! { [$($extra)*] $(
            [$($doc)*] $v $code $name [$a $b $reference] [$ia $ib $integer]
            $wgsl $wgsl_int $cuda $cuda_int
        )* }
    };
}
pub(crate) use binary_ops;

/// `UnaryOp`: the enum and what it knows of itself, from the rows of [`unary_ops`].
macro_rules! unary_enum {
    ([] $([$($doc:literal)*] $v:ident $code:literal $name:ident $js:literal
        [$x:ident $reference:expr] [$($cpu:tt)*] $wgsl:literal $cuda:literal)*) => {
        /// Unary math functions and activations (rows of `unary_ops!` in
        /// `src/ops/elementwise/table.rs`). The numeric code is what kernels switch on.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum UnaryOp {
            $($(#[doc = $doc])* $v = $code,)*
        }

        impl UnaryOp {
            /// Every unary op.
            pub const ALL: [UnaryOp; [$($code),*].len()] = [$(UnaryOp::$v),*];

            /// Lower-case name (the Rust and ONNX-style spelling: `gelu_tanh`).
            pub fn name(self) -> &'static str {
                match self {
                    $(UnaryOp::$v => stringify!($name),)*
                }
            }

            /// The name of the op's method in JavaScript (`geluTanh`).
            pub fn js_name(self) -> &'static str {
                match self {
                    $(UnaryOp::$v => $js,)*
                }
            }

            /// The function itself, in the precision of `F` (f32 on the CPU backend, f64 for
            /// the reference). NaN propagates; infinities follow IEEE.
            pub fn eval<F: Float + Erfc>(self, x: F) -> F {
                match self {
                    $(UnaryOp::$v => {
                        let $x = x;
                        $reference
                    })*
                }
            }
        }

        /// The unary ops as methods, recorded on the device's default queue.
        impl Tensor {
            $($(#[doc = $doc])* pub fn $name(&self) -> Result<Tensor> {
                self.unary(UnaryOp::$v)
            })*
        }

        /// The TypeScript union of the unary ops' names.
        #[cfg(target_arch = "wasm32")]
        // Read by wasm-bindgen's `typescript_custom_section` (src/wasm/ops.rs), a use rustc
        // does not see.
        #[allow(dead_code)]
        pub(crate) const UNARY_TS: &str = concat!(
            "/** A unary op's name (also an activation fused into an op). */\n",
            "export type UnaryName =", $(" | '", stringify!($name), "'",)* ";\n"
        );
    };
}
pub(crate) use unary_enum;

/// `BinaryOp`: the enum and what it knows of itself, from the rows of [`binary_ops`].
macro_rules! binary_enum {
    ([] $([$($doc:literal)*] $v:ident $code:literal $name:literal
        [$a:ident $b:ident $reference:expr] [$ia:ident $ib:ident $integer:expr]
        $wgsl:literal $wgsl_int:literal $cuda:literal $cuda_int:literal)*) => {
        /// Binary arithmetic (rows of `binary_ops!` in `src/ops/elementwise/table.rs`). The
        /// numeric code is what kernels switch on.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum BinaryOp {
            $($(#[doc = $doc])* $v = $code,)*
        }

        impl BinaryOp {
            /// Every binary op.
            pub const ALL: [BinaryOp; [$($code),*].len()] = [$(BinaryOp::$v),*];

            /// Lower-case name, also the op's method in JavaScript.
            pub fn name(self) -> &'static str {
                match self {
                    $(BinaryOp::$v => $name,)*
                }
            }

            /// The function itself in the precision of `F`.
            pub fn eval<F: Float>(self, a: F, b: F) -> F {
                match self {
                    $(BinaryOp::$v => {
                        let ($a, $b) = (a, b);
                        $reference
                    })*
                }
            }

            /// The function on integers (i32, u32 or i64), as every backend computes it, with
            /// WGSL's rules: add, sub and mul wrap; div truncates toward zero, with `x / 0 = x`
            /// and `MIN / -1 = MIN`; pow multiplies by repeated squaring (wrapping), and a
            /// negative exponent gives the quotient `1 / a^|b|` truncated toward zero: 1 for
            /// `a = 1`, ±1 for `a = -1`, else 0 (numpy refuses negative integer powers; a
            /// kernel cannot refuse one element).
            pub fn eval_int<I: Integer>(self, a: I, b: I) -> I {
                match self {
                    $(BinaryOp::$v => {
                        let ($ia, $ib) = (a, b);
                        $integer
                    })*
                }
            }
        }

        /// The TypeScript union of the binary ops' names.
        #[cfg(target_arch = "wasm32")]
        // Read by wasm-bindgen's `typescript_custom_section` (src/wasm/ops.rs), a use rustc
        // does not see.
        #[allow(dead_code)]
        pub(crate) const BINARY_TS: &str = concat!(
            "/** A binary op's name. */\n",
            "export type BinaryName =", $(" | '", $name, "'",)* ";\n"
        );
    };
}
pub(crate) use binary_enum;

/// The WGSL `unary_op(op, v)` of the rows of [`unary_ops`] (NaN returned as it is).
macro_rules! unary_wgsl {
    ([] $([$($doc:literal)*] $v:ident $code:literal $name:ident $js:literal
        [$($reference:tt)*] [$($cpu:tt)*] $wgsl:literal $cuda:literal)*) => {
        concat!(
            "fn unary_op(op: u32, v: f32) -> f32 {\nif (is_nan(v)) { return v; }\nswitch op {\n",
            $("case ", $code, "u: { return ", $wgsl, "; }\n",)*
            "default: { return v; }\n}\n}\n"
        )
    };
}
pub(crate) use unary_wgsl;

/// The CUDA `UNARY_CASES`, the `case` arms of `unary_op<op>(v)` in `activation.cuh`.
#[cfg(cuda_backend)]
macro_rules! unary_cuda {
    ([] $([$($doc:literal)*] $v:ident $code:literal $name:ident $js:literal
        [$($reference:tt)*] [$($cpu:tt)*] $wgsl:literal $cuda:literal)*) => {
        concat!("#define UNARY_CASES ", $("case ", $code, ": return ", $cuda, "; ",)* "\n")
    };
}
#[cfg(cuda_backend)]
pub(crate) use unary_cuda;

/// The WGSL `binary_op(op, a, b)` (f32) and `int_op(op, a, b)` (`VAL`) of [`binary_ops`].
macro_rules! binary_wgsl {
    ([] $([$($doc:literal)*] $v:ident $code:literal $name:literal [$($reference:tt)*]
        [$($integer:tt)*] $wgsl:literal $wgsl_int:literal $cuda:literal $cuda_int:literal)*) => {
        concat!(
            "fn binary_op(op: u32, a: f32, b: f32) -> f32 {\nswitch op {\n",
            $("case ", $code, "u: { return ", $wgsl, "; }\n",)*
            "default: { return a; }\n}\n}\n",
            "fn int_op(op: u32, a: VAL, b: VAL) -> VAL {\nswitch op {\n",
            $("case ", $code, "u: { return ", $wgsl_int, "; }\n",)*
            "default: { return a; }\n}\n}\n"
        )
    };
}
pub(crate) use binary_wgsl;

/// The CUDA `BINARY_CASES` and `INT_CASES`, the `case` arms of `binary_op<op>(a, b)` in
/// `common/binary.cuh` and `int_op<op>(a, b)` in `elementwise.cu`.
#[cfg(cuda_backend)]
macro_rules! binary_cuda {
    ([] $([$($doc:literal)*] $v:ident $code:literal $name:literal [$($reference:tt)*]
        [$($integer:tt)*] $wgsl:literal $wgsl_int:literal $cuda:literal $cuda_int:literal)*) => {
        concat!(
            "#define BINARY_CASES ", $("case ", $code, ": return ", $cuda, "; ",)* "\n",
            "#define INT_CASES ", $("case ", $code, ": return ", $cuda_int, "; ",)* "\n"
        )
    };
}
#[cfg(cuda_backend)]
pub(crate) use binary_cuda;
