//! A loaded model ready to run on one device: every operator checked at load, constants on
//! the device once, nodes run in schedule order and each intermediate freed after its last
//! reader.

use std::cell::RefCell;

use super::attr::Attr;
use super::graph::{Dim, Graph, ValueId};
use super::load::{self, LoadReport, Phases};
use super::memory::{self, MemoryPlan, Trace};
use super::model::Model;
use super::ops;
use super::passes::{self, PassReport, Passes};
use super::plan::{now, Exec, NodeTime, Plan, Timer};
use super::replay::{self, Key, Next, Replays};
use super::value::Val;
use super::ElemType;
use crate::base::error::{Error, Result};
use crate::{Device, Tensor};

/// How a session is made.
#[derive(Clone, Debug, Default)]
pub struct SessionOptions {
    /// The outputs to compute, by name; `None` for the model's own outputs.
    pub outputs: Option<Vec<String>>,
    /// Extents fixed at load for named (symbolic) dimensions, e.g. `("batch", 1)`, as
    /// onnxruntime's free dimension overrides: the graph's values take them as fixed
    /// extents, [`Session::inputs`] and [`Session::outputs`] report them, and feeds are held
    /// to them. Names the model does not use are ignored, as onnxruntime does.
    pub free_dims: Vec<(String, usize)>,
    /// The graph passes run at load (all by default; see [`Passes`]): rewrites that keep
    /// the outputs and make the graph cheaper to run. [`Session::optimised`] says what each
    /// did.
    pub passes: Passes,
    /// Runs every run node by node. By default a run whose feeds have the shapes of an earlier
    /// run is captured once and replayed (on devices that capture: webgpu and cuda), for the
    /// host cost of one launch; see `docs/src/onnx.md`, "Runs as replays".
    pub eager: bool,
    /// Holds the f32 weights of at least [`super::F16_WEIGHT_MIN`] elements that only layers
    /// read (matrix products, convolutions, attention; not an embedding table that `Gather`
    /// reads rows of) in f16 on the device: half their memory and upload. A node reads each
    /// widened back to f32, a copy freed when the node is done, so outputs differ from the
    /// f32 model's by the weights' rounding (a relative 2^-12 per weight).
    pub f16_weights: bool,
    /// Leaves the op kernels to compile at the first run. By default, where every input's
    /// extents are fixed (in the model or by `free_dims`), the session compiles the kernels a
    /// run uses at load by capturing a run on zero inputs, which nothing runs and which the
    /// first run replays (unless `eager`); [`Session::load_report`] says how long it took, or
    /// why it did not.
    pub compile_lazily: bool,
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
    /// Whether it is a sequence of tensors (`elem` and `shape` then describe each tensor):
    /// fed and given as [`Val::Seq`] through [`Session::run_values`].
    pub sequence: bool,
}

/// A model loaded on a device.
pub struct Session {
    device: Device,
    graph: Graph,
    opset: i64,
    /// The main graph's plan, with its subgraphs' plans inside.
    plan: Plan,
    /// What each graph pass did.
    optimised: Vec<PassReport>,
    /// Captured runs by their feeds' shapes; `None` with [`SessionOptions::eager`].
    replays: Option<Replays>,
    /// The memory plan, made from the run at load or else the first node-by-node run.
    memory: std::sync::OnceLock<MemoryPlan>,
    /// How the load went.
    loaded: LoadReport,
    /// How long the last blocking run took, in microseconds (see [`Session::hosted`]).
    #[cfg(not(target_arch = "wasm32"))]
    last_run: std::sync::atomic::AtomicU64,
}

/// Shortest run (microseconds) that a device whose kernels run on host threads runs on its
/// thread pool (see `base::par::on_pool`): the hand-over costs about 70 µs on a 2-core VM,
/// and the wake-ups it saves about 1 ms of SqueezeNet's 7 ms; Silero VAD's 0.2 ms runs stay
/// on the caller's thread.
#[cfg(not(target_arch = "wasm32"))]
const POOL_RUN_MIN: u64 = 1000;

impl Session {
    /// The model in `bytes` (a whole `.onnx` file) on `device`.
    pub fn from_bytes(device: &Device, bytes: Vec<u8>, options: SessionOptions) -> Result<Self> {
        let phases = Phases::start();
        Self::load_timed(device, Model::from_bytes(bytes)?, options, phases)
    }

