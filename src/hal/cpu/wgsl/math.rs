//! WGSL's built-in math and relational functions on lane values.

use naga::{MathFunction as M, RelationalFunction};

use super::lanes::{f, map, map_each, zip, zip_each, Kind, Lanes};
use crate::{Error, Result};

/// `all`, `any`, `isNan`, `isInf` of each lane.
pub(super) fn relational(fun: RelationalFunction, a: &Lanes) -> Lanes {
    match fun {
        RelationalFunction::All => Lanes {
            width: 1,
            words: a
                .words
                .chunks(a.width)
                .map(|w| u32::from(w.iter().all(|&x| x != 0)))
                .collect(),
        },
        RelationalFunction::Any => Lanes {
            width: 1,
            words: a
                .words
                .chunks(a.width)
                .map(|w| u32::from(w.iter().any(|&x| x != 0)))
                .collect(),
        },
        RelationalFunction::IsNan => map(a, |w| u32::from(f(w).is_nan())),
        RelationalFunction::IsInf => map(a, |w| u32::from(f(w).is_infinite())),
    }
}

/// A float function of one argument.
fn unary_float(fun: M) -> Option<fn(f32) -> f32> {
    Some(match fun {
        M::Cos => f32::cos,
        M::Cosh => f32::cosh,
        M::Sin => f32::sin,
        M::Sinh => f32::sinh,
        M::Tan => f32::tan,
        M::Tanh => f32::tanh,
        M::Acos => f32::acos,
        M::Asin => f32::asin,
        M::Atan => f32::atan,
        M::Asinh => f32::asinh,
        M::Acosh => f32::acosh,
        M::Atanh => f32::atanh,
        M::Radians => f32::to_radians,
        M::Degrees => f32::to_degrees,
        M::Ceil => f32::ceil,
        M::Floor => f32::floor,
        M::Round => f32::round_ties_even,
        M::Fract => |x| x - x.floor(),
        M::Trunc => f32::trunc,
        M::Exp => f32::exp,
        M::Exp2 => f32::exp2,
        M::Log => f32::ln,
        M::Log2 => f32::log2,
        M::Sqrt => f32::sqrt,
        M::InverseSqrt => |x| 1.0 / x.sqrt(),
        M::Saturate => |x| x.clamp(0.0, 1.0),
        M::Sign => |x| {
            if x > 0.0 {
                1.0
            } else if x < 0.0 {
                -1.0
            } else {
                0.0
            }
        },
        _ => return None,
    })
}

/// A math function's argument after the first, present by validation.
pub(super) fn need(x: Option<&Lanes>) -> Result<&Lanes> {
    x.ok_or_else(|| Error::Internal("a math function lost an argument".into()))
}

