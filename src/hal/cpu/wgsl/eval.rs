//! Expressions: each evaluated once for every invocation of the workgroup (inactive lanes
//! compute too, harmlessly: nothing here writes memory or can fail on a value).

use naga::{Expression as E, Handle, Literal, TypeInner};

use super::exec::{Exec, Frame, Value};
use super::lanes::{self, Kind, Lanes};
use super::memory::Ptr;
use crate::{Error, Result};

/// The words of a literal.
fn literal(l: &Literal) -> Vec<u32> {
    vec![match *l {
        Literal::F32(v) => v.to_bits(),
        Literal::F16(v) => v.to_f32().to_bits(),
        Literal::I32(v) => v as u32,
        Literal::U32(v) => v,
        Literal::Bool(v) => u32::from(v),
        Literal::AbstractInt(v) => v as u32,
        Literal::AbstractFloat(v) => (v as f32).to_bits(),
        // Other widths are refused before a kernel runs (support.rs).
        _ => 0,
    }]
}

fn internal(what: &str) -> Error {
    Error::Internal(format!("the cpu WGSL executor {what}"))
}

impl Exec<'_, '_, '_> {
    /// The type of expression `h` of `frame`.
    pub(super) fn ty<'f>(&'f self, frame: &'f Frame<'_>, h: Handle<E>) -> &'f TypeInner {
        frame.info[h].ty.inner_with(&self.prog.module.types)
    }

    /// The kind of expression `h`'s scalar components.
    pub(super) fn kind(&self, frame: &Frame<'_>, h: Handle<E>) -> Kind {
        Kind::of(self.ty(frame, h)).unwrap_or(Kind::U32)
    }

    /// Evaluate `h` (and, first, any operand that is not emitted by a statement: constants,
    /// arguments, variables) into the frame.
    pub(super) fn ensure(&mut self, frame: &mut Frame<'_>, h: Handle<E>) -> Result<()> {
        let h = frame.reuse.slot[h.index()];
        if frame.values[h.index()].is_some() {
            return Ok(());
        }
        if let Some((b, c)) = frame.reuse.component[h.index()] {
            frame.values[h.index()] = Some(Value::Lanes(self.builtin_component(b, c)));
            return Ok(());
        }
        let function = frame.function;
        for_operands(&function.expressions[h], |o| {
            if frame.reuse.direct[o.index()] {
                Ok(())
            } else {
                self.ensure(frame, o)
            }
        })?;
        let value = self.compute(frame, h)?;
        frame.values[h.index()] = Some(value);
        Ok(())
    }

    /// Evaluate `h` anew (an `Emit`: its operands are in the frame already), unless its value
    /// cannot have changed since it was last evaluated in this call.
    pub(super) fn emit(&mut self, frame: &mut Frame<'_>, h: Handle<E>) -> Result<()> {
        if frame.reuse.direct[h.index()] {
            // Its loads and stores compute it (direct.rs).
            return Ok(());
        }
        let h = frame.reuse.slot[h.index()];
        if frame.reuse.invariant[h.index()] {
            return self.ensure(frame, h);
        }
        frame.values[h.index()] = None;
        self.ensure(frame, h)
    }

    fn compute(&mut self, frame: &mut Frame<'_>, h: Handle<E>) -> Result<Value> {
        let n = self.lanes;
        Ok(Value::Lanes(match frame.function.expressions[h] {
            E::Literal(ref l) => Lanes::splat(n, &literal(l)),
            E::Constant(c) => Lanes::splat(n, &self.constant(self.prog.module.constants[c].init)?),
            E::Override(o) => Lanes::splat(n, &self.override_value(o)?),
            E::ZeroValue(ty) => {
                Lanes::zeros(n, self.prog.value_words(&self.prog.module.types[ty].inner))
            }
            E::Compose { ty, ref components } => self.compose(frame, ty, components)?,
            E::Splat { size, value } => splat(frame.lanes(value)?, size as usize),
            E::Swizzle {
                size,
                vector,
                pattern,
            } => swizzle(frame.lanes(vector)?, &pattern[..size as usize]),
            E::FunctionArgument(i) if frame.entry => {
                // The entry point's built-ins, made where they are read (exec.rs).
                let entry = &self.prog.module.entry_points[self.prog.entry].function;
                return self.argument(
                    entry
                        .arguments
                        .get(i as usize)
                        .ok_or_else(|| internal("lost an entry-point argument"))?,
                );
            }
            E::FunctionArgument(i) => {
                return frame
                    .args
                    .get(i as usize)
                    .cloned()
                    .ok_or_else(|| internal("lost a function argument"))
            }
            E::GlobalVariable(g) => {
                let space = self.space_of(g)?;
                return Ok(Value::Ptr(Ptr {
                    space,
                    offsets: self.origin(space),
                    whole: !matches!(space, super::memory::Space::Workgroup(_)),
                }));
            }
            E::LocalVariable(l) => {
                return Ok(Value::Ptr(Ptr {
                    space: super::memory::Space::Local(frame.local_base + l.index()),
                    offsets: super::lanes::zeroed(n),
                    whole: true,
                }))
            }
            E::Load { pointer } if frame.reuse.direct[pointer.index()] => {
                self.load_direct(frame, pointer)?
            }
            E::Load { pointer } => self.load(frame, pointer, h)?,
            E::Access { base, index } => return self.access(frame, base, Index::Dynamic(index)),
            E::AccessIndex { base, index } => {
                return self.access(frame, base, Index::Constant(index))
            }
            _ => self.arithmetic(frame, h)?,
        }))
    }

    /// Unary, binary, select, relational, math and conversion expressions; an f16 result
    /// computed in f32 and rounded to f16 (half.rs).
    fn arithmetic(&mut self, frame: &mut Frame<'_>, h: Handle<E>) -> Result<Lanes> {
        let out = self.arithmetic_f32(frame, h)?;
        let rounds = matches!(
            frame.function.expressions[h],
            E::Unary { .. } | E::Binary { .. } | E::Math { .. } | E::As { .. }
        );
        Ok(match self.ty(frame, h).scalar() {
            Some(naga::Scalar::F16) if rounds => super::half::round(&out),
            _ => out,
        })
    }

    /// [`Self::arithmetic`] before f16 rounding.
    fn arithmetic_f32(&mut self, frame: &mut Frame<'_>, h: Handle<E>) -> Result<Lanes> {
        Ok(match frame.function.expressions[h] {
            E::Unary { op, expr } => lanes::unary(op, self.kind(frame, expr), frame.lanes(expr)?),
            E::Binary { op, left, right } => {
                let (l, r) = (frame.lanes(left)?, frame.lanes(right)?);
                let typed = ((self.ty(frame, left), l), (self.ty(frame, right), r));
                match super::matrix::binary(op, typed.0, typed.1) {
                    Some(out) => out,
                    None => lanes::binary(op, self.kind(frame, left), l, r),
                }
            }
            E::Select {
                condition,
                accept,
                reject,
            } => {
                let (c, a, r) = (
                    frame.lanes(condition)?,
                    frame.lanes(accept)?,
                    frame.lanes(reject)?,
                );
                let picked = lanes::zip(c, a, |c, a| if c != 0 { a } else { 0 });
                let inverse = lanes::zip(c, r, |c, r| if c == 0 { r } else { 0 });
                lanes::zip(&picked, &inverse, |x, y| x | y)
            }
            E::Relational { fun, argument } => super::math::relational(fun, frame.lanes(argument)?),
            E::Math {
                fun,
                arg,
                arg1,
                arg2,
                arg3,
            } => {
                let kind = self.kind(frame, arg);
                let a = frame.lanes(arg)?;
                if let Some(out) = self.structured(frame, h, fun, arg, a) {
                    return Ok(out);
                }
                let [b, c, d] = [arg1, arg2, arg3].map(|a| a.map(|a| frame.lanes(a)).transpose());
                super::math::math(fun, kind, a, [b?, c?, d?])?
            }
            E::As {
                expr,
                kind,
                convert,
            } => {
                let from = self.ty(frame, expr).scalar();
                let to = self.ty(frame, h).scalar();
                let v = frame.lanes(expr)?;
                let half = Some(naga::Scalar::F16);
                match (convert, kind) {
                    (None, _) if from == half && to != half => super::half::pack(v),
                    (None, _) if to == half && from != half => super::half::unpack(v),
                    (None, _) => v.clone(),
                    _ => lanes::convert(
                        v,
                        self.kind(frame, expr),
                        Kind::of(self.ty(frame, h)).unwrap_or(Kind::U32),
                    ),
                }
            }
            E::ArrayLength(pointer) => self.array_length(frame, pointer)?,
            // Statement results are stored by their statements; anything else is refused
            // before a kernel runs.
            _ => {
                return Err(internal(&format!(
                    "met an expression it does not run: {:?}",
                    frame.function.expressions[h]
                )))
            }
        })
    }

    /// The built-ins whose argument or result is a matrix or a struct (`transpose`,
    /// `determinant`, `modf`, `frexp`) of `a`, the argument `arg` of expression `h`; `None`
    /// for the others.
    fn structured(
        &self,
        frame: &Frame<'_>,
        h: Handle<E>,
        fun: naga::MathFunction,
        arg: Handle<E>,
        a: &Lanes,
    ) -> Option<Lanes> {
        use naga::MathFunction as M;
        match fun {
            M::Transpose | M::Determinant => {
                super::matrix::function(a, self.ty(frame, arg), fun == M::Determinant)
            }
            M::Modf | M::Frexp => {
                let TypeInner::Struct { ref members, span } = *self.ty(frame, h) else {
                    return None;
                };
                let at = [members.first()?.offset, members.get(1)?.offset].map(|o| o as usize / 4);
                Some(super::math::split(
                    a,
                    fun == M::Frexp,
                    at,
                    span as usize / 4,
                ))
            }
            _ => None,
        }
    }

    /// Components assembled into a vector, struct or array.
    fn compose(
        &self,
        frame: &Frame<'_>,
        ty: Handle<naga::Type>,
        components: &[Handle<E>],
    ) -> Result<Lanes> {
        let width = self.prog.value_words(&self.prog.module.types[ty].inner);
        let mut out = Lanes::zeros(self.lanes, width);
        let mut at = 0;
        for (i, &c) in components.iter().enumerate() {
            let v = frame.lanes(c)?;
            let offset = self.component_offset(ty, i, at);
            for l in 0..self.lanes {
                let dst = &mut out.lane_mut(l)[offset..];
                let n = v.width.min(dst.len());
                dst[..n].copy_from_slice(&v.lane(l)[..n]);
            }
            at += v.width;
        }
        Ok(out)
    }

    /// The words of a constant expression of the module.
    pub(super) fn constant(&self, h: Handle<E>) -> Result<Vec<u32>> {
        let module = &self.prog.module;
        Ok(match module.global_expressions[h] {
            E::Literal(ref l) => literal(l),
            E::Constant(c) => self.constant(module.constants[c].init)?,
            E::Override(o) => self.override_value(o)?,
            E::ZeroValue(ty) => vec![0; self.prog.value_words(&module.types[ty].inner)],
            E::Splat { size, value } => self.constant(value)?.repeat(size as usize),
            E::Compose { ty, ref components } => {
                let mut out = vec![0; self.prog.value_words(&module.types[ty].inner)];
                let mut at = 0;
                for (i, &c) in components.iter().enumerate() {
                    let words = self.constant(c)?;
                    let offset = self.component_offset(ty, i, at);
                    let n = words.len().min(out.len().saturating_sub(offset));
                    out[offset..offset + n].copy_from_slice(&words[..n]);
                    at += words.len();
                }
                out
            }
            ref other => {
                return Err(internal(&format!(
                    "met a constant it does not evaluate: {other:?}"
                )))
            }
        })
    }
}

