//! `ScatterElements`, the legacy `Scatter` (opsets 9 and 10, the same operator without
//! `reduction`) and `ScatterND`: the library's scatter ops, indices read on the device.

use super::{one, op, Ctx, OpDef};
use crate::base::error::Result;
use crate::onnx::attr::Attrs;
use crate::onnx::graph::Node;
use crate::onnx::value::Val;
use crate::ops::scatter::{scatter_elements, scatter_nd, ScatterReduction};

/// The scatter operators.
pub(super) const OPS: &[OpDef] = &[
    op("ScatterElements", elements).refusing(refusal),
    op("Scatter", elements).refusing(refusal),
    op("ScatterND", nd).refusing(refusal),
];

/// The node's `reduction` (`none` when absent), or why it cannot be taken.
fn reduction(attrs: &Attrs) -> std::result::Result<ScatterReduction, String> {
    let name = match attrs.string("reduction") {
        Ok(name) => name.cloned().unwrap_or_else(|| "none".into()),
        Err(e) => return Err(e.to_string()),
    };
    ScatterReduction::from_name(&name)
        .ok_or_else(|| format!("reduction '{name}' is not one of none, add, mul, max and min"))
}

/// Why a scatter node cannot run: a `reduction` it does not know.
fn refusal(node: &Node) -> Option<String> {
    reduction(&node.attrs).err()
}

/// `ScatterElements` and `Scatter`: `updates` met into a copy of `data` along `axis` at
/// `indices`.
fn elements(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let (data, indices, updates) = (c.tensor(0)?, c.tensor(1)?, c.tensor(2)?);
    let axis = c.axis(c.int("axis", 0)?, data.rank())?;
    let r = reduction(c.attrs()).map_err(|e| c.error(e))?;
    one(scatter_elements(
        c.queue, &data, &indices, &updates, axis, r,
    )?)
}

/// `ScatterND`: update slices met into a copy of `data` at the index tuples of `indices`.
fn nd(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let (data, indices, updates) = (c.tensor(0)?, c.tensor(1)?, c.tensor(2)?);
    let r = reduction(c.attrs()).map_err(|e| c.error(e))?;
    one(scatter_nd(c.queue, &data, &indices, &updates, r)?)
}
