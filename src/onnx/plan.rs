//! A graph checked and ready to run: its schedule, the operator of each step, its constants,
//! and the plans of the subgraphs its nodes hold (the branches of `If`, the body of `Loop`).
//! A run reads the values of enclosing graphs by name through a chain of scopes; what each
//! step frees and which values come from outside are worked out once, when the plan is made.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;

use super::attr::Attr;
use super::elem::ElemType;
use super::graph::{Graph, Node, Origin, ValueId};
use super::joins::Joins;
use super::memory::Trace;
use super::ops::{self, Ctx, OpDef, Run};
use super::schedule::{reads, schedule, Schedule};
use super::value::{HostTensor, Val};
use crate::base::error::{Error, Result};
use crate::{DType, Device, Queue, Tensor};

/// How long one node of a profiled run took (`Session::run_profiled`). A node inside a
/// subgraph (a branch of `If`, the body of `Loop` or `SequenceMap`) has an entry of its own
/// each time it runs, after the entry of the node that holds it.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeTime {
    /// The node, as errors name it (`node 'conv1' (Conv)`); inside a subgraph, after the
    /// nodes and attributes that hold it (`node 'if' (If) › then_branch › node 'c' (Conv)`).
    pub node: String,
    /// Its operator.
    pub op: &'static str,
    /// When it started, in microseconds from an arbitrary origin.
    pub start_us: f64,
    /// How long it took, its device work and the nodes of its subgraphs included.
    pub micros: f64,
    /// Its own time: `micros` less the times of the nodes of its subgraphs. The own times
    /// of a run's entries add up to the run's, as the `micros` of the main graph's do.
    pub self_micros: f64,
}

/// Where a profiled run's nodes put their times, and the path that names the nodes of the
/// graph running (`node 'if' (If) › then_branch › `; empty for the main graph).
#[derive(Clone, Copy)]
pub(crate) struct Timer<'a> {
    /// The run's times so far.
    pub times: &'a RefCell<Vec<NodeTime>>,
    /// What the names of the running graph's nodes start with.
    pub path: &'a str,
}

impl Timer<'_> {
    /// Puts the time of `node` (operator `op`), which started at `start` when `times` held
    /// `at` entries, before the entries its subgraphs' nodes added since.
    fn record(self, at: usize, start: f64, node: &Node, op: &'static str) {
        let micros = clock::now_us() - start;
        let mut times = self.times.borrow_mut();
        let inner: f64 = times[at..].iter().map(|t| t.self_micros).sum();
        let time = NodeTime {
            node: format!("{}{}", self.path, node.label()),
            op,
            start_us: start,
            micros,
            self_micros: (micros - inner).max(0.0),
        };
        times.insert(at, time);
    }
}

/// Microseconds for profiles: a monotonic clock natively, the page's clock in wasm.
pub(crate) mod clock {
    /// Microseconds since an arbitrary origin.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn now_us() -> f64 {
        static ORIGIN: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        ORIGIN
            .get_or_init(std::time::Instant::now)
            .elapsed()
            .as_secs_f64()
            * 1e6
    }

    /// Microseconds since an arbitrary origin.
    #[cfg(target_arch = "wasm32")]
    pub fn now_us() -> f64 {
        js_sys::Date::now() * 1e3
    }
}

/// A graph's run: schedule, operators, constants and subgraph plans.
pub(crate) struct Plan {
    /// The run order and last uses.
    schedule: Schedule,
    /// One per scheduled node, in schedule order.
    steps: Vec<Step>,
    /// The value of each constant, on the device or (small integers) the host.
    constants: Vec<Option<Val>>,
    /// The values of the graph by name, as subgraphs look them up.
    names: HashMap<String, ValueId>,
    /// The values read from the enclosing graphs (`Origin::Outer`), by id and name.
    outer: Vec<(ValueId, String)>,
    /// The Concats whose inputs steps write in place, and those steps.
    joins: Joins,
}

