//! Throughput benchmarks with roofline percentages: measure a device's ceilings (copy
//! bandwidth and a FLOP ceiling), then time ops against them.
//!
//! Timing records a number of launches on one queue between two fences and takes the device
//! time between them where the device has timers (CUDA events, natively webgpu timestamp
//! queries), else the host clock around recording, one `submit()` and a blocking wait on the
//! fence; every figure is the median of several repetitions after warm-up.
//!
//! `run(&device, &BenchConfig::default(), &mut |line| eprintln!("{line}"))` measures a device
//! and gives a [`Report`] (`report.ceilings`, `report.table()`). The CLI (`unicompute bench`)
//! and `benches/ops.rs` are its two users; it is not part of the library.

use std::cell::Cell;
use std::fmt;
use std::time::Instant;

use unicompute::ops::{
    attention, cast, chain, conv, elementwise, matmul, norm, reduce, softmax, AttentionParams,
    Conv2dParams, NormKind, NormParams,
};
pub use unicompute::text::{human_bytes, human_seconds, render_table};
use unicompute::{
    BackendKind, BinaryOp, Buffer, DType, Device, Error, Kernel, Profile, Queue, ReduceOp, Result,
    Tensor, UnaryOp,
};

/// The self-contained arithmetic-peak kernel run on `webgpu` devices.
const PEAK_WGSL: &str = include_str!("peak.wgsl");
/// FLOPs one invocation of `peak.wgsl` does per loop iteration (8 FMA chains).
const PEAK_FLOPS_PER_ITER: u64 = 16;
/// Workgroup width of `peak.wgsl`.
const PEAK_WORKGROUP: u64 = 256;
/// Workgroups of one `peak.wgsl` launch (about a million invocations).
const PEAK_WORKGROUPS: u64 = 4096;
/// Largest loop count the peak calibration will try.
const PEAK_MAX_ITERS: u32 = 1 << 20;
/// Largest workgroup count per grid dimension used for the peak kernel.
const MAX_GRID_X: u64 = 65535;

/// Largest device-to-device copy used for the bandwidth ceiling, in bytes.
const COPY_BYTES: u64 = 128 << 20;
/// Matrix edge of the CPU's GEMM ceiling.
const GEMM_CEILING_EDGE: usize = 1024;
/// Matrix edge of the GEMM ceiling on CUDA GPUs, large enough to reach cuBLAS's peak.
const GPU_GEMM_CEILING_EDGE: usize = 4096;
/// Elements of each op in the `chain` case.
const CHAIN_ELEMENTS: usize = 1024;

/// A repetition records launches until it is expected to take about this long.
const TARGET_REP_SECONDS: f64 = 0.05;
/// Most launches recorded in one repetition.
const MAX_LAUNCHES_PER_REP: usize = 64;
/// Most output bytes one repetition may keep in flight.
const MAX_INFLIGHT_BYTES: u64 = 512 << 20;

/// Ops run when [`BenchConfig::ops`] is empty.
pub const DEFAULT_OPS: &[&str] = &[
    "relu",
    "exp",
    "gelu",
    "add",
    "mul",
    "add_bcast",
    "mul_bcast",
    "add_relu",
    "fused5",
    "fused5_ops",
    "sum",
    "sum@auto",
    "sum_last",
    "sum_last@auto",
    "softmax",
    "layer_norm",
    "cast_f16",
    "add_f16",
    "matmul",
    "matmul@auto",
    "linear",
    "attention",
    "conv2d",
    "chain",
    "chain_done",
    "chain_replay",
    "chain_replay_done",
];

/// Default ops a device cannot run and the bench leaves out there: the cpu backend has no
/// capture to replay.
fn default_op_runs_on(device: &Device, name: &str) -> bool {
    device.backend() != unicompute::BackendKind::Cpu || !name.starts_with("chain_replay")
}

/// What to measure and how large.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BenchConfig {
    /// Op names, run in this order; empty means [`DEFAULT_OPS`]. Accepted: any unary op
    /// (`relu`, `gelu`, ...), binary op (`add`, ...), `<binary>_bcast` (a `[rows, 1024]`
    /// tensor with a `[1024]` row), `<binary>_<unary>` (fused), any reduction over everything
    /// (`sum`, `max`, ...) or over the last axis (`sum_last`), `softmax`, `matmul`, `fused5`
    /// (`sigmoid(a * b + a) * b - a` as one chain kernel) and `fused5_ops` (its five ops one
    /// by one), `chain`
    /// (host time to record and submit a chain of small adds) and `chain_done` (the same
    /// chain to completion).
    pub ops: Vec<String>,
    /// Elements of the elementwise, reduction and softmax inputs.
    pub elements: usize,
    /// Edge of the square matrices of `matmul`.
    pub matmul_edge: usize,
    /// Ops in the `chain` case.
    pub chain_len: usize,
    /// Row length of the row-structured cases (softmax, layer_norm, `<reduction>_last`,
    /// `<binary>_bcast`).
    pub row_len: usize,
    /// The attention case: batch, heads, sequence length, head dimension.
    pub attention: [usize; 4],
    /// Whether the attention case is causal.
    pub causal: bool,
    /// Storage dtype of the attention case's q, k and v (`f32`, `f16` or `bf16`).
    #[serde(serialize_with = "dtype_name")]
    pub attention_dtype: DType,
    /// Storage dtype of the matmul case's matrices (`f32`, `f16` or `bf16`).
    #[serde(serialize_with = "dtype_name")]
    pub matmul_dtype: DType,
    /// The conv2d case: input [n, c, h, w] and output channels; 3x3 kernel, padding 1.
    pub conv: [usize; 5],
    /// Untimed runs of each case before measuring.
    pub warmup: usize,
    /// Timed repetitions whose median is reported.
    pub reps: usize,
    /// Record every launch of the op cases (not the ceilings) with the device's profiler;
    /// the report then carries the [`Profile`].
    pub profile: bool,
}

