//! A loaded model ready to run on one device: every operator checked at load, constants on
//! the device once, nodes run in schedule order and each intermediate freed after its last
//! reader.

use std::cell::Cell;

use super::graph::{Dim, Graph, Node, Origin, ValueId};
use super::model::Model;
use super::ops::{self, Ctx, OpDef};
use super::schedule::{schedule, Schedule};
use super::value::{HostTensor, Val};
use super::ElemType;
use crate::base::error::{Error, Result};
use crate::{Device, Tensor};

/// How a session is made.
#[derive(Clone, Debug, Default)]
pub struct SessionOptions {
    /// The outputs to compute, by name; `None` for the model's own outputs.
    pub outputs: Option<Vec<String>>,
}

/// A graph input or output as the model declares it.
#[derive(Clone, Debug, PartialEq)]
pub struct IoInfo {
    /// Its name.
    pub name: String,
    /// Its element type, where declared.
    pub elem: Option<ElemType>,
    /// Its shape, where declared, with named (symbolic) and open extents.
    pub shape: Option<Vec<Dim>>,
}

/// How long one node of a profiled run took ([`Session::run_profiled`]).
#[derive(Clone, Debug, PartialEq)]
pub struct NodeTime {
    /// The node, as errors name it (`node 'conv1' (Conv)`).
    pub node: String,
    /// Its operator.
    pub op: &'static str,
    /// When it started, in microseconds from an arbitrary origin.
    pub start_us: f64,
    /// How long it took, its device work included.
    pub micros: f64,
}

/// Microseconds for profiles: a monotonic clock natively, the page's clock in wasm.
mod clock {
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

/// A model loaded on a device.
pub struct Session {
    device: Device,
    graph: Graph,
    opset: i64,
    schedule: Schedule,
    /// The operator of each scheduled node, in schedule order.
    steps: Vec<&'static OpDef>,
    /// The value of each constant, on the device or (small integers) the host.
    constants: Vec<Option<Val>>,
}

impl Session {
    /// The model in `bytes` (a whole `.onnx` file) on `device`.
    pub fn from_bytes(device: &Device, bytes: Vec<u8>, options: SessionOptions) -> Result<Self> {
        Self::load(device, Model::from_bytes(bytes)?, options)
    }

    /// The model in the file at `path` on `device` (external data files beside it).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn from_path(
        device: &Device,
        path: impl AsRef<std::path::Path>,
        options: SessionOptions,
    ) -> Result<Self> {
        Self::load(device, Model::from_path(path)?, options)
    }

    /// A parsed model on `device`: an operator the session cannot run is an error here, never
    /// halfway through a run.
    pub fn load(device: &Device, model: Model, options: SessionOptions) -> Result<Self> {
        let opset = model.opset("").unwrap_or(*super::OPSETS.end());
        let mut graph = model.graph;
        if let Some(names) = &options.outputs {
            graph.outputs = names
                .iter()
                .map(|n| graph.find(n).ok_or_else(|| unknown("output", n, &graph)))
                .collect::<Result<_>>()?;
        }
        check_io(&graph)?;
        let schedule = schedule(&graph)?;
        let steps = operators(&graph, &schedule, opset)?;
        let constants = graph
            .values
            .iter()
            .map(|v| match &v.origin {
                Origin::Constant(c) => Val::from_constant(c, device).map(Some),
                _ => Ok(None),
            })
            .collect::<Result<_>>()?;
        Ok(Session {
            device: device.clone(),
            graph,
            opset,
            schedule,
            steps,
            constants,
        })
    }

    /// The graph's inputs.
    pub fn inputs(&self) -> Vec<IoInfo> {
        self.graph.inputs.iter().map(|&v| self.info(v)).collect()
    }

    /// The outputs a run gives, in order.
    pub fn outputs(&self) -> Vec<IoInfo> {
        self.graph.outputs.iter().map(|&v| self.info(v)).collect()
    }

    fn info(&self, v: ValueId) -> IoInfo {
        let value = &self.graph.values[v];
        IoInfo {
            name: value.name.clone(),
            elem: value.elem,
            shape: value.shape.clone(),
        }
    }

    /// Runs the model on `feeds` (every input, by name); the outputs, by name, stay on the
    /// device. (Waits where a node needs a device value on the host; in browsers use
    /// [`Session::run_async`].)
    #[cfg(not(target_arch = "wasm32"))]
    pub fn run(&self, feeds: &[(&str, &Tensor)]) -> Result<Vec<(String, Tensor)>> {
        pollster::block_on(self.run_async(feeds))
    }

