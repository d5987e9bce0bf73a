//! The WGSL subset that runs where WebGPU does not (the CPU backend's executor, and CUDA
//! through translation), checked before a kernel does: every expression and statement of the
//! entry point and the functions it calls, and every type they use; what the entry point
//! never reaches is dropped first. Anything else is refused with its place in the source.

use naga::common::wgsl::TryToWgsl;
use naga::valid::{Capabilities, ModuleInfo, ValidationFlags, Validator};
use naga::{
    Expression as E, MathFunction as M, Module, Scalar, ScalarKind, Span, Statement as S, TypeInner,
};

use crate::{Error, Result};

/// What is not supported, and where.
type Refusal = (String, Span);

/// `source` parsed, validated and checked against the subset for the entry point `entry`
/// (which `backend` then runs) with its overrides resolved from `constants`
/// ([`super::wgsl_overrides`]): the module, its validation info and the entry's index.
pub(crate) fn parse(
    source: &str,
    entry: &str,
    constants: &[(&str, f64)],
    backend: &str,
) -> Result<(Module, ModuleInfo, usize)> {
    let located = |what: String, span: naga::Span| located(source, what, span);
    let module =
        naga::front::wgsl::parse_str(&super::wgsl_enables::for_naga(source)).map_err(|e| {
            let at = e
                .location(source)
                .map_or((0, 0), |l| (l.line_number, l.line_position));
            Error::Shader {
                line: at.0,
                column: at.1,
                message: e.message().to_string(),
                source_line: source
                    .lines()
                    .nth(at.0.saturating_sub(1) as usize)
                    .unwrap_or("")
                    .to_string(),
            }
        })?;
    let validate = |module: &Module| {
        Validator::new(ValidationFlags::all(), Capabilities::all())
            .validate(module)
            .map_err(|e| {
                let span = e.spans().next().map_or(naga::Span::default(), |(s, _)| *s);
                located(e.as_inner().to_string(), span)
            })
    };
    let info = validate(&module)?;
    find_entry(&module, entry)?;
    let (module, _) = super::wgsl_overrides::resolve(source, &module, &info, entry, constants)?;
    let module = reachable(module, entry)?;
    let info = validate(&module)?;
    let refusal =
        |(what, span)| located(format!("the {backend} backend does not run {what}"), span);
    check(&module, &info, 0).map_err(refusal)?;
    Ok((module, info, 0))
}

/// `module` (valid) with entry point `entry` alone, and only what it reaches: code the
/// entry point never uses (helpers, other entry points, their globals and types) is neither
/// checked nor run.
fn reachable(mut module: Module, entry: &str) -> Result<Module> {
    let index = find_entry(&module, entry)?;
    let kept = module.entry_points.swap_remove(index);
    module.entry_points = vec![kept];
    naga::compact::compact(&mut module, naga::compact::KeepUnused::No);
    Ok(module)
}

/// The index of the entry point `entry` of `module`, or an error naming those it has.
pub(crate) fn find_entry(module: &Module, entry: &str) -> Result<usize> {
    module
        .entry_points
        .iter()
        .position(|e| e.name == entry)
        .ok_or_else(|| {
            let names: Vec<_> = module
                .entry_points
                .iter()
                .map(|e| e.name.as_str())
                .collect();
            Error::Invalid(format!(
                "entry point `{entry}` not found: the shader has {names:?}"
            ))
        })
}

/// An error about `source` at `span` (line 1, column 1 for an unknown span).
pub(crate) fn located(source: &str, what: String, span: Span) -> Error {
    let at = span.location(source);
    let (line, column) = if at.line_number == 0 {
        (1, 1)
    } else {
        (at.line_number, at.line_position)
    };
    located_at(source, line, column, what)
}

/// An error about `source` at `line`:`column` (counted from 1), quoting that line.
pub(crate) fn located_at(source: &str, line: u32, column: u32, what: String) -> Error {
    let source_line = source
        .lines()
        .nth(line.saturating_sub(1) as usize)
        .unwrap_or("")
        .to_string();
    Error::Shader {
        line,
        column,
        message: what,
        source_line,
    }
}

/// Check entry point `entry` of `module` and the functions it calls.
fn check(module: &Module, info: &naga::valid::ModuleInfo, entry: usize) -> Result<(), Refusal> {
    let ep = &module.entry_points[entry];
    for arg in &ep.function.arguments {
        check_argument(module, arg)?;
    }
    check_function(module, info.get_entry_point(entry), &ep.function)?;
    for (h, f) in module.functions.iter() {
        check_function(module, &info[h], f)?;
    }
    for (h, var) in module.global_variables.iter() {
        check_space(var.space).map_err(|what| (what, module.global_variables.get_span(h)))?;
        check_type(module, &module.types[var.ty].inner).map_err(|what| {
            (
                format!("{what} (variable `{}`)", var.name.as_deref().unwrap_or("?")),
                module.global_variables.get_span(h),
            )
        })?;
    }
    Ok(())
}