/// A dtype as its name (`"bf16"`) in the report's JSON.
fn dtype_name<S: serde::Serializer>(dtype: &DType, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(&dtype.to_string())
}

impl Default for BenchConfig {
    fn default() -> Self {
        BenchConfig {
            ops: Vec::new(),
            elements: 1 << 24,
            matmul_edge: 1024,
            chain_len: 1000,
            row_len: 1024,
            attention: [1, 8, 512, 64],
            causal: false,
            attention_dtype: DType::F32,
            matmul_dtype: DType::F32,
            conv: [1, 32, 56, 56, 32],
            warmup: 1,
            reps: 5,
            profile: false,
        }
    }
}

/// The device's measured ceilings, the denominators of the roofline percentages.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Ceilings {
    /// Device-to-device copy bandwidth in GB/s, counting bytes read plus bytes written.
    pub copy_gbps: f64,
    /// Bytes copied by one copy of the bandwidth measurement.
    pub copy_bytes: u64,
    /// Arithmetic ceiling in GFLOP/s.
    pub gflops: f64,
    /// How the arithmetic ceiling was measured.
    pub gflops_source: String,
}

impl fmt::Display for Ceilings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "copy bandwidth: {:.1} GB/s ({} device-to-device copy, read + write)",
            self.copy_gbps,
            human_bytes(self.copy_bytes)
        )?;
        write!(
            f,
            "FLOP ceiling:   {:.1} GFLOP/s ({})",
            self.gflops, self.gflops_source
        )
    }
}

/// One measured case.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BenchResult {
    /// Op name as given in [`BenchConfig::ops`].
    pub name: String,
    /// Shapes or sizes of the inputs.
    pub shape: String,
    /// Median time of one launch (of the whole chain for `chain`), in seconds: device time
    /// between fences where the device has timers (cuda, webgpu with timestamp queries),
    /// else host time around submit and wait (host time to record and submit for `chain`).
    pub median_s: f64,
    /// Achieved rate in `unit`.
    pub rate: f64,
    /// `GB/s` (bytes read + written), `GFLOP/s` (2·m·n·k for matmul) or `us/op` (chain).
    pub unit: &'static str,
    /// The matching ceiling in the same unit, if there is one.
    pub ceiling: Option<f64>,
    /// `rate` as a percentage of `ceiling`.
    pub percent: Option<f64>,
    /// Blocks the memory pool allocated from the backend while the case ran, warm-up
    /// included: more than the launches of one repetition means the pool missed in timed
    /// repetitions, and their times include allocating.
    pub allocations: u64,
}

/// Everything one benchmark run measured.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Report {
    /// Name of the device.
    pub device: String,
    /// Backend of the device.
    pub backend: String,
    /// The configuration that was run.
    pub config: BenchConfig,
    /// The precision the device's f32 matmuls may use (from the policy it was opened with).
    pub matmul_precision: unicompute::MatmulPrecision,
    /// Measured ceilings.
    pub ceilings: Ceilings,
    /// The clock behind the medians: `device` (fence timers) or `host`.
    pub timer: &'static str,
    /// One entry per case, in run order.
    pub results: Vec<BenchResult>,
    /// Seconds of the timed repetitions of the op cases (not the warm-up or calibration), on
    /// the clock the medians use (for `chain`: host time to completion).
    pub measured_s: f64,
    /// What the profiler recorded, when [`BenchConfig::profile`] was set.
    #[serde(skip)]
    pub profile: Option<Profile>,
}

impl Report {
    /// For each `<op>@auto` result measured beside the default `<op>`: the op and the autotuned
    /// rate over the default's (at least 1 means autotuning did no harm on this shape).
    pub fn autotune_vs_default(&self) -> Vec<(String, f64)> {
        self.results
            .iter()
            .filter_map(|tuned| {
                let base = tuned.name.strip_suffix("@auto")?;
                let default = self.results.iter().find(|r| r.name == base)?;
                Some((base.to_string(), tuned.rate / default.rate))
            })
            .collect()
    }

    /// The results as an aligned text table.
    pub fn table(&self) -> String {
        let header = ["op", "shape", "median", "rate", "ceiling", "% of ceiling"]
            .map(String::from)
            .to_vec();
        let rows: Vec<Vec<String>> = self.results.iter().map(BenchResult::cells).collect();
        render_table(&header, &rows)
    }
}

impl BenchResult {
    fn cells(&self) -> Vec<String> {
        vec![
            self.name.clone(),
            self.shape.clone(),
            human_seconds(self.median_s),
            format!("{:.2} {}", self.rate, self.unit),
            self.ceiling
                .map_or("-".into(), |c| format!("{c:.1} {}", self.unit)),
            self.percent.map_or("-".into(), |p| format!("{p:.1} %")),
        ]
    }
}

/// Measure the ceilings, then every configured op, on `device`. `progress` receives a line
/// before each measurement.
pub fn run(
    device: &Device,
    config: &BenchConfig,
    progress: &mut dyn FnMut(&str),
) -> Result<Report> {
    let names: Vec<String> = if config.ops.is_empty() {
        DEFAULT_OPS
            .iter()
            .filter(|n| default_op_runs_on(device, n))
            .map(ToString::to_string)
            .collect()
    } else {
        config.ops.clone()
    };
    let kinds = names
        .iter()
        .map(|n| parse_kind(n).map(|k| (n.clone(), k)))
        .collect::<Result<Vec<_>>>()?;
    check_config(config)?;
    for (name, kind) in &kinds {
        check_fits(device, name, kind.largest_tensor_bytes(config))?;
    }
    let ceilings = measure_ceilings(device, config, progress)?;
    let timer = timer(device)?;
    let meter = Meter {
        total: Cell::new(0.0),
        profiler: config.profile.then(|| device.profiler().clone()),
    };
    if config.profile {
        device.profiler().clear();
    }
    let mut results = Vec::with_capacity(kinds.len());
    for (name, kind) in &kinds {
        let case = build_case(device, config, name, *kind)?;
        progress(&format!("op {name} {}", case.shape));
        results.push(measure_case(&meter, device, config, &case, &ceilings)?);
    }
    let profile = config.profile.then(|| device.take_profile_blocking());
    let info = device.info();
    let matmul_precision = device.options().matmul_precision;
    Ok(Report {
        device: info.name.clone(),
        backend: info.backend.to_string(),
        config: config.clone(),
        matmul_precision,
        ceilings,
        timer,
        results,
        measured_s: meter.total.get(),
        profile,
    })
}

