//! A [`Profile`]'s views: the per-op summary table and the Chrome trace JSON.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{json, Value};

use super::{LaunchRecord, Profile};
use crate::base::text::{human_seconds, render_table};

/// Ops whose rate is reported in GFLOP/s; every other op in GB/s.
const COMPUTE_BOUND: &[&str] = &["matmul", "linear", "attention", "conv2d"];

/// Totals of one op over a profile.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpSummary {
    /// Op name.
    pub op: String,
    /// Launches.
    pub count: usize,
    /// Launches with a device time (the others are left out of the times and rates).
    pub timed: usize,
    /// Device time of the timed launches, seconds.
    pub total_s: f64,
    /// Mean device time per timed launch, seconds.
    pub mean_s: f64,
    /// Bytes moved by the timed launches.
    pub bytes: u64,
    /// FLOPs of the timed launches.
    pub flops: u64,
    /// Achieved rate: GB/s for memory-bound ops, GFLOP/s for matmul, linear, attention, conv2d.
    pub rate: f64,
    /// `GB/s` or `GFLOP/s`.
    pub unit: &'static str,
    /// Variants that ran, with their launch counts.
    pub variants: BTreeMap<String, usize>,
}

impl Profile {
    /// Per-op totals, the op with the most device time first.
    pub fn summary(&self) -> Vec<OpSummary> {
        let mut by_op: BTreeMap<&str, Vec<&LaunchRecord>> = BTreeMap::new();
        for l in &self.launches {
            by_op.entry(&l.op).or_default().push(l);
        }
        let mut out: Vec<OpSummary> = by_op
            .into_iter()
            .map(|(op, launches)| {
                let timed: Vec<&&LaunchRecord> =
                    launches.iter().filter(|l| l.device_us.is_some()).collect();
                let total_s = timed.iter().filter_map(|l| l.device_us).sum::<f64>() / 1e6;
                let bytes = timed.iter().map(|l| l.bytes).sum::<u64>();
                let flops = timed.iter().map(|l| l.flops).sum::<u64>();
                let compute = COMPUTE_BOUND.contains(&op);
                let work = if compute { flops } else { bytes } as f64;
                let rate = if total_s > 0.0 {
                    work / total_s / 1e9
                } else {
                    0.0
                };
                let mut variants = BTreeMap::new();
                for v in launches.iter().filter_map(|l| l.variant.as_ref()) {
                    *variants.entry(v.clone()).or_insert(0) += 1;
                }
                OpSummary {
                    op: op.to_string(),
                    count: launches.len(),
                    timed: timed.len(),
                    total_s,
                    mean_s: if timed.is_empty() {
                        0.0
                    } else {
                        total_s / timed.len() as f64
                    },
                    bytes,
                    flops,
                    rate,
                    unit: if compute { "GFLOP/s" } else { "GB/s" },
                    variants,
                }
            })
            .collect();
        out.sort_by(|a, b| b.total_s.total_cmp(&a.total_s));
        out
    }

    /// The summary as an aligned text table, with a total line.
    pub fn table(&self) -> String {
        let header = ["op", "count", "total", "mean", "rate", "variants"].map(String::from);
        let rows: Vec<Vec<String>> = self
            .summary()
            .iter()
            .map(|s| {
                let variants: Vec<String> = s
                    .variants
                    .iter()
                    .map(|(v, n)| format!("{v} x{n}"))
                    .collect();
                vec![
                    s.op.clone(),
                    if s.timed == s.count {
                        s.count.to_string()
                    } else {
                        format!("{} ({} untimed)", s.count, s.count - s.timed)
                    },
                    human_seconds(s.total_s),
                    human_seconds(s.mean_s),
                    format!("{:.2} {}", s.rate, s.unit),
                    if variants.is_empty() {
                        "-".into()
                    } else {
                        variants.join(", ")
                    },
                ]
            })
            .collect();
        format!(
            "{}\n{} launches, {} of device time ({} on {})",
            render_table(&header, &rows),
            self.launches.len(),
            human_seconds(self.device_seconds()),
            self.device,
            self.backend
        )
    }

    /// The profile in Chrome's trace event format: one complete (`"ph": "X"`) event per
    /// timed launch on the device's time axis (starting at zero, in microseconds), one track
    /// per queue, with shapes, bytes, FLOPs, variant and reason as arguments; the decisions
    /// and the device go in `otherData`. Opens in Perfetto and `chrome://tracing`.
    pub fn chrome_trace(&self) -> String {
        self.chrome_trace_with(Value::Null)
    }

    /// [`chrome_trace`](Profile::chrome_trace) with `extra` (a JSON object, e.g. what the
    /// caller measured) merged into `otherData`.
    pub fn chrome_trace_with(&self, extra: Value) -> String {
        let origin = self
            .launches
            .iter()
            .filter_map(|l| l.device_start_us)
            .fold(f64::INFINITY, f64::min);
        let mut events: Vec<Value> = vec![json!({
            "ph": "M", "name": "process_name", "pid": 1, "tid": 0,
            "args": {"name": format!("{} ({})", self.device, self.backend)}
        })];
        let mut queues: Vec<u64> = self.launches.iter().map(|l| l.queue).collect();
        queues.sort_unstable();
        queues.dedup();
        for q in &queues {
            events.push(json!({
                "ph": "M", "name": "thread_name", "pid": 1, "tid": q,
                "args": {"name": format!("queue {q}")}
            }));
        }
        for l in &self.launches {
            let (Some(start), Some(dur)) = (l.device_start_us, l.device_us) else {
                continue;
            };
            events.push(json!({
                "name": l.op,
                "cat": self.backend.name(),
                "ph": "X",
                "pid": 1,
                "tid": l.queue,
                "ts": start - origin,
                "dur": dur,
                "args": {
                    "shapes": l.shapes,
                    "dtype": l.dtype,
                    "bytes": l.bytes,
                    "flops": l.flops,
                    "variant": l.variant,
                    "reason": l.reason,
                    "clock": l.clock,
                    "host_start_us": l.host_start_us,
                },
            }));
        }
        let mut other = json!({
            "device": self.device,
            "backend": self.backend,
            "launches": self.launches.len(),
            "untimed_launches": self.launches.iter().filter(|l| l.device_us.is_none()).count(),
            "device_seconds": self.device_seconds(),
            "decisions": self.decisions,
        });
        if let (Value::Object(o), Value::Object(extra)) = (&mut other, extra) {
            o.extend(extra);
        }
        json!({"traceEvents": events, "displayTimeUnit": "ms", "otherData": other}).to_string()
    }

    /// Write [`chrome_trace`](Profile::chrome_trace) to `path` (native).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn save_chrome_trace(&self, path: impl AsRef<std::path::Path>) -> crate::Result<()> {
        let path = path.as_ref();
        std::fs::write(path, self.chrome_trace()).map_err(|e| {
            crate::Error::Invalid(format!("writing the trace {}: {e}", path.display()))
        })
    }
}
