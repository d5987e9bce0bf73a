//! Values the executor need not compute again, found once when a kernel is compiled: an
//! expression that reads no memory and no statement's result keeps its value through a call
//! (in a loop it is computed on the first pass only), and such an expression that repeats an
//! earlier one (`g.x` written four times) shares the earlier one's value. Pointers that loads
//! and stores take directly are not computed at all ([`super::direct`]).

use naga::{Expression as E, Handle};

use super::eval::for_operands;

/// What can be reused among the expressions of one function.
pub(super) struct Reuse {
    /// Whether each expression keeps its value through a call.
    pub invariant: Vec<bool>,
    /// The expression whose value each expression takes: itself, or an earlier equal one.
    pub slot: Vec<Handle<E>>,
    /// Whether each expression is a pointer that only loads and stores use, directly.
    pub direct: Vec<bool>,
    /// The expressions that are one component of an entry point's vector built-in (`gid.x`):
    /// the built-in and the component, made without the rest of the vector.
    pub component: Vec<Option<(naga::BuiltIn, usize)>>,
}

/// An invariant expression with its operands replaced by their slots, to find repeats.
#[derive(PartialEq)]
enum Key {
    /// A literal's type and exact bits (`-0.0` is not `0.0`, a NaN is itself).
    Literal(std::mem::Discriminant<naga::Literal>, u64),
    Constant(Handle<naga::Constant>),
    Argument(u32),
    Global(Handle<naga::GlobalVariable>),
    Local(Handle<naga::LocalVariable>),
    AccessIndex(Handle<E>, u32),
    Access(Handle<E>, Handle<E>),
    Unary(naga::UnaryOperator, Handle<E>),
    Binary(naga::BinaryOperator, Handle<E>, Handle<E>),
    As(Handle<E>, naga::ScalarKind, Option<u8>),
    Splat(naga::VectorSize, Handle<E>),
    Swizzle(naga::VectorSize, Handle<E>, [naga::SwizzleComponent; 4]),
    Length(Handle<E>),
}

/// What can be reused among `function`'s expressions (of `module`, validated as `info`);
/// `entry` when it is the entry point.
pub(super) fn reuse(
    module: &naga::Module,
    info: &naga::valid::FunctionInfo,
    function: &naga::Function,
    entry: bool,
) -> Reuse {
    let n = function.expressions.len();
    let direct = super::direct::direct(module, info, function);
    let component = function
        .expressions
        .iter()
        .map(|(_, e)| if entry { component(function, e) } else { None })
        .collect();
    let mut out = Reuse {
        invariant: Vec::with_capacity(n),
        slot: Vec::with_capacity(n),
        direct,
        component,
    };
    let mut seen: Vec<(Key, Handle<E>)> = Vec::new();
    for (h, e) in function.expressions.iter() {
        let invariant = keeps_value(e)
            && operands(e)
                .iter()
                .all(|o| out.invariant.get(o.index()).copied().unwrap_or(false));
        out.invariant.push(invariant);
        let key = if invariant { key(e, &out.slot) } else { None };
        let slot = match key {
            Some(k) => match seen.iter().find(|(s, _)| *s == k) {
                Some(&(_, earlier)) => earlier,
                None => {
                    seen.push((k, h));
                    h
                }
            },
            None => h,
        };
        out.slot.push(slot);
    }
    out
}

/// Whether `e` can keep its value through a call, given operands that do: it reads no memory
/// and is no statement's result.
fn keeps_value(e: &E) -> bool {
    matches!(
        *e,
        E::Literal(_)
            | E::Constant(_)
            | E::Override(_)
            | E::ZeroValue(_)
            | E::FunctionArgument(_)
            | E::GlobalVariable(_)
            | E::LocalVariable(_)
    ) || matches!(
        *e,
        E::Compose { .. }
            | E::Splat { .. }
            | E::Swizzle { .. }
            | E::Access { .. }
            | E::AccessIndex { .. }
            | E::ArrayLength(_)
    ) || matches!(
        *e,
        E::Unary { .. }
            | E::Binary { .. }
            | E::Select { .. }
            | E::Relational { .. }
            | E::Math { .. }
            | E::As { .. }
    )
}

/// The built-in and component that `e` reads when it is `id.x`, `id.y` or `id.z` of an entry
/// point's vector built-in argument `id`.
fn component(function: &naga::Function, e: &E) -> Option<(naga::BuiltIn, usize)> {
    use naga::BuiltIn as B;
    let E::AccessIndex { base, index } = *e else {
        return None;
    };
    let E::FunctionArgument(i) = function.expressions[base] else {
        return None;
    };
    match function.arguments.get(i as usize)?.binding {
        Some(naga::Binding::BuiltIn(
            b @ (B::GlobalInvocationId | B::LocalInvocationId | B::WorkGroupId),
        )) if index < 3 => Some((b, index as usize)),
        _ => None,
    }
}

fn operands(e: &E) -> Vec<Handle<E>> {
    let mut all = Vec::new();
    let _ = for_operands(e, |o| {
        all.push(o);
        Ok(())
    });
    all
}

/// The bits of a literal (of the types the executor runs).
fn bits(l: naga::Literal) -> Option<u64> {
    use naga::Literal as L;
    Some(match l {
        L::F32(v) => u64::from(v.to_bits()),
        L::I32(v) => v as u32 as u64,
        L::U32(v) => u64::from(v),
        L::Bool(v) => u64::from(v),
        L::AbstractInt(v) => v as u64,
        L::AbstractFloat(v) => v.to_bits(),
        _ => return None,
    })
}

/// The key of invariant expression `e` (of the kinds worth sharing), its operands by slot.
fn key(e: &E, slot: &[Handle<E>]) -> Option<Key> {
    let s = |h: Handle<E>| slot[h.index()];
    Some(match *e {
        E::Literal(l) => Key::Literal(std::mem::discriminant(&l), bits(l)?),
        E::Constant(c) => Key::Constant(c),
        E::FunctionArgument(i) => Key::Argument(i),
        E::GlobalVariable(g) => Key::Global(g),
        E::LocalVariable(l) => Key::Local(l),
        E::AccessIndex { base, index } => Key::AccessIndex(s(base), index),
        E::Access { base, index } => Key::Access(s(base), s(index)),
        E::Unary { op, expr } => Key::Unary(op, s(expr)),
        E::Binary { op, left, right } => Key::Binary(op, s(left), s(right)),
        E::As {
            expr,
            kind,
            convert,
        } => Key::As(s(expr), kind, convert),
        E::Splat { size, value } => Key::Splat(size, s(value)),
        E::Swizzle {
            size,
            vector,
            pattern,
        } => Key::Swizzle(size, s(vector), pattern),
        E::ArrayLength(p) => Key::Length(s(p)),
        _ => return None,
    })
}