/// Adds up the timed repetitions of the op cases, and profiles them (only them: not the
/// warm-up, the calibration or a case's setup) when it holds the device's profiler.
#[derive(Default)]
struct Meter {
    total: Cell<f64>,
    profiler: Option<unicompute::Profiler>,
}

impl Meter {
    /// Run one timed repetition, `time` returning (seconds for the median, seconds to add).
    fn rep(&self, time: impl FnOnce() -> Result<(f64, f64)>) -> Result<f64> {
        if let Some(p) = &self.profiler {
            p.enable();
        }
        let timed = time();
        if let Some(p) = &self.profiler {
            p.disable();
        }
        let (sample, total) = timed?;
        self.total.set(self.total.get() + total);
        Ok(sample)
    }
}

/// Measure the copy bandwidth and the arithmetic ceiling of `device`.
pub fn measure_ceilings(
    device: &Device,
    config: &BenchConfig,
    progress: &mut dyn FnMut(&str),
) -> Result<Ceilings> {
    let copy_bytes = COPY_BYTES.min(device.info().limits.max_buffer_size) / 4 * 4;
    progress(&format!(
        "ceiling: {} device-to-device copy",
        human_bytes(copy_bytes)
    ));
    let copy_gbps = copy_bandwidth(device, config, copy_bytes)?;
    let (gflops, gflops_source) = match device.backend() {
        BackendKind::WebGpu => {
            progress("ceiling: arithmetic peak (peak.wgsl)");
            peak_gflops(device, config)?
        }
        kind => {
            let edge = if kind == BackendKind::Cuda {
                GPU_GEMM_CEILING_EDGE
            } else {
                GEMM_CEILING_EDGE
            };
            progress(&format!("ceiling: GEMM {edge}^3"));
            gemm_gflops(device, config, edge)?
        }
    };
    Ok(Ceilings {
        copy_gbps,
        copy_bytes,
        gflops,
        gflops_source,
    })
}