    /// [`Session::run`] without blocking: a device value a node needs on the host (a shape
    /// computed on the device) is awaited.
    pub async fn run_async(&self, feeds: &[(&str, &Tensor)]) -> Result<Vec<(String, Tensor)>> {
        let feeds = feeds
            .iter()
            .map(|(n, t)| (*n, Val::Device((*t).clone())))
            .collect();
        self.run_values_async(feeds)
            .await?
            .into_iter()
            .map(|(name, v)| Ok((name, v.tensor(&self.device)?)))
            .collect()
    }

    /// [`Session::run`] with values that may be on the host (data the device cannot hold,
    /// such as booleans, stays there).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn run_values(&self, feeds: Vec<(&str, Val)>) -> Result<Vec<(String, Val)>> {
        pollster::block_on(self.run_values_async(feeds))
    }

    /// [`Session::run_values`] without blocking.
    pub async fn run_values_async(&self, feeds: Vec<(&str, Val)>) -> Result<Vec<(String, Val)>> {
        Ok(self.run_nodes(feeds, false).await?.0)
    }

    /// [`Session::run`] timing each node: the device finishes each node's work before the
    /// next starts, so the times add up to more than a plain run's.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn run_profiled(&self, feeds: &[(&str, &Tensor)]) -> Result<Vec<NodeTime>> {
        let feeds = feeds
            .iter()
            .map(|(n, t)| (*n, Val::Device((*t).clone())))
            .collect();
        Ok(pollster::block_on(self.run_nodes(feeds, true))?.1)
    }

    /// Runs every node on `feeds`, timing each when `profile` is set: the outputs by name,
    /// and the times.
    async fn run_nodes(
        &self,
        feeds: Vec<(&str, Val)>,
        profile: bool,
    ) -> Result<(Vec<(String, Val)>, Vec<NodeTime>)> {
        let mut env = self.feed(feeds)?;
        let queue = self.device.queue();
        let mut times = Vec::new();
        for (step, (&n, op)) in self.schedule.order.iter().zip(&self.steps).enumerate() {
            let start = profile.then(clock::now_us);
            self.step(&mut env, n, op, &queue).await?;
            if let Some(start) = start {
                queue.submit()?.wait().await?;
                times.push(NodeTime {
                    node: self.graph.nodes[n].label(),
                    op: op.name,
                    start_us: start,
                    micros: clock::now_us() - start,
                });
            }
            for v in super::schedule::reads(&self.graph, &self.graph.nodes[n]) {
                if self.schedule.last_use[v] == Some(step) {
                    env[v] = None;
                }
            }
        }
        let outputs = self
            .graph
            .outputs
            .iter()
            .map(|&id| {
                let name = self.graph.values[id].name.clone();
                let v = env[id]
                    .clone()
                    .ok_or_else(|| Error::Internal(format!("output '{name}' was not computed")))?;
                Ok((name, v))
            })
            .collect::<Result<_>>()?;
        Ok((outputs, times))
    }

    /// The values at the start of a run: the constants and `feeds`, each checked.
    fn feed(&self, feeds: Vec<(&str, Val)>) -> Result<Vec<Option<Val>>> {
        let mut env = self.constants.clone();
        for (name, val) in feeds {
            let id = self
                .graph
                .find(name)
                .filter(|id| self.graph.inputs.contains(id));
            let id = id.ok_or_else(|| unknown("input", name, &self.graph))?;
            self.check_feed(id, &val)?;
            env[id] = Some(val);
        }
        if let Some(&missing) = self.graph.inputs.iter().find(|&&id| env[id].is_none()) {
            let name = &self.graph.values[missing].name;
            return Err(Error::Invalid(format!(
                "the model's input '{name}' is not given"
            )));
        }
        Ok(env)
    }

    /// Runs node `n` with operator `op`, writing its outputs into `env`. An input the operator
    /// needs on the host ([`Ctx::wanted`]) is read back from the device, and the node runs
    /// again: at most once per input.
    async fn step(
        &self,
        env: &mut [Option<Val>],
        n: usize,
        op: &OpDef,
        queue: &crate::Queue,
    ) -> Result<()> {
        let node = &self.graph.nodes[n];
        for _ in 0..=node.inputs.len() {
            let inputs: Vec<Option<Val>> = node
                .inputs
                .iter()
                .map(|v| v.and_then(|id| env[id].clone()))
                .collect();
            let cx = Ctx {
                device: &self.device,
                queue,
                opset: self.opset,
                node,
                inputs: &inputs,
                wanted: Cell::new(None),
            };
            let error = match (op.run)(&cx) {
                Ok(outputs) => return store(env, node, op, outputs),
                Err(e) => e,
            };
            let Some(id) = cx.wanted.get().and_then(|i| node.inputs[i]) else {
                return Err(error);
            };
            if let Some(Val::Device(t)) = &env[id] {
                env[id] = Some(Val::Host(HostTensor::download(t).await?));
            }
        }
        Err(Error::Internal(format!(
            "{} kept asking for inputs on the host",
            node.label()
        )))
    }

    /// Refuses a feed whose element type or fixed extents differ from the declared ones.
    fn check_feed(&self, id: ValueId, val: &Val) -> Result<()> {
        let value = &self.graph.values[id];
        if let (Some(elem), Val::Device(t)) = (value.elem, val) {
            let want = super::value::device_dtype(elem)?;
            if t.dtype() != want {
                return Err(Error::DType {
                    op: "session run",
                    expected: format!("{want} for input '{}' ({elem} in the model)", value.name),
                    got: t.dtype().to_string(),
                });
            }
        }
        let Some(dims) = &value.shape else {
            return Ok(());
        };
        let shape = val.shape();
        let fits = dims.len() == shape.len()
            && dims
                .iter()
                .zip(shape)
                .all(|(d, &s)| !matches!(d, Dim::Fixed(f) if *f != s));
        if !fits {
            return Err(Error::shape(
                "session run",
                format!(
                    "input '{}' has shape {shape:?}: expected {dims:?}",
                    value.name
                ),
            ));
        }
        Ok(())
    }
}

