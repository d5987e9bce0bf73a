//! ONNX models: a `.onnx` file parsed into a graph the runner schedules over the op API.
//!
//! This layer sits above the ops and names no backend: the same model runs on every device.
//! Files: `proto` (the protobuf messages, generated), `elem` (element types), `constant`
//! (stored tensors), `attr` (node attributes), `graph` (values and nodes by index), `model`
//! (a parsed file) and `schedule` (run order and last uses).

mod attr;
mod constant;
mod elem;
mod graph;
mod model;
pub mod proto;
mod schedule;

pub use attr::{Attr, Attrs};
pub use constant::Constant;
pub use elem::ElemType;
pub use graph::{Dim, Graph, Node, Origin, Value, ValueId};
pub use model::{Model, OPSETS};
pub use schedule::{schedule, Schedule};
