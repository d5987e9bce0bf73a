//! One GPU compute API for WebGPU (native wgpu and browsers), CUDA and the CPU.
//!
//! Open a [`Device`], put data in [`Tensor`]s (shaped views of [`Buffer`]s), and call ops on
//! them: elementwise, reductions, norms, matmul, attention, convolution and data movement
//! (the [`ops`] catalogue). Work is recorded on a [`Queue`] and runs in batches; a [`Fence`]
//! says when it is done. Your own WGSL or CUDA C kernels are [`Kernel`]s; a whole chain of
//! work can be captured once as a [`Graph`] and replayed. A [`Policy`] chooses the device and
//! the kernel variants, the [`Profiler`] records every launch, and every failure is an
//! [`Error`] with a stable [`code`](Error::code).
//!
//! The backends: `cpu` (always; also inside wasm, and the reference every other backend is
//! tested against), `webgpu` (cargo feature `webgpu`: Vulkan, Metal, DX12, browsers) and
//! `cuda` (cargo feature `cuda`: NVIDIA GPUs through cudarc, NVRTC and cuBLAS).
//!
//! The book in the repository's `docs/` (`mdbook build docs`) explains the concepts, the
//! exact semantics of each op, user kernels, policies, capture and replay, the JS package and
//! the measured performance.
//!
//! # Layers
//!
//! From the bottom up, each naming only those below it (`tests/layers.rs` checks it):
//! `base` (vocabulary), `hal` (GPU APIs), `runtime` (devices, queues, buffers, tensors),
//! [`choice`] (variant choice), [`ops`] (one folder per op family), `api` (opening devices,
//! user kernels). `ARCHITECTURE.md` in the repository describes them.

// The example waits with the blocking API, which browsers lack: it is documentation (and a
// doctest) natively only.
#![cfg_attr(
    not(target_arch = "wasm32"),
    doc = r#"
# A first program

```
use unicompute::{BackendChoice, Device, Tensor};

// A hardware GPU if there is one; else the faster of the CPU and a software adapter.
let device = Device::open(BackendChoice::Auto)?;
let a = Tensor::from_slice(&device, &[1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
let b = Tensor::from_slice(&device, &[5.0f32, -6.0, 7.0, -8.0], &[2, 2])?;
let c = a.matmul(&b)?.relu()?; // recorded on the device's default queue
assert_eq!(c.shape(), &[2, 2]);
// Waits for the device and copies the result back (`to_vec().await` in browsers).
assert_eq!(c.to_vec_blocking::<f32>()?, [19.0, 0.0, 43.0, 0.0]);
# Ok::<(), unicompute::Error>(())
```

More in the repository's `examples/`; each runs with
`cargo run --release --example <name>`.
"#
)]
// Without `webgpu`, what only its kernels use (view access codes, launch arguments, signals,
// pending timers) is unused; the hal's stand-in keeps the rest in use.
#![cfg_attr(not(feature = "webgpu"), allow(dead_code, unused_imports))]
#![warn(missing_docs)]

mod api;
mod base;
pub mod choice;
mod hal;
pub mod onnx;
pub mod ops;
mod runtime;
#[cfg(target_arch = "wasm32")]
pub mod wasm;

pub use api::kernel;
pub use runtime::profile;

pub use base::dtype::{DType, Element};
pub use base::error::{Error, Result};
pub use base::info::{
    BackendChoice, BackendKind, DeviceInfo, DeviceOptions, DeviceType, Features, Limits,
    MatmulPrecision, BACKEND_ENV, POISON_WORD,
};
pub use base::policy::{Policy, PoolPolicy, Selection, TUNABLE_OPS};
pub use base::{layout, text};
/// The 16-bit float types buffers and tensors hold (`DType::F16`, `DType::BF16`).
pub use half::{bf16, f16};
pub use kernel::{Binding, BindingInfo, BindingKind, Kernel, KernelInfo, KernelLanguage, Scalar};
pub use ops::{BinaryOp, ReduceOp, UnaryOp};
pub use profile::{Decision, Profile, Profiler, ReadRecord};
pub use runtime::buffer::Buffer;
#[cfg(not(target_arch = "wasm32"))]
pub use runtime::device::devices;
pub use runtime::device::{devices_async, unavailable_reason, Device};
pub use runtime::fence::Fence;
pub use runtime::graph::Graph;
pub use runtime::pool::MemoryStats;
pub use runtime::queue::Queue;
pub use runtime::tensor::Tensor;