/// One scheduled node: its operator, the plans of its GRAPH attributes, and the values
/// nothing reads after it.
struct Step {
    op: &'static OpDef,
    bodies: Vec<(String, Plan)>,
    frees: Vec<ValueId>,
}

/// One step of a run: the node, its operator and subgraph plans, and where its output 0 may
/// be written ([`Joins::dest`]).
#[derive(Clone, Copy)]
struct Turn<'a> {
    node: &'a Node,
    step: &'a Step,
    dest: Option<&'a Tensor>,
}

/// What every step of a run shares: the device, the queue and the model's opset.
#[derive(Clone, Copy)]
pub(crate) struct Exec<'a> {
    /// The session's device.
    pub device: &'a Device,
    /// The queue the run records on.
    pub queue: &'a Queue,
    /// The default domain's opset version the model imports.
    pub opset: i64,
    /// Where each node's time goes, in a profiled run.
    pub timer: Option<Timer<'a>>,
}

/// The values of a running graph, and the scopes of the graphs around it: how a subgraph
/// finds the values it names from outside.
pub(crate) struct Scope<'a> {
    graph: &'a Graph,
    names: &'a HashMap<String, ValueId>,
    values: Values<'a>,
    outer: Option<&'a Scope<'a>>,
}

impl Scope<'_> {
    /// The value called `name` here or in an enclosing scope, as a node reads it ([`read`]).
    fn find(&self, name: &str, x: Exec<'_>) -> Option<Result<Val>> {
        let here =
            (self.names.get(name)).and_then(|&id| read(self.graph, x, self.values, id).transpose());
        here.or_else(|| self.outer.and_then(|o| o.find(name, x)))
    }
}

/// The values of a running graph: those its run has set (`env`), else its constants, which
/// the plan holds for every run (a run does not copy them).
#[derive(Clone, Copy)]
pub(crate) struct Values<'a> {
    /// The run's values by id: the feeds and what its steps wrote.
    pub env: &'a [Option<Val>],
    /// The plan's constants by id.
    pub constants: &'a [Option<Val>],
}

impl<'a> Values<'a> {
    /// Value `id`, if the run or the plan holds it.
    pub(crate) fn get(self, id: ValueId) -> Option<&'a Val> {
        let set = self.env.get(id).and_then(Option::as_ref);
        set.or_else(|| self.constants.get(id).and_then(Option::as_ref))
    }
}

