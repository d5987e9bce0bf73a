//! Autotuning: time every candidate variant of an op once per device and shape class with the
//! device's timers (the profiler's clocks: timestamp queries, CUDA events, the host clock on
//! `cpu`), keep the fastest in the tune cache, and reuse it on later runs.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{times_text, Problem, Trial, Tunable};
use crate::profile::Profiler;
use crate::runtime::tune_cache::Entry;
use crate::{DType, Device, Error, Result};

/// Timed runs of each candidate after one warm-up; their median counts.
const TUNE_REPS: usize = 3;

/// What tuning one problem found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TuneResult {
    /// The op (`matmul`, `reduce`).
    pub op: String,
    /// The shape class the result serves (sizes rounded up to powers of two).
    pub class: String,
    /// The problem that was timed.
    pub problem: String,
    /// The fastest variant.
    pub choice: String,
    /// The variant the backend runs without tuning.
    pub default: String,
    /// Median device time of each candidate, microseconds.
    pub times_us: BTreeMap<String, f64>,
}

impl TuneResult {
    fn from_entry(op: &str, class: String, e: Entry) -> TuneResult {
        TuneResult {
            op: op.into(),
            class,
            problem: e.problem,
            choice: e.choice,
            default: e.default,
            times_us: e.times_us,
        }
    }

    /// How much faster the choice is than the default (1.0: the default won).
    pub fn speedup(&self) -> f64 {
        match (
            self.times_us.get(&self.default),
            self.times_us.get(&self.choice),
        ) {
            (Some(d), Some(c)) if *c > 0.0 => d / c,
            _ => 1.0,
        }
    }
}

/// The key of `problem`'s entry for `device`: the device's identity and the shape class.
fn entry_key(device: &Device, problem: Problem) -> String {
    let i = device.info();
    format!(
        "{} {} ({}, {}), unicompute {} | {}",
        i.backend,
        i.name,
        i.api,
        i.driver,
        env!("CARGO_PKG_VERSION"),
        problem.class()
    )
}