/// Math function `fun` on arguments of `kind`: `a`, then the others in order.
pub(super) fn math(fun: M, kind: Kind, a: &Lanes, [b, c, d]: [Option<&Lanes>; 3]) -> Result<Lanes> {
    if let (Some(g), Kind::F32) = (unary_float(fun), kind) {
        return Ok(map(a, |w| g(f(w)).to_bits()));
    }
    if let Some(out) = super::geometry::geometry(fun, a, [b, c])? {
        return Ok(out);
    }
    if let Some(out) = super::pack::pack(fun, a) {
        return Ok(out);
    }
    if let Some(out) = bits(fun, kind, a, [b, c, d])? {
        return Ok(out);
    }
    Ok(match (fun, kind) {
        (M::Abs, Kind::F32) => map(a, |w| f(w).abs().to_bits()),
        (M::Abs, Kind::I32) => map(a, |w| (w as i32).wrapping_abs() as u32),
        (M::Abs, _) => a.clone(),
        (M::Sign, Kind::I32) => map(a, |w| (w as i32).signum() as u32),
        (M::Min, _) => zip(a, need(b)?, |x, y| pick(kind, x, y, true)),
        (M::Max, _) => zip(a, need(b)?, |x, y| pick(kind, x, y, false)),
        (M::Clamp, _) => zip(
            &zip(a, need(b)?, |x, lo| pick(kind, x, lo, false)),
            need(c)?,
            |x, hi| pick(kind, x, hi, true),
        ),
        (M::Pow, _) => zip(a, need(b)?, |x, y| f(x).powf(f(y)).to_bits()),
        (M::Atan2, _) => zip(a, need(b)?, |y, x| f(y).atan2(f(x)).to_bits()),
        (M::Step, _) => zip(a, need(b)?, |edge, x| {
            if f(x) >= f(edge) {
                1f32.to_bits()
            } else {
                0
            }
        }),
        (M::Fma, _) => zip(
            &zip(a, need(b)?, |x, y| (f(x) * f(y)).to_bits()),
            need(c)?,
            |p, z| (f(p) + f(z)).to_bits(),
        ),
        (M::Mix, _) => {
            let (b, c) = (need(b)?, need(c)?);
            let diff = zip(b, a, |y, x| (f(y) - f(x)).to_bits());
            zip(
                a,
                &zip(&diff, c, |d, t| (f(d) * f(t)).to_bits()),
                |x, dt| (f(x) + f(dt)).to_bits(),
            )
        }
        (M::Dot, _) => dot(kind, a, need(b)?),
        (M::Length, _) => map(&dot(kind, a, a), |w| f(w).sqrt().to_bits()),
        (M::Ldexp, _) => zip_each(a, need(b)?, &|x, e| {
            libm::ldexpf(f(x), (e as i32).clamp(-300, 300)).to_bits()
        }),
        (M::Pack2x16float, _) => pack_halves(a),
        (M::QuantizeToF16, _) => map_each(a, &|w| half::f16::from_f32(f(w)).to_f32().to_bits()),
        (M::Unpack2x16float, _) => unpack_halves(a),
        _ => {
            return Err(Error::Internal(format!(
                "the cpu WGSL executor has no {fun:?} (the support check should have refused it)"
            )))
        }
    })
}

/// The bit functions (`countOneBits` to `insertBits`) of `a`, then `b`, `c`, `d`; `None`
/// for any other function.
fn bits(fun: M, kind: Kind, a: &Lanes, [b, c, d]: [Option<&Lanes>; 3]) -> Result<Option<Lanes>> {
    Ok(Some(match (fun, kind) {
        (M::CountOneBits, _) => map(a, u32::count_ones),
        (M::ReverseBits, _) => map(a, u32::reverse_bits),
        (M::CountLeadingZeros, _) => map(a, u32::leading_zeros),
        (M::CountTrailingZeros, _) => map(a, u32::trailing_zeros),
        (M::FirstTrailingBit, _) => {
            map_each(a, &|x| if x == 0 { u32::MAX } else { x.trailing_zeros() })
        }
        (M::FirstLeadingBit, Kind::I32) => map_each(a, &|x| {
            first_leading_bit(if (x as i32) < 0 { !x } else { x })
        }),
        (M::FirstLeadingBit, _) => map_each(a, &first_leading_bit),
        (M::ExtractBits, _) => {
            let field = zip_each(need(b)?, need(c)?, &bit_field);
            zip_each(a, &field, &|x, field| {
                extract_bits(x, field, kind == Kind::I32)
            })
        }
        (M::InsertBits, _) => {
            let field = zip_each(need(c)?, need(d)?, &bit_field);
            let kept = zip_each(a, &field, &|x, field| x & !field_mask(field));
            let put = zip_each(need(b)?, &field, &|y, field| {
                (y << (field & 0xff).min(31)) & field_mask(field)
            });
            zip_each(&kept, &put, &|x, y| x | y)
        }
        _ => return Ok(None),
    }))
}

/// `firstLeadingBit` of an unsigned word (of a signed one, its sign bits flipped): the index
/// of the highest set bit, or all ones for 0.
fn first_leading_bit(x: u32) -> u32 {
    if x == 0 {
        u32::MAX
    } else {
        31 - x.leading_zeros()
    }
}