impl Plan {
    /// The plan of `g`. Every node it cannot run goes to `missing`, named with `path` (the
    /// nodes and attributes that hold `g`, empty for the main graph); where any is missing
    /// the plan must not run, and its constants are not uploaded. With `f16_weights`, large
    /// f32 constants are held in f16 ([`Val::from_constant`]) and widened where read.
    pub(crate) fn new(
        g: &Graph,
        device: &Device,
        opset: i64,
        path: &str,
        missing: &mut Vec<String>,
        f16_weights: bool,
    ) -> Result<Plan> {
        let schedule = schedule(g)?;
        let mut steps = Vec::with_capacity(schedule.order.len());
        for (step, &n) in schedule.order.iter().enumerate() {
            let node = &g.nodes[n];
            let label = format!("{path}{}", node.label());
            let Some(op) = ops::find(&node.domain, &node.op) else {
                let domain = match node.domain.as_str() {
                    "" => "ai.onnx",
                    d => d,
                };
                missing.push(format!("{label} of domain {domain} (opset {opset})"));
                continue;
            };
            let legacy = (opset < 7).then(|| super::legacy::refusal(node)).flatten();
            if let Some(why) = op.check(node, &schedule.used).or(legacy) {
                missing.push(format!("{label}: {why}"));
            }
            let mut bodies = Vec::new();
            for (name, a) in node.attrs.iter() {
                if let Attr::Graph(body) = a {
                    let inner = format!("{label} › {name} › ");
                    let plan = Plan::new(body, device, opset, &inner, missing, f16_weights)?;
                    bodies.push((name.to_string(), plan));
                }
            }
            let mut frees = reads(g, node);
            frees.retain(|&v| schedule.last_use[v] == Some(step));
            frees.sort_unstable();
            frees.dedup();
            steps.push(Step { op, bodies, frees });
        }
        let constants = if missing.is_empty() {
            let layers = layer_weights(g);
            (g.values.iter().zip(layers))
                .map(|(v, layer)| match &v.origin {
                    Origin::Constant(c) => {
                        Val::from_weight(c, device, f16_weights && layer).map(Some)
                    }
                    _ => Ok(None),
                })
                .collect::<Result<_>>()?
        } else {
            Vec::new()
        };
        let mut names = HashMap::with_capacity(g.values.len());
        for (id, v) in g.values.iter().enumerate().rev() {
            // The first value of a name wins, as `Graph::find` has it.
            names.insert(v.name.clone(), id);
        }
        let outer = (g.values.iter().enumerate())
            .filter(|(_, v)| v.origin == Origin::Outer)
            .map(|(id, v)| (id, v.name.clone()))
            .collect();
        let ops: Vec<&str> = steps.iter().map(|s| s.op.name).collect();
        let joins = Joins::new(g, &schedule.order, &ops);
        Ok(Plan {
            schedule,
            steps,
            constants,
            names,
            outer,
            joins,
        })
    }

    /// A fresh environment of `g`'s values, all empty: a run reads the constants from the
    /// plan ([`Values`]).
    pub(crate) fn env(&self) -> Vec<Option<Val>> {
        vec![None; self.constants.len()]
    }

    /// The values of a run in `env`, with the plan's constants.
    fn values<'a>(&'a self, env: &'a [Option<Val>]) -> Values<'a> {
        Values {
            env,
            constants: &self.constants,
        }
    }

    /// Whether a run since the last call saw Concats join shapes unlike before, so that a run
    /// now would write more of their inputs in place ([`Joins::learned`]).
    pub(crate) fn learned_joins(&self) -> bool {
        self.joins.learned()
    }

    /// The run order and last uses.
    pub(crate) fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    /// Bytes of the constants held on the device.
    pub(crate) fn weights_bytes(&self) -> u64 {
        let bytes = |v: &Option<Val>| match v {
            Some(Val::Device(t)) => (t.numel() * t.dtype().size()) as u64,
            _ => 0,
        };
        self.constants.iter().map(bytes).sum()
    }

    /// Runs `g` (the graph the plan was made for) in `env`, whose inputs the caller has set;
    /// values `g` names from outside come from `outer`. Gives the graph's outputs in order.
    /// With `x.timer`, the device finishes each node before the next, and each node's time is
    /// recorded there; with `trace`, the device values each step writes are noted there. A
    /// value no step reads and the graph does not give out is dropped as soon as it is written.
    pub(crate) async fn run(
        &self,
        g: &Graph,
        x: Exec<'_>,
        mut env: Vec<Option<Val>>,
        outer: Option<&Scope<'_>>,
        mut trace: Option<&mut Trace>,
    ) -> Result<Vec<Val>> {
        for (id, name) in &self.outer {
            let found = outer.and_then(|o| o.find(name, x)).transpose()?;
            env[*id] = Some(found.ok_or_else(|| {
                Error::Internal(format!("the enclosing graphs hold no value '{name}'"))
            })?);
        }
        if let Some(trace) = trace.as_deref_mut() {
            trace.start(&env);
            trace.start(&self.constants);
        }
        let mut made = self.joins.start();
        for (step, (&n, s)) in self.schedule.order.iter().zip(&self.steps).enumerate() {
            let start = (x.timer).map(|t| (t.times.borrow().len(), clock::now_us()));
            let dest = self.joins.dest(step, &mut made, x.queue)?;
            let node = &g.nodes[n];
            let turn = Turn {
                node,
                step: s,
                dest: dest.as_ref(),
            };
            let outputs = self.step(g, x, &mut env, outer, turn).await?;
            for (id, v) in outputs {
                if let Some(trace) = trace.as_deref_mut() {
                    trace.wrote(step, id, &v);
                }
                env[id] = self.schedule.used[id].then_some(v);
            }
            self.joins.saw(step, &node.inputs, self.values(&env));
            if let (Some(timer), Some((at, start))) = (x.timer, start) {
                x.queue.submit()?.wait().await?;
                timer.record(at, start, node, s.op.name);
            }
            for &v in &s.frees {
                env[v] = None;
            }
        }
        if let Some(trace) = trace {
            trace.finish();
        }
        g.outputs
            .iter()
            .map(|&id| {
                self.values(&env).get(id).cloned().ok_or_else(|| {
                    let name = &g.values[id].name;
                    Error::Internal(format!("output '{name}' was not computed"))
                })
            })
            .collect()
    }

