//! The vocabulary every layer shares: element types, layouts, errors, device descriptions and
//! options, policies, one-shot signals, ids, text formatting, and the CPU kernels' data
//! parallelism (`par`: rayon, or sequential where wasm has no threads). It imports nothing of the
//! crate outside `base/`, so every other layer may use it.

pub mod dtype;
pub mod error;
pub(crate) mod id;
pub mod info;
pub mod layout;
pub(crate) mod par;
pub mod policy;
pub mod signal;
pub mod text;
