//! Constant folding: a node whose inputs are all constants is computed once, at load, on the
//! session's device through the session's own operator (so the value is the one a run would
//! compute), and its outputs become constants. A browser's GPU cannot give a value back while
//! the model loads (its reads resolve in the page's event loop), so there the CPU computes
//! them. Random operators are left alone, as are nodes with subgraphs, operators whose output
//! size their inputs' values set (`Expand`, `Tile`: a large constant from a few bytes, or a
//! malformed file's any size), inputs past [`LIMIT`] elements, and results larger than
//! [`GROWTH`] times what they are computed from (and above [`SMALL`] bytes). The exception is
//! a `ConstantOfShape` of a constant shape of at most [`LIMIT`] elements, whatever its size:
//! files whose weights were left out to keep them small (the `onnx` package's light models)
//! hold one in each weight's place, folded so that the weight passes see weights, as
//! onnxruntime folds them. A node whose computation fails here is kept, for its run to report.

use half::{bf16, f16};
use prost::bytes::Bytes;

use super::{edit, Cx};
use crate::base::error::Result;
use crate::onnx::attr::Attr;
use crate::onnx::constant::Constant;
use crate::onnx::graph::{Dim, Graph, Node, Origin, Value, ValueId};
use crate::onnx::ops;
use crate::onnx::plan::{now, Exec, Plan};
use crate::onnx::schedule::schedule;
use crate::onnx::value::HostTensor;
use crate::onnx::ElemType;

/// The operators never folded: what they give is random (or, for `Dropout`, may be).
const RANDOM: &[&str] = &[
    "RandomNormal",
    "RandomUniform",
    "RandomNormalLike",
    "RandomUniformLike",
    "Multinomial",
    "Bernoulli",
    "Dropout",
];

/// The operators whose outputs' size the values of their inputs or attributes set (a shape,
/// repeats, scales, paddings, a hidden size): never folded, as a malformed file could ask
/// for any size.
const GENERATORS: &[&str] = &[
    "ConstantOfShape",
    "Expand",
    "Tile",
    "Range",
    "OneHot",
    "Resize",
    "Upsample",
    "Pad",
    "ConvTranspose",
    "Conv",
    "MaxPool",
    "AveragePool",
    "LSTM",
    "GRU",
    "RNN",
    "GroupQueryAttention",
    "MatMulNBits",
];

/// A folded node's inputs hold at most this many elements, summed and multiplied: the
/// product bounds what the other operators give (a broadcast, a product, a gather), the sum
/// what `Concat` gives.
const LIMIT: usize = 1 << 24;

/// How many times the bytes of its constant inputs a folded node's outputs may take.
const GROWTH: usize = 2;

/// Outputs up to this many bytes are folded whatever their inputs' size.
const SMALL: usize = 1 << 20;

/// Folds every node of `g` it can, in run order (so that chains fold whole); gives how many.
pub(super) fn run(g: &mut Graph, cx: &Cx<'_>) -> Result<usize> {
    let device = cx.device.readable_now()?;
    let cx = &Cx {
        device: &device,
        ..*cx
    };
    let order = schedule(g)?.order;
    let mut dead = vec![false; g.nodes.len()];
    for n in order {
        if !foldable(g, &g.nodes[n]) {
            continue;
        }
        let Some(outputs) = compute(g, n, cx) else {
            continue;
        };
        for (v, c) in outputs {
            let value = &mut g.values[v];
            value.shape = Some(c.dims.iter().map(|&d| Dim::Fixed(d)).collect());
            value.elem = Some(c.elem);
            value.origin = Origin::Constant(c);
        }
        dead[n] = true;
    }
    edit::remove(g, &dead)?;
    Ok(dead.iter().filter(|&&d| d).count())
}

/// Whether `n` may be folded: a deterministic operator the session runs, without
/// subgraphs and not one of the [`GENERATORS`] (but for a [`bounded_fill`]), all of whose
/// inputs are constants of at most [`LIMIT`] elements in all (summed for `Concat`, whose
/// output is their sum; else also multiplied).
fn foldable(g: &Graph, n: &Node) -> bool {
    let sizes: Option<Vec<usize>> = (n.inputs.iter().flatten())
        .map(|&v| edit::constant(g, v).map(|c| c.numel()))
        .collect();
    let Some(sizes) = sizes else {
        return false;
    };
    let sum = sizes.iter().fold(0usize, |a, &s| a.saturating_add(s));
    let product = (sizes.iter()).fold(1usize, |a, &s| a.saturating_mul(s.max(1)));
    let bodies = n.attrs.iter().any(|(_, a)| matches!(a, Attr::Graph(_)));
    let op = n.op.as_str();
    let bound = if edit::is(n, "Concat") {
        sum
    } else {
        sum.max(product)
    };
    bound <= LIMIT
        && !bodies
        && !RANDOM.contains(&op)
        && (!GENERATORS.contains(&op) || bounded_fill(g, n))
        && ops::find(&n.domain, &n.op).is_some()
}

