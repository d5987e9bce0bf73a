//! Values of one expression for every invocation of a workgroup, and the WGSL arithmetic on
//! them, component by component, on 32-bit words (f32 bits, i32, u32, bool as 0 or 1).

use std::cell::RefCell;

use naga::{BinaryOperator as B, ScalarKind, TypeInner, UnaryOperator};

thread_local! {
    /// The word vectors of dropped values and pointers, for the next ones: no trip through
    /// the allocator, and memory still in the cache.
    static SPARE: RefCell<Vec<Vec<u32>>> = const { RefCell::new(Vec::new()) };
}

/// The most spare vectors a thread keeps.
const SPARE_MAX: usize = 64;
/// The largest spare vector kept, in words (a scalar or vec4 over a batch of 2,048 lanes):
/// a thread holds at most 4 MiB of spares between launches.
const SPARE_WORDS: usize = 1 << 14;

/// An empty vector: a spare one where there is one.
#[inline(never)]
pub(super) fn empty() -> Vec<u32> {
    let mut words = SPARE.with_borrow_mut(Vec::pop).unwrap_or_default();
    words.clear();
    words
}

/// `iter`'s words, in a spare vector where there is one.
#[inline(always)]
pub(super) fn collect(iter: impl Iterator<Item = u32>) -> Vec<u32> {
    let mut words = empty();
    words.extend(iter);
    words
}

/// A copy of `words`, in a spare vector where there is one.
pub(super) fn copied(words: &[u32]) -> Vec<u32> {
    let mut out = empty();
    out.extend_from_slice(words);
    out
}

/// Whether every one of `flags` is set (no early exit: a loop the compiler vectorises).
pub(super) fn all(flags: impl Iterator<Item = bool>) -> bool {
    flags.fold(true, |all, f| all & f)
}

/// `n` zero words, in a spare vector where there is one.
pub(super) fn zeroed(n: usize) -> Vec<u32> {
    let mut words = empty();
    words.resize(n, 0);
    words
}

/// Keep `words` for [`collect`] and [`zeroed`].
#[inline(never)]
pub(super) fn spare(words: Vec<u32>) {
    if words.capacity() > 0 && words.capacity() <= SPARE_WORDS {
        // A thread that is exiting has no spares left to keep them in: the words are freed.
        let _ = SPARE.try_with(|s| {
            let mut s = s.borrow_mut();
            if s.len() < SPARE_MAX {
                s.push(words);
            }
        });
    }
}

/// One value per invocation: `width` words per lane (a scalar 1, a vector its size, a struct
/// or array its memory layout in words), lane after lane.
#[derive(Clone, Debug)]
pub(super) struct Lanes {
    pub width: usize,
    pub words: Vec<u32>,
}

impl Drop for Lanes {
    fn drop(&mut self) {
        spare(std::mem::take(&mut self.words));
    }
}

impl Lanes {
    /// `width` zero words in each of `lanes` lanes.
    pub fn zeros(lanes: usize, width: usize) -> Lanes {
        Lanes {
            width,
            words: zeroed(lanes * width),
        }
    }

    /// The same `words` in each of `lanes` lanes.
    pub fn splat(lanes: usize, words: &[u32]) -> Lanes {
        Lanes {
            width: words.len(),
            words: words.repeat(lanes),
        }
    }

    /// The words of lane `l`.
    pub fn lane(&self, l: usize) -> &[u32] {
        &self.words[l * self.width..(l + 1) * self.width]
    }

    /// The words of lane `l`, to write.
    pub fn lane_mut(&mut self, l: usize) -> &mut [u32] {
        &mut self.words[l * self.width..(l + 1) * self.width]
    }

    /// Number of lanes.
    pub fn count(&self) -> usize {
        self.words.len() / self.width.max(1)
    }

    /// Word `c` of each lane as a whole number (an index, a selector).
    pub fn column(&self, c: usize) -> impl Iterator<Item = u32> + '_ {
        self.words
            .chunks_exact(self.width.max(1))
            .map(move |w| w[c])
    }
}

/// How the words of a numeric value are read.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Kind {
    F32,
    I32,
    U32,
    Bool,
}

