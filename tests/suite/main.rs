//! The native integration tests, one module a subject, linked into one binary: one link in
//! CI, and one file to carry to a GPU machine (`scripts/gpu-bundle.sh`). Every module opens
//! the devices it tests through `common`; tests that need a device of their own say so there.
//!
//! `cargo test --test suite` runs them all; `cargo test --test suite graph::` one subject.
#![cfg(not(target_arch = "wasm32"))]

mod common;

mod activations;
mod api;
mod bad_input;
mod batch_reuse;
mod chain;
mod conformance;
mod constructors;
mod conv_phased;
mod corpus;
mod cuda;
mod fences;
mod flow_model;
mod fuzz_validation;
mod graph;
mod hazards;
mod int64_words;
mod integers;
mod onnx_conv;
mod onnx_einsum;
mod onnx_fuzz;
mod onnx_indexing;
mod onnx_joins;
mod onnx_load;
mod onnx_memory;
mod onnx_microsoft;
mod onnx_passes;
mod onnx_profile;
mod onnx_quant;
mod onnx_recur;
mod onnx_replay;
mod onnx_run;
mod onnx_scatter;
mod onnx_sequence;
mod onnx_startup;
mod op_table;
mod overflow;
mod policy;
mod pooling;
mod profile;
mod props;
mod recovery;
mod rounding;
mod stress;
mod support;
mod tune;
mod wgsl_kernels;
mod wgsl_loops;
mod wgsl_overrides;
mod wgsl_types;
