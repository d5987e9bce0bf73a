//! The session's own `ai.unicompute` `Chain` operator, which the `chain` graph pass makes of
//! a group of elementwise nodes: it runs them as one [`Chain`] kernel where the library takes
//! the inputs' dtypes, and otherwise runs the same steps one by one through the default
//! domain's operators, so it always gives what the nodes it replaced give.
//!
//! A node holds its steps in four attributes, one entry per step: `ops` (STRINGS, the ONNX
//! operator of the step, or `Constant` for a scalar), `args` (INTS, two per step: the values
//! it reads, `i < inputs` the node's input `i` and `inputs + j` step `j`; -1 for none; a
//! `Constant`'s second is its rank), `ints` (INTS: `Cast`'s `to`, a `Constant`'s element type
//! code, 1 for `Gelu`'s tanh form) and `floats` (FLOATS: a `Constant`'s value). The last step
//! is the output.

use super::{one, op, Ctx, OpDef};
use crate::base::error::{Error, Result};
use crate::onnx::attr::{Attr, Attrs};
use crate::onnx::elem::ElemType;
use crate::onnx::graph::Node;
use crate::onnx::value::{HostData, HostTensor, Val};
use crate::ops::chain::{self, Chain, Value};
use crate::ops::{BinaryOp, UnaryOp};
use crate::{DType, Tensor};

/// The `ai.unicompute` operators.
pub(super) const OPS: &[OpDef] = &[op("Chain", run).refusing(refuse)];

/// The domain of the session's own operators.
pub(crate) const DOMAIN: &str = "ai.unicompute";

/// The unary operators a chain takes, by ONNX name (`Gelu` apart: it has a form).
pub(crate) const UNARY: &[(&str, UnaryOp)] = &[
    ("Abs", UnaryOp::Abs),
    ("Neg", UnaryOp::Neg),
    ("Exp", UnaryOp::Exp),
    ("Log", UnaryOp::Log),
    ("Sqrt", UnaryOp::Sqrt),
    ("Sin", UnaryOp::Sin),
    ("Cos", UnaryOp::Cos),
    ("Tanh", UnaryOp::Tanh),
    ("Sigmoid", UnaryOp::Sigmoid),
    ("Relu", UnaryOp::Relu),
    ("Erf", UnaryOp::Erf),
    ("Softplus", UnaryOp::Softplus),
    ("HardSwish", UnaryOp::Hardswish),
    ("Floor", UnaryOp::Floor),
    ("Ceil", UnaryOp::Ceil),
    ("Round", UnaryOp::Round),
    ("Sign", UnaryOp::Sign),
];

/// The binary operators a chain takes, by ONNX name (`Sum`, `Min` and `Max` of two inputs).
pub(crate) const BINARY: &[(&str, BinaryOp)] = &[
    ("Add", BinaryOp::Add),
    ("Sum", BinaryOp::Add),
    ("Sub", BinaryOp::Sub),
    ("Mul", BinaryOp::Mul),
    ("Div", BinaryOp::Div),
    ("Pow", BinaryOp::Pow),
    ("Min", BinaryOp::Min),
    ("Max", BinaryOp::Max),
];

/// The op `table` has under ONNX name `op`.
pub(crate) fn lookup<T: Copy>(table: &[(&str, T)], op: &str) -> Option<T> {
    table.iter().find(|(n, _)| *n == op).map(|e| e.1)
}

/// One step of a `Chain` node, as its attributes hold it (see the module's notes).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Part {
    /// The ONNX operator, or `Constant`.
    pub op: String,
    /// The values read (-1 for none); a `Constant`'s rank second.
    pub args: [i64; 2],
    /// `Cast`'s `to`, a `Constant`'s element type code, 1 for `Gelu`'s tanh form.
    pub int: i64,
    /// A `Constant`'s value.
    pub float: f32,
}

/// The attributes holding `parts`.
pub(crate) fn attrs(parts: &[Part]) -> Attrs {
    Attrs::default()
        .with(
            "ops",
            Attr::Strings(parts.iter().map(|p| p.op.clone()).collect()),
        )
        .with(
            "args",
            Attr::Ints(parts.iter().flat_map(|p| p.args).collect()),
        )
        .with("ints", Attr::Ints(parts.iter().map(|p| p.int).collect()))
        .with(
            "floats",
            Attr::Floats(parts.iter().map(|p| p.float).collect()),
        )
}

/// The steps of chain node `n`, each reading only the inputs and earlier steps.
fn parts(n: &Node) -> std::result::Result<Vec<Part>, String> {
    let a = &n.attrs;
    let text = |e: Error| e.to_string();
    let (Some(ops), Some(args), Some(ints), Some(floats)) = (
        a.strings("ops").map_err(text)?,
        a.ints("args").map_err(text)?,
        a.ints("ints").map_err(text)?,
        a.floats("floats").map_err(text)?,
    ) else {
        return Err("it lacks one of the attributes ops, args, ints and floats".into());
    };
    let k = ops.len();
    if k == 0 || args.len() != 2 * k || ints.len() != k || floats.len() != k {
        return Err(format!(
            "it has {k} ops, {} args, {} ints and {} floats; expected one or more ops, \
             two args for each and one int and float each",
            args.len(),
            ints.len(),
            floats.len()
        ));
    }
    let inputs = n.inputs.len() as i64;
    let mut out = Vec::with_capacity(k);
    for (i, op) in ops.iter().enumerate() {
        let p = Part {
            op: op.clone(),
            args: [args[2 * i], args[2 * i + 1]],
            int: ints[i],
            float: floats[i],
        };
        let reads = arity(&p.op).ok_or_else(|| format!("step {i} is '{op}', no chain step"))?;
        let known = |v: i64| (0..inputs + i as i64).contains(&v);
        if !p.args[..reads].iter().all(|&v| known(v)) {
            return Err(format!(
                "step {i} reads {:?}, no input or earlier step",
                p.args
            ));
        }
        out.push(p);
    }
    Ok(out)
}

