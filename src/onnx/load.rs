//! How long each phase of a session's load took ([`LoadReport`]), and the compile phase: the op
//! kernels a run uses compiled at load, so that the first run does not wait for them. A run on zero
//! inputs of the inputs' fixed shapes is captured (`Queue::capture`), which compiles its kernels
//! without running anything, and kept as the replay of runs of those shapes (`replay`), the kernels
//! of its replays' copies compiled too; where the capture is refused (a node that reads a device
//! value on the host) the run runs. The device keeps what it compiles (its pipeline or program
//! cache), so a second session on it compiles only the kernels the first did not use.

use std::cell::RefCell;

use super::graph::{Dim, Graph};
use super::memory::Trace;
use super::plan::{clock, now, Exec, Plan};
use super::replay::{self, Key, Replays};
use super::value::{device_dtype, Val};
use crate::base::error::Result;
use crate::{Queue, Tensor};

/// The phases of a load, in order.
pub const PHASES: [&str; 4] = ["parse", "optimise", "upload", "compile"];

/// How a session's load went (`Session::load_report`).
#[derive(Clone, Debug, PartialEq)]
pub struct LoadReport {
    /// Each phase of [`PHASES`] with its length in milliseconds: `parse` (the file's bytes
    /// read into a graph; about 0 where the session was given a parsed model by
    /// `Session::load`), `optimise` (the graph passes), `upload` (the operators checked and
    /// the constants written to the device, until the device has them), `compile` (the op
    /// kernels a run uses compiled by a run on zero inputs: captured, or where the capture is
    /// refused run until the device has run it).
    pub phases: Vec<(&'static str, f64)>,
    /// How many op kernels the device compiled in the compile phase; `None` where it compiles
    /// none (the CPU, whose op kernels are native code).
    pub compiled: Option<usize>,
    /// Why the kernels were not compiled at load, where they were not: they compile at the
    /// first run instead.
    pub deferred: Option<String>,
}

impl LoadReport {
    /// The length of phase `name` in milliseconds, if it is one of [`PHASES`].
    pub fn phase(&self, name: &str) -> Option<f64> {
        self.phases.iter().find(|(n, _)| *n == name).map(|p| p.1)
    }

    /// The whole load in milliseconds: the phases' sum.
    pub fn total_ms(&self) -> f64 {
        self.phases.iter().map(|p| p.1).sum()
    }
}

/// A load's phases as they end.
pub(crate) struct Phases {
    ended: Vec<(&'static str, f64)>,
    /// When the phase under way began, in microseconds ([`clock::now_us`]).
    since: f64,
}

impl Phases {
    /// The first phase begins now.
    pub(crate) fn start() -> Phases {
        Phases {
            ended: Vec::with_capacity(PHASES.len()),
            since: clock::now_us(),
        }
    }

    /// Ends the phase under way, `name` (one of [`PHASES`]), now; the next one begins.
    pub(crate) fn end(&mut self, name: &'static str) {
        let at = clock::now_us();
        self.ended.push((name, (at - self.since).max(0.0) / 1e3));
        self.since = at;
    }

