//! WGSL's packing built-ins: a vector of normalized floats or of small integers into one
//! word, and one word back into a vector, component `i` at bits `i * size`.

use naga::MathFunction as M;

use super::lanes::{collect, f, Lanes};

/// The float of bits `w` clamped into `[low, 1]`, a NaN to `low` (as WGSL's `max` and `min`
/// may take it, and as CUDA's `fmaxf` does).
fn unit(w: u32, low: f32) -> f32 {
    if f(w).is_nan() {
        low
    } else {
        f(w).clamp(low, 1.0)
    }
}

/// `fun` of `a`, if it is a packing or unpacking function (but the f16 ones of math.rs).
pub(super) fn pack(fun: M, a: &Lanes) -> Option<Lanes> {
    // Each component to `bits` bits: WGSL's ⌊0.5 + scale × clamped value⌋ for the normalized
    // floats (a NaN clamps to the low end), the low bits of the integers.
    let (bits, to): (u32, fn(u32) -> u32) = match fun {
        M::Pack4x8snorm => (8, |w| (0.5 + 127.0 * unit(w, -1.0)).floor() as i32 as u32),
        M::Pack4x8unorm => (8, |w| (0.5 + 255.0 * unit(w, 0.0)).floor() as u32),
        M::Pack2x16snorm => (16, |w| {
            (0.5 + 32767.0 * unit(w, -1.0)).floor() as i32 as u32
        }),
        M::Pack2x16unorm => (16, |w| (0.5 + 65535.0 * unit(w, 0.0)).floor() as u32),
        M::Pack4xI8 | M::Pack4xU8 => (8, |w| w),
        M::Pack4xI8Clamp => (8, |w| (w as i32).clamp(-128, 127) as u32),
        M::Pack4xU8Clamp => (8, |w| w.min(255)),
        _ => return unpack(fun, a),
    };
    let mask = u32::MAX >> (32 - bits);
    let words = a.words.chunks(a.width.max(1)).map(|v| {
        v.iter()
            .zip(0..)
            .fold(0, |word, (&w, i)| word | ((to(w) & mask) << (i * bits)))
    });
    Some(Lanes {
        width: 1,
        words: collect(words),
    })
}

/// `fun` of `a`, if it is an unpacking function.
fn unpack(fun: M, a: &Lanes) -> Option<Lanes> {
    let (bits, from): (u32, fn(u32) -> u32) = match fun {
        M::Unpack4x8snorm => (8, |v| {
            (f32::from(v as u8 as i8) / 127.0).max(-1.0).to_bits()
        }),
        M::Unpack4x8unorm => (8, |v| (v as f32 / 255.0).to_bits()),
        M::Unpack2x16snorm => (16, |v| {
            (f32::from(v as u16 as i16) / 32767.0).max(-1.0).to_bits()
        }),
        M::Unpack2x16unorm => (16, |v| (v as f32 / 65535.0).to_bits()),
        M::Unpack4xI8 => (8, |v| i32::from(v as u8 as i8) as u32),
        M::Unpack4xU8 => (8, |v| v),
        _ => return None,
    };
    let (n, mask) = (32 / bits, u32::MAX >> (32 - bits));
    let words = a
        .words
        .iter()
        .flat_map(|&w| (0..n).map(move |i| from((w >> (i * bits)) & mask)));
    Some(Lanes {
        width: n as usize,
        words: collect(words),
    })
}
