//! ONNX models: a `.onnx` file parsed into a graph the runner schedules over the op API.
//!
//! This layer sits above the ops and names no backend: the same model runs on every device.
//! Files: `proto` (the protobuf messages, generated), `elem` (element types), `constant`
//! (stored tensors), `attr` (node attributes), `graph` (values and nodes by index), `model`
//! (a parsed file), `schedule` (run order and last uses), `value` (what nodes pass: device
//! tensors, host data for shape computations, sequences of tensors), `ops` (each operator
//! mapped onto the op API), `passes` (rewrites of the graph at load that make it cheaper
//! to run), `plan` (a graph checked for running, its subgraphs' plans inside), `memory`
//! (where a run's intermediates lie by liveness, and the peak), `replay` (runs captured
//! once and replayed), `load` (a load's phases, kernels compiled at load) and `session` (a
//! model loaded on a device, and its runs).

mod attr;
mod constant;
mod elem;
mod graph;
mod joins;
mod legacy;
mod load;
mod memory;
mod model;
mod ops;
mod passes;
mod plan;
pub mod proto;
mod replay;
mod schedule;
mod session;
mod value;

pub use attr::{Attr, Attrs};
pub use constant::Constant;
pub use elem::ElemType;
pub use graph::{Dim, Graph, Node, Origin, Value, ValueId};
pub use load::{LoadReport, PHASES};
pub use memory::MemoryPlan;
pub use model::{Model, OPSETS};
pub use ops::supported;
pub use passes::{PassReport, Passes};
pub use plan::NodeTime;
pub use schedule::{schedule, Schedule};
pub use session::{unsupported, IoInfo, Session, SessionOptions};
pub use value::{HostData, HostTensor, Sequence, Val, F16_WEIGHT_MIN};
