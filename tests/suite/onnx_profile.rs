//! Profiled ONNX runs (`Session::run_profiled`) on every device: the nodes inside the
//! subgraphs of `If`, `Loop` and `SequenceMap` are timed and named after the nodes that hold
//! them, the taken branch only and a body once per run of it, nested in their holders' times.

use unicompute::onnx::proto::{GraphProto, NodeProto};
use unicompute::onnx::{NodeTime, Session, SessionOptions};
use unicompute::{Device, Tensor};

use crate::common::{assert_close, name, per_backend, random, read, tensor};
use crate::onnx_recur::{graph_attr, info, int64s, int_attr, model, node, BOOL, FLOAT, INT64};

/// The extents of `x` (`[M, K]`), `w` (`[K, N]`) and `b` (`[N]`): primes.
const M: usize = 3;
const K: usize = 5;
const N: usize = 7;

/// A subgraph of `nodes` giving `out`.
fn branch(nodes: Vec<NodeProto>, out: &str) -> GraphProto {
    GraphProto {
        node: nodes,
        output: vec![info(out, 0)],
        ..Default::default()
    }
}

/// `y = k > 0 ? x·w + b : (-x)·w`, then a `Loop` of `k` trips adding `b` to `y` each time,
/// then `Relu` over each row through a `SequenceMap`: `If` and `Loop` steered by the fed int64
/// `k`, reading `x`, `w` and `b` from outside.
fn control_model() -> Vec<u8> {
    let then = branch(
        vec![
            node("MatMul", "mm", &["x", "w"], &["xw"]),
            node("Add", "bias", &["xw", "b"], &["xwb"]),
        ],
        "xwb",
    );
    let other = branch(
        vec![
            node("Neg", "neg", &["x"], &["nx"]),
            node("MatMul", "mm_neg", &["nx", "w"], &["nxw"]),
        ],
        "nxw",
    );
    let mut choose = node("If", "choose", &["positive"], &["y"]);
    choose.attribute = vec![
        graph_attr("then_branch", then),
        graph_attr("else_branch", other),
    ];
    let body = GraphProto {
        node: vec![
            node("Add", "acc", &["acc_in", "b"], &["acc_out"]),
            node("Identity", "same", &["cond_in"], &["cond_out"]),
        ],
        input: vec![
            info("i", INT64),
            info("cond_in", BOOL),
            info("acc_in", FLOAT),
        ],
        output: vec![info("cond_out", BOOL), info("acc_out", FLOAT)],
        ..Default::default()
    };
    let mut lp = node("Loop", "loop", &["k", "positive", "y"], &["out"]);
    lp.attribute.push(graph_attr("body", body));
    let relu = GraphProto {
        input: vec![info("row", FLOAT)],
        ..branch(vec![node("Relu", "relu", &["row"], &["r"])], "r")
    };
    let mut map = node("SequenceMap", "map", &["rows"], &["relus"]);
    map.attribute.push(graph_attr("body", relu));
    let mut concat = node("ConcatFromSequence", "concat", &["relus"], &["final"]);
    concat.attribute.push(int_attr("axis", 0));
    let g = GraphProto {
        node: vec![
            node("Greater", "positive", &["k", "zero"], &["positive"]),
            choose,
            lp,
            node("SplitToSequence", "split", &["out"], &["rows"]),
            map,
            concat,
        ],
        initializer: vec![int64s("zero", &[], &[0])],
        input: vec![
            info("x", FLOAT),
            info("w", FLOAT),
            info("b", FLOAT),
            info("k", INT64),
        ],
        output: vec![info("final", FLOAT)],
        ..Default::default()
    };
    model(g, 17)
}

/// The model's output in f64.
fn reference(x: &[f32], w: &[f32], b: &[f32], k: i64) -> Vec<f64> {
    let mut y = vec![0.0; M * N];
    for (i, row) in y.chunks_exact_mut(N).enumerate() {
        for (j, v) in row.iter_mut().enumerate() {
            let dot: f64 = (0..K)
                .map(|p| f64::from(x[i * K + p]) * f64::from(w[p * N + j]))
                .sum();
            let y = if k > 0 {
                dot + (k + 1) as f64 * f64::from(b[j])
            } else {
                -dot
            };
            *v = y.max(0.0);
        }
    }
    y
}

