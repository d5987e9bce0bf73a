//! The ONNX operators a session runs, each mapped onto the op API (never a backend): one
//! table row per operator, in files by family (`math`, `logic`, `shape`, `slice`, `pad`,
//! `nn`, `norms`, `conv`, `conv_transpose`, `resize`, `control`, `recurrent`, `indexing`,
//! `scatter`, `einsum`, `sequence`; `depth` runs 3-D ones on 2-D ops), and the `com.microsoft`
//! contrib operators (`microsoft`, and `quant` for `MatMulNBits`), and the session's own
//! `ai.unicompute` `Chain` (`chain`) and `Attention` (`attention`), which the graph passes make.

mod attention;
pub(crate) mod chain;
mod control;
mod conv;
mod conv_transpose;
mod depth;
mod einsum;
mod indexing;
mod logic;
mod math;
mod microsoft;
mod nn;
mod norms;
mod pad;
mod quant;
mod recurrent;
mod resize;
mod scatter;
mod sequence;
mod shape;
mod slice;

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;

use super::attr::Attrs;
use super::graph::{Graph, Node};
use super::plan::{Exec, Plan, Scope, Timer};
use super::value::{HostTensor, Sequence, Val};
use crate::base::error::{Error, Result};
use crate::{Device, Queue, Tensor};

/// What an operator runs with: the device, its queue, the model's opset and the node.
pub(crate) struct Ctx<'a> {
    /// The session's device.
    pub device: &'a Device,
    /// The queue the run records on.
    pub queue: &'a Queue,
    /// The default domain's opset version the model imports.
    pub opset: i64,
    /// Where each node's time goes, in a profiled run.
    pub timer: Option<Timer<'a>>,
    /// The node being run.
    pub node: &'a Node,
    /// Its inputs, `None` where an optional one is left out.
    pub inputs: &'a [Option<Val>],
    /// The plans of its GRAPH attributes, by attribute name.
    pub bodies: &'a [(String, Plan)],
    /// The running graph's values, where a subgraph finds what it names from outside.
    pub scope: &'a Scope<'a>,
    /// The input the operator needs on the host and found on the device, if any.
    pub wanted: Cell<Option<usize>>,
    /// Where the run would have output 0 written, if the operator can: a Concat's output
    /// made early, for that Concat, or its slice, for a node writing one of its inputs
    /// (`super::joins`). An operator that takes it gives that very view as its output.
    pub dest: Option<&'a Tensor>,
}

/// An operator that computes the node's outputs from its inputs at once.
pub(crate) type Now = fn(&Ctx<'_>) -> Result<Vec<Val>>;

/// The outputs of a control-flow operator, to be awaited.
pub(crate) type Pending<'c> = Pin<Box<dyn Future<Output = Result<Vec<Val>>> + 'c>>;

/// A control-flow operator: runs subgraphs, awaiting their runs and the device values that
/// steer them (a condition, a trip count), which a browser cannot wait for inside a call.
pub(crate) type Flow = for<'c> fn(&'c Ctx<'c>) -> Pending<'c>;

/// How an operator runs.
#[derive(Clone, Copy)]
pub(crate) enum Run {
    /// At once ([`Now`]).
    Now(Now),
    /// As a future the session awaits ([`Flow`]).
    Flow(Flow),
}

/// One operator of the default domain.
pub(crate) struct OpDef {
    /// The operator's name.
    pub name: &'static str,
    /// How it runs.
    pub run: Run,
    /// How many of its outputs it computes (a node asking for more is refused at load).
    pub outputs: usize,
    /// Why a node of it cannot run (an attribute or input it does not take), checked at load.
    pub refuse: fn(&Node) -> Option<String>,
}

/// An operator computing one output, taking every node of it.
pub(crate) const fn op(name: &'static str, run: Now) -> OpDef {
    OpDef {
        name,
        run: Run::Now(run),
        outputs: 1,
        refuse: accept,
    }
}

/// A control-flow operator computing one output, taking every node of it.
pub(crate) const fn flow(name: &'static str, run: Flow) -> OpDef {
    OpDef {
        name,
        run: Run::Flow(run),
        outputs: 1,
        refuse: accept,
    }
}

/// Takes every node.
fn accept(_: &Node) -> Option<String> {
    None
}

impl OpDef {
    /// The operator computing `n` outputs.
    pub(crate) const fn outputs(self, n: usize) -> OpDef {
        OpDef { outputs: n, ..self }
    }

    /// The operator refusing the nodes `refuse` finds a reason against.
    pub(crate) const fn refusing(self, refuse: fn(&Node) -> Option<String>) -> OpDef {
        OpDef { refuse, ..self }
    }

    /// Why `node` cannot run, if it cannot; `used` says which values anything reads (an
    /// output past those the operator computes is refused only if it is used).
    pub(crate) fn check(&self, node: &Node, used: &[bool]) -> Option<String> {
        if let Some(i) = node
            .outputs
            .iter()
            .skip(self.outputs)
            .position(|v| v.is_some_and(|v| used[v]))
        {
            return Some(format!("output {} is not computed yet", self.outputs + i));
        }
        (self.refuse)(node)
    }
}

/// Every operator of the default domain a session runs (but the contrib ones).
fn all() -> impl Iterator<Item = &'static OpDef> {
    math::OPS
        .iter()
        .chain(logic::OPS)
        .chain(shape::OPS)
        .chain(nn::OPS)
        .chain(conv::OPS)
        .chain(conv_transpose::OPS)
        .chain(resize::OPS)
        .chain(norms::OPS)
        .chain(control::OPS)
        .chain(recurrent::OPS)
        .chain(indexing::OPS)
        .chain(scatter::OPS)
        .chain(einsum::OPS)
        .chain(sequence::OPS)
}

