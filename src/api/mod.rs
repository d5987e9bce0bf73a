//! The public surface's parts that stand above the ops: opening devices (whose selection may
//! time ops), tuning and naming kernel variants, and user kernels. The other public methods live
//! with what they act on: the runtime's objects (`Device`, `Queue`, `Buffer`, `Tensor`, `Fence`)
//! and, for the methods that record an op, the op's folder.

mod device;
pub mod kernel;