impl Exec<'_, '_, '_> {
    /// The value that `pointer` points at, of the type of expression `h` (f16 values widened
    /// to f32, half.rs).
    pub(super) fn load(
        &mut self,
        frame: &Frame<'_>,
        pointer: Handle<E>,
        h: Handle<E>,
    ) -> Result<Lanes> {
        let halves = super::half::pointee(&self.prog.module, self.ty(frame, pointer));
        let width = self.prog.words_of(self.ty(frame, h));
        let ptr = frame.ptr(pointer)?;
        Ok(match halves {
            Some((n, lone)) => self.memories().load_halves(ptr, n, lone),
            None => self.memories().load(ptr, width),
        })
    }

    /// Where component `i` of a value of type `ty` starts, in words, `at` words of
    /// components coming before it (a vector's components follow one another).
    fn component_offset(&self, ty: Handle<naga::Type>, i: usize, at: usize) -> usize {
        match self.prog.module.types[ty].inner {
            TypeInner::Struct { ref members, .. } => members[i].offset as usize / 4,
            TypeInner::Array { base, stride, .. } => i * self.prog.stride(base, stride),
            TypeInner::Matrix { rows, .. } => i * super::matrix::column_words(rows),
            _ => at,
        }
    }

    /// An `override` constant's value: its default (pipeline constants are not taken).
    fn override_value(&self, o: Handle<naga::Override>) -> Result<Vec<u32>> {
        let ov = &self.prog.module.overrides[o];
        let init = ov.init.ok_or_else(|| {
            Error::Invalid(format!(
                "override `{}` has no default value: give it one in the source",
                ov.name.as_deref().unwrap_or("?")
            ))
        })?;
        self.constant(init)
    }
}