/// Memory that kernels here cannot be given: WebGPU's immediate data and the ray-tracing
/// and mesh-shading spaces.
fn check_space(space: naga::AddressSpace) -> Result<(), String> {
    use naga::AddressSpace as A;
    match space {
        A::Function | A::Private | A::WorkGroup | A::Uniform | A::Storage { .. } | A::Handle => {
            Ok(())
        }
        A::Immediate => Err(
            "immediate data (`var<immediate>`: launches here bind storage and \
             uniform buffers; pass such values in a uniform buffer)"
                .into(),
        ),
        _ => Err(
            "variables in that address space (compute kernels use function, private, \
             workgroup, uniform and storage memory)"
                .into(),
        ),
    }
}

fn check_argument(module: &Module, arg: &naga::FunctionArgument) -> Result<(), Refusal> {
    use naga::BuiltIn as B;
    let ok = |b: &Option<naga::Binding>| {
        matches!(
            b,
            Some(naga::Binding::BuiltIn(
                B::LocalInvocationId
                    | B::GlobalInvocationId
                    | B::WorkGroupId
                    | B::NumWorkGroups
                    | B::LocalInvocationIndex
                    | B::SubgroupSize
                    | B::SubgroupInvocationId
                    | B::SubgroupId
                    | B::NumSubgroups
            ))
        )
    };
    let fine = match module.types[arg.ty].inner {
        TypeInner::Struct { ref members, .. } => members.iter().all(|m| ok(&m.binding)),
        _ => ok(&arg.binding),
    };
    if fine {
        Ok(())
    } else {
        Err((
            format!(
                "the entry-point argument `{}` (of the built-ins it takes the compute and \
            subgroup ones: local_invocation_id, global_invocation_id, workgroup_id, \
            num_workgroups, local_invocation_index, subgroup_size, subgroup_invocation_id, \
            subgroup_id, num_subgroups)",
                arg.name.as_deref().unwrap_or("?")
            ),
            Span::default(),
        ))
    }
}

/// 32-bit numbers, f16 and bools, vectors and f32 matrices, arrays, structs and atomics of
/// them.
fn check_type(module: &Module, inner: &TypeInner) -> Result<(), String> {
    let scalar_ok = |s: Scalar| {
        s.kind == ScalarKind::Bool
            || (s.width == 4
                && matches!(
                    s.kind,
                    ScalarKind::Float | ScalarKind::Sint | ScalarKind::Uint
                ))
            || s == Scalar::F16
    };
    match *inner {
        TypeInner::Atomic(s) if s == Scalar::F16 => Err("atomic f16 values".into()),
        TypeInner::Scalar(s) | TypeInner::Vector { scalar: s, .. } | TypeInner::Atomic(s)
            if scalar_ok(s) =>
        {
            Ok(())
        }
        TypeInner::Scalar(s) | TypeInner::Vector { scalar: s, .. } | TypeInner::Atomic(s) => {
            Err(format!("{} values", s.to_wgsl_for_diagnostics()))
        }
        TypeInner::Matrix { scalar, .. } if scalar == Scalar::F32 => Ok(()),
        TypeInner::Array { base, size, .. } => match size {
            naga::ArraySize::Pending(_)
                if super::wgsl_overrides::array_length(module, size).is_none() =>
            {
                Err("arrays sized by an override that has no value".into())
            }
            _ => check_type(module, &module.types[base].inner),
        },
        TypeInner::Struct { ref members, .. } => {
            for m in members {
                let half = module.types[m.ty].inner == TypeInner::Scalar(Scalar::F16);
                if m.offset % 4 != 0 && !half {
                    return Err("struct members that do not start on a 4-byte boundary".into());
                }
                check_type(module, &module.types[m.ty].inner)?;
            }
            Ok(())
        }
        TypeInner::Pointer { base, .. } => check_type(module, &module.types[base].inner),
        TypeInner::ValuePointer { scalar, .. } if scalar_ok(scalar) => Ok(()),
        _ => Err(format!("values of type {}", wgsl_type(module, inner))),
    }
}