    /// Runs `turn`, giving the values its node writes by id. An input the operator needs on
    /// the host ([`Ctx::wanted`]) is read back from the device into `env`, and the node runs
    /// again: at most once per input.
    async fn step(
        &self,
        g: &Graph,
        x: Exec<'_>,
        env: &mut [Option<Val>],
        outer: Option<&Scope<'_>>,
        turn: Turn<'_>,
    ) -> Result<Vec<(ValueId, Val)>> {
        let node = turn.node;
        for _ in 0..=node.inputs.len() {
            let (result, wanted) = self.try_step(g, x, env, outer, turn).await;
            let error = match result {
                Ok(outputs) => return written(node, turn.step.op, outputs),
                Err(e) => e,
            };
            let Some(id) = wanted.and_then(|i| node.inputs[i]) else {
                return Err(error);
            };
            let host = match read(g, x, self.values(env), id)? {
                Some(Val::Device(t)) => HostTensor::download(&t).await?,
                _ => return Err(error),
            };
            env[id] = Some(Val::Host(host));
        }
        Err(Error::Internal(format!(
            "{} kept asking for inputs on the host",
            node.label()
        )))
    }

    /// One try of `turn`: the operator's result, and the input it wanted on the host. A
    /// control-flow operator's run is awaited, its subgraphs' reads from the device with it.
    async fn try_step(
        &self,
        g: &Graph,
        x: Exec<'_>,
        env: &[Option<Val>],
        outer: Option<&Scope<'_>>,
        turn: Turn<'_>,
    ) -> (Result<Vec<Val>>, Option<usize>) {
        let Turn {
            node,
            step: s,
            dest,
        } = turn;
        let inputs: Result<Vec<Option<Val>>> = node
            .inputs
            .iter()
            .map(|v| v.map_or(Ok(None), |id| read(g, x, self.values(env), id)))
            .collect();
        let inputs = match inputs {
            Ok(inputs) => inputs,
            Err(e) => return (Err(e), None),
        };
        let scope = Scope {
            graph: g,
            names: &self.names,
            values: self.values(env),
            outer,
        };
        let cx = Ctx {
            device: x.device,
            queue: x.queue,
            opset: x.opset,
            timer: x.timer,
            node,
            inputs: &inputs,
            bodies: &s.bodies,
            scope: &scope,
            wanted: Cell::new(None),
            dest,
        };
        let result = match s.op.run {
            Run::Now(run) => run(&cx),
            Run::Flow(run) => run(&cx).await,
        };
        (result, cx.wanted.get())
    }
}

/// The operators whose weights a session asking for f16 weights may hold in f16: layers whose
/// kernels read every element of the weight once per run, so the widened copy costs about
/// what the product does (an embedding table, of which `Gather` reads a few rows, stays f32).
const LAYERS: [&str; 8] = [
    "Conv",
    "ConvTranspose",
    "MatMul",
    "Gemm",
    "FusedConv",
    "FusedGemm",
    "FusedMatMul",
    "Attention",
];