/// The autotuned variant for `problem` among `known`, and why: from the tune cache, else (natively)
/// timed now and cached. In browsers, which cannot block inside an op, an untuned class runs
/// the default until [`Device::tune`] has tuned it.
pub(super) fn tuned(
    device: &Device,
    tunable: &dyn Tunable,
    problem: Problem,
    known: &[&'static str],
) -> Result<(&'static str, String)> {
    let cache = &device.shared.tune_cache;
    let key = entry_key(device, problem);
    let find = |name: &str| known.iter().copied().find(|&v| v == name);
    if let Some((v, e)) = cache
        .get(&key)
        .and_then(|e| find(&e.choice).map(|v| (v, e)))
    {
        return Ok((
            v,
            format!(
                "autotuned for {} ({}; from the tune cache {})",
                problem.class(),
                times_text(&e.times_us),
                cache.describe()
            ),
        ));
    }
    if known.len() == 1 {
        return Ok((
            known[0],
            format!(
                "\"auto\": {} has one {} variant, nothing to tune",
                device.backend(),
                problem.op().name()
            ),
        ));
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let e = pollster::block_on(tune_problem(device, tunable, problem))?;
        let v = find(&e.choice).ok_or_else(|| {
            Error::Internal(format!("tuning chose `{}`, not a candidate", e.choice))
        })?;
        Ok((
            v,
            format!(
                "autotuned now for {} ({}; saved to {})",
                problem.class(),
                times_text(&e.times_us),
                cache.describe()
            ),
        ))
    }
    #[cfg(target_arch = "wasm32")]
    {
        let (v, why) = tunable.default_variant(device, problem);
        Ok((
            v,
            format!(
                "\"auto\": {} is not tuned yet on this device, so {why} runs (device.tune() \
            tunes it)",
                problem.class()
            ),
        ))
    }
}

/// Time every candidate of `problem` on `device`, store the winner in the tune cache and
/// return the entry.
async fn tune_problem(device: &Device, tunable: &dyn Tunable, problem: Problem) -> Result<Entry> {
    let candidates = tunable.variants(device);
    let trial = tunable.trial(device, problem)?;
    let mut times_us = BTreeMap::new();
    for &variant in &candidates {
        times_us.insert(
            variant.to_string(),
            time_variant(device, &trial, variant).await?,
        );
    }
    let choice = times_us
        .iter()
        .min_by(|a, b| a.1.total_cmp(b.1))
        .map(|(v, _)| v.clone())
        .unwrap_or_default();
    let entry = Entry {
        choice,
        times_us,
        default: tunable.default_variant(device, problem).0.to_string(),
        problem: trial.describe,
    };
    tracing::info!(
        target: "unicompute::choice",
        class = %problem.class(),
        choice = %entry.choice,
        times = %times_text(&entry.times_us),
        "autotuned"
    );
    device
        .shared
        .tune_cache
        .put(entry_key(device, problem), entry.clone());
    Ok(entry)
}

/// Median device time of `variant` on `inputs` in microseconds, after one warm-up run (which
/// compiles the pipeline). Falls back to the host clock where the device cannot time launches.
async fn time_variant(device: &Device, trial: &Trial, variant: &str) -> Result<f64> {
    let profiler = Profiler::default();
    let queue = device.new_queue_profiled(profiler.clone());
    (trial.run)(&queue, variant)?;
    queue.submit()?.wait().await?;
    profiler.enable();
    let start = web_time::Instant::now();
    for _ in 0..TUNE_REPS {
        (trial.run)(&queue, variant)?;
    }
    queue.submit()?.wait().await?;
    let wall_us = start.elapsed().as_secs_f64() * 1e6 / TUNE_REPS as f64;
    let backend = &device.shared.backend;
    let profile = profiler
        .take(
            device.backend(),
            backend,
            device.info().name.clone(),
            &|| backend.wait_idle(),
        )
        .await;
    let mut times: Vec<f64> = profile
        .launches
        .iter()
        .filter(|l| l.variant.as_deref() == Some(variant))
        .filter_map(|l| l.device_us)
        .collect();
    if times.len() < TUNE_REPS {
        return Ok(wall_us);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// Time every variant of `tunable` for `problem` on `device` now, store the fastest in the
/// tune cache for its shape class, and report ([`Device::tune`]).
pub(crate) async fn tune(
    device: &Device,
    tunable: &dyn Tunable,
    problem: Problem,
) -> Result<TuneResult> {
    check(problem)?;
    let e = tune_problem(device, tunable, problem).await?;
    Ok(TuneResult::from_entry(
        problem.op().name(),
        problem.class(),
        e,
    ))
}

impl Device {
    /// Where this device keeps tuning results: a file path, `localStorage[...]` or `memory`.
    pub fn tune_cache_location(&self) -> String {
        self.shared.tune_cache.describe()
    }

    /// Every tuning and selection result the cache holds, as JSON.
    pub fn tune_cache_json(&self) -> String {
        self.shared.tune_cache.to_json()
    }

    /// Add the results of a JSON document made by [`tune_cache_json`](Device::tune_cache_json)
    /// (e.g. saved from another session) to the cache.
    pub fn import_tune_cache(&self, json: &str) -> Result<()> {
        self.shared.tune_cache.import_json(json)
    }
}

/// The problems `unicompute tune` tunes: square matmuls up to `edge` (and a batched one), a
/// reduction over `elements` and one over rows of 1,024: the shapes the bench measures.
pub fn catalogue(edge: usize, elements: usize) -> Vec<Problem> {
    let mut edges: Vec<usize> = [128, 256, 512, edge]
        .into_iter()
        .filter(|&e| e <= edge)
        .collect();
    edges.dedup();
    let mut out: Vec<Problem> = edges
        .into_iter()
        .map(|e| Problem::Matmul {
            batch: 1,
            m: e,
            n: e,
            k: e,
            dtype: DType::F32,
        })
        .collect();
    out.push(Problem::Matmul {
        batch: 8,
        m: 128,
        n: 128,
        k: 64,
        dtype: DType::F32,
    });
    out.push(Problem::Reduce {
        outer: 1,
        len: elements,
        inner: 1,
    });
    out.push(Problem::Reduce {
        outer: (elements / 1024).max(1),
        len: 1024.min(elements),
        inner: 1,
    });
    out
}

/// Error unless `problem` has sizes a kernel can run.
fn check(problem: Problem) -> Result<()> {
    let sizes: Vec<usize> = match problem {
        Problem::Matmul { batch, m, n, k, .. } => vec![batch, m, n, k],
        Problem::Reduce { outer, len, inner } => vec![outer, len, inner],
    };
    if sizes.contains(&0) {
        return Err(Error::shape(
            "tune",
            format!("{problem:?} has a zero size: expected every size at least 1"),
        ));
    }
    Ok(())
}