/// The operator `op` of `domain`, if a session can run it: the default domain's (with the
/// contrib operators onnxruntime puts there), `com.microsoft`'s, or the session's own.
pub(crate) fn find(domain: &str, op: &str) -> Option<&'static OpDef> {
    match domain {
        "" | "ai.onnx" => all()
            .chain(microsoft::DEFAULT_DOMAIN)
            .find(|d| d.name == op),
        "com.microsoft" => (microsoft::OPS.iter())
            .chain(quant::OPS)
            .find(|d| d.name == op),
        chain::DOMAIN => (chain::OPS.iter())
            .chain(attention::OPS)
            .find(|d| d.name == op),
        _ => None,
    }
}

/// The names of every operator a session runs, of either domain, sorted.
pub fn supported() -> Vec<&'static str> {
    let contrib = microsoft::OPS.iter().chain(quant::OPS);
    let mut names: Vec<&'static str> = all().chain(contrib).map(|d| d.name).collect();
    names.sort_unstable();
    names.dedup();
    names
}

impl Ctx<'_> {
    /// The node's attributes.
    pub fn attrs(&self) -> &Attrs {
        &self.node.attrs
    }

    /// Input `i`, if given: a tensor or a sequence.
    pub fn opt(&self, i: usize) -> Option<&Val> {
        self.inputs.get(i).and_then(Option::as_ref)
    }

    /// Input `i`, which the operator needs: a tensor or a sequence.
    pub fn value(&self, i: usize) -> Result<&Val> {
        self.opt(i)
            .ok_or_else(|| self.error(format!("input {i} is missing; expected {} inputs", i + 1)))
    }

    /// Input `i`, which the operator needs as a tensor (a sequence is an error).
    pub fn input(&self, i: usize) -> Result<&Val> {
        match self.value(i)? {
            Val::Seq(s) => Err(self.not_a_tensor(i, s)),
            v => Ok(v),
        }
    }

    /// The error for input `i`, sequence `s`, where a tensor is expected.
    fn not_a_tensor(&self, i: usize, s: &Sequence) -> Error {
        self.error(format!(
            "input {i} is a sequence of {} {} tensors; expected a tensor",
            s.len(),
            s.elem()
        ))
    }

    /// Input `i`, which the operator needs as a sequence (a tensor is an error).
    pub fn sequence(&self, i: usize) -> Result<&Sequence> {
        match self.value(i)? {
            Val::Seq(s) => Ok(s),
            v => Err(self.error(format!(
                "input {i} is a tensor of shape {:?}; expected a sequence",
                v.shape()?
            ))),
        }
    }

    /// Input `i` as a tensor on the device.
    pub fn tensor(&self, i: usize) -> Result<Tensor> {
        self.input(i)?.tensor(self.device)
    }

    /// Input `i` as a tensor on the device, if given.
    pub fn opt_tensor(&self, i: usize) -> Result<Option<Tensor>> {
        match self.opt(i) {
            Some(_) => self.tensor(i).map(Some),
            None => Ok(None),
        }
    }

    /// Input `i` on the host. One still on the device is an error that names it in
    /// [`Ctx::wanted`]: the session reads it back and runs the node again (operators never
    /// wait for the device, which a browser cannot).
    pub fn host(&self, i: usize) -> Result<HostTensor> {
        match self.value(i)? {
            Val::Host(h) => Ok(h.clone()),
            Val::Seq(s) => Err(self.not_a_tensor(i, s)),
            Val::Device(_) => {
                self.wanted.set(Some(i));
                Err(Error::Internal(format!(
                    "{}: input {i} is on the device; the session reads it back first",
                    self.node.label()
                )))
            }
        }
    }

    /// Input `i` on the host ([`Ctx::host`]), if given.
    pub fn opt_host(&self, i: usize) -> Result<Option<HostTensor>> {
        match self.opt(i) {
            Some(_) => self.host(i).map(Some),
            None => Ok(None),
        }
    }

    /// Input `i` as integers (axes, shapes, indices), if given.
    pub fn ints(&self, i: usize) -> Result<Option<Vec<i64>>> {
        Ok(self.opt_host(i)?.map(|h| h.to_i64()))
    }

    /// An INT attribute, or `default`.
    pub fn int(&self, name: &str, default: i64) -> Result<i64> {
        Ok(self.attrs().int(name)?.copied().unwrap_or(default))
    }

    /// A FLOAT attribute, or `default`.
    pub fn float(&self, name: &str, default: f32) -> Result<f32> {
        Ok(self.attrs().float(name)?.copied().unwrap_or(default))
    }

    /// An INTS attribute, if the node has it.
    pub fn int_list(&self, name: &str) -> Result<Option<Vec<i64>>> {
        Ok(self.attrs().ints(name)?.cloned())
    }

    /// A STRING attribute, or `default`.
    pub fn string(&self, name: &str, default: &str) -> Result<String> {
        Ok(self
            .attrs()
            .string(name)?
            .cloned()
            .unwrap_or_else(|| default.to_string()))
    }

    /// `axis` (negative counts from the end) as an index into `rank` axes.
    pub fn axis(&self, axis: i64, rank: usize) -> Result<usize> {
        let r = rank as i64;
        if axis < -r.max(1) || axis >= r.max(1) {
            return Err(self.error(format!("axis {axis} is outside a rank-{rank} input")));
        }
        Ok(if axis < 0 { axis + r } else { axis } as usize)
    }

    /// What the steps of this run share, for running a subgraph.
    pub fn exec(&self) -> Exec<'_> {
        Exec {
            device: self.device,
            queue: self.queue,
            opset: self.opset,
            timer: self.timer,
        }
    }

    /// The subgraph in GRAPH attribute `name`, with its plan.
    pub fn body(&self, name: &str) -> Result<(&Graph, &Plan)> {
        let graph = self.attrs().graph(name)?;
        let plan = self.bodies.iter().find(|(n, _)| n == name);
        match (graph, plan) {
            (Some(g), Some((_, p))) => Ok((g, p)),
            _ => Err(self.error(format!("the subgraph '{name}' is missing"))),
        }
    }

    /// An error about this node.
    pub fn error(&self, what: String) -> Error {
        Error::Model(format!("{}: {what}", self.node.label()))
    }

    /// Output 0 of the default domain's operator `op` run on `inputs` with `attrs`, as a
    /// step of this node (the session's own operators run what they stand for this way).
    pub fn call(&self, op: &str, inputs: Vec<Option<Val>>, attrs: Attrs) -> Result<Val> {
        let def = find("", op).ok_or_else(|| self.error(format!("'{op}' is no operator")))?;
        let node = Node {
            name: format!("{} {op}", self.node.name),
            op: op.into(),
            domain: String::new(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            attrs,
        };
        let sub = Ctx {
            device: self.device,
            queue: self.queue,
            opset: self.opset,
            timer: self.timer,
            node: &node,
            inputs: &inputs,
            bodies: &[],
            scope: self.scope,
            wanted: Cell::new(None),
            dest: None,
        };
        let Run::Now(run) = def.run else {
            return Err(self.error(format!(
                "'{op}' runs subgraphs, which a step of another node cannot"
            )));
        };
        let mut out = run(&sub)?;
        if out.is_empty() {
            return Err(Error::Internal(format!("{}: no output", node.label())));
        }
        Ok(out.swap_remove(0))
    }
}

/// One device output.
pub(crate) fn one(t: Tensor) -> Result<Vec<Val>> {
    Ok(vec![Val::Device(t)])
}