/// The kinds of case the benchmark knows.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Unary(UnaryOp),
    Binary(BinaryOp),
    Broadcast(BinaryOp),
    Fused(BinaryOp, UnaryOp),
    /// A reduction over everything, with the default or a named variant (`auto`: tuned).
    ReduceAll(ReduceOp, Option<&'static str>),
    /// A reduction over the last axis of `[rows, 1024]`.
    ReduceLast(ReduceOp, Option<&'static str>),
    Softmax,
    /// Layer norm over rows of 1024.
    LayerNorm,
    /// f32 -> f16 conversion.
    CastF16,
    /// Elementwise add of f16 tensors.
    AddF16,
    /// Five elementwise ops as one chain kernel (`true`) or as five ops.
    Fused5(bool),
    /// `relu(x @ w + bias)`, square.
    Linear,
    /// Attention of [`ATTENTION`] size.
    Attention,
    /// conv2d of [`CONV`] size.
    Conv2d,
    /// matmul, with the backend's default or a named kernel variant.
    Matmul(Option<&'static str>),
    /// The chain's recording and submission, host time only.
    Chain,
    /// The chain to completion on the device.
    ChainDone,
    /// One replay of the chain captured as a graph: recording and submission, host time only.
    ChainReplay,
    /// One replay of the captured chain to completion.
    ChainReplayDone,
}

fn parse_kind(name: &str) -> Result<Kind> {
    let kind = match name {
        "softmax" => Some(Kind::Softmax),
        "layer_norm" => Some(Kind::LayerNorm),
        "cast_f16" => Some(Kind::CastF16),
        "add_f16" => Some(Kind::AddF16),
        "fused5" => Some(Kind::Fused5(true)),
        "fused5_ops" => Some(Kind::Fused5(false)),
        "linear" => Some(Kind::Linear),
        "attention" => Some(Kind::Attention),
        "conv2d" => Some(Kind::Conv2d),
        "matmul" => Some(Kind::Matmul(None)),
        "chain" => Some(Kind::Chain),
        "chain_done" => Some(Kind::ChainDone),
        "chain_replay" => Some(Kind::ChainReplay),
        "chain_replay_done" => Some(Kind::ChainReplayDone),
        _ => UnaryOp::from_name(name)
            .map(Kind::Unary)
            .or_else(|| BinaryOp::from_name(name).map(Kind::Binary))
            .or_else(|| ReduceOp::from_name(name).map(|op| Kind::ReduceAll(op, None)))
            .or_else(|| {
                name.strip_suffix("_last")
                    .and_then(ReduceOp::from_name)
                    .map(|op| Kind::ReduceLast(op, None))
            })
            .or_else(|| {
                name.strip_suffix("_bcast")
                    .and_then(BinaryOp::from_name)
                    .map(Kind::Broadcast)
            })
            .or_else(|| {
                let (op, act) = name.split_once('_')?;
                Some(Kind::Fused(
                    BinaryOp::from_name(op)?,
                    UnaryOp::from_name(act)?,
                ))
            })
            .or_else(|| {
                let (base, variant) = name.split_once('@')?;
                let (matmuls, reductions) = (
                    unicompute::ops::variant_names("matmul"),
                    unicompute::ops::variant_names("reduce"),
                );
                match parse_kind(base).ok()? {
                    Kind::Matmul(None) => matmuls
                        .into_iter()
                        .chain(["auto"])
                        .find(|&v| v == variant)
                        .map(|v| Kind::Matmul(Some(v))),
                    Kind::ReduceAll(op, None) => reductions
                        .into_iter()
                        .chain(["auto"])
                        .find(|&v| v == variant)
                        .map(|v| Kind::ReduceAll(op, Some(v))),
                    Kind::ReduceLast(op, None) => reductions
                        .into_iter()
                        .chain(["auto"])
                        .find(|&v| v == variant)
                        .map(|v| Kind::ReduceLast(op, Some(v))),
                    _ => None,
                }
            }),
    };
    kind.ok_or_else(|| {
        Error::Invalid(format!(
            "unknown bench op `{name}`: expected a unary, binary or reduction op name, <binary>_bcast, <binary>_<unary>, \
             <reduction>_last, softmax, layer_norm, cast_f16, add_f16, fused5, fused5_ops, matmul, linear, attention, conv2d, chain, chain_done, chain_replay or chain_replay_done; matmul and reductions also as <op>@<variant> or <op>@auto \
             (defaults: {})",
            DEFAULT_OPS.join(", ")
        ))
    })
}

impl Kind {
    /// Bytes of the largest tensor the case allocates.
    fn largest_tensor_bytes(self, config: &BenchConfig) -> u64 {
        let elements = match self {
            Kind::Matmul(_) | Kind::Linear => config.matmul_edge.saturating_mul(config.matmul_edge),
            Kind::Attention => config.attention.iter().product(),
            Kind::Conv2d => config.conv[..4].iter().product(),
            Kind::LayerNorm => {
                rows_cols(config.elements, config.row_len).0 * config.row_len.min(config.elements)
            }
            Kind::Chain | Kind::ChainDone | Kind::ChainReplay | Kind::ChainReplayDone => {
                CHAIN_ELEMENTS
            }
            Kind::Broadcast(_) | Kind::ReduceLast(..) | Kind::Softmax => {
                rows_cols(config.elements, config.row_len).0 * config.row_len.min(config.elements)
            }
            _ => config.elements,
        };
        (elements as u64).saturating_mul(4)
    }
}

fn check_config(config: &BenchConfig) -> Result<()> {
    let sizes = [
        ("elements", config.elements),
        ("matmul_edge", config.matmul_edge),
        ("chain_len", config.chain_len),
        ("row_len", config.row_len),
        ("reps", config.reps),
    ];
    for (what, v) in sizes
        .into_iter()
        .chain(config.attention.map(|v| ("an attention extent", v)))
        .chain(config.conv.map(|v| ("a conv2d extent", v)))
    {
        if v == 0 {
            return Err(Error::Invalid(format!(
                "bench {what} is 0: expected at least 1"
            )));
        }
    }
    if !matches!(
        config.attention_dtype,
        DType::F32 | DType::F16 | DType::BF16
    ) {
        return Err(Error::Invalid(format!(
            "bench attention dtype {}: expected f32, f16 or bf16",
            config.attention_dtype
        )));
    }
    Ok(())
}

/// Error naming the limit when a tensor of `bytes` cannot be allocated and bound on `device`.
fn check_fits(device: &Device, name: &str, bytes: u64) -> Result<()> {
    let limits = &device.info().limits;
    let (max, limit) = if limits.max_storage_binding_size < limits.max_buffer_size {
        (limits.max_storage_binding_size, "max_storage_binding_size")
    } else {
        (limits.max_buffer_size, "max_buffer_size")
    };
    if bytes > max {
        return Err(Error::Limit {
            what: format!("the largest tensor of bench op `{name}` in bytes"),
            value: bytes,
            limit,
            max,
        });
    }
    Ok(())
}

/// `[rows, cols]` for a row-structured case of about `elements` elements.
fn rows_cols(elements: usize, row_len: usize) -> (usize, usize) {
    let cols = row_len.min(elements);
    ((elements / cols).max(1), cols)
}

/// Work a launch does, the numerator of its rate.
#[derive(Debug, Clone, Copy)]
enum Work {
    /// Bytes read plus bytes written.
    Bytes(u64),
    /// Floating-point operations.
    Flops(u64),
    /// Ops recorded in one launch (the chain).
    Ops(u64),
}

/// Records one launch of a case on a queue.
type Launch = Box<dyn Fn(&Queue) -> Result<()>>;

/// A ready-to-time case: inputs are allocated, `launch` records one run.
struct Case {
    shape: String,
    work: Work,
    /// Bytes of the outputs one launch allocates (bounds launches in flight).
    out_bytes: u64,
    /// Whether several launches may be recorded in one repetition.
    batched: bool,
    /// Time recording and submitting only, not the device's work (`chain`).
    recording_only: bool,
    launch: Launch,
    name: String,
}

/// What a case measures: its shape text, work, output bytes and the launch.
type Parts = (String, Work, u64, Launch);

fn build_case(device: &Device, config: &BenchConfig, name: &str, kind: Kind) -> Result<Case> {
    let (shape, work, out_bytes, launch) = match kind {
        Kind::Unary(_)
        | Kind::Binary(_)
        | Kind::Broadcast(_)
        | Kind::Fused(..)
        | Kind::CastF16
        | Kind::AddF16 => elementwise_case(device, config, kind)?,
        Kind::Fused5(fused) => fused5_case(device, config, fused)?,
        Kind::ReduceAll(..) | Kind::ReduceLast(..) | Kind::Softmax | Kind::LayerNorm => {
            row_case(device, config, kind)?
        }
        Kind::Linear | Kind::Attention | Kind::Conv2d => model_case(device, config, kind)?,
        Kind::Matmul(variant) => {
            matmul_case(device, config.matmul_edge, config.matmul_dtype, variant)?
        }
        Kind::Chain | Kind::ChainDone => chain_case(device, config.chain_len)?,
        Kind::ChainReplay | Kind::ChainReplayDone => chain_replay_case(device, config.chain_len)?,
    };
    let chain = matches!(
        kind,
        Kind::Chain | Kind::ChainDone | Kind::ChainReplay | Kind::ChainReplayDone
    );
    let recording_only = matches!(kind, Kind::Chain | Kind::ChainReplay);
    Ok(Case {
        shape,
        work,
        out_bytes,
        batched: !chain,
        recording_only,
        launch,
        name: name.to_string(),
    })
}

/// 4 bytes per f32 element.
fn bytes(elements: usize) -> u64 {
    4 * elements as u64
}

/// Elementwise ops and casts over `n` elements (or `rows x cols` plus a broadcast row).
fn elementwise_case(device: &Device, config: &BenchConfig, kind: Kind) -> Result<Parts> {
    let n = config.elements;
    let (rows, cols) = rows_cols(n, config.row_len);
    Ok(match kind {
        Kind::Unary(op) => {
            let x = input(device, &[n])?;
            (
                format!("[{n}]"),
                Work::Bytes(bytes(2 * n)),
                bytes(n),
                Box::new(move |q| elementwise::unary(q, op, &x).map(drop)),
            )
        }
        Kind::Binary(op) => {
            let (a, b) = (input(device, &[n])?, input(device, &[n])?);
            (
                format!("[{n}] {} [{n}]", symbol(op)),
                Work::Bytes(bytes(3 * n)),
                bytes(n),
                Box::new(move |q| elementwise::binary(q, op, &a, &b).map(drop)),
            )
        }
        Kind::Broadcast(op) => {
            let (a, b) = (input(device, &[rows, cols])?, input(device, &[cols])?);
            let work = Work::Bytes(bytes(2 * rows * cols + cols));
            (
                format!("[{rows}, {cols}] {} [{cols}]", symbol(op)),
                work,
                bytes(rows * cols),
                Box::new(move |q| elementwise::binary(q, op, &a, &b).map(drop)),
            )
        }
        Kind::Fused(op, act) => {
            let (a, b) = (input(device, &[n])?, input(device, &[n])?);
            let shape = format!("{}([{n}] {} [{n}])", act.name(), symbol(op));
            (
                shape,
                Work::Bytes(bytes(3 * n)),
                bytes(n),
                Box::new(move |q| elementwise::binary_act(q, op, act, &a, &b).map(drop)),
            )
        }
        Kind::CastF16 => {
            let x = input(device, &[n])?;
            (
                format!("[{n}] f32 -> f16"),
                Work::Bytes(6 * n as u64),
                2 * n as u64,
                Box::new(move |q| cast::cast(q, &x, DType::F16).map(drop)),
            )
        }
        Kind::AddF16 => {
            let (a, b) = (
                input(device, &[n])?.cast(DType::F16)?,
                input(device, &[n])?.cast(DType::F16)?,
            );
            (
                format!("[{n}] + [{n}] f16"),
                Work::Bytes(6 * n as u64),
                2 * n as u64,
                Box::new(move |q| elementwise::binary(q, BinaryOp::Add, &a, &b).map(drop)),
            )
        }
        _ => unreachable!("build_case sends only elementwise kinds here"),
    })
}

/// `sigmoid(a * b + a) * b - a` over `n` elements: one chain kernel, or five ops one by one.
/// Both count the bytes of the fused kernel (two inputs read, one output written), so their
/// rates compare as times.
fn fused5_case(device: &Device, config: &BenchConfig, fused: bool) -> Result<Parts> {
    let n = config.elements;
    let (a, b) = (input(device, &[n])?, input(device, &[n])?);
    let shape = format!("sigmoid([{n}] * [{n}] + a) * b - a");
    let launch: Launch = if fused {
        let mut c = chain::Chain::new();
        let (x, y) = (chain::Value::Input(0), chain::Value::Input(1));
        let product = c.binary(BinaryOp::Mul, x, y);
        let sum = c.binary(BinaryOp::Add, product, x);
        let s = c.unary(UnaryOp::Sigmoid, sum);
        let scaled = c.binary(BinaryOp::Mul, s, y);
        c.binary(BinaryOp::Sub, scaled, x);
        Box::new(move |q| chain::chain(q, &c, &[&a, &b]).map(drop))
    } else {
        Box::new(move |q| {
            let product = elementwise::binary(q, BinaryOp::Mul, &a, &b)?;
            let sum = elementwise::binary(q, BinaryOp::Add, &product, &a)?;
            let s = elementwise::unary(q, UnaryOp::Sigmoid, &sum)?;
            let scaled = elementwise::binary(q, BinaryOp::Mul, &s, &b)?;
            elementwise::binary(q, BinaryOp::Sub, &scaled, &a).map(drop)
        })
    };
    Ok((shape, Work::Bytes(bytes(3 * n)), bytes(n), launch))
}

/// Reductions, softmax and layer norm over `n` elements (as `rows x cols` where per row).
fn row_case(device: &Device, config: &BenchConfig, kind: Kind) -> Result<Parts> {
    let n = config.elements;
    let (rows, cols) = rows_cols(n, config.row_len);
    Ok(match kind {
        Kind::ReduceAll(op, variant) => {
            let x = input(device, &[n])?;
            (
                format!("[{n}] -> []"),
                Work::Bytes(bytes(n + 1)),
                bytes(n / 256 + 1),
                reduce_launch(op, x, None, variant),
            )
        }
        Kind::ReduceLast(op, variant) => {
            let x = input(device, &[rows, cols])?;
            (
                format!("[{rows}, {cols}] -> [{rows}]"),
                Work::Bytes(bytes(rows * cols + rows)),
                bytes(rows),
                reduce_launch(op, x, Some(1), variant),
            )
        }
        Kind::Softmax => {
            let x = input(device, &[rows, cols])?;
            (
                format!("[{rows}, {cols}]"),
                Work::Bytes(bytes(2 * rows * cols)),
                bytes(rows * cols),
                Box::new(move |q| softmax::softmax(q, &x).map(drop)),
            )
        }
        Kind::LayerNorm => {
            let x = input(device, &[rows, cols])?;
            let launch: Launch = Box::new(move |q| {
                norm::norm(q, NormKind::Layer, &x, NormParams::default()).map(drop)
            });
            (
                format!("[{rows}, {cols}]"),
                Work::Bytes(bytes(2 * rows * cols)),
                bytes(rows * cols),
                launch,
            )
        }
        _ => unreachable!("build_case sends only row kinds here"),
    })
}

/// linear at `e x e x e`, attention and conv2d at their fixed model shapes.
fn model_case(device: &Device, config: &BenchConfig, kind: Kind) -> Result<Parts> {
    let e = config.matmul_edge;
    Ok(match kind {
        Kind::Linear => {
            let (x, w, b) = (
                input(device, &[e, e])?,
                input(device, &[e, e])?,
                input(device, &[e])?,
            );
            let launch: Launch = Box::new(move |q| {
                matmul::linear(q, &x, &w, Some(&b), Some(UnaryOp::Relu)).map(drop)
            });
            (
                format!("relu([{e}, {e}] @ [{e}, {e}] + b)"),
                Work::Flops(2 * (e as u64).pow(3)),
                bytes(e * e),
                launch,
            )
        }
        Kind::Attention => attention_case(device, config)?,
        Kind::Conv2d => {
            let [n_, c, hh, ww, o] = config.conv;
            let (x, w) = (
                input(device, &[n_, c, hh, ww])?,
                input(device, &[o, c, 3, 3])?,
            );
            let params = Conv2dParams {
                padding: [1, 1],
                ..Conv2dParams::default()
            };
            let launch: Launch = Box::new(move |q| conv::conv2d(q, &x, &w, params).map(drop));
            let flops = 2 * (n_ * o * hh * ww * c * 9) as u64;
            (
                format!("[{n_}, {c}, {hh}, {ww}] * [{o}, {c}, 3, 3]"),
                Work::Flops(flops),
                bytes(n_ * o * hh * ww),
                launch,
            )
        }
        _ => unreachable!("build_case sends only model kinds here"),
    })
}

/// A reduction of `x` over `axis` with the backend's default variant or a named one.
fn reduce_launch(
    op: ReduceOp,
    x: Tensor,
    axis: Option<usize>,
    variant: Option<&'static str>,
) -> Launch {
    match variant {
        Some(v) => Box::new(move |q| reduce::reduce_variant(q, op, &x, axis, v).map(drop)),
        None => Box::new(move |q| reduce::reduce(q, op, &x, axis).map(drop)),
    }
}

/// Causal or full attention over `config.attention` in `config.attention_dtype`.
fn attention_case(device: &Device, config: &BenchConfig) -> Result<Parts> {
    let shape = config.attention;
    let [b, h, l, d] = shape;
    let dtype = config.attention_dtype;
    let (q_, k, v) = (
        typed_input(device, &shape, dtype)?,
        typed_input(device, &shape, dtype)?,
        typed_input(device, &shape, dtype)?,
    );
    let causal = config.causal;
    let params = AttentionParams {
        causal,
        ..AttentionParams::default()
    };
    let launch: Launch = Box::new(move |q| attention::attention(q, &q_, &k, &v, params).map(drop));
    // q k^T and p v: 2 * l * l * d multiply-adds each, per head; half of them when causal.
    let flops = 4 * (b * h * l * l * d) as u64 / if causal { 2 } else { 1 };
    let causal_text = if causal { " causal" } else { "" };
    Ok((
        format!("[{b}, {h}, {l}, {d}] x3 {dtype}{causal_text}"),
        Work::Flops(flops),
        (dtype.size() * b * h * l * d) as u64,
        launch,
    ))
}

/// A seeded input of `shape` in `dtype` (cast from f32 where it is another).
fn typed_input(device: &Device, shape: &[usize], dtype: DType) -> Result<Tensor> {
    let t = input(device, shape)?;
    if dtype == DType::F32 {
        Ok(t)
    } else {
        t.cast(dtype)
    }
}

fn matmul_case(
    device: &Device,
    e: usize,
    dtype: DType,
    variant: Option<&'static str>,
) -> Result<Parts> {
    let (a, b) = (
        typed_input(device, &[e, e], dtype)?,
        typed_input(device, &[e, e], dtype)?,
    );
    let flops = 2 * (e as u64).pow(3);
    let launch: Launch = match variant {
        Some(v) => Box::new(move |q| matmul::matmul_variant(q, &a, &b, v).map(drop)),
        None => Box::new(move |q| matmul::matmul(q, &a, &b).map(drop)),
    };
    let suffix = if dtype == DType::F32 {
        String::new()
    } else {
        format!(" {dtype}")
    };
    Ok((
        format!("[{e}, {e}] @ [{e}, {e}]{suffix}"),
        Work::Flops(flops),
        (dtype.size() * e * e) as u64,
        launch,
    ))
}

/// `len` dependent 1024-element adds recorded on one queue: `x = x + y`, `len` times.
fn chain_case(device: &Device, len: usize) -> Result<Parts> {
    let (x0, y) = (
        input(device, &[CHAIN_ELEMENTS])?,
        input(device, &[CHAIN_ELEMENTS])?,
    );
    let launch = move |q: &Queue| add_chain(q, &x0, &y, len).map(drop);
    Ok((
        format!("{len} x [{CHAIN_ELEMENTS}] add"),
        Work::Ops(len as u64),
        (4 * CHAIN_ELEMENTS as u64).saturating_mul(len as u64),
        Box::new(launch),
    ))
}

/// `x0 + y + y + ...`: `len` adds recorded on `q`, one op each.
fn add_chain(q: &Queue, x0: &Tensor, y: &Tensor, len: usize) -> Result<Tensor> {
    let mut x = x0.clone();
    for _ in 0..len {
        x = elementwise::binary(q, BinaryOp::Add, &x, y)?;
    }
    Ok(x)
}

/// The chain of [`chain_case`] captured once on the device's default queue; a launch is one
/// replay (the queue a launch gets is that queue: the bench times the default queue).
fn chain_replay_case(device: &Device, len: usize) -> Result<Parts> {
    let (x0, y) = (
        input(device, &[CHAIN_ELEMENTS])?,
        input(device, &[CHAIN_ELEMENTS])?,
    );
    let (graph, _out) = device.queue().capture(|q| add_chain(q, &x0, &y, len))?;
    Ok((
        format!("{len} x [{CHAIN_ELEMENTS}] add, replayed"),
        Work::Ops(len as u64),
        (4 * CHAIN_ELEMENTS as u64).saturating_mul(len as u64),
        Box::new(move |_: &Queue| graph.replay()),
    ))
}

fn symbol(op: BinaryOp) -> &'static str {
    match op {
        BinaryOp::Add => "+",
        BinaryOp::Sub => "-",
        BinaryOp::Mul => "*",
        BinaryOp::Div => "/",
        other => other.name(),
    }
}

/// A tensor of `shape` filled with a deterministic pattern in [-2, 2).
fn input(device: &Device, shape: &[usize]) -> Result<Tensor> {
    unicompute::choice::pattern_tensor(device, shape)
}

fn measure_case(
    meter: &Meter,
    device: &Device,
    config: &BenchConfig,
    case: &Case,
    ceilings: &Ceilings,
) -> Result<BenchResult> {
    let allocated_before = device.memory_stats().allocations;
    let median_s = if case.recording_only {
        median_recording_seconds(meter, &device.queue(), config, case)?
    } else {
        median_seconds(meter, &device.queue(), config, case)?
    };
    let (rate, unit, ceiling) = match case.work {
        Work::Bytes(b) => (b as f64 / median_s / 1e9, "GB/s", Some(ceilings.copy_gbps)),
        Work::Flops(f) => (f as f64 / median_s / 1e9, "GFLOP/s", Some(ceilings.gflops)),
        Work::Ops(n) => (median_s / n as f64 * 1e6, "us/op", None),
    };
    let percent = ceiling.map(|c| 100.0 * rate / c);
    Ok(BenchResult {
        name: case.name.clone(),
        shape: case.shape.clone(),
        median_s,
        rate,
        unit,
        ceiling,
        percent,
        allocations: device.memory_stats().allocations - allocated_before,
    })
}

/// Median host seconds to record and submit one launch of `case`, after warm-up.
fn median_recording_seconds(
    meter: &Meter,
    queue: &Queue,
    config: &BenchConfig,
    case: &Case,
) -> Result<f64> {
    queue.finish()?;
    for _ in 0..config.warmup {
        time_recording(queue, &case.launch)?;
    }
    let mut samples = Vec::with_capacity(config.reps);
    for _ in 0..config.reps {
        samples.push(meter.rep(|| time_recording(queue, &case.launch))?);
    }
    Ok(median(&mut samples))
}

/// Median seconds of one launch of `case`, after warm-up and calibration of the launches per
/// repetition.
fn median_seconds(meter: &Meter, queue: &Queue, config: &BenchConfig, case: &Case) -> Result<f64> {
    queue.finish()?;
    for _ in 0..config.warmup {
        time_launches(queue, 1, &case.launch)?;
    }
    let launches = if case.batched {
        let single = time_launches(queue, 1, &case.launch)?;
        let by_memory = (MAX_INFLIGHT_BYTES / case.out_bytes.max(1)).max(1) as usize;
        ((TARGET_REP_SECONDS / single).ceil() as usize)
            .clamp(1, MAX_LAUNCHES_PER_REP.min(by_memory))
    } else {
        1
    };
    if launches > 1 {
        // One untimed repetition at full size, so the pool holds every output buffer it needs.
        time_launches(queue, launches, &case.launch)?;
    }
    let mut samples = Vec::with_capacity(config.reps);
    for _ in 0..config.reps {
        samples.push(meter.rep(|| {
            time_launches(queue, launches, &case.launch).map(|t| (t / launches as f64, t))
        })?);
    }
    Ok(median(&mut samples))
}

/// Seconds to run `n` launches: device time between a fence before and one after them where
/// the backend has device timers, else host time to record, submit and wait.
fn time_launches(queue: &Queue, n: usize, launch: &dyn Fn(&Queue) -> Result<()>) -> Result<f64> {
    let before = queue.submit()?;
    let start = Instant::now();
    for _ in 0..n {
        launch(queue)?;
    }
    let after = queue.submit()?;
    after.wait_blocking()?;
    let host = start.elapsed().as_secs_f64();
    Ok(after
        .elapsed_since(&before)
        .map_or(host, |d| d.as_secs_f64()))
}

/// Which clock [`time_launches`] uses on `device`.
fn timer(device: &Device) -> Result<&'static str> {
    let q = device.queue();
    let (a, b) = (q.submit()?, q.submit()?);
    b.wait_blocking()?;
    Ok(if b.elapsed_since(&a).is_ok() {
        "device"
    } else {
        "host"
    })
}

