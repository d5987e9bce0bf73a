//! naga expressions as C++ expressions. A pointer-valued WGSL expression is a C++ pointer
//! (into a buffer, `__shared__` memory or a local); an expression a statement emits is the
//! constant `e<index>` from then on, the others are written where they are used.

use crate::hal::wgsl_overrides::array_length;
use naga::{
    ArraySize, BinaryOperator as B, Expression as E, Handle, MathFunction as M, TypeInner,
    UnaryOperator as U,
};

use super::types;
use super::Function;

impl Function<'_> {
    /// The C++ expression for `h`: its name once emitted, else its definition.
    pub(super) fn expr(&self, h: Handle<E>) -> Result<String, String> {
        if self.emitted.contains(&h) {
            return Ok(format!("e{}", h.index()));
        }
        self.define(h)
    }

    /// The pointee of pointer expression `h`, or `None` for a value.
    fn pointee(&self, h: Handle<E>) -> Option<&TypeInner> {
        match self.info[h].ty.inner_with(&self.module.types) {
            TypeInner::Pointer { base, .. } => Some(&self.module.types[*base].inner),
            TypeInner::ValuePointer { .. } => Some(&TypeInner::Scalar(naga::Scalar::F32)),
            _ => None,
        }
    }

    /// The size of the vector that `h` points at when it is a pointer to a matrix's column
    /// (naga's `ValuePointer`).
    fn column(&self, h: Handle<E>) -> Option<u32> {
        match *self.info[h].ty.inner_with(&self.module.types) {
            TypeInner::ValuePointer { size: Some(n), .. } => Some(n as u32),
            _ => None,
        }
    }

    /// Whether `h` points at an atomic.
    pub(super) fn points_at_atomic(&self, h: Handle<E>) -> bool {
        matches!(self.pointee(h), Some(TypeInner::Atomic(_)))
    }

    /// The definition of expression `h` as C++.
    pub(super) fn define(&self, h: Handle<E>) -> Result<String, String> {
        let m = self.module;
        Ok(match self.function.expressions[h] {
            E::Literal(l) => types::literal(l)?,
            E::Constant(c) => types::constant(m, m.constants[c].init)?,
            E::Override(o) => types::constant(
                m,
                m.overrides[o].init.ok_or("an override without a default")?,
            )?,
            E::ZeroValue(ty) => format!("{}{{}}", types::name(m, ty)?),
            E::Compose { ty, ref components } => {
                let parts = components
                    .iter()
                    .map(|&c| self.expr(c))
                    .collect::<Result<Vec<_>, _>>()?;
                types::compose(m, ty, &parts)?
            }
            E::Access { base, index } => self.access(base, &self.expr(index)?, true)?,
            E::AccessIndex { base, index } => self.access_index(base, index)?,
            E::Splat { size, value } => format!("splat<{}>({})", size as u8, self.expr(value)?),
            E::Swizzle {
                size,
                vector,
                pattern,
            } => {
                let picks: Vec<String> = pattern[..size as usize]
                    .iter()
                    .map(|c| (*c as u8).to_string())
                    .collect();
                format!(
                    "swizzle<{}>({}, {})",
                    size as u8,
                    self.expr(vector)?,
                    picks.join(", ")
                )
            }
            E::FunctionArgument(i) => format!("a{i}"),
            E::GlobalVariable(g) => self.global(g),
            E::LocalVariable(l) => format!("(&l{})", l.index()),
            E::Load { pointer } if self.points_at_atomic(pointer) => {
                format!("atomic_load({})", self.expr(pointer)?)
            }
            E::Load { pointer } => format!("(*{})", self.expr(pointer)?),
            E::Unary { op, expr } => format!("{}({})", unary(op), self.expr(expr)?),
            E::Binary { op, left, right } => format!(
                "{}({}, {})",
                binary(op),
                self.expr(left)?,
                self.expr(right)?
            ),
            E::Select {
                condition,
                accept,
                reject,
            } => format!(
                "wsel({}, {}, {})",
                self.expr(condition)?,
                self.expr(accept)?,
                self.expr(reject)?
            ),
            E::Relational {
                fun: naga::RelationalFunction::All,
                argument,
            } => format!("rel_all({})", self.expr(argument)?),
            E::Relational {
                fun: naga::RelationalFunction::Any,
                argument,
            } => format!("rel_any({})", self.expr(argument)?),
            E::Math { .. } | E::As { .. } => self.define_math_or_cast(h)?,
            E::ArrayLength(array) => format!("((u32)({}))", self.length(array)?),
            E::CallResult(_) | E::AtomicResult { .. } | E::WorkGroupUniformLoadResult { .. } => {
                return Err("a result used before its statement".into())
            }
            ref other => return Err(format!("the expression {other:?}")),
        })
    }

    /// The definition of `Math` or `As` expression `h` as C++.
    fn define_math_or_cast(&self, h: Handle<E>) -> Result<String, String> {
        let m = self.module;
        Ok(match self.function.expressions[h] {
            E::Math {
                fun: fun @ (M::Modf | M::Frexp),
                arg,
                ..
            } => {
                let naga::proc::TypeResolution::Handle(ty) = self.info[h].ty else {
                    return Err("a modf or frexp without its struct".into());
                };
                let x = self.expr(arg)?;
                let parts = match fun {
                    M::Modf => [format!("m_modf_fract({x})"), format!("m_trunc({x})")],
                    _ => [format!("m_frexp_fract({x})"), format!("m_frexp_exp({x})")],
                };
                types::compose(m, ty, &parts)?
            }
            E::Math {
                fun,
                arg,
                arg1,
                arg2,
                arg3,
            } => {
                let args = [Some(arg), arg1, arg2, arg3]
                    .into_iter()
                    .flatten()
                    .map(|a| self.expr(a))
                    .collect::<Result<Vec<_>, _>>()?;
                format!("{}({})", math(fun)?, args.join(", "))
            }
            E::As {
                expr,
                convert: None,
                ..
            } if self.bitcasts_f16(h, expr) => {
                format!(
                    "bits_as<{}>({})",
                    types::resolved(m, &self.info[h].ty)?,
                    self.expr(expr)?
                )
            }
            E::As {
                expr,
                kind,
                convert,
            } => {
                let to = types::scalar(naga::Scalar {
                    kind,
                    width: convert.unwrap_or(4),
                })?;
                let how = if convert.is_some() {
                    "convert"
                } else {
                    "bitcast"
                };
                format!("{how}<{to}>({})", self.expr(expr)?)
            }
            ref other => return Err(format!("the expression {other:?}")),
        })
    }

    /// Whether `As` expression `h` of `expr` is a bitcast to or from f16 values.
    fn bitcasts_f16(&self, h: Handle<E>, expr: Handle<E>) -> bool {
        let half = |e: Handle<E>| {
            self.info[e].ty.inner_with(&self.module.types).scalar() == Some(naga::Scalar::F16)
        };
        half(h) || half(expr)
    }

    /// A global variable as a pointer: a bound buffer's pointer, a `__shared__` variable's
    /// address, or the address of this invocation's private copy.
    fn global(&self, g: Handle<naga::GlobalVariable>) -> String {
        match self.module.global_variables[g].space {
            naga::AddressSpace::WorkGroup => format!("(&w{})", g.index()),
            naga::AddressSpace::Private => format!("(&p{})", g.index()),
            _ => format!("g{}", g.index()),
        }
    }

    /// Element `index` of `base` (a pointer gives a pointer), clamped into its array or
    /// vector (`clamp`; a constant index into a fixed size needs none). A padded array
    /// element is its wrapper's `v`.
    fn access(&self, base: Handle<E>, index: &str, clamp: bool) -> Result<String, String> {
        let bounded = |n: String| {
            if clamp {
                format!("clamp_index({index}, {n})")
            } else {
                index.to_string()
            }
        };
        let unwrap = |t: &TypeInner| match *t {
            TypeInner::Array { base, stride, .. } if types::padded(self.module, base, stride) => {
                ".v"
            }
            _ => "",
        };
        match self.pointee(base) {
            Some(
                t @ TypeInner::Array {
                    size: ArraySize::Dynamic,
                    ..
                },
            ) => Ok(format!(
                "(&({} + clamp_index({index}, {}))[0]{})",
                self.expr(base)?,
                self.length(base)?,
                unwrap(t)
            )),
            Some(t @ &TypeInner::Array { size, .. }) => {
                let n = array_length(self.module, size).ok_or("an array of unknown length")?;
                Ok(format!(
                    "(&({})->v[{}]{})",
                    self.expr(base)?,
                    bounded(format!("{n}u")),
                    unwrap(t)
                ))
            }
            Some(TypeInner::Vector { size, .. }) => Ok(format!(
                "(&({})->v[{}])",
                self.expr(base)?,
                bounded(format!("{}u", *size as u8))
            )),
            Some(TypeInner::Matrix { columns, .. }) => Ok(format!(
                "(&({})->c[{}].v)",
                self.expr(base)?,
                bounded(format!("{}u", *columns as u8))
            )),
            Some(TypeInner::Scalar(_)) if self.column(base).is_some() => {
                let n = self.column(base).unwrap_or(1);
                Ok(format!(
                    "(&({})->v[{}])",
                    self.expr(base)?,
                    bounded(format!("{n}u"))
                ))
            }
            Some(other) => Err(format!("indexing into {other:?}")),
            None => {
                let t = self.info[base].ty.inner_with(&self.module.types);
                let n = match *t {
                    TypeInner::Array { size, .. } => {
                        array_length(self.module, size).ok_or("an array of unknown length")?
                    }
                    TypeInner::Vector { size, .. } => size as u32,
                    TypeInner::Matrix { columns, .. } => {
                        let i = bounded(format!("{}u", columns as u8));
                        return Ok(format!("(({}).c[{i}].v)", self.expr(base)?));
                    }
                    ref other => return Err(format!("indexing into {other:?}")),
                };
                Ok(format!(
                    "(({}).v[{}]{})",
                    self.expr(base)?,
                    bounded(format!("{n}u")),
                    unwrap(t)
                ))
            }
        }
    }

    /// Member or element `index` of `base`.
    fn access_index(&self, base: Handle<E>, index: u32) -> Result<String, String> {
        let is_struct = |t: &TypeInner| matches!(t, TypeInner::Struct { .. });
        match self.pointee(base) {
            Some(t) if is_struct(t) => Ok(format!("(&({})->m{index})", self.expr(base)?)),
            Some(_) => self.access(base, &format!("{index}u"), false),
            None if is_struct(self.info[base].ty.inner_with(&self.module.types)) => {
                Ok(format!("(({}).m{index})", self.expr(base)?))
            }
            None => self.access(base, &format!("{index}u"), false),
        }
    }

    /// The element count of runtime-sized array `array` (a pointer to a bound buffer's array,
    /// or to the last member of a bound struct), from the bound byte length.
    fn length(&self, array: Handle<E>) -> Result<String, String> {
        let stride = |t: &TypeInner| match *t {
            TypeInner::Array { stride, .. } => Ok(stride),
            _ => Err("arrayLength of a value that is not an array".to_string()),
        };
        match self.function.expressions[array] {
            E::GlobalVariable(g) => Ok(format!(
                "(g{}_bytes / {})",
                g.index(),
                stride(self.pointee(array).ok_or("a length of a value")?)?
            )),
            E::AccessIndex { base, index } => {
                let E::GlobalVariable(g) = self.function.expressions[base] else {
                    return Err("a runtime-sized array that is not in a bound buffer".into());
                };
                let Some(TypeInner::Struct { members, .. }) = self.pointee(base) else {
                    return Err("a runtime-sized array outside a struct".into());
                };
                let offset = members.get(index as usize).map_or(0, |m| m.offset);
                Ok(format!(
                    "((g{}_bytes - {offset}) / {})",
                    g.index(),
                    stride(self.pointee(array).ok_or("a length of a value")?)?
                ))
            }
            _ => Err("a runtime-sized array reached through another pointer".into()),
        }
    }
}