/// The entries a run with `k` must list, in order: each holder before the nodes of its
/// subgraph, the branch `k` picks, the loop's body once per iteration and the map's once
/// per row.
fn expected(k: i64) -> Vec<String> {
    let (choose, lp) = ("node 'choose' (If)", "node 'loop' (Loop)");
    let mut want = vec!["node 'positive' (Greater)".to_string(), choose.to_string()];
    if k > 0 {
        want.push(format!("{choose} › then_branch › node 'mm' (MatMul)"));
        want.push(format!("{choose} › then_branch › node 'bias' (Add)"));
    } else {
        want.push(format!("{choose} › else_branch › node 'neg' (Neg)"));
        want.push(format!("{choose} › else_branch › node 'mm_neg' (MatMul)"));
    }
    want.push(lp.to_string());
    for _ in 0..k.max(0) {
        want.push(format!("{lp} › body › node 'acc' (Add)"));
        want.push(format!("{lp} › body › node 'same' (Identity)"));
    }
    let map = "node 'map' (SequenceMap)";
    want.push("node 'split' (SplitToSequence)".to_string());
    want.push(map.to_string());
    for _ in 0..M {
        want.push(format!("{map} › body › node 'relu' (Relu)"));
    }
    want.push("node 'concat' (ConcatFromSequence)".to_string());
    want
}

/// Each entry's times: positive, its own time within its whole, nested in the time of the
/// node that holds it, whose own time leaves out its nodes'; the main graph's nodes one
/// after another, and the own times adding up to theirs.
fn check_times(times: &[NodeTime], what: &str) {
    let end = |t: &NodeTime| t.start_us + t.micros;
    let mut last_end = f64::MIN;
    for (i, t) in times.iter().enumerate() {
        assert!(t.node.ends_with(&format!("({})", t.op)), "{what}: {t:?}");
        assert!(t.micros > 0.0, "{what}: {t:?}");
        assert!((0.0..=t.micros).contains(&t.self_micros), "{what}: {t:?}");
        let prefix = format!("{} › ", t.node);
        let mut held = 0.0;
        for c in times[i + 1..]
            .iter()
            .take_while(|c| c.node.starts_with(&prefix))
        {
            let within = c.start_us >= t.start_us && end(c) <= end(t) + 1e-6;
            assert!(within, "{what}: {c:?} runs outside {t:?}");
            // `attribute › node`: a node of this node's own subgraph, not a deeper one.
            if c.node[prefix.len()..].matches(" › ").count() == 1 {
                held += c.micros;
            }
        }
        let own = (t.micros - held).max(0.0);
        assert!(
            (t.self_micros - own).abs() <= 1e-6,
            "{what}: {t:?} holds {held} µs"
        );
        if !t.node.contains(" › ") {
            assert!(
                t.start_us >= last_end,
                "{what}: {t:?} overlaps the node before"
            );
            last_end = end(t);
        }
    }
    let own: f64 = times.iter().map(|t| t.self_micros).sum();
    let top: f64 = (times.iter())
        .filter(|t| !t.node.contains(" › "))
        .map(|t| t.micros)
        .sum();
    assert!(
        (own - top).abs() <= 1e-6 * top,
        "{what}: own {own} µs, run {top} µs"
    );
}

fn profiles_time_the_nodes_inside_control_flow(dev: &Device) {
    let s = Session::from_bytes(dev, control_model(), SessionOptions::default()).unwrap();
    let (x, w, b) = (
        random(71, M * K, -1.0, 1.0),
        random(73, K * N, -1.0, 1.0),
        random(79, N, -1.0, 1.0),
    );
    let (xt, wt, bt) = (
        tensor(dev, &x, &[M, K]),
        tensor(dev, &w, &[K, N]),
        tensor(dev, &b, &[N]),
    );
    for k in [3, 0, 1] {
        let what = format!("k = {k} on {}", name(dev));
        let kt = Tensor::from_slice(dev, &[k], &[]).unwrap();
        let feeds = [("x", &xt), ("w", &wt), ("b", &bt), ("k", &kt)];
        let times = s.run_profiled(&feeds).unwrap();
        let names: Vec<&str> = times.iter().map(|t| t.node.as_str()).collect();
        assert_eq!(names, expected(k), "{what}");
        check_times(&times, &what);
        let out = s.run(&feeds).unwrap();
        assert_close(
            &read(&out[0].1),
            &reference(&x, &w, &b, k),
            1e-5,
            1e-6,
            &what,
        );
    }
}
per_backend!(profiles_time_the_nodes_inside_control_flow);