/// Whether `inner`, an array or a struct, holds f16 values: the executor keeps those in
/// memory only, reached through pointers (`a[i]`, `s.h`), never as a whole value.
fn holds_f16(module: &Module, inner: &TypeInner) -> bool {
    match *inner {
        TypeInner::Array { base, .. } => {
            let element = &module.types[base].inner;
            element.scalar() == Some(Scalar::F16) || holds_f16(module, element)
        }
        TypeInner::Struct { ref members, .. } => members.iter().any(|m| {
            let member = &module.types[m.ty].inner;
            member.scalar() == Some(Scalar::F16) || holds_f16(module, member)
        }),
        _ => false,
    }
}

/// [`check_type`] of an expression's value: arrays and structs holding f16 are refused as
/// values (a whole array loaded, a struct passed by value, `modf` and `frexp` of f16).
fn check_value_type(module: &Module, inner: &TypeInner) -> Result<(), String> {
    if holds_f16(module, inner) {
        let what = wgsl_type(module, inner);
        return Err(format!(
            "values of type {what} (arrays and structs holding f16 are only read and written \
             through their elements and members)"
        ));
    }
    check_type(module, inner)
}

/// `inner` as WGSL spells it (`texture_2d<f32>`, `mat3x3<f32>`), not naga's IR.
pub(crate) fn wgsl_type(module: &Module, inner: &TypeInner) -> String {
    use naga::common::wgsl::TypeContext;
    module
        .to_ctx()
        .type_resolution_to_string(&naga::proc::TypeResolution::Value(inner.clone()))
}

/// A literal as WGSL writes it (`1.5h`), for messages.
pub(crate) fn wgsl_literal(l: naga::Literal) -> String {
    use naga::Literal as L;
    match l {
        L::F16(v) => format!("{v}h"),
        L::F32(v) => format!("{v}f"),
        L::F64(v) => format!("{v} (f64)"),
        L::I32(v) => format!("{v}i"),
        L::U32(v) => format!("{v}u"),
        L::I64(v) => format!("{v}li"),
        L::U64(v) => format!("{v}lu"),
        L::I16(v) => format!("{v} (i16)"),
        L::U16(v) => format!("{v} (u16)"),
        L::Bool(v) => v.to_string(),
        L::AbstractInt(v) => v.to_string(),
        L::AbstractFloat(v) => format!("{v:?}"),
    }
}

/// A built-in function as WGSL names it (`modf`).
pub(crate) fn wgsl_function(fun: naga::MathFunction) -> String {
    use naga::common::wgsl::TryToWgsl;
    fun.to_wgsl_for_diagnostics()
}

fn check_function(
    module: &Module,
    info: &naga::valid::FunctionInfo,
    f: &naga::Function,
) -> Result<(), Refusal> {
    for (h, e) in f.expressions.iter() {
        let span = f.expressions.get_span(h);
        check_expression(e).map_err(|what| (what, span))?;
        check_value_type(module, info[h].ty.inner_with(&module.types))
            .map_err(|what| (what, span))?;
    }
    for (h, local) in f.local_variables.iter() {
        check_type(module, &module.types[local.ty].inner)
            .map_err(|what| (what, f.local_variables.get_span(h)))?;
    }
    check_block(&f.body)
}

fn check_expression(e: &E) -> Result<(), String> {
    match *e {
        E::Literal(l) => match l {
            naga::Literal::F32(_)
            | naga::Literal::F16(_)
            | naga::Literal::I32(_)
            | naga::Literal::U32(_)
            | naga::Literal::Bool(_)
            | naga::Literal::AbstractInt(_)
            | naga::Literal::AbstractFloat(_) => Ok(()),
            other => Err(format!("the literal {}", wgsl_literal(other))),
        },
        E::Math { fun, .. } if !MATH.contains(&fun) => {
            Err(format!("the built-in function {}", wgsl_function(fun)))
        }
        E::As {
            convert: Some(2),
            kind: ScalarKind::Float,
            ..
        } => Ok(()),
        E::As {
            convert: Some(w), ..
        } if w != 4 && w != 1 => Err(format!("conversions to {}-bit values", w * 8)),
        E::Constant(_)
        | E::Override(_)
        | E::ZeroValue(_)
        | E::Compose { .. }
        | E::Access { .. }
        | E::AccessIndex { .. }
        | E::Splat { .. }
        | E::Swizzle { .. }
        | E::FunctionArgument(_)
        | E::GlobalVariable(_)
        | E::LocalVariable(_)
        | E::Load { .. }
        | E::Unary { .. }
        | E::Binary { .. }
        | E::Select { .. }
        | E::Relational { .. }
        | E::Math { .. }
        | E::As { .. }
        | E::CallResult(_)
        | E::AtomicResult { .. }
        | E::WorkGroupUniformLoadResult { .. }
        | E::SubgroupBallotResult
        | E::SubgroupOperationResult { .. }
        | E::ArrayLength(_) => Ok(()),
        ref other => Err(expression_name(other)),
    }
}

