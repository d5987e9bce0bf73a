//! Unary and binary ops (with an optional fused activation) on the CPU, chunks in parallel.

use crate::base::layout::{Access, Layout};
use crate::base::par;

use super::{Binary, BinaryOp, Unary, UnaryOp};
use crate::hal::cpu::{read_guard, write_guard};
use crate::ops::common::cpu::{
    integer_bits, offsets_from, out_words, put_integer, run_from, CHUNK,
};
use crate::ops::common::math;
use crate::{DType, Error, Result};

/// Error unless the operands are stored as f32 (the CPU has no native f16 path).
fn check_f32(dtype: DType) -> Result<()> {
    match dtype {
        DType::F32 => Ok(()),
        other => Err(Error::Internal(format!(
            "the cpu kernels compute on f32 storage, not {other}"
        ))),
    }
}

/// Bind `$f` to the scalar function of unary op `$op` (a [`math::Twin`]: the plain and the
/// FMA build) with the op fixed per match arm, so the loop in `$body` inlines its math instead
/// of dispatching on the op per element. One arm per row of the op table: the row's `cpu`
/// expression where it has one (the ops built on the vectorisable [`math::exp`]), else its
/// `reference` in f32.
macro_rules! with_unary {
    ($op:expr, |$f:ident| $body:expr) => {
        crate::ops::elementwise::unary_ops!(crate::ops::elementwise::unary_arms; $op, $f, $body)
    };
}
pub(crate) use with_unary;

/// The arms of [`with_unary`], from the rows of the op table.
macro_rules! unary_arms {
    ([$op:expr, $f:ident, $body:expr] $([$($doc:literal)*] $v:ident $code:literal $name:ident
        $js:literal [$($reference:tt)*] [$($x:ident $cpu:expr)?] $wgsl:literal $cuda:literal)*) => {
        match $op {
            $(UnaryOp::$v => {
                let $f = crate::ops::elementwise::unary_fn!($v $(, |$x| $cpu)?);
                $body
            })*
        }
    };
}
pub(crate) use unary_arms;

/// The scalar function of one row: its `cpu` expression, else its reference in f32.
macro_rules! unary_fn {
    ($v:ident) => {
        crate::ops::common::math::twin!(_F => |x: f32| UnaryOp::$v.eval(x))
    };
    ($v:ident, |$x:ident| $cpu:expr) => {
        crate::ops::common::math::twin!(F => |$x: f32| $cpu)
    };
}
pub(crate) use unary_fn;

/// The binary twin of `with_unary!`.
macro_rules! with_binary {
    ($op:expr, |$f:ident| $body:expr) => {
        crate::ops::elementwise::binary_ops!(crate::ops::elementwise::binary_arms; $op, $f, $body)
    };
}
pub(crate) use with_binary;

/// The arms of [`with_binary`], from the rows of the op table.
macro_rules! binary_arms {
    ([$op:expr, $f:ident, $body:expr] $([$($doc:literal)*] $v:ident $code:literal $name:literal
        [$($reference:tt)*] [$($integer:tt)*] $wgsl:literal $wgsl_int:literal $cuda:literal
        $cuda_int:literal)*) => {
        match $op {
            $(BinaryOp::$v => {
                let $f = |x: f32, y: f32| BinaryOp::$v.eval(x, y);
                $body
            })*
        }
    };
}
pub(crate) use binary_arms;

pub(super) fn unary(call: &Unary<'_>) -> Result<()> {
    check_f32(call.dtype)?;
    let (op, x, out) = (call.op, call.x, call.out);
    let xs = read_guard(x.buf)?;
    let mut os = write_guard(out.buf)?;
    let xf: &[f32] = bytemuck::cast_slice(&xs);
    let of: &mut [f32] = bytemuck::cast_slice_mut(out_words(&mut os, &out));
    with_unary!(op, |f| par::chunks_mut(of, CHUNK, |c, chunk| {
        let start = c * CHUNK;
        if x.layout.is_contiguous() {
            math::map(&xf[x.layout.offset + start..][..chunk.len()], chunk, f);
        } else {
            for (o, xi) in chunk.iter_mut().zip(offsets_from(x.layout, start)) {
                *o = (f.plain)(xf[xi]);
            }
        }
    }));
    Ok(())
}