/// For each value of `g`, whether only [`LAYERS`] read it (the graph's outputs are read by
/// the caller).
fn layer_weights(g: &Graph) -> Vec<bool> {
    let mut only = vec![true; g.values.len()];
    for n in &g.nodes {
        if !LAYERS.contains(&n.op.as_str()) {
            for v in reads(g, n) {
                only[v] = false;
            }
        }
    }
    for &v in &g.outputs {
        only[v] = false;
    }
    only
}

/// The value `id` of `values` as a node reads it: a weight held in f16 for the f32 constant
/// of the file (`SessionOptions::f16_weights`) widened to f32 on `x`'s queue, for that node
/// only; the copy is freed when the node is done with it.
fn read(g: &Graph, x: Exec<'_>, values: Values<'_>, id: ValueId) -> Result<Option<Val>> {
    let narrowed = matches!(&g.values[id].origin, Origin::Constant(c) if c.elem == ElemType::F32);
    match values.get(id) {
        Some(Val::Device(t)) if narrowed && t.dtype() == DType::F16 => {
            crate::ops::cast::cast(x.queue, t, DType::F32).map(|t| Some(Val::Device(t)))
        }
        v => Ok(v.cloned()),
    }
}

/// The values `node` writes by id, from the `outputs` its operator `op` gave; outputs past
/// those `op` computes are left out (checked at load to be unused).
fn written(node: &Node, op: &OpDef, outputs: Vec<Val>) -> Result<Vec<(ValueId, Val)>> {
    let mut outputs = outputs.into_iter();
    let mut written = Vec::new();
    for (slot, id) in node.outputs.iter().enumerate() {
        let v = outputs.next();
        let Some(id) = *id else { continue };
        if slot >= op.outputs {
            continue;
        }
        let v =
            v.ok_or_else(|| Error::Internal(format!("{} gave no output {slot}", node.label())))?;
        written.push((id, v));
    }
    Ok(written)
}

/// `f` run to its end where the caller cannot await it (a run recorded into a capture, a
/// fold at load): natively it waits; in wasm, which cannot wait, a future that does not
/// finish at once is an error.
pub(crate) fn now<T>(f: impl Future<Output = Result<T>>) -> Result<T> {
    #[cfg(not(target_arch = "wasm32"))]
    return pollster::block_on(f);
    #[cfg(target_arch = "wasm32")]
    crate::base::signal::ready_now(f).unwrap_or_else(|| {
        Err(Error::Invalid(
            "the run needs a device value on the host, which wasm cannot wait for while it \
             captures the run or folds constants"
                .into(),
        ))
    })
}

/// Runs the subgraph in GRAPH attribute `name` of the node `c` runs, on `inputs` (the
/// subgraph's inputs in order), in `c`'s scope. In a profiled run its nodes are named after
/// the node and the attribute.
pub(crate) async fn run_body(c: &Ctx<'_>, name: &str, inputs: Vec<Val>) -> Result<Vec<Val>> {
    let (g, plan) = c.body(name)?;
    if inputs.len() != g.inputs.len() {
        return Err(c.error(format!(
            "the subgraph '{name}' takes {} inputs; it was given {}",
            g.inputs.len(),
            inputs.len()
        )));
    }
    let mut env = plan.env();
    for (&id, v) in g.inputs.iter().zip(inputs) {
        env[id] = Some(v);
    }
    let path = (c.timer).map(|t| format!("{}{} › {name} › ", t.path, c.node.label()));
    let x = Exec {
        timer: (c.timer.zip(path.as_deref())).map(|(t, path)| Timer { path, ..t }),
        ..c.exec()
    };
    plan.run(g, x, env, Some(c.scope), None).await
}