/// An expression outside the subset as WGSL writes it, for messages.
fn expression_name(e: &E) -> String {
    match *e {
        E::ImageSample { .. } => "textureSample".into(),
        E::ImageLoad { .. } => "textureLoad".into(),
        E::ImageQuery { .. } => "texture queries (textureDimensions and the like)".into(),
        E::Derivative { .. } => "derivatives (dpdx, dpdy, fwidth)".into(),
        E::RayQueryGetIntersection { .. } | E::RayQueryProceedResult => "ray queries".into(),
        ref other => format!("the expression {}", name_of(other)),
    }
}

fn check_block(block: &naga::Block) -> Result<(), Refusal> {
    for (s, span) in block.span_iter() {
        let nested: Vec<&naga::Block> = match *s {
            S::Block(ref b) => vec![b],
            S::If {
                ref accept,
                ref reject,
                ..
            } => vec![accept, reject],
            S::Switch { ref cases, .. } => cases.iter().map(|c| &c.body).collect(),
            S::Loop {
                ref body,
                ref continuing,
                ..
            } => vec![body, continuing],
            S::Emit(_)
            | S::Break
            | S::Continue
            | S::Return { .. }
            | S::ControlBarrier(_)
            | S::MemoryBarrier(_)
            | S::Store { .. }
            | S::Call { .. }
            | S::Atomic { .. }
            | S::WorkGroupUniformLoad { .. } => vec![],
            S::SubgroupBallot { .. }
            | S::SubgroupCollectiveOperation { .. }
            | S::SubgroupGather { .. } => vec![],
            S::ImageStore { .. } => return Err(("textureStore".into(), *span)),
            S::ImageAtomic { .. } => return Err(("texture atomics".into(), *span)),
            S::Kill => return Err(("discard".into(), *span)),
            ref other => return Err((format!("the statement {}", name_of(other)), *span)),
        };
        for b in nested {
            check_block(b)?;
        }
    }
    Ok(())
}

/// The variant name of an IR node, as its debug text begins.
fn name_of(node: &impl std::fmt::Debug) -> String {
    let text = format!("{node:?}");
    text.split([' ', '(', '{']).next().unwrap_or("").to_string()
}

/// The built-in math functions the executor has.
const MATH: [M; 76] = [
    M::Modf,
    M::Frexp,
    M::Transpose,
    M::Determinant,
    M::Abs,
    M::Min,
    M::Max,
    M::Clamp,
    M::Saturate,
    M::Cos,
    M::Cosh,
    M::Sin,
    M::Sinh,
    M::Tan,
    M::Tanh,
    M::Acos,
    M::Asin,
    M::Atan,
    M::Atan2,
    M::Asinh,
    M::Acosh,
    M::Atanh,
    M::Radians,
    M::Degrees,
    M::Ceil,
    M::Floor,
    M::Round,
    M::Fract,
    M::Trunc,
    M::Exp,
    M::Exp2,
    M::Log,
    M::Log2,
    M::Pow,
    M::Dot,
    M::Length,
    M::Sign,
    M::Fma,
    M::Mix,
    M::Step,
    M::Sqrt,
    M::InverseSqrt,
    M::CountTrailingZeros,
    M::CountLeadingZeros,
    M::CountOneBits,
    M::ReverseBits,
    M::Pack2x16float,
    M::Unpack2x16float,
    M::Saturate,
    M::Normalize,
    M::Distance,
    M::Cross,
    M::SmoothStep,
    M::Reflect,
    M::FaceForward,
    M::Ldexp,
    M::ExtractBits,
    M::InsertBits,
    M::FirstLeadingBit,
    M::FirstTrailingBit,
    M::Refract,
    M::QuantizeToF16,
    M::Pack4x8snorm,
    M::Pack4x8unorm,
    M::Pack2x16snorm,
    M::Pack2x16unorm,
    M::Pack4xI8,
    M::Pack4xU8,
    M::Pack4xI8Clamp,
    M::Pack4xU8Clamp,
    M::Unpack4x8snorm,
    M::Unpack4x8unorm,
    M::Unpack2x16snorm,
    M::Unpack2x16unorm,
    M::Unpack4xI8,
    M::Unpack4xU8,
];
