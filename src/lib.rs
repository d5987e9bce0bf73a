//! # unicompute
//!
//! One GPU compute API for WebGPU (in browsers and natively through wgpu on Vulkan, Metal,
//! DX12), CUDA, and a CPU fallback that is also the reference every backend is tested
//! against.
//!
//! ```
//! use unicompute::{BackendChoice, Device, Tensor};
//!
//! # fn main() -> unicompute::Result<()> {
//! let device = Device::open(BackendChoice::Auto)?;
//! let a = Tensor::from_slice(&device, &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
//! let b = Tensor::from_slice(&device, &[10.0f32, 20.0, 30.0], &[3])?; // broadcast over rows
//! let c = a.add(&b)?.relu()?;
//! assert_eq!(c.to_vec_blocking::<f32>()?, vec![11.0, 22.0, 33.0, 14.0, 25.0, 36.0]);
//! let total = c.sum(None)?.to_vec_blocking::<f32>()?;
//! assert_eq!(total, vec![141.0]);
//! # Ok(())
//! # }
//! ```
//!
//! Layers, top down: the public objects ([`Device`], [`Buffer`], [`Tensor`], [`Queue`],
//! [`Fence`], [`Kernel`]), the op catalogue ([`ops`]), the caching pool, and the backend
//! seam (`backend/`), the only code that knows a GPU API.

mod backend;
mod buffer;
mod device;
mod dtype;
mod error;
mod fence;
pub mod kernel;
pub mod layout;
pub mod ops;
mod pool;
mod queue;
mod signal;
mod tensor;

pub use buffer::Buffer;
pub use device::{
    devices, BackendChoice, BackendKind, Device, DeviceInfo, DeviceOptions, DeviceType, Features, Limits, BACKEND_ENV,
    POISON_WORD,
};
pub use dtype::{DType, Element};
pub use error::{Error, Result};
pub use fence::Fence;
pub use kernel::{Binding, BindingInfo, BindingKind, Kernel, KernelInfo};
pub use ops::{BinaryOp, ReduceOp, UnaryOp};
pub use pool::MemoryStats;
pub use queue::Queue;
pub use tensor::Tensor;