/// Whether `n` is a `ConstantOfShape` whose constant shape asks for at most [`LIMIT`]
/// elements.
fn bounded_fill(g: &Graph, n: &Node) -> bool {
    let shape = n.inputs.first().copied().flatten();
    let dims = shape.and_then(|v| edit::constant(g, v)?.to_i64().ok());
    let numel = |dims: Vec<i64>| {
        (dims.iter()).try_fold(1usize, |a, &d| a.checked_mul(usize::try_from(d).ok()?))
    };
    n.op == "ConstantOfShape" && dims.and_then(numel).is_some_and(|e| e <= LIMIT)
}

/// Node `n`'s outputs computed on `cx`'s device as constants, by value id; `None`
/// where the node does not run here or its outputs are too large.
fn compute(g: &Graph, n: usize, cx: &Cx<'_>) -> Option<Vec<(ValueId, Constant)>> {
    let node = &g.nodes[n];
    let mut mini = Graph::default();
    let mut copy = |v: ValueId, origin: Origin| {
        let value = Value {
            origin,
            ..g.values[v].clone()
        };
        mini.values.push(value);
        mini.values.len() - 1
    };
    let inputs: Vec<Option<ValueId>> = (node.inputs.iter())
        .map(|v| v.map(|v| copy(v, g.values[v].origin.clone())))
        .collect();
    let outputs: Vec<Option<ValueId>> = (node.outputs.iter().enumerate())
        .map(|(slot, v)| v.map(|v| copy(v, Origin::Node { node: 0, slot })))
        .collect();
    mini.outputs = outputs.iter().flatten().copied().collect();
    mini.nodes.push(Node {
        inputs,
        outputs,
        ..node.clone()
    });
    let mut missing = Vec::new();
    let plan = Plan::new(&mini, cx.device, cx.opset, "", &mut missing, false).ok()?;
    if !missing.is_empty() {
        return None;
    }
    let queue = cx.device.queue();
    let exec = Exec {
        device: cx.device,
        queue: &queue,
        opset: cx.opset,
        timer: None,
    };
    let vals = now(plan.run(&mini, exec, plan.env(), None, None)).ok()?;
    let inputs: usize = (node.inputs.iter().flatten())
        .filter_map(|&v| edit::constant(g, v))
        .map(|c| c.bytes.len())
        .sum();
    let mut out = Vec::new();
    for (&v, val) in node.outputs.iter().flatten().zip(vals) {
        let host = now(val.to_host()).ok()?;
        out.push((v, encode(&host, g.values[v].elem.unwrap_or(host.elem))?));
    }
    let bytes: usize = out.iter().map(|(_, c)| c.bytes.len()).sum();
    let fill = node.op == "ConstantOfShape";
    (fill || bytes <= SMALL.max(GROWTH * inputs)).then_some(out)
}

/// `h` stored as a constant of element type `elem` (the one the graph declares); `None` for
/// strings.
fn encode(h: &HostTensor, elem: ElemType) -> Option<Constant> {
    let f = || h.to_f64().into_iter();
    let i = || h.to_i64().into_iter();
    let bytes: Vec<u8> = match elem {
        ElemType::F32 => f().flat_map(|x| (x as f32).to_le_bytes()).collect(),
        ElemType::F64 => f().flat_map(f64::to_le_bytes).collect(),
        ElemType::F16 => f().flat_map(|x| f16::from_f64(x).to_le_bytes()).collect(),
        ElemType::BF16 => f().flat_map(|x| bf16::from_f64(x).to_le_bytes()).collect(),
        ElemType::I8 => i().map(|x| x as i8 as u8).collect(),
        ElemType::U8 | ElemType::Bool => i().map(|x| x as u8).collect(),
        ElemType::I16 => i().flat_map(|x| (x as i16).to_le_bytes()).collect(),
        ElemType::U16 => i().flat_map(|x| (x as u16).to_le_bytes()).collect(),
        ElemType::I32 => i().flat_map(|x| (x as i32).to_le_bytes()).collect(),
        ElemType::U32 => i().flat_map(|x| (x as u32).to_le_bytes()).collect(),
        ElemType::I64 => i().flat_map(i64::to_le_bytes).collect(),
        ElemType::U64 => i().flat_map(|x| (x as u64).to_le_bytes()).collect(),
        ElemType::String => return None,
    };
    Some(Constant {
        elem,
        dims: h.shape.clone(),
        bytes: Bytes::from(bytes),
        strings: Vec::new(),
    })
}