fn unary(op: U) -> &'static str {
    match op {
        U::Negate => "op_neg",
        U::LogicalNot => "op_not",
        U::BitwiseNot => "op_bnot",
    }
}

fn binary(op: B) -> &'static str {
    match op {
        B::Add => "op_add",
        B::Subtract => "op_sub",
        B::Multiply => "op_mul",
        B::Divide => "op_div",
        B::Modulo => "op_rem",
        B::Equal => "op_eq",
        B::NotEqual => "op_ne",
        B::Less => "op_lt",
        B::LessEqual => "op_le",
        B::Greater => "op_gt",
        B::GreaterEqual => "op_ge",
        B::And => "op_and",
        B::ExclusiveOr => "op_xor",
        B::InclusiveOr => "op_or",
        B::LogicalAnd => "op_land",
        B::LogicalOr => "op_lor",
        B::ShiftLeft => "op_shl",
        B::ShiftRight => "op_shr",
    }
}

fn math(fun: M) -> Result<&'static str, String> {
    Ok(match fun {
        M::Abs => "m_abs",
        M::Min => "m_min",
        M::Max => "m_max",
        M::Clamp => "m_clamp",
        M::Saturate => "m_saturate",
        M::Cos => "m_cos",
        M::Cosh => "m_cosh",
        M::Sin => "m_sin",
        M::Sinh => "m_sinh",
        M::Tan => "m_tan",
        M::Tanh => "m_tanh",
        M::Acos => "m_acos",
        M::Asin => "m_asin",
        M::Atan => "m_atan",
        M::Atan2 => "m_atan2",
        M::Asinh => "m_asinh",
        M::Acosh => "m_acosh",
        M::Atanh => "m_atanh",
        M::Radians => "m_radians",
        M::Degrees => "m_degrees",
        M::Ceil => "m_ceil",
        M::Floor => "m_floor",
        M::Round => "m_round",
        M::Fract => "m_fract",
        M::Trunc => "m_trunc",
        M::Exp => "m_exp",
        M::Exp2 => "m_exp2",
        M::Log => "m_log",
        M::Log2 => "m_log2",
        M::Pow => "m_pow",
        M::Dot => "m_dot",
        M::Length => "m_length",
        M::Sign => "m_sign",
        M::Fma => "m_fma",
        M::Mix => "m_mix",
        M::Step => "m_step",
        M::Sqrt => "m_sqrt",
        M::InverseSqrt => "m_inverse_sqrt",
        M::CountTrailingZeros => "m_count_trailing_zeros",
        M::CountLeadingZeros => "m_count_leading_zeros",
        M::CountOneBits => "m_count_one_bits",
        M::ReverseBits => "m_reverse_bits",
        M::Pack2x16float => "m_pack2x16float",
        M::Normalize => "m_normalize",
        M::Distance => "m_distance",
        M::Cross => "m_cross",
        M::SmoothStep => "m_smoothstep",
        M::Reflect => "m_reflect",
        M::FaceForward => "m_face_forward",
        M::Ldexp => "m_ldexp",
        M::ExtractBits => "m_extract_bits",
        M::InsertBits => "m_insert_bits",
        M::FirstLeadingBit => "m_first_leading_bit",
        M::FirstTrailingBit => "m_first_trailing_bit",
        M::Refract => "m_refract",
        M::QuantizeToF16 => "m_quantize_to_f16",
        M::Pack4x8snorm => "m_pack4x8snorm",
        M::Pack4x8unorm => "m_pack4x8unorm",
        M::Pack2x16snorm => "m_pack2x16snorm",
        M::Pack2x16unorm => "m_pack2x16unorm",
        M::Pack4xI8 | M::Pack4xU8 => "m_pack4x8",
        M::Pack4xI8Clamp => "m_pack4xi8_clamp",
        M::Pack4xU8Clamp => "m_pack4xu8_clamp",
        M::Unpack4x8snorm => "m_unpack4x8snorm",
        M::Unpack4x8unorm => "m_unpack4x8unorm",
        M::Unpack2x16snorm => "m_unpack2x16snorm",
        M::Unpack2x16unorm => "m_unpack2x16unorm",
        M::Unpack4xI8 => "m_unpack4xi8",
        M::Unpack4xU8 => "m_unpack4xu8",
        M::Unpack2x16float => "m_unpack2x16float",
        M::Transpose => "m_transpose",
        M::Determinant => "m_determinant",
        other => {
            let name = crate::hal::wgsl_subset::wgsl_function(other);
            return Err(format!("the built-in function {name}"));
        }
    })
}