    /// The report of the ended phases and of what the compile phase did.
    pub(crate) fn report(self, compiled: Compiled) -> LoadReport {
        LoadReport {
            phases: self.ended,
            compiled: compiled.count,
            deferred: compiled.deferred,
        }
    }
}

/// What the compile phase did.
pub(crate) struct Compiled {
    /// Kernels the device compiled, where it compiles any.
    count: Option<usize>,
    /// Why the kernels were left to the first run, where they were.
    deferred: Option<String>,
    /// What the run on zero inputs wrote, where it ran: the session's memory plan.
    pub trace: Option<Trace>,
}

/// The compile phase: `plan` (of the main graph `g`) captured or run once on zero inputs
/// ([`warm`]), unless `lazily` or the device compiles nothing.
pub(crate) fn compile(
    x: Exec<'_>,
    g: &Graph,
    plan: &Plan,
    lazily: bool,
    replays: Option<&Replays>,
) -> Compiled {
    let Some(before) = x.device.kernels_compiled() else {
        return Compiled {
            count: None,
            deferred: None,
            trace: None,
        };
    };
    let ran = if lazily {
        Err("SessionOptions::compile_lazily is set".to_string())
    } else {
        feed_key(g).and_then(|key| {
            let warmed = warm(x, g, plan, &key, replays);
            warmed.map_err(|e| format!("the run on zero inputs failed: {e}"))
        })
    };
    let after = x.device.kernels_compiled().unwrap_or(before);
    let (trace, deferred) = match ran {
        Ok(trace) => (Some(trace), None),
        Err(why) => (None, Some(why)),
    };
    Compiled {
        count: Some(after.saturating_sub(before)),
        deferred,
        trace,
    }
}

/// Compiles the kernels of a run of `plan` on zero feeds of `key`: the run is captured, and
/// the capture (which nothing has run) kept in `replays` for the runs of those shapes, its
/// copies of feeds and outputs made once; where the capture is refused, the run runs. The
/// queue is finished. Gives the run's trace, from which the session plans its memory.
fn warm(
    x: Exec<'_>,
    g: &Graph,
    plan: &Plan,
    key: &Key,
    replays: Option<&Replays>,
) -> Result<Trace> {
    let trace = RefCell::new(Trace::default());
    let run = |feeds: Vec<Tensor>| {
        let mut env = plan.env();
        for (&id, t) in g.inputs.iter().zip(feeds) {
            env[id] = Some(Val::Device(t));
        }
        let mut trace = trace.borrow_mut();
        *trace = Trace::default();
        now(plan.run(g, x, env, None, Some(&mut trace)))
    };
    let mut captured = replay::capture(x.queue, key, run)?;
    if captured.is_some() && plan.learned_joins() {
        // Captured again with the Concats' outputs made early, now that their shapes are known
        // (`joins`): the kernels are compiled, so this only records. The first capture goes
        // first, so that the second takes its blocks from the pool rather than new ones.
        drop(captured.take());
        captured = replay::capture(x.queue, key, run)?;
    }
    match (&captured, replays) {
        (Some(c), Some(replays)) => {
            c.prepare(x.queue)?;
            replays.store(key, captured);
        }
        (Some(_), None) => {}
        (None, _) => {
            let zeros = |(shape, dtype): &(Vec<usize>, _)| Tensor::zeros(x.device, shape, *dtype);
            run(key.iter().map(zeros).collect::<Result<_>>()?)?;
            if let Some(replays) = replays {
                replays.store(key, None);
            }
        }
    }
    settle(x.queue)?;
    Ok(trace.into_inner())
}

/// The shapes and dtypes of `g`'s inputs, or why there are none: an input that is a
/// sequence, or whose type or extents the model leaves open.
fn feed_key(g: &Graph) -> std::result::Result<Key, String> {
    g.inputs
        .iter()
        .map(|&id| {
            let v = &g.values[id];
            let name = &v.name;
            if v.sequence {
                return Err(format!("input '{name}' is a sequence"));
            }
            let missing = |what| format!("input '{name}' has no declared {what}");
            let elem = v.elem.ok_or_else(|| missing("type"))?;
            let dims = v.shape.as_ref().ok_or_else(|| missing("shape"))?;
            let shape = dims
                .iter()
                .map(|d| match d {
                    Dim::Fixed(e) => Ok(*e),
                    other => Err(format!(
                        "input '{name}' has the open extent '{other}' (SessionOptions::free_dims \
                         fixes named ones)"
                    )),
                })
                .collect::<std::result::Result<Vec<_>, _>>()?;
            let dtype = device_dtype(elem).map_err(|e| format!("input '{name}': {e}"))?;
            Ok((shape, dtype))
        })
        .collect()
}

/// Submits `queue`'s work and, natively, waits until the device has done it (in wasm, which
/// cannot wait, the browser goes on with it meanwhile).
pub(crate) fn settle(queue: &Queue) -> Result<()> {
    #[cfg(not(target_arch = "wasm32"))]
    return queue.finish();
    #[cfg(target_arch = "wasm32")]
    queue.submit().map(drop)
}