/// `extractBits`/`insertBits`' offset and count clamped as WGSL clamps them (offset at most
/// 32, count at most 32 - offset), in one word: the offset in the low byte, the count above.
fn bit_field(offset: u32, count: u32) -> u32 {
    let o = offset.min(32);
    o | (count.min(32 - o) << 8)
}

/// The bits a [`bit_field`] covers, in place.
fn field_mask(field: u32) -> u32 {
    let (o, c) = (field & 0xff, field >> 8);
    if c == 0 {
        0
    } else {
        (u32::MAX >> (32 - c)) << o
    }
}

/// `extractBits(x, offset, count)`: the field at the low end, sign-extended from its top bit
/// for signed `x`; 0 for an empty field.
fn extract_bits(x: u32, field: u32, signed: bool) -> u32 {
    let (o, c) = (field & 0xff, field >> 8);
    if c == 0 {
        return 0;
    }
    let top = x << (32 - o - c); // the field's top bit at bit 31
    if signed {
        ((top as i32) >> (32 - c)) as u32
    } else {
        top >> (32 - c)
    }
}

/// The smaller (`min`) or larger of two words of `kind`; a float NaN gives the other operand.
fn pick(kind: Kind, x: u32, y: u32, min: bool) -> u32 {
    let less = match kind {
        Kind::F32 => {
            return if min {
                f(x).min(f(y)).to_bits()
            } else {
                f(x).max(f(y)).to_bits()
            }
        }
        Kind::I32 => (x as i32) < (y as i32),
        _ => x < y,
    };
    if less == min {
        x
    } else {
        y
    }
}

fn dot(kind: Kind, a: &Lanes, b: &Lanes) -> Lanes {
    let words = a
        .words
        .chunks(a.width)
        .zip(b.words.chunks(b.width))
        .map(|(x, y)| match kind {
            Kind::F32 => x
                .iter()
                .zip(y)
                .map(|(&p, &q)| f(p) * f(q))
                .sum::<f32>()
                .to_bits(),
            _ => x
                .iter()
                .zip(y)
                .fold(0u32, |acc, (&p, &q)| acc.wrapping_add(p.wrapping_mul(q))),
        })
        .collect();
    Lanes { width: 1, words }
}

/// `pack2x16float`: two f32 rounded to f16 bits, the first in the low half.
fn pack_halves(a: &Lanes) -> Lanes {
    let words = a
        .words
        .chunks(2)
        .map(|v| {
            u32::from(half::f16::from_f32(f(v[0])).to_bits())
                | (u32::from(half::f16::from_f32(f(v[1])).to_bits()) << 16)
        })
        .collect();
    Lanes { width: 1, words }
}

/// `unpack2x16float`: the two f16 halves of a word as f32, low half first.
fn unpack_halves(a: &Lanes) -> Lanes {
    let words = a
        .words
        .iter()
        .flat_map(|&w| {
            [
                half::f16::from_bits(w as u16).to_f32().to_bits(),
                half::f16::from_bits((w >> 16) as u16).to_f32().to_bits(),
            ]
        })
        .collect();
    Lanes { width: 2, words }
}

/// `modf` (`frexp: false`) or `frexp` of each lane's scalar or vector `a`: a struct of
/// `width` words, the fraction at word `at[0]` and the whole part (or exponent) at `at[1]`.
pub(super) fn split(a: &Lanes, frexp: bool, at: [usize; 2], width: usize) -> Lanes {
    let mut out = Lanes::zeros(a.count(), width);
    for l in 0..a.count() {
        let (x, o) = (a.lane(l), out.lane_mut(l));
        for (c, &w) in x.iter().enumerate() {
            let (fract, other) = if frexp {
                let (m, e) = libm::frexpf(f(w));
                (m.to_bits(), e as u32)
            } else {
                let whole = f(w).trunc();
                ((f(w) - whole).to_bits(), whole.to_bits())
            };
            o[at[0] + c] = fract;
            o[at[1] + c] = other;
        }
    }
    out
}