/// `f` on each expression `e` reads (of the kinds the executor runs).
pub(super) fn for_operands(e: &E, mut f: impl FnMut(Handle<E>) -> Result<()>) -> Result<()> {
    let mut two = |a: Handle<E>, b: Option<Handle<E>>| -> Result<()> {
        f(a)?;
        b.map_or(Ok(()), &mut f)
    };
    match *e {
        E::Compose { ref components, .. } => components.iter().try_for_each(|&c| two(c, None)),
        E::Access { base, index } => two(base, Some(index)),
        E::AccessIndex { base: x, .. }
        | E::Splat { value: x, .. }
        | E::Swizzle { vector: x, .. }
        | E::Load { pointer: x } => two(x, None),
        E::Unary { expr: x, .. }
        | E::As { expr: x, .. }
        | E::Relational { argument: x, .. }
        | E::ArrayLength(x) => two(x, None),
        E::Binary { left, right, .. } => two(left, Some(right)),
        E::Select {
            condition,
            accept,
            reject,
        } => {
            two(condition, Some(accept))?;
            two(reject, None)
        }
        E::Math {
            arg,
            arg1,
            arg2,
            arg3,
            ..
        } => {
            two(arg, arg1)?;
            arg2.map_or(Ok(()), |a| two(a, arg3))
        }
        _ => Ok(()),
    }
}

/// An index into an array, a vector or a struct.
#[derive(Clone, Copy)]
pub(super) enum Index {
    Dynamic(Handle<E>),
    Constant(u32),
}

/// `vecN(v)` of a scalar `v`: each lane's word `size` times.
fn splat(v: &Lanes, size: usize) -> Lanes {
    Lanes {
        width: size,
        words: v
            .words
            .iter()
            .flat_map(|&w| std::iter::repeat_n(w, size))
            .collect(),
    }
}

/// `v.xzy` and the like: the components `pattern` picks, in its order, of each lane.
fn swizzle(v: &Lanes, pattern: &[naga::SwizzleComponent]) -> Lanes {
    let picks: Vec<usize> = pattern.iter().map(|&c| c as usize).collect();
    Lanes {
        width: picks.len(),
        words: v
            .words
            .chunks(v.width)
            .flat_map(|w| picks.iter().map(|&c| w[c]))
            .collect(),
    }
}