impl Kind {
    /// The kind of a scalar, vector or matrix type (an f16 one computes as f32, half.rs);
    /// `None` for other types (64-bit types are refused before a kernel runs).
    pub fn of(inner: &TypeInner) -> Option<Kind> {
        let scalar = match *inner {
            TypeInner::Scalar(s) | TypeInner::Vector { scalar: s, .. } | TypeInner::Atomic(s) => s,
            TypeInner::Matrix { scalar: s, .. } => s,
            _ => return None,
        };
        match (scalar.kind, scalar.width) {
            (ScalarKind::Float, 4 | 2) => Some(Kind::F32),
            (ScalarKind::Sint, 4) => Some(Kind::I32),
            (ScalarKind::Uint, 4) => Some(Kind::U32),
            (ScalarKind::Bool, _) => Some(Kind::Bool),
            _ => None,
        }
    }
}

/// `f` on each component, a scalar operand repeated for a vector one.
#[inline(always)]
pub(super) fn zip(a: &Lanes, b: &Lanes, f: impl Fn(u32, u32) -> u32) -> Lanes {
    if a.width == b.width {
        return Lanes {
            width: a.width,
            words: collect(a.words.iter().zip(&b.words).map(|(&x, &y)| f(x, y))),
        };
    }
    zip_broadcast(a, b, f)
}

/// [`zip`] of operands of different widths (a scalar and a vector).
fn zip_broadcast(a: &Lanes, b: &Lanes, f: impl Fn(u32, u32) -> u32) -> Lanes {
    let width = a.width.max(b.width);
    let lanes = a.count().max(b.count());
    let mut out = Lanes::zeros(lanes, width);
    for l in 0..lanes {
        let (x, y, o) = (a.lane(l), b.lane(l), out.lane_mut(l));
        for (c, o) in o.iter_mut().enumerate() {
            *o = f(x[c.min(x.len() - 1)], y[c.min(y.len() - 1)]);
        }
    }
    out
}

/// [`zip`] through a function it calls per component: one copy of the loop for every caller
/// (the rarer built-ins, kept small in the wasm).
#[inline(never)]
pub(super) fn zip_each(a: &Lanes, b: &Lanes, f: &dyn Fn(u32, u32) -> u32) -> Lanes {
    zip(a, b, f)
}

/// [`map`] through a function it calls per component, as [`zip_each`].
#[inline(never)]
pub(super) fn map_each(a: &Lanes, f: &dyn Fn(u32) -> u32) -> Lanes {
    map(a, f)
}

/// `f` on each component.
pub(super) fn map(a: &Lanes, f: impl Fn(u32) -> u32) -> Lanes {
    Lanes {
        width: a.width,
        words: collect(a.words.iter().map(|&w| f(w))),
    }
}

/// The f32 whose bits `w` holds.
pub(super) fn f(w: u32) -> f32 {
    f32::from_bits(w)
}

fn b(v: bool) -> u32 {
    u32::from(v)
}

/// A unary operator of `kind`.
pub(super) fn unary(op: UnaryOperator, kind: Kind, a: &Lanes) -> Lanes {
    match (op, kind) {
        (UnaryOperator::Negate, Kind::F32) => map(a, |w| (-f(w)).to_bits()),
        (UnaryOperator::Negate, _) => map(a, |w| (w as i32).wrapping_neg() as u32),
        (UnaryOperator::LogicalNot, _) => map(a, |w| b(w == 0)),
        (UnaryOperator::BitwiseNot, _) => map(a, |w| !w),
    }
}

/// A binary operator on operands of `kind` with WGSL's rules: wrapping integer arithmetic, an
/// integer divided by zero is its dividend and its remainder 0, shifts take the amount modulo 32.
/// The common float operators get loops of their own (no dispatch per element).
pub(super) fn binary(op: B, kind: Kind, l: &Lanes, r: &Lanes) -> Lanes {
    match (kind, op) {
        (Kind::F32, B::Add) => zip(l, r, |x, y| (f(x) + f(y)).to_bits()),
        (Kind::F32, B::Subtract) => zip(l, r, |x, y| (f(x) - f(y)).to_bits()),
        (Kind::F32, B::Multiply) => zip(l, r, |x, y| (f(x) * f(y)).to_bits()),
        (Kind::F32, _) => zip(l, r, |x, y| float_op(op, f(x), f(y))),
        (Kind::I32, _) => zip(l, r, |x, y| int_op(op, x as i32, y)),
        (Kind::U32 | Kind::Bool, B::Add) => zip(l, r, u32::wrapping_add),
        (Kind::U32 | Kind::Bool, B::Multiply) => zip(l, r, u32::wrapping_mul),
        (Kind::U32 | Kind::Bool, B::Less) => zip(l, r, |x, y| b(x < y)),
        (Kind::U32 | Kind::Bool, _) => zip(l, r, |x, y| uint_op(op, x, y)),
    }
}