/// How many values a step of ONNX operator `op` reads (`Constant`: none).
fn arity(op: &str) -> Option<usize> {
    match op {
        "Constant" => Some(0),
        "Cast" | "Gelu" => Some(1),
        _ if lookup(UNARY, op).is_some() => Some(1),
        _ if lookup(BINARY, op).is_some() => Some(2),
        _ => None,
    }
}

/// Why chain node `n` cannot run: malformed steps or inputs left out.
fn refuse(n: &Node) -> Option<String> {
    if n.inputs.iter().any(Option::is_none) {
        return Some("an input is left out; a chain reads every input".into());
    }
    parts(n).err()
}

/// Runs the steps as one kernel where the library takes the inputs, else one by one.
fn run(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let parts = parts(c.node).map_err(|e| c.error(e))?;
    let tensors: Option<Vec<&Tensor>> = (c.inputs.iter())
        .map(|v| match v {
            Some(Val::Device(t)) => Some(t),
            _ => None,
        })
        .collect();
    if let (Some(tensors), Some(kernel)) = (tensors, kernel(&parts, c.inputs.len())) {
        let dtypes: Vec<DType> = tensors.iter().map(|t| t.dtype()).collect();
        if kernel.check(&dtypes).is_ok() {
            return one(chain::chain(c.queue, &kernel, &tensors)?);
        }
    }
    one_by_one(c, &parts)
}

/// The library's [`Chain`] of `parts` over `inputs` inputs, where every step is one it has.
fn kernel(parts: &[Part], inputs: usize) -> Option<Chain> {
    let value = |v: i64| {
        let v = usize::try_from(v).ok()?;
        Some(match v.checked_sub(inputs) {
            Some(step) => Value::Step(step),
            None => Value::Input(v),
        })
    };
    let dtype = |code: i64| {
        let elem = ElemType::from_code(i32::try_from(code).ok()?).ok()?;
        matches!(elem, ElemType::F32 | ElemType::F16 | ElemType::BF16)
            .then(|| elem.dtype())
            .flatten()
    };
    let mut chain = Chain::new();
    for p in parts {
        match p.op.as_str() {
            "Constant" => chain.scalar(f64::from(p.float), dtype(p.int)?),
            "Cast" => chain.cast(value(p.args[0])?, dtype(p.int)?),
            "Gelu" if p.int == 1 => chain.unary(UnaryOp::GeluTanh, value(p.args[0])?),
            "Gelu" => chain.unary(UnaryOp::GeluErf, value(p.args[0])?),
            _ => match (lookup(UNARY, &p.op), lookup(BINARY, &p.op)) {
                (Some(op), _) => chain.unary(op, value(p.args[0])?),
                (_, Some(op)) => chain.binary(op, value(p.args[0])?, value(p.args[1])?),
                _ => return None,
            },
        };
    }
    Some(chain)
}

/// The steps run one by one as the default domain's operators run the nodes they stand for.
fn one_by_one(c: &Ctx<'_>, parts: &[Part]) -> Result<Vec<Val>> {
    let mut vals = (0..c.inputs.len())
        .map(|i| c.value(i).cloned())
        .collect::<Result<Vec<Val>>>()?;
    for (i, p) in parts.iter().enumerate() {
        let v = match p.op.as_str() {
            "Constant" => Val::Host(HostTensor {
                elem: i32::try_from(p.int)
                    .map_err(|e| Error::Model(e.to_string()))
                    .and_then(ElemType::from_code)
                    .map_err(|e| c.error(format!("step {i}: {e}")))?,
                shape: vec![1; usize::try_from(p.args[1]).unwrap_or(0)],
                data: HostData::F32(vec![p.float]),
            }),
            _ => step(c, p, i, &vals)?,
        };
        vals.push(v);
    }
    vals.pop()
        .map(|v| vec![v])
        .ok_or_else(|| c.error("it has no steps".into()))
}

/// Step `i`, `p`, run by its operator on `vals` (the inputs and the earlier steps).
fn step(c: &Ctx<'_>, p: &Part, i: usize, vals: &[Val]) -> Result<Val> {
    let reads = arity(&p.op).ok_or_else(|| c.error(format!("step {i} is '{}'", p.op)))?;
    let inputs = p.args[..reads]
        .iter()
        .map(|&v| usize::try_from(v).ok().and_then(|v| vals.get(v)).cloned())
        .collect::<Vec<Option<Val>>>();
    let attrs = match p.op.as_str() {
        "Cast" => Attrs::default().with("to", Attr::Int(p.int)),
        "Gelu" if p.int == 1 => Attrs::default().with("approximate", Attr::String("tanh".into())),
        _ => Attrs::default(),
    };
    c.call(&p.op, inputs, attrs)
}
