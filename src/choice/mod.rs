//! The chooser: which kernel variant an op runs, from the call, the device's [`Policy`],
//! the op's dtype and shape, and the device's capabilities. Every choice is a [`Decision`]
//! with a reason; it is logged through `tracing` (target `unicompute::choice`) and kept by
//! the profiler with the launch it chose for.
//!
//! A variant comes from, in order: the call (`matmul_variant`), the policy's `variants`
//! (`"auto"`: the fastest candidate for this device and shape class, timed once and cached,
//! see `Device::tune`), else the backend's default for the shape.

pub(crate) mod select;
mod tune;

pub use crate::runtime::tune_cache::TUNE_CACHE_ENV;
pub(crate) use select::{Probe, Recording};
pub(crate) use tune::tune;
pub use tune::{catalogue, TuneResult};

use crate::profile::Decision;
use crate::{BackendKind, DType, Device, Error, Policy, Queue, Result};

/// An op with kernel variants, as the chooser sees it: the op says which variants a device
/// has, which it runs by default and how to run one on synthetic inputs; the chooser
/// chooses, tunes and caches. The ops hand theirs in (`ops::TUNABLES`), so the chooser names
/// no op.
pub(crate) trait Tunable: Sync {
    /// Which op.
    fn op(&self) -> TunableOp;
    /// Every variant some backend of this build has (the names a policy or a bench may give).
    fn all_variants(&self) -> Vec<&'static str>;
    /// The variants `device` runs.
    fn variants(&self, device: &Device) -> Vec<&'static str>;
    /// The variant `device` runs for `problem` unless told otherwise, and why.
    fn default_variant(&self, device: &Device, problem: Problem) -> (&'static str, String);
    /// Synthetic inputs for `problem` on `device`, ready to run any variant.
    fn trial(&self, device: &Device, problem: Problem) -> Result<Trial>;
}

/// A problem's synthetic inputs and the closure that runs one variant on them (autotuning
/// times each).
pub(crate) struct Trial {
    /// What runs, for the tune cache (`[512, 512] @ [512, 512] f32`).
    pub describe: String,
    /// Record the op with the named variant on the queue.
    pub run: RunVariant,
}

/// Records an op with the named variant on a queue.
pub(crate) type RunVariant = Box<dyn Fn(&Queue, &str) -> Result<()>>;

/// An op with kernel variants, in the order of [`TUNABLE_OPS`](crate::TUNABLE_OPS), which
/// names them (a test in `ops/tunables.rs` holds the ops' `Tunable`s to the same order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TunableOp {
    Matmul = 0,
    Reduce = 1,
}

impl TunableOp {
    /// The op's name: its entry in [`TUNABLE_OPS`](crate::TUNABLE_OPS).
    pub(crate) fn name(self) -> &'static str {
        crate::base::policy::TUNABLE_OPS[self as usize]
    }
}

/// The sizes that decide a variant, and how they group into shape classes for autotuning
/// ([`Device::tune`] takes one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    /// `batch` products of `[m, k] @ [k, n]`.
    Matmul {
        /// Products in the batch.
        batch: usize,
        /// Rows of the output.
        m: usize,
        /// Columns of the output.
        n: usize,
        /// The summed dimension.
        k: usize,
        /// Element type of the operands.
        dtype: DType,
    },
    /// `outer * inner` reductions of `len` elements each.
    Reduce {
        /// Extent before the reduced axis.
        outer: usize,
        /// Extent of the reduced axis.
        len: usize,
        /// Extent after the reduced axis.
        inner: usize,
    },
}

/// `n` rounded up to a power of two: the bucket of a size in a shape class.
fn bucket(n: usize) -> usize {
    n.max(1).next_power_of_two()
}

impl Problem {
    /// The op the problem is for.
    pub(crate) fn op(self) -> TunableOp {
        match self {
            Problem::Matmul { .. } => TunableOp::Matmul,
            Problem::Reduce { .. } => TunableOp::Reduce,
        }
    }

    /// The shape class: sizes rounded up to powers of two (and the dtype), so that one tuning
    /// serves every shape of the class.
    pub fn class(self) -> String {
        match self {
            Problem::Matmul {
                batch,
                m,
                n,
                k,
                dtype,
            } => {
                format!(
                    "matmul {dtype} batch{} m{} n{} k{}",
                    bucket(batch),
                    bucket(m),
                    bucket(n),
                    bucket(k)
                )
            }
            Problem::Reduce { outer, len, inner } => {
                let axis = if inner == 1 { "last" } else { "inner" };
                format!(
                    "reduce {axis} rows{} len{}",
                    bucket(outer * inner),
                    bucket(len)
                )
            }
        }
    }
}

