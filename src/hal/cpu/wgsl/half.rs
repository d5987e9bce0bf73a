//! f16 (`enable f16;`): in the lanes an f16 is the f32 of the same value, one word per
//! component, rounded to f16 wherever an expression's result is f16 (eval.rs); in memory it
//! is WGSL's 16 bits, two to a word, the first in the low half. A pointer to a lone f16 (an
//! element of `array<f16>`, a component of a `vec2<f16>` in memory, a struct member) holds
//! its offset in halves, not words; a pointer to an f16 vector holds the offset of its first
//! word, as any other.

use naga::{Module, Scalar, TypeInner};

use super::lanes::{collect, map, Lanes};
use super::memory::{Memories, Ptr, Space};

/// Whether `inner` is the scalar f16.
pub(super) fn is_half(inner: &TypeInner) -> bool {
    *inner == TypeInner::Scalar(Scalar::F16)
}

/// What a pointer of type `ptr` reaches when it reaches f16 values: how many, and whether
/// its offsets count halves (a lone f16) rather than words (a vector).
pub(super) fn pointee(module: &Module, ptr: &TypeInner) -> Option<(usize, bool)> {
    let (size, scalar) = match *ptr {
        TypeInner::Pointer { base, .. } => match module.types[base].inner {
            TypeInner::Scalar(s) => (None, s),
            TypeInner::Vector { size, scalar } => (Some(size), scalar),
            _ => return None,
        },
        TypeInner::ValuePointer { size, scalar, .. } => (size, scalar),
        _ => return None,
    };
    (scalar == Scalar::F16).then_some(size.map_or((1, true), |n| (n as usize, false)))
}

/// Each component of `a` rounded to the nearest f16 (ties to even), as f32 bits.
pub(super) fn round(a: &Lanes) -> Lanes {
    map(a, |w| {
        half::f16::from_f32(f32::from_bits(w)).to_f32().to_bits()
    })
}

/// The f32 bits of the f16 whose bits are `bits`.
fn widen(bits: u32) -> u32 {
    half::f16::from_bits(bits as u16).to_f32().to_bits()
}

/// The f16 bits of the f32 whose bits are `w`.
fn narrow(w: u32) -> u32 {
    u32::from(half::f16::from_f32(f32::from_bits(w)).to_bits())
}

/// `bitcast` from an f16 vector: each pair of components as one word, the first low.
pub(super) fn pack(a: &Lanes) -> Lanes {
    let words = collect(
        a.words
            .chunks(2)
            .map(|p| narrow(p[0]) | (narrow(p[p.len() - 1]) << 16)),
    );
    Lanes {
        width: a.width / 2,
        words,
    }
}

/// `bitcast` to an f16 vector: each word as two components, its low half first.
pub(super) fn unpack(a: &Lanes) -> Lanes {
    let words = collect(
        a.words
            .iter()
            .flat_map(|&w| [widen(w & 0xffff), widen(w >> 16)]),
    );
    Lanes {
        width: a.width * 2,
        words,
    }
}

/// Where lane `l`'s first f16 lies, in halves: `offset` itself for a lone f16, twice it
/// for a vector (whose offset counts words).
fn first(offset: u32, lone: bool) -> u32 {
    if lone {
        offset
    } else {
        offset.saturating_mul(2)
    }
}

impl Memories<'_, '_> {
    /// `n` f16 values at `ptr` for every lane, as f32 bits (`lone`: a pointer in halves).
    pub fn load_halves(&self, ptr: &Ptr, n: usize, lone: bool) -> Lanes {
        let mut out = Lanes::zeros(ptr.offsets.len(), n);
        for (l, &offset) in ptr.offsets.iter().enumerate() {
            let at = first(offset, lone);
            for (c, o) in out.lane_mut(l).iter_mut().enumerate() {
                let h = at.saturating_add(c as u32);
                *o = widen(self.word(ptr.space, l, h / 2) >> (h % 2 * 16) & 0xffff);
            }
        }
        out
    }

    /// Store the f16 values of `value` at `ptr` for the lanes in `mask`, each rounded to
    /// f16, leaving the other half of every word it writes as it was.
    pub fn store_halves(&mut self, ptr: &Ptr, value: &Lanes, lone: bool, mask: &[bool]) {
        for (l, &offset) in ptr.offsets.iter().enumerate().filter(|&(l, _)| mask[l]) {
            let at = first(offset, lone);
            for (c, &w) in value.lane(l).iter().enumerate() {
                self.put_half(ptr.space, l, at.saturating_add(c as u32), narrow(w));
            }
        }
    }

    /// Write the 16 `bits` at half `h` of `space` for lane `l` (atomically where the memory
    /// is shared: a neighbour may write the word's other half at the same time).
    fn put_half(&mut self, space: Space, l: usize, h: u32, bits: u32) {
        let shift = h % 2 * 16;
        let put = move |w: u32| Some(w & !(0xffff << shift) | bits << shift);
        match space {
            Space::Binding(_) | Space::Workgroup(_) => {
                self.update(space, h / 2, put);
            }
            Space::Private(_) | Space::Local(_) => {
                let old = self.word(space, l, h / 2);
                self.set(space, l, h / 2, put(old).unwrap_or(old));
            }
        }
    }
}

/// The words `value` of a variable of type `inner` in memory: as they are, but an f16
/// scalar or vector packed two halves to a word (a variable's initial value).
pub(super) fn in_memory(inner: &TypeInner, value: Vec<u32>) -> Vec<u32> {
    if inner.scalar() != Some(Scalar::F16) {
        return value;
    }
    value
        .chunks(2)
        .map(|p| narrow(p[0]) | p.get(1).map_or(0, |&w| narrow(w) << 16))
        .collect()
}
