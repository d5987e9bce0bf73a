//! Conformance table: every op on every available backend against an f64 reference, on
//! seeded random inputs, odd shapes and poisoned outputs (devices open with
//! `poison_uninitialized`, so an element a kernel misses reads as -1.1e36). One file an op
//! family; each test runs once per backend (`per_backend!`: `softmax::..::cpu`).
//!
//! Long loops: Mesa's llvmpipe ends every loop of an invocation after 65,535 iterations in all
//! (`Limits::max_loop_iterations`); the ops split their work there. The tests of k, keys,
//! taps and rows past that run on every device, and on lavapipe just below, at and past it.

mod attention;
mod bytes;
mod conv;
mod conv_paths;
mod cumsum;
mod elementwise;
mod half;
mod indexing;
mod matmul;
mod norms;
pub(crate) mod qmatmul;
mod reduce;
mod scatter;
mod softmax;
mod topk;
