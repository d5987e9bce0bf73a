//! The op tables as JavaScript sees them: the TypeScript unions of the op names, and the
//! methods `npm/api.js` adds to `Tensor` at load for the ops the generated class lacks, all
//! generated from the rows of `unary_ops!`, `binary_ops!` (`src/ops/elementwise/table.rs`)
//! and `reduce_ops!` (`src/ops/reduce/mod.rs`).

use wasm_bindgen::prelude::*;

use crate::ops::{BinaryOp, ReduceOp, UnaryOp};

#[wasm_bindgen(typescript_custom_section)]
const UNARY_NAME: &str = crate::ops::elementwise::UNARY_TS;
#[wasm_bindgen(typescript_custom_section)]
const BINARY_NAME: &str = crate::ops::elementwise::BINARY_TS;
#[wasm_bindgen(typescript_custom_section)]
const REDUCE_NAME: &str = crate::ops::reduce::REDUCE_TS;

/// Every op of the tables as `family, method, op` in turn (`'unary', 'geluTanh', 'gelu_tanh'`):
/// the methods `npm/api.js` makes.
#[wasm_bindgen(js_name = opMethods)]
pub fn op_methods() -> Vec<String> {
    let unary = UnaryOp::ALL
        .iter()
        .map(|op| ["unary", op.js_name(), op.name()]);
    let binary = BinaryOp::ALL
        .iter()
        .map(|op| ["binary", op.name(), op.name()]);
    let reduce = ReduceOp::ALL
        .iter()
        .map(|op| ["reduce", op.name(), op.name()]);
    unary
        .chain(binary)
        .chain(reduce)
        .flatten()
        .map(String::from)
        .collect()
}
