//! The vocabulary every layer shares: element types, layouts, errors, device descriptions and
//! options, policies, one-shot signals, ids and text formatting. It imports nothing of the crate
//! outside `base/`, so every other layer may use it.

pub mod dtype;
pub mod error;
pub(crate) mod id;
pub mod info;
pub mod layout;
pub mod policy;
pub mod signal;
pub mod text;