    /// The model in the file at `path` on `device` (external data files beside it).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn from_path(
        device: &Device,
        path: impl AsRef<std::path::Path>,
        options: SessionOptions,
    ) -> Result<Self> {
        let phases = Phases::start();
        Self::load_timed(device, Model::from_path(path)?, options, phases)
    }

    /// A parsed model on `device`: an operator the session cannot run is an error here, never
    /// halfway through a run.
    pub fn load(device: &Device, model: Model, options: SessionOptions) -> Result<Self> {
        Self::load_timed(device, model, options, Phases::start())
    }

    /// [`Session::load`], its phases timed from `phases`, whose first (the parse) is under way.
    fn load_timed(
        device: &Device,
        model: Model,
        options: SessionOptions,
        mut phases: Phases,
    ) -> Result<Self> {
        phases.end("parse");
        let opset = model.opset("").unwrap_or(*super::OPSETS.end());
        let mut graph = model.graph;
        if let Some(names) = &options.outputs {
            graph.outputs = names
                .iter()
                .map(|n| graph.find(n).ok_or_else(|| unknown("output", n, &graph)))
                .collect::<Result<_>>()?;
        }
        fix_dims(&mut graph, &options.free_dims);
        let cx = passes::Cx { device, opset };
        let optimised = passes::optimise(&mut graph, &options.passes, &cx)?;
        phases.end("optimise");
        check_io(&graph)?;
        let mut missing = Vec::new();
        let plan = Plan::new(&graph, device, opset, "", &mut missing, options.f16_weights)?;
        if !missing.is_empty() {
            return Err(Error::Model(format!(
                "{} node(s) this runner cannot run: {}",
                missing.len(),
                missing.join("; ")
            )));
        }
        let queue = device.queue();
        load::settle(&queue)?;
        phases.end("upload");
        let exec = Exec {
            device,
            queue: &queue,
            opset,
            timer: None,
        };
        let replays = (!options.eager).then(Replays::default);
        let lazily = options.compile_lazily;
        let mut compiled = load::compile(exec, &graph, &plan, lazily, replays.as_ref());
        phases.end("compile");
        let trace = compiled.trace.take();
        let session = Session {
            device: device.clone(),
            graph,
            opset,
            plan,
            optimised,
            replays,
            memory: std::sync::OnceLock::new(),
            #[cfg(not(target_arch = "wasm32"))]
            last_run: Default::default(),
            loaded: phases.report(compiled),
        };
        session.plan_memory(trace);
        Ok(session)
    }

    /// Where a run's memory goes, planned from the run on zero inputs that compiled the
    /// kernels at load, else from the session's first run (`None` before it):
    /// the weights' bytes, and the intermediates by liveness in arenas, with the planned peak
    /// beside the sum without reuse. See `docs/src/onnx.md`, "Memory".
    pub fn memory_plan(&self) -> Option<MemoryPlan> {
        self.memory.get().cloned()
    }

    /// Makes the memory plan from `trace` if it holds a whole run and none was made yet.
    fn plan_memory(&self, trace: Option<Trace>) {
        let Some(trace) = trace.filter(Trace::done) else {
            return;
        };
        let limits = &self.device.info().limits;
        self.memory.get_or_init(|| {
            let schedule = self.plan.schedule();
            let weights = self.plan.weights_bytes();
            let align = u64::from(limits.storage_offset_alignment);
            memory::plan(
                &self.graph,
                schedule,
                &trace,
                weights,
                align,
                limits.max_buffer_size,
            )
        });
    }

    /// How the load went: each phase's length, and how many op kernels compiled at load (or
    /// why none did).
    pub fn load_report(&self) -> &LoadReport {
        &self.loaded
    }

    /// The graph as it runs: the model's, rewritten by the graph passes.
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// What each graph pass that ran at load did, in the order they ran (none where
    /// [`SessionOptions::passes`] turned them off).
    pub fn optimised(&self) -> &[PassReport] {
        &self.optimised
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
            sequence: value.sequence,
        }
    }

    /// Runs the model on `feeds` (every input, by name); the outputs, by name, stay on the
    /// device. (Waits where a node needs a device value on the host; in browsers use
    /// [`Session::run_async`]; a model with sequence inputs or outputs runs through
    /// [`Session::run_values`].)
    #[cfg(not(target_arch = "wasm32"))]
    pub fn run(&self, feeds: &[(&str, &Tensor)]) -> Result<Vec<(String, Tensor)>> {
        self.hosted(|| pollster::block_on(self.run_async(feeds)))
    }

    /// Runs `run` (a whole blocking run), timed for the next: on the host's thread pool if
    /// the device's kernels run there (the `cpu` backend) and the last run took at least
    /// [`POOL_RUN_MIN`], else on the caller's thread. A pool of one thread counts too: from
    /// the caller, each parallel loop would hand its one task to that thread and wait
    /// (SqueezeNet on one thread: 14.6 ms that way, 10.7 on the pool).
    #[cfg(not(target_arch = "wasm32"))]
    fn hosted<R: Send>(&self, run: impl FnOnce() -> R + Send) -> R {
        use std::sync::atomic::Ordering::Relaxed;
        let start = std::time::Instant::now();
        let pool =
            self.device.info().threads.is_some() && self.last_run.load(Relaxed) >= POOL_RUN_MIN;
        let out = if pool {
            crate::base::par::on_pool(run)
        } else {
            run()
        };
        let micros = u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.last_run.store(micros, Relaxed);
        out
    }

    /// [`Session::run`] without blocking: a device value a node needs on the host (a shape
    /// computed on the device) is awaited.
    pub async fn run_async(&self, feeds: &[(&str, &Tensor)]) -> Result<Vec<(String, Tensor)>> {
        let outputs = self.run_values_async(on_device(feeds)).await?;
        let tensor = |(name, v): (String, Val)| match v {
            Val::Seq(s) => Err(Error::Invalid(format!(
                "the model's output '{name}' is a sequence of {} tensors; run_values gives it",
                s.len()
            ))),
            v => Ok((name, v.tensor(&self.device)?)),
        };
        outputs.into_iter().map(tensor).collect()
    }

    /// [`Session::run`] with values that may be on the host (data the device cannot hold,
    /// such as booleans, stays there) or sequences of tensors ([`Val::Seq`]).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn run_values(&self, feeds: Vec<(&str, Val)>) -> Result<Vec<(String, Val)>> {
        self.hosted(|| pollster::block_on(self.run_values_async(feeds)))
    }

    /// [`Session::run_values`] without blocking.
    pub async fn run_values_async(&self, feeds: Vec<(&str, Val)>) -> Result<Vec<(String, Val)>> {
        self.run_main(feeds, None).await
    }

    /// [`Session::run`] timing each node: the device finishes each node's work before the
    /// next starts, so the times add up to more than a plain run's. The nodes inside the
    /// subgraphs of control-flow nodes are timed too, each time they run ([`NodeTime`]).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn run_profiled(&self, feeds: &[(&str, &Tensor)]) -> Result<Vec<NodeTime>> {
        self.hosted(|| {
            let times = RefCell::new(Vec::new());
            pollster::block_on(self.run_main(on_device(feeds), Some(&times)))?;
            Ok(times.into_inner())
        })
    }

    /// Runs the main graph on `feeds`, timing its nodes into `times` if given.
    async fn run_main(
        &self,
        feeds: Vec<(&str, Val)>,
        times: Option<&RefCell<Vec<NodeTime>>>,
    ) -> Result<Vec<(String, Val)>> {
        let env = self.feed(feeds)?;
        let queue = self.device.queue();
        let exec = Exec {
            device: &self.device,
            queue: &queue,
            opset: self.opset,
            timer: times.map(|times| Timer { times, path: "" }),
        };
        let inputs: Vec<Val> = self
            .graph
            .inputs
            .iter()
            .filter_map(|&id| env[id].clone())
            .collect();
        let key = replay::key(&inputs).filter(|_| times.is_none());
        let mut trace = self.memory.get().is_none().then(Trace::default);
        let values = match (&self.replays, key) {
            (Some(replays), Some(key)) => {
                let trace = trace.as_mut();
                self.replayed(replays, &key, exec, env, &inputs, trace)
                    .await?
            }
            _ => {
                let trace = trace.as_mut();
                self.plan.run(&self.graph, exec, env, None, trace).await?
            }
        };
        self.plan_memory(trace);
        let names = self
            .graph
            .outputs
            .iter()
            .map(|&id| self.graph.values[id].name.clone());
        Ok(names.zip(values).collect())
    }

    /// A run whose feeds (`inputs`, also in `env`) have `key`: node by node the first time
    /// (noted in `trace`), captured the second, replayed from then on ([`replay`]).
    async fn replayed(
        &self,
        replays: &Replays,
        key: &Key,
        exec: Exec<'_>,
        env: Vec<Option<Val>>,
        inputs: &[Val],
        trace: Option<&mut Trace>,
    ) -> Result<Vec<Val>> {
        let captured = match replays.next(key) {
            Next::Eager => return self.plan.run(&self.graph, exec, env, None, trace).await,
            Next::Replay(captured) => captured,
            Next::Capture => {
                let captured = replay::capture(exec.queue, key, |tensors| {
                    let mut env = self.plan.env();
                    for (&id, t) in self.graph.inputs.iter().zip(tensors) {
                        env[id] = Some(Val::Device(t));
                    }
                    now(self.plan.run(&self.graph, exec, env, None, None))
                })?;
                replays.store(key, captured.clone());
                match captured {
                    Some(captured) => captured,
                    None => return self.plan.run(&self.graph, exec, env, None, None).await,
                }
            }
        };
        captured.replay(exec.queue, inputs)
    }

    /// The values at the start of a run: the constants and `feeds`, each checked.
    fn feed(&self, feeds: Vec<(&str, Val)>) -> Result<Vec<Option<Val>>> {
        let mut env = self.plan.env();
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

    /// Refuses a feed whose kind (tensor or sequence), element type or fixed extents differ
    /// from the declared ones: a sequence's tensors are each held to them.
    fn check_feed(&self, id: ValueId, val: &Val) -> Result<()> {
        let value = &self.graph.values[id];
        let Val::Seq(s) = val else {
            if value.sequence {
                return Err(Error::Invalid(format!(
                    "input '{}' is a sequence in the model; a tensor was given",
                    value.name
                )));
            }
            return self.check_tensor(value, val);
        };
        if !value.sequence {
            return Err(Error::Invalid(format!(
                "input '{}' is a tensor in the model; a sequence was given",
                value.name
            )));
        }
        if let Some(elem) = value.elem.filter(|&e| e != s.elem()) {
            return Err(Error::DType {
                op: "session run",
                expected: format!("a sequence of {elem} tensors for input '{}'", value.name),
                got: format!("a sequence of {} tensors", s.elem()),
            });
        }
        s.items()
            .iter()
            .try_for_each(|t| self.check_tensor(value, t))
    }

    /// Refuses a tensor whose element type or fixed extents differ from those `value`
    /// declares.
    fn check_tensor(&self, value: &super::graph::Value, val: &Val) -> Result<()> {
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
        let shape = val.shape()?;
        let fits = dims.len() == shape.len()
            && dims
                .iter()
                .zip(shape)
                .all(|(d, &s)| !matches!(d, Dim::Fixed(f) if *f != s));
        if !fits {
            let want: Vec<String> = dims.iter().map(Dim::to_string).collect();
            return Err(Error::shape(
                "session run",
                format!(
                    "input '{}' has shape {shape:?}: expected [{}]",
                    value.name,
                    want.join(", ")
                ),
            ));
        }
        Ok(())
    }
}