fn float_op(op: B, x: f32, y: f32) -> u32 {
    match op {
        B::Add => (x + y).to_bits(),
        B::Subtract => (x - y).to_bits(),
        B::Multiply => (x * y).to_bits(),
        B::Divide => (x / y).to_bits(),
        B::Modulo => (x - y * (x / y).trunc()).to_bits(),
        B::Equal => b(x == y),
        B::NotEqual => b(x != y),
        B::Less => b(x < y),
        B::LessEqual => b(x <= y),
        B::Greater => b(x > y),
        B::GreaterEqual => b(x >= y),
        _ => 0, // bitwise and logical operators take no floats (the validator says so)
    }
}

fn int_op(op: B, x: i32, y_bits: u32) -> u32 {
    let y = y_bits as i32;
    let r = match op {
        B::Add => x.wrapping_add(y),
        B::Subtract => x.wrapping_sub(y),
        B::Multiply => x.wrapping_mul(y),
        B::Divide if y == 0 || (x == i32::MIN && y == -1) => x,
        B::Divide => x / y,
        B::Modulo if y == 0 || (x == i32::MIN && y == -1) => 0,
        B::Modulo => x % y,
        B::ShiftRight => x >> (y_bits & 31),
        B::Less => return b(x < y),
        B::LessEqual => return b(x <= y),
        B::Greater => return b(x > y),
        B::GreaterEqual => return b(x >= y),
        _ => return uint_op(op, x as u32, y_bits),
    };
    r as u32
}

fn uint_op(op: B, x: u32, y: u32) -> u32 {
    match op {
        B::Add => x.wrapping_add(y),
        B::Subtract => x.wrapping_sub(y),
        B::Multiply => x.wrapping_mul(y),
        B::Divide if y == 0 => x,
        B::Divide => x / y,
        B::Modulo if y == 0 => 0,
        B::Modulo => x % y,
        B::Equal => b(x == y),
        B::NotEqual => b(x != y),
        B::Less => b(x < y),
        B::LessEqual => b(x <= y),
        B::Greater => b(x > y),
        B::GreaterEqual => b(x >= y),
        B::And | B::LogicalAnd => x & y,
        B::ExclusiveOr => x ^ y,
        B::InclusiveOr | B::LogicalOr => x | y,
        B::ShiftLeft => x << (y & 31),
        B::ShiftRight => x >> (y & 31),
    }
}

/// A value of kind `from` converted to `to` (WGSL's conversions: between i32 and u32 the bits
/// stay; float to integer clamps as WGSL says and NaN gives 0).
pub(super) fn convert(a: &Lanes, from: Kind, to: Kind) -> Lanes {
    map(a, |w| {
        if matches!((from, to), (Kind::I32 | Kind::U32, Kind::I32 | Kind::U32)) {
            return w;
        }
        let v = match from {
            Kind::F32 => f(w) as f64,
            Kind::I32 => f64::from(w as i32),
            Kind::U32 => f64::from(w),
            Kind::Bool => f64::from(w != 0),
        };
        match to {
            Kind::F32 if from == Kind::I32 => (w as i32 as f32).to_bits(),
            Kind::F32 if from == Kind::U32 => (w as f32).to_bits(),
            Kind::F32 => (v as f32).to_bits(),
            // WGSL clamps to the largest floats within range (2^31 - 128, 2^32 - 256).
            Kind::I32 => (v.clamp(-2_147_483_648.0, 2_147_483_520.0) as i32) as u32,
            Kind::U32 => v.clamp(0.0, 4_294_967_040.0) as u32,
            Kind::Bool => b(v != 0.0),
        }
    })
}
