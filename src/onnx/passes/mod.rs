//! Graph passes: rewrites of a model's graph at load, before [`super::plan::Plan`] schedules
//! it, that keep its outputs and make it cheaper to run. Each pass is one file, a function
//! that rewrites the graph in place and says how many rewrites it made:
//!
//! - `fold`: nodes whose inputs are all constants computed once, at load, on the session's
//!   device through the session's own operators (random operators are left alone, and so
//!   are results much larger than what they are computed from);
//! - `transpose`: a `Transpose` of a `Transpose` made one, and one keeping the axes in order
//!   dropped (a transpose is a strided view, which the operators read without a copy, so
//!   what is left to save is the step);
//! - `batchnorm`: a `BatchNormalization` of constant statistics folded into the weights and
//!   bias of the `Conv`, `Gemm` or `MatMul` before it;
//! - `gelu`, `layernorm`, `rmsnorm`: the primitive spellings of GELU (erf and tanh forms),
//!   layer normalisation and RMS normalisation that exporters write recognised and made one
//!   `Gelu`, `LayerNormalization` or `RMSNormalization` node;
//! - `attention`: scaled dot-product attention spelled in primitives (`MatMul`, a scale, an
//!   additive mask or a `Where`, `Softmax`, `MatMul`) made one `ai.unicompute` `Attention`
//!   node, which runs the library's fused attention (causal where the mask is a constant
//!   causal triangle);
//! - `fuse`: a `Conv`, `Gemm` or `MatMul` with constant weights and the bias add and
//!   activation after it made one `com.microsoft` `FusedConv` or `FusedGemm` node, which
//!   the library runs as one kernel with its epilogue;
//! - `chain`: a connected group of elementwise nodes (unary operators, binary arithmetic
//!   with broadcasting, float casts, scalar constants) whose intermediates nothing else reads
//!   made one `ai.unicompute` `Chain` node, which runs them as one generated kernel (and
//!   one by one where the library does not take the inputs' element types).
//!
//! They run in that order, each over the main graph and then over the subgraphs of `If`,
//! `Loop` and `Scan` (`scopes`), which see the constants they read from outside as their
//! own: a branch's constants, and what it computes from them alone, fold at load too.
//! A pass only rewrites what no other node, output or subgraph reads in between, so
//! the graph's outputs and the values asked for stay; `SessionOptions::passes` turns every
//! pass or some of them off, and [`PassReport`]s say what each did.

mod attention;
mod batchnorm;
mod chain;
mod edit;
mod fold;
mod fuse;
mod gelu;
mod norms;
mod scopes;
mod transpose;

use super::graph::Graph;
use crate::base::error::{Error, Result};
use crate::Device;

/// What a pass runs with: the session's device (which `fold` computes on) and the default
/// domain's opset.
pub(crate) struct Cx<'a> {
    /// The session's device.
    pub device: &'a Device,
    /// The model's default-domain opset.
    pub opset: i64,
}

/// One pass: rewrites the graph, giving how many rewrites it made.
type Pass = fn(&mut Graph, &Cx<'_>) -> Result<usize>;

/// Every pass, by name, in the order they run.
const PASSES: &[(&str, Pass)] = &[
    ("fold", fold::run),
    ("transpose", transpose::run),
    ("batchnorm", batchnorm::run),
    ("gelu", gelu::run),
    ("layernorm", norms::layer),
    ("rmsnorm", norms::rms),
    ("attention", attention::run),
    ("fuse", fuse::run),
    ("chain", chain::run),
];

/// Which graph passes a session runs at load: all by default.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Passes {
    /// Whether any pass runs.
    on: bool,
    /// The passes turned off by name.
    off: Vec<String>,
}

impl Default for Passes {
    fn default() -> Self {
        Passes::all()
    }
}

impl Passes {
    /// The names of every pass, in the order they run.
    pub fn names() -> Vec<&'static str> {
        PASSES.iter().map(|(n, _)| *n).collect()
    }

    /// Every pass.
    pub fn all() -> Passes {
        Passes {
            on: true,
            off: Vec::new(),
        }
    }

    /// No pass: the graph runs as the file has it.
    pub fn none() -> Passes {
        Passes {
            on: false,
            off: Vec::new(),
        }
    }

    /// These passes without the one called `name` (one of [`Passes::names`]; another name
    /// is an error when the session loads).
    pub fn without(mut self, name: &str) -> Passes {
        self.off.push(name.to_string());
        self
    }

    /// Whether the pass called `name` runs.
    pub fn runs(&self, name: &str) -> bool {
        self.on && !self.off.iter().any(|n| n == name)
    }

    /// An error for a name no pass has.
    fn check(&self) -> Result<()> {
        match self
            .off
            .iter()
            .find(|n| !Passes::names().contains(&n.as_str()))
        {
            Some(n) => Err(Error::Invalid(format!(
                "there is no graph pass '{n}'; the passes are: {}",
                Passes::names().join(", ")
            ))),
            None => Ok(()),
        }
    }
}

/// What one pass did to a session's graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PassReport {
    /// The pass's name.
    pub pass: &'static str,
    /// How many rewrites it made (nodes folded, patterns fused), its subgraphs' included.
    pub rewrites: usize,
    /// The main graph's node count after it.
    pub nodes: usize,
}

/// Runs the passes `passes` turns on over `g`, in order.
pub(crate) fn optimise(g: &mut Graph, passes: &Passes, cx: &Cx<'_>) -> Result<Vec<PassReport>> {
    passes.check()?;
    let mut reports = Vec::new();
    for &(name, pass) in PASSES.iter().filter(|(n, _)| passes.runs(n)) {
        let rewrites = scopes::everywhere(g, pass, cx)?;
        reports.push(PassReport {
            pass: name,
            rewrites,
            nodes: g.nodes.len(),
        });
    }
    Ok(reports)
}