/// A tensor of `shape` on `device` filled with a deterministic pattern in [-2, 2): the
/// synthetic operands of tuning, the selection probe and the bench.
pub fn pattern_tensor(device: &Device, shape: &[usize]) -> Result<crate::Tensor> {
    let n: usize = shape.iter().product();
    let data: Vec<f32> = (0..n)
        .map(|i| (i.wrapping_mul(2_654_435_761) % 4096) as f32 / 1024.0 - 2.0)
        .collect();
    crate::Tensor::from_slice(device, &data, shape)
}

/// Measured times of candidates, for reasons: `tile64 812.0 us, tile32 1.50 ms`.
pub(crate) fn times_text(times: &std::collections::BTreeMap<String, f64>) -> String {
    let parts: Vec<String> = times
        .iter()
        .map(|(name, us)| format!("{name} {}", crate::base::text::human_seconds(us / 1e6)))
        .collect();
    parts.join(", ")
}

/// Choose `tunable`'s variant for `problem` on `queue`'s device; `requested` is what the call
/// named (`Some("auto")` asks for autotuning).
pub(crate) fn choose(
    queue: &Queue,
    tunable: &dyn Tunable,
    problem: Problem,
    requested: Option<&str>,
) -> Result<(&'static str, Decision)> {
    let device = queue.device();
    let op = tunable.op();
    let known = tunable.variants(device);
    let (request, by) = match requested {
        Some(v) => (Some(v), "the call"),
        None => (device.policy().variant(op.name()), "the policy"),
    };
    let (choice, reason) = match request {
        Some("auto") => tune::tuned(device, tunable, problem, &known)?,
        Some(name) => {
            match known.iter().find(|&&v| v == name) {
                Some(&v) => (v, format!("named by {by}")),
                None if by == "the policy" => {
                    // Only reachable with `fallback` (opening checks the policy's names).
                    let (v, why) = tunable.default_variant(device, problem);
                    let reason = format!(
                        "the policy names `{name}`, which {} lacks: {why} (fallback allowed by \
                         the policy)",
                        device.backend()
                    );
                    (v, reason)
                }
                None => {
                    return Err(Error::Invalid(format!(
                        "unknown {} variant `{name}` on {}: expected one of {known:?} or \"auto\"",
                        op.name(),
                        device.backend()
                    )));
                }
            }
        }
        None => tunable.default_variant(device, problem),
    };
    let decision = Decision {
        op: op.name().into(),
        choice: choice.into(),
        reason,
        times_us: Default::default(),
    };
    tracing::debug!(
        target: "unicompute::choice",
        op = op.name(),
        class = %problem.class(),
        choice,
        reason = %decision.reason,
        "kernel variant chosen"
    );
    Ok((choice, decision))
}

/// Check what `policy` asks of the device opened for it. Returns the fallbacks taken (each
/// logged as a warning); without `fallback` in the policy, any would be an error.
pub(crate) fn check_policy(
    policy: &Policy,
    device: &Device,
    tunables: &[&dyn Tunable],
) -> Result<Vec<Decision>> {
    let kind = device.backend();
    let mut fallbacks = Vec::new();
    let mut refuse = |key: String, what: String, instead: &str| -> Result<()> {
        if !policy.fallback {
            return Err(Error::Unsupported {
                backend: kind,
                what: format!(
                    "policy `{key}`: {what}; \
                change it, or set \"fallback\": true to run {instead} instead"
                ),
            });
        }
        let reason = format!(
            "policy `{key}`: {what}; {instead} runs instead (fallback allowed by the policy)"
        );
        tracing::warn!(target: "unicompute::choice", %reason, "policy fallback");
        fallbacks.push(Decision {
            op: key,
            choice: instead.into(),
            reason,
            times_us: Default::default(),
        });
        Ok(())
    };
    if policy.precision != crate::MatmulPrecision::F32 && kind != BackendKind::Cuda {
        refuse(
            "precision".into(),
            format!(
                "{kind} computes matmuls in f32 only, not {}",
                policy.precision.name()
            ),
            "f32",
        )?;
    }
    for (op, variant) in &policy.variants {
        let Some(tunable) = tunables.iter().find(|t| t.op().name() == op) else {
            continue;
        };
        let (op, known) = (tunable.op(), tunable.variants(device));
        if variant != "auto" && !known.contains(&variant.as_str()) {
            refuse(
                format!("variants.{}", op.name()),
                format!(
                    "`{variant}` is not a {} variant of {kind}, which has {known:?} (or \"auto\")",
                    op.name()
                ),
                "the default variant",
            )?;
        }
    }
    Ok(fallbacks)
}
