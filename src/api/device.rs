//! Opening devices, tuning their kernel variants and naming them: the `Device` methods that
//! need the ops (the selection probe, the ops' variants), above the runtime's `Device`.

use crate::base::info::{BackendChoice, DeviceOptions, BACKEND_ENV};
use crate::base::signal::ready_now;
use crate::choice::{self, select, Problem, TuneResult};
use crate::hal;
use crate::profile::Decision;
use crate::{BackendKind, Device, Error, Policy, Result};

impl Device {
    /// Open a device (see [`BackendChoice`]); natively, blocking.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn open(choice: BackendChoice) -> Result<Device> {
        pollster::block_on(Self::open_async(choice))
    }

    /// Open a device with options; natively, blocking.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn open_with(choice: BackendChoice, options: DeviceOptions) -> Result<Device> {
        pollster::block_on(Self::open_with_async(choice, options))
    }

    /// [`open`](Device::open) without blocking (the way to open a device in a browser).
    pub async fn open_async(choice: BackendChoice) -> Result<Device> {
        Self::open_with_async(choice, DeviceOptions::default()).await
    }

    /// [`open_with`](Device::open_with) without blocking.
    pub async fn open_with_async(choice: BackendChoice, options: DeviceOptions) -> Result<Device> {
        let choice = match choice {
            BackendChoice::Auto => match std::env::var(BACKEND_ENV) {
                Ok(v) => v
                    .parse()
                    .map_err(|e: Error| Error::Invalid(format!("{BACKEND_ENV}: {e}")))?,
                Err(_) => BackendChoice::Auto,
            },
            other => other,
        };
        let candidates = match choice {
            BackendChoice::Backend(kind) => hal::enumerate_through(kind).await,
            _ => hal::enumerate().await,
        };
        let (candidate, reason) = match choice {
            BackendChoice::Auto => {
                let (device, decision) =
                    select::open_best(&Policy::default(), candidates, options, &crate::ops::PROBE)
                        .await?;
                return Ok(device.with_decisions(decision, Vec::new()));
            }
            BackendChoice::Index(i) => {
                let n = candidates.len();
                let found = candidates.into_iter().nth(i);
                (
                    found.ok_or_else(|| {
                        Error::NoDevice(format!(
                            "device index {i} does not exist: {n} devices are listed"
                        ))
                    })?,
                    format!("device {i} asked for by index"),
                )
            }
            BackendChoice::Backend(kind) => {
                let c = candidates
                    .into_iter()
                    .filter(|c| c.info.backend == kind)
                    .min_by_key(|c| (c.info.device_type.preference(), c.info.index));
                (
                    c.ok_or_else(|| Error::NoDevice(hal::missing_reason(kind)))?,
                    format!("the best {kind} device, asked for by backend"),
                )
            }
        };
        let decision = Decision {
            op: "backend".into(),
            choice: format!(
                "{} `{}` ({})",
                candidate.info.backend, candidate.info.name, candidate.info.device_type
            ),
            reason,
            times_us: Default::default(),
        };
        Ok(Self::from_candidate(candidate, options, Policy::default())
            .await?
            .with_decisions(decision, Vec::new()))
    }

    /// Open the device `policy` prefers among its `backends` (see [`Policy::selection`]), with
    /// its precision, pool settings and kernel variants (blocking natively).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn open_with_policy(policy: &Policy) -> Result<Device> {
        pollster::block_on(Self::open_with_policy_async(policy))
    }

    /// [`open_with_policy`](Device::open_with_policy) without blocking. A precision or variant
    /// the chosen device lacks is an error naming the key, unless the policy allows `fallback`.
    pub async fn open_with_policy_async(policy: &Policy) -> Result<Device> {
        policy.validate()?;
        let options = DeviceOptions {
            pool_cache_limit: policy.pool.cache_limit_bytes,
            matmul_precision: policy.precision,
            ..DeviceOptions::default()
        };
        let (device, decision) =
            select::open_best(policy, hal::enumerate().await, options, &crate::ops::PROBE).await?;
        let fallbacks = choice::check_policy(policy, &device, crate::ops::TUNABLES)?;
        Ok(device.with_decisions(decision, fallbacks))
    }

    /// Time every variant of `problem` on this device now (device timers, median of a few runs
    /// after a warm-up), store the fastest in the tune cache for its shape class, and report.
    /// Ops whose policy variant is `"auto"` then run the winner. In browsers this is the way
    /// to tune (an op cannot wait for timings there).
    pub async fn tune(&self, problem: Problem) -> Result<TuneResult> {
        let op = problem.op().name();
        let tunable = crate::ops::tunable(op)
            .ok_or_else(|| Error::Internal(format!("no tunable op `{op}`")))?;
        choice::tune(self, tunable, problem).await
    }

    /// Blocking twin of [`tune`](Device::tune) (not available in browsers).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn tune_blocking(&self, problem: Problem) -> Result<TuneResult> {
        pollster::block_on(self.tune(problem))
    }

    /// Names of the kernel variants `op` (`"matmul"`, `"reduce"`) has on this device.
    pub fn variants(&self, op: &str) -> Vec<&'static str> {
        crate::ops::tunable(op).map_or_else(Vec::new, |t| t.variants(self))
    }

    /// A device whose values can be read back without the event loop turning: this one,
    /// but for a browser's GPU device (its reads resolve in the page's event loop), whose
    /// twin is a CPU device. What a session's load computes on that it reads at once
    /// (constant folding).
    pub(crate) fn readable_now(&self) -> Result<Device> {
        if !cfg!(target_arch = "wasm32") || self.backend() == BackendKind::Cpu {
            return Ok(self.clone());
        }
        let open = Self::open_async(BackendChoice::Backend(BackendKind::Cpu));
        ready_now(open).unwrap_or_else(|| {
            Err(Error::Internal(
                "opening a CPU device waited for the event loop".into(),
            ))
        })
    }
}