/// Host seconds to record one launch and submit it, not counting the wait for the device
/// (what a chain of small ops costs the caller), and host seconds to its completion.
fn time_recording(queue: &Queue, launch: &dyn Fn(&Queue) -> Result<()>) -> Result<(f64, f64)> {
    let start = Instant::now();
    launch(queue)?;
    let fence = queue.submit()?;
    let seconds = start.elapsed().as_secs_f64();
    fence.wait_blocking()?;
    Ok((seconds, start.elapsed().as_secs_f64()))
}

fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    let mid = samples.len() / 2;
    if samples.len() % 2 == 0 && mid > 0 {
        (samples[mid - 1] + samples[mid]) / 2.0
    } else {
        samples.get(mid).copied().unwrap_or(f64::NAN)
    }
}

/// GB/s (read + write) of a device-to-device copy of `bytes`.
fn copy_bandwidth(device: &Device, config: &BenchConfig, bytes: u64) -> Result<f64> {
    let len = usize::try_from(bytes / 4)
        .map_err(|_| Error::Invalid(format!("{bytes} bytes exceed the address space")))?;
    let (src, dst) = (
        Buffer::<f32>::zeros(device, len)?,
        Buffer::<f32>::zeros(device, len)?,
    );
    let case = Case {
        shape: human_bytes(bytes),
        work: Work::Bytes(2 * bytes),
        out_bytes: 0,
        batched: true,
        recording_only: false,
        launch: Box::new(move |q| q.copy(&src, &dst)),
        name: "copy".into(),
    };
    let seconds = median_seconds(&Meter::default(), &device.queue(), config, &case)?;
    Ok(2.0 * bytes as f64 / seconds / 1e9)
}