pub(super) fn binary(call: &Binary<'_>) -> Result<()> {
    match call.dtype {
        d if d.is_integer() => return integer_binary(call),
        _ => check_f32(call.dtype)?,
    }
    let (op, act, a, b, out) = (call.op, call.act, call.a, call.b, call.out);
    let (ag, bg) = (read_guard(a.buf)?, read_guard(b.buf)?);
    let mut os = write_guard(out.buf)?;
    let (af, bf): (&[f32], &[f32]) = (bytemuck::cast_slice(&ag), bytemuck::cast_slice(&bg));
    let of: &mut [f32] = bytemuck::cast_slice_mut(out_words(&mut os, &out));
    // A fused activation runs over each chunk while it is in cache, after the op: one loop
    // per activation and one per op, not one per pair of them.
    let activate = |chunk: &mut [f32]| {
        if let Some(act) = act {
            with_unary!(act, |f| math::map_in_place(chunk, f));
        }
    };
    let mut run = |f: &(dyn Fn(&mut [f32], usize) + Sync)| {
        par::chunks_mut(of, CHUNK, |c, chunk| {
            f(chunk, c * CHUNK);
            activate(chunk);
        })
    };
    let runs = a.layout.access() != Access::Strided && b.layout.access() != Access::Strided;
    // A one-element operand (a scalar broadcast) walks as runs of the chunk's length, copies
    // of its value, rather than as runs of one element each.
    let (a_splat, b_splat) = (splat(a.layout, af), splat(b.layout, bf));
    // The op is fixed per instantiation of `body`, so its loop inlines it.
    macro_rules! body {
        ($g:expr) => {{
            let g = $g;
            run(&|chunk: &mut [f32], start: usize| {
                if runs {
                    // Contiguous or broadcast-row operands: walk contiguous runs of both.
                    let (mut i, mut rest) = (start, chunk);
                    while !rest.is_empty() {
                        let (Some(sa), Some(sb)) = (
                            run_of(af, a.layout, &a_splat, i, rest.len()),
                            run_of(bf, b.layout, &b_splat, i, rest.len()),
                        ) else {
                            break;
                        };
                        let n = sa.len().min(sb.len());
                        let (now, later) = rest.split_at_mut(n);
                        for ((o, &x), &y) in now.iter_mut().zip(sa).zip(sb) {
                            *o = g(x, y);
                        }
                        (i, rest) = (i + n, later);
                    }
                } else {
                    for ((o, ai), bi) in chunk
                        .iter_mut()
                        .zip(offsets_from(a.layout, start))
                        .zip(offsets_from(b.layout, start))
                    {
                        *o = g(af[ai], bf[bi]);
                    }
                }
            })
        }};
    }
    with_binary!(op, |g| body!(g));
    Ok(())
}

/// A chunk's worth of copies of the one element `l` views in `data`, if it views one
/// element repeated (period 1).
fn splat(l: &Layout, data: &[f32]) -> Option<Vec<f32>> {
    let one = l.access() == Access::Repeated { period: 1 };
    one.then(|| data.get(l.offset).map(|&v| vec![v; CHUNK]))
        .flatten()
}

/// [`run_from`], or the copies in `splat` where there are some.
fn run_of<'a>(
    data: &'a [f32],
    l: &Layout,
    splat: &'a Option<Vec<f32>>,
    i: usize,
    max: usize,
) -> Option<&'a [f32]> {
    match splat {
        Some(s) => s.get(..max),
        None => run_from(data, l, i, max),
    }
}

/// `op(a, b)` on integers ([`BinaryOp::eval_int`]), chunks of the output in parallel. One
/// loop for every op and integer dtype (matched per element): integer arithmetic is rare
/// enough that the package's wasm keeps the size of one loop. i32 and u32 values compute
/// widened to i64 (sign- and zero-extended): the low 32 bits of each result are the 32-bit
/// op's (wrapping products and sums, truncated quotients, `MIN / -1`, powers mod 2^32).
fn integer_binary(call: &Binary<'_>) -> Result<()> {
    let (op, a, b, out) = (call.op, call.a, call.b, call.out);
    let (wide, signed) = (call.dtype == DType::I64, call.dtype == DType::I32);
    let per = if wide { 2 } else { 1 };
    let (ag, bg) = (read_guard(a.buf)?, read_guard(b.buf)?);
    let mut os = write_guard(out.buf)?;
    let load = |words: &[u32], i: usize| -> i64 {
        let bits = integer_bits(words, i, wide);
        if signed {
            i64::from(bits as u32 as i32)
        } else {
            bits as i64
        }
    };
    let words = &mut os[out.layout.offset * per..][..out.layout.numel() * per];
    par::chunks_mut(words, CHUNK * per, |c, chunk| {
        let start = c * CHUNK;
        for ((o, x), y) in chunk
            .chunks_mut(per)
            .zip(offsets_from(a.layout, start))
            .zip(offsets_from(b.layout, start))
        {
            put_integer(o, op.eval_int(load(&ag, x), load(&bg, y)) as u64);
        }
    });
    Ok(())
}
