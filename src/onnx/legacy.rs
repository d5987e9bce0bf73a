//! Opset 6, the last before numpy broadcasting. Its operators mean what their opset-7 forms
//! mean but for those opset 7 changed: the binary ops' `broadcast` / `axis` attributes,
//! which the binary ops honour (`legacy_axis`), BatchNormalization's and Dropout's `is_test`,
//! and the recurrent ops and Upsample, which are refused here.

use super::graph::Node;

/// Why `node` cannot run in an opset-6 model, if it cannot.
pub(crate) fn refusal(node: &Node) -> Option<String> {
    let int = |name: &str, default: i64| {
        (node.attrs.int(name).ok().flatten().copied()).unwrap_or(default)
    };
    match node.op.as_str() {
        "LSTM" | "GRU" | "RNN" | "Upsample" => {
            Some("its opset-6 form (which opset 7 changed) is not supported".into())
        }
        "BatchNormalization" if int("spatial", 1) == 0 => {
            Some("spatial = 0 (statistics per element) is not supported".into())
        }
        "BatchNormalization" | "Dropout" if int("is_test", 0) == 0 && used_outputs(node) > 1 => {
            Some("is_test = 0 with the training outputs asked for: only inference runs".into())
        }
        _ => None,
    }
}

/// How many of the node's outputs are named.
fn used_outputs(node: &Node) -> usize {
    node.outputs.iter().filter(|o| o.is_some()).count()
}

/// The axis of `a` at which an opset-6 binary op's second input lines up
/// (`broadcast = 1` with an `axis`); `None` where numpy's rule gives the same result.
pub(crate) fn legacy_axis(node: &Node) -> Option<i64> {
    let broadcast = node.attrs.int("broadcast").ok().flatten().copied();
    let axis = node.attrs.int("axis").ok().flatten().copied();
    axis.filter(|_| broadcast == Some(1))
}
