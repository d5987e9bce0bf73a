//! `unicompute run --profile FILE`: one run timed node by node, summed by operator on the
//! terminal and written as a Chrome trace (the Trace Event Format that `chrome://tracing` and
//! Perfetto open), one complete event per node, the nodes inside a control-flow node's
//! subgraphs nested in its event.

use std::collections::BTreeMap;
use std::path::Path;

use unicompute::onnx::NodeTime;
use unicompute::{Error, Result};

/// Prints each operator's nodes and time, longest first, with its share of the run. Nodes
/// inside subgraphs count by their operator, and a control-flow node's time is its own
/// (`NodeTime::self_micros`), so the rows add up to the run.
pub fn print_summary(times: &[NodeTime]) {
    let mut by_op: BTreeMap<&str, (usize, f64)> = BTreeMap::new();
    let mut holders = Vec::new();
    for t in times {
        let e = by_op.entry(t.op).or_default();
        e.0 += 1;
        e.1 += t.self_micros;
        if t.self_micros != t.micros && !holders.contains(&t.op) {
            holders.push(t.op);
        }
    }
    let total: f64 = times.iter().map(|t| t.self_micros).sum();
    let mut rows: Vec<_> = by_op.into_iter().collect();
    rows.sort_by(|a, b| b.1 .1.total_cmp(&a.1 .1));
    println!(
        "profile: {} nodes, {:.3} ms, each node waited for",
        times.len(),
        total / 1e3
    );
    println!(
        "  {:<24} {:>6} {:>11} {:>7}",
        "operator", "nodes", "ms", "share"
    );
    for (op, (nodes, micros)) in rows {
        let share = if total > 0.0 {
            100.0 * micros / total
        } else {
            0.0
        };
        println!("  {op:<24} {nodes:>6} {:>11.3} {share:>6.1}%", micros / 1e3);
    }
    if !holders.is_empty() {
        println!(
            "  ({}: own time; the nodes inside count under their own operators)",
            holders.join(", ")
        );
    }
}

/// Writes `times` to `path` as a Chrome trace: one `"ph": "X"` event per node, named by the
/// node, its operator as the category, in microseconds from the run's start.
pub fn write(path: &Path, times: &[NodeTime]) -> Result<()> {
    let origin = times.first().map_or(0.0, |t| t.start_us);
    let events: Vec<serde_json::Value> = times
        .iter()
        .map(|t| {
            serde_json::json!({
                "name": t.node, "cat": t.op, "ph": "X", "pid": 1, "tid": 1,
                "ts": t.start_us - origin, "dur": t.micros,
            })
        })
        .collect();
    let text = serde_json::json!({ "traceEvents": events, "displayTimeUnit": "ms" }).to_string();
    std::fs::write(path, text)
        .map_err(|e| Error::Invalid(format!("--profile {}: {e}", path.display())))
}