/// Writes the `outputs` of `node` (run by `op`) into `env`; outputs past those `op` computes
/// are left out (checked at load to be unused).
fn store(env: &mut [Option<Val>], node: &Node, op: &OpDef, outputs: Vec<Val>) -> Result<()> {
    for (slot, id) in node.outputs.iter().enumerate() {
        let Some(id) = *id else { continue };
        if slot >= op.outputs {
            continue;
        }
        let v = outputs
            .get(slot)
            .cloned()
            .ok_or_else(|| Error::Internal(format!("{} gave no output {slot}", node.label())))?;
        env[id] = Some(v);
    }
    Ok(())
}

/// The operator of each scheduled node; every node the session cannot run is listed in one
/// error, with its domain and the model's opset.
fn operators(g: &Graph, s: &Schedule, opset: i64) -> Result<Vec<&'static OpDef>> {
    let mut missing = Vec::new();
    let mut found = Vec::new();
    for &n in &s.order {
        let node = &g.nodes[n];
        let domain = if node.domain.is_empty() {
            "ai.onnx"
        } else {
            &node.domain
        };
        match ops::find(&node.domain, &node.op) {
            Some(op) => match op.check(node, &s.used) {
                None => found.push(op),
                Some(why) => missing.push(format!("{}: {why}", node.label())),
            },
            None => missing.push(format!(
                "{} of domain {domain} (opset {opset})",
                node.label()
            )),
        }
    }
    if missing.is_empty() {
        return Ok(found);
    }
    Err(Error::Model(format!(
        "{} node(s) this runner cannot run: {}",
        missing.len(),
        missing.join("; ")
    )))
}

/// Refuses inputs and outputs that are not tensors of a type the devices hold.
fn check_io(g: &Graph) -> Result<()> {
    for (what, list) in [("input", &g.inputs), ("output", &g.outputs)] {
        for &id in list {
            let v = &g.values[id];
            let why = match v.elem {
                None if what == "input" => "is not a tensor (a sequence, map or optional?)".into(),
                Some(e) => match super::value::device_dtype(e) {
                    Err(_) => format!("is a {e} tensor, a type the devices do not hold yet"),
                    Ok(_) => continue,
                },
                None => continue,
            };
            return Err(Error::Model(format!(
                "the model's {what} '{}' {why}",
                v.name
            )));
        }
    }
    Ok(())
}

/// The error for a name the graph does not have as an `what`.
fn unknown(what: &str, name: &str, g: &Graph) -> Error {
    let list: Vec<&str> = match what {
        "input" => g
            .inputs
            .iter()
            .map(|&v| g.values[v].name.as_str())
            .collect(),
        _ => g.values.iter().map(|v| v.name.as_str()).collect(),
    };
    Error::Invalid(format!(
        "the model has no {what} '{name}'; it has: {}",
        list.join(", ")
    ))
}

/// The operators of `model`'s graph a session cannot run, with how many nodes use each, by
/// name (`domain::Op` outside the default domain).
pub fn unsupported(model: &Model) -> Vec<(String, usize)> {
    let mut counts = std::collections::BTreeMap::new();
    for node in &model.graph.nodes {
        if ops::find(&node.domain, &node.op).is_none() {
            let name = match node.domain.as_str() {
                "" | "ai.onnx" => node.op.clone(),
                d => format!("{d}::{}", node.op),
            };
            *counts.entry(name).or_insert(0) += 1;
        }
    }
    counts.into_iter().collect()
}
