//! WGSL types as C++ types: scalars, `vec<T, N>` (prelude.cuh), and a struct per array and
//! struct type whose layout is WGSL's (members at naga's offsets, padding between them).

use std::fmt::Write;

use crate::hal::wgsl_overrides::array_length;
use naga::{ArraySize, Handle, Literal, Module, Scalar, ScalarKind, Type, TypeInner};

use crate::hal::wgsl_subset;

/// The C++ name of a scalar type.
pub(super) fn scalar(s: Scalar) -> Result<&'static str, String> {
    match (s.kind, s.width) {
        (ScalarKind::Float, 4) => Ok("float"),
        (ScalarKind::Float, 2) => Ok("h16"),
        (ScalarKind::Sint, 4) => Ok("int"),
        (ScalarKind::Uint, 4) => Ok("u32"),
        (ScalarKind::Bool, _) => Ok("bool"),
        _ => Err(format!(
            "{} values",
            naga::common::wgsl::TryToWgsl::to_wgsl_for_diagnostics(s)
        )),
    }
}

/// The C++ name of `ty`. A runtime-sized array is named by its element type (it only lives
/// behind pointers, which point at its first element).
pub(super) fn name(module: &Module, ty: Handle<Type>) -> Result<String, String> {
    Ok(match module.types[ty].inner {
        TypeInner::Array {
            base,
            size: ArraySize::Dynamic,
            stride,
        } if padded(module, base, stride) => {
            format!("e{}", ty.index())
        }
        TypeInner::Array {
            base,
            size: ArraySize::Dynamic,
            ..
        } => name(module, base)?,
        TypeInner::Array { .. } | TypeInner::Struct { .. } => format!("t{}", ty.index()),
        ref inner => inner_name(module, inner)?,
    })
}

/// The C++ name of an expression's type as naga resolved it.
pub(super) fn resolved(module: &Module, ty: &naga::proc::TypeResolution) -> Result<String, String> {
    match *ty {
        naga::proc::TypeResolution::Handle(h) => name(module, h),
        naga::proc::TypeResolution::Value(ref inner) => inner_name(module, inner),
    }
}

/// The C++ name of a type that is neither an array nor a struct.
fn inner_name(module: &Module, inner: &TypeInner) -> Result<String, String> {
    Ok(match *inner {
        TypeInner::Scalar(s) | TypeInner::Atomic(s) => scalar(s)?.to_string(),
        TypeInner::Vector { size, scalar: s } => format!("vec<{}, {}>", scalar(s)?, size as u8),
        TypeInner::Matrix {
            columns,
            rows,
            scalar: naga::Scalar::F32,
        } => format!("mat<{}, {}>", columns as u8, rows as u8),
        TypeInner::Pointer { base, .. } => format!("{}*", name(module, base)?),
        TypeInner::ValuePointer {
            size: None,
            scalar: s,
            ..
        } => format!("{}*", scalar(s)?),
        TypeInner::ValuePointer {
            size: Some(n),
            scalar: s,
            ..
        } => format!("vec<{}, {}>*", scalar(s)?, n as u8),
        ref other => {
            return Err(format!(
                "values of type {}",
                wgsl_subset::wgsl_type(module, other)
            ));
        }
    })
}

/// Whether an array of `base` elements `stride` bytes apart needs its elements padded (a
/// `vec3` is 12 bytes and 16 apart): they are then wrapped, `struct e<array> { T v; pad }`.
pub(super) fn padded(module: &Module, base: Handle<Type>, stride: u32) -> bool {
    stride != c_size(module, base)
}

/// Bytes a value of `ty` takes in C++ (bool one byte, vectors unpadded, structs their span).
fn c_size(module: &Module, ty: Handle<Type>) -> u32 {
    match module.types[ty].inner {
        TypeInner::Scalar(s) | TypeInner::Atomic(s) if s.kind == ScalarKind::Bool => 1,
        TypeInner::Scalar(s) | TypeInner::Atomic(s) => u32::from(s.width),
        TypeInner::Vector { size, scalar } => size as u32 * u32::from(scalar.width),
        TypeInner::Matrix { columns, rows, .. } => {
            columns as u32 * if rows == naga::VectorSize::Bi { 8 } else { 16 }
        }
        TypeInner::Array { base, size, stride } => {
            array_length(module, size).map_or(0, |n| n * stride.max(c_size(module, base)))
        }
        TypeInner::Struct { span, .. } => span,
        _ => 0,
    }
}

/// The declarations of every array and struct type, in the module's order (each after the
/// types it holds); an array whose elements are padded first declares their wrapper.
pub(super) fn declarations(module: &Module) -> Result<String, (String, naga::Span)> {
    let mut out = String::new();
    for (h, ty) in module.types.iter() {
        out.push_str(&declaration(module, h, ty).map_err(|what| (what, module.types.get_span(h)))?);
    }
    Ok(out)
}