/// GFLOP/s of the matmul op at the GEMM ceiling size, with a description.
fn gemm_gflops(device: &Device, config: &BenchConfig, edge: usize) -> Result<(f64, String)> {
    let (shape, work, out_bytes, launch) = matmul_case(device, edge, DType::F32, None)?;
    let case = Case {
        shape,
        work,
        out_bytes,
        batched: true,
        recording_only: false,
        launch,
        name: "gemm".into(),
    };
    let seconds = median_seconds(&Meter::default(), &device.queue(), config, &case)?;
    let flops = 2.0 * (edge as f64).powi(3);
    Ok((
        flops / seconds / 1e9,
        format!(
            "GEMM ceiling: the {} matmul op at {edge}^3",
            device.backend()
        ),
    ))
}

/// GFLOP/s of `peak.wgsl`, its loop count calibrated so a launch takes about
/// [`TARGET_REP_SECONDS`].
fn peak_gflops(device: &Device, config: &BenchConfig) -> Result<(f64, String)> {
    let kernel = Kernel::from_wgsl(device, PEAK_WGSL, "peak_main")?;
    let queue = device.queue();
    let invocations = PEAK_WORKGROUPS * PEAK_WORKGROUP;
    let sink = Buffer::<f32>::zeros(device, invocations as usize)?;
    let iters = Buffer::<u32>::zeros(device, 1)?;
    let grid = grid_2d(PEAK_WORKGROUPS, device.info().limits.max_workgroups[0]);
    let launch = |q: &Queue| q.launch(&kernel, &[(&iters).into(), (&sink).into()], grid);
    // Below a driver's loop-iteration limit, where loops past it would end early uncounted.
    let max_iters = device
        .info()
        .limits
        .max_loop_iterations
        .map_or(PEAK_MAX_ITERS, |n| PEAK_MAX_ITERS.min((n / 2) as u32));
    let mut count: u32 = 64;
    queue.write(&iters, &[count])?;
    time_launches(&queue, 1, &launch)?; // pipeline warm-up
    loop {
        let t = time_launches(&queue, 1, &launch)?;
        if t >= TARGET_REP_SECONDS || count >= max_iters {
            break;
        }
        let factor = (TARGET_REP_SECONDS / t.max(1e-6)).ceil().clamp(2.0, 64.0) as u32;
        count = count.saturating_mul(factor).min(max_iters);
        queue.write(&iters, &[count])?;
    }
    let mut samples = Vec::with_capacity(config.reps);
    for _ in 0..config.reps {
        samples.push(time_launches(&queue, 1, &launch)?);
    }
    let flops = (invocations * u64::from(count) * PEAK_FLOPS_PER_ITER) as f64;
    let source = format!(
        "peak.wgsl: {invocations} invocations x {count} iterations x {PEAK_FLOPS_PER_ITER} FLOPs"
    );
    Ok((flops / median(&mut samples) / 1e9, source))
}

