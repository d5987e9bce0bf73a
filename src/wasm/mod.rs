//! The JavaScript API, through wasm-bindgen: `init()` opens a device (WebGPU, or the CPU
//! backend compiled into the same wasm when the browser has no adapter), devices make
//! tensors from typed arrays, tensors run the op catalogue and read back asynchronously, and
//! ONNX sessions run models (`session`).
//! Every failure reaches JS as an `Error` whose `code` property is [`crate::Error::code`].

mod device;
mod error;
mod gpu;
mod make;
mod ops;
mod options;
mod profile;
mod session;
mod tensor;
#[cfg(feature = "threads")]
mod threads;
mod types;

pub use device::{init, list_devices, JsDevice};
pub use gpu::{JsBindingList, JsBuffer, JsFence, JsKernel, JsQueue};
pub use ops::op_methods;
pub use options::TensorArgs;
pub use profile::JsProfile;
pub use session::JsSession;
pub use tensor::JsTensor;
#[cfg(feature = "threads")]
pub use threads::{build_thread_pool, pool_worker, thread_share};