/// Refuses inputs and outputs that are not tensors, or sequences of tensors, of a type the
/// devices hold.
fn check_io(g: &Graph) -> Result<()> {
    for (what, list) in [("input", &g.inputs), ("output", &g.outputs)] {
        for &id in list {
            let v = &g.values[id];
            let why = match v.elem {
                None if what == "input" && !v.sequence => {
                    "is neither a tensor nor a sequence of tensors (a map or optional?)".into()
                }
                Some(e) => match super::value::device_dtype(e) {
                    Err(_) if v.sequence => {
                        format!("is a sequence of {e} tensors, a type the devices do not hold yet")
                    }
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

/// The named dimensions of `g`'s values that `free_dims` names, made fixed extents.
fn fix_dims(g: &mut Graph, free_dims: &[(String, usize)]) {
    let extent = |d: &Dim| match d {
        Dim::Symbol(s) => free_dims.iter().find(|(n, _)| n == s).map(|&(_, e)| e),
        _ => None,
    };
    for dims in g.values.iter_mut().filter_map(|v| v.shape.as_mut()) {
        for d in dims {
            if let Some(e) = extent(d) {
                *d = Dim::Fixed(e);
            }
        }
    }
}

/// Device tensors as run feeds.
fn on_device<'a>(feeds: &[(&'a str, &Tensor)]) -> Vec<(&'a str, Val)> {
    feeds
        .iter()
        .map(|(n, t)| (*n, Val::Device((*t).clone())))
        .collect()
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

/// The operators of `model`'s graph and its subgraphs a session cannot run, with how many
/// nodes use each, by name (`domain::Op` outside the default domain).
pub fn unsupported(model: &Model) -> Vec<(String, usize)> {
    let mut counts = std::collections::BTreeMap::new();
    count_unsupported(&model.graph, &mut counts);
    counts.into_iter().collect()
}

/// Adds the nodes of `g` and its subgraphs a session cannot run to `counts`.
fn count_unsupported(g: &Graph, counts: &mut std::collections::BTreeMap<String, usize>) {
    for node in &g.nodes {
        if ops::find(&node.domain, &node.op).is_none() {
            let name = match node.domain.as_str() {
                "" | "ai.onnx" => node.op.clone(),
                d => format!("{d}::{}", node.op),
            };
            *counts.entry(name).or_insert(0) += 1;
        }
        for (_, a) in node.attrs.iter() {
            if let Attr::Graph(body) = a {
                count_unsupported(body, counts);
            }
        }
    }
}