/// A 2-D grid of `groups` workgroups with x at most 65535 (and the device's limit).
fn grid_2d(groups: u64, max_per_dim: u32) -> [u32; 3] {
    let x = groups.min(MAX_GRID_X).min(u64::from(max_per_dim)).max(1);
    [x as u32, groups.div_ceil(x) as u32, 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_op_names() {
        assert_eq!(
            parse_kind("gelu_tanh").ok(),
            Some(Kind::Unary(UnaryOp::GeluTanh))
        );
        assert_eq!(
            parse_kind("add_gelu_tanh").ok(),
            Some(Kind::Fused(BinaryOp::Add, UnaryOp::GeluTanh))
        );
        assert_eq!(
            parse_kind("mul_bcast").ok(),
            Some(Kind::Broadcast(BinaryOp::Mul))
        );
        assert_eq!(
            parse_kind("max_last").ok(),
            Some(Kind::ReduceLast(ReduceOp::Max, None))
        );
        assert_eq!(
            parse_kind("sum_last@tree").ok(),
            Some(Kind::ReduceLast(ReduceOp::Sum, Some("tree")))
        );
        assert_eq!(
            parse_kind("matmul@auto").ok(),
            Some(Kind::Matmul(Some("auto")))
        );
        assert!(parse_kind("softmax@auto").is_err());
        assert!(parse_kind("nope").is_err());
        assert!(DEFAULT_OPS.iter().all(|n| parse_kind(n).is_ok()));
        // Every op of the op tables is a bench op, and every variant of the tunable ops.
        let ops = UnaryOp::ALL
            .map(UnaryOp::name)
            .into_iter()
            .chain(BinaryOp::ALL.map(BinaryOp::name));
        for op in ops.chain(ReduceOp::ALL.map(ReduceOp::name)) {
            assert!(parse_kind(op).is_ok(), "bench op {op}");
        }
        let kinds = ["matmul", "sum"];
        assert_eq!(
            unicompute::TUNABLE_OPS.len(),
            kinds.len(),
            "a bench op per tunable op"
        );
        for (op, kind) in unicompute::TUNABLE_OPS.iter().zip(kinds) {
            for v in unicompute::ops::variant_names(op) {
                assert!(
                    parse_kind(&format!("{kind}@{v}")).is_ok(),
                    "bench op {kind}@{v}"
                );
            }
        }
    }

    #[test]
    fn grid_stays_within_65535() {
        assert_eq!(grid_2d(4096, 65535), [4096, 1, 1]);
        assert_eq!(grid_2d(70000, 65535), [65535, 2, 1]);
    }

    #[test]
    fn medians() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}