/// The declaration of one array or struct type (nothing for the others).
fn declaration(module: &Module, h: Handle<Type>, ty: &Type) -> Result<String, String> {
    let mut out = String::new();
    match ty.inner {
        TypeInner::Array { base, size, stride } => {
            let element = c_size(module, base);
            let mut element_name = name(module, base)?;
            if padded(module, base, stride) {
                let pad = stride
                    .checked_sub(element)
                    .filter(|&p| p > 0)
                    .ok_or_else(|| {
                        format!(
                            "arrays whose stride ({stride} bytes) is below their element's size \
                             ({element} bytes)"
                        )
                    })?;
                let _ = writeln!(
                    out,
                    "struct e{0} {{ {element_name} v; char pad[{pad}]; }};",
                    h.index()
                );
                element_name = format!("e{}", h.index());
            }
            if let (false, Some(n)) = (size == ArraySize::Dynamic, array_length(module, size)) {
                let _ = writeln!(out, "struct t{} {{ {element_name} v[{n}]; }};", h.index());
            }
        }
        TypeInner::Struct { ref members, span } => {
            out.push_str(&structure(module, h, members, span)?)
        }
        _ => {}
    }
    Ok(out)
}

/// A struct with its members at their WGSL offsets: `m0`, `m1`, ... and padding between.
fn structure(
    module: &Module,
    h: Handle<Type>,
    members: &[naga::StructMember],
    span: u32,
) -> Result<String, String> {
    let mut out = format!("struct t{} {{", h.index());
    let mut at = 0;
    for (i, m) in members.iter().enumerate() {
        if m.offset > at {
            let _ = write!(out, " char pad{i}[{}];", m.offset - at);
        }
        let _ = write!(out, " {} m{i};", name(module, m.ty)?);
        at = m.offset + c_size(module, m.ty);
    }
    if span > at {
        let _ = write!(out, " char pad_end[{}];", span - at);
    }
    out.push_str(" };\n");
    Ok(out)
}

/// A literal as C++ source (non-finite floats by their bits).
pub(super) fn literal(l: Literal) -> Result<String, String> {
    Ok(match l {
        Literal::F32(v) if v.is_finite() => format!("{v:?}f"),
        Literal::F32(v) => format!("__int_as_float({:#x})", v.to_bits()),
        Literal::F16(v) => format!("h16{{{:#x}}}", v.to_bits()),
        Literal::I32(i32::MIN) => "(-2147483647 - 1)".into(),
        Literal::I32(v) => format!("{v}"),
        Literal::U32(v) => format!("{v}u"),
        Literal::Bool(v) => format!("{v}"),
        Literal::AbstractInt(v) => format!("{v}ll"),
        Literal::AbstractFloat(v) => format!("{v:?}"),
        other => return Err(format!("the literal {}", wgsl_subset::wgsl_literal(other))),
    })
}

/// A value of `ty` made from `parts` (already C++ expressions).
pub(super) fn compose(
    module: &Module,
    ty: Handle<Type>,
    parts: &[String],
) -> Result<String, String> {
    let name = name(module, ty)?;
    Ok(match module.types[ty].inner {
        TypeInner::Vector { size, scalar: s } => format!(
            "compose<{}, {}>({})",
            scalar(s)?,
            size as u8,
            parts.join(", ")
        ),
        TypeInner::Matrix { columns, rows, .. } => format!(
            "mcompose<{}, {}>({})",
            columns as u8,
            rows as u8,
            parts.join(", ")
        ),
        TypeInner::Array { base, stride, .. } if padded(module, base, stride) => {
            let wrapped: Vec<String> = parts
                .iter()
                .map(|p| format!("e{}{{{p}}}", ty.index()))
                .collect();
            format!("{name}{{{{{}}}}}", wrapped.join(", "))
        }
        TypeInner::Array { .. } => format!("{name}{{{{{}}}}}", parts.join(", ")),
        TypeInner::Struct { .. } => {
            let sets: String = parts
                .iter()
                .enumerate()
                .map(|(i, p)| format!(" s.m{i} = {p};"))
                .collect();
            format!("([&] {{ {name} s{{}};{sets} return s; }}())")
        }
        _ => return Err(format!("composing a value of type {name}")),
    })
}

/// A module-scope constant expression (a constant's or override's value) as C++ source.
pub(super) fn constant(module: &Module, h: Handle<naga::Expression>) -> Result<String, String> {
    use naga::Expression as E;
    Ok(match module.global_expressions[h] {
        E::Literal(l) => literal(l)?,
        E::Constant(c) => constant(module, module.constants[c].init)?,
        E::ZeroValue(ty) => format!("{}{{}}", name(module, ty)?),
        E::Splat { size, value } => format!("splat<{}>({})", size as u8, constant(module, value)?),
        E::Compose { ty, ref components } => {
            let parts = components
                .iter()
                .map(|&c| constant(module, c))
                .collect::<Result<Vec<_>, _>>()?;
            compose(module, ty, &parts)?
        }
        ref other => return Err(format!("the constant expression {other:?}")),
    })
}
