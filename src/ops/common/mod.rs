//! What the ops share: the CPU bodies' chunking, view walking and vectorised math; the wgpu
//! and CUDA helpers (launch grids, parameter words, row passes, temporaries, loop-limit
//! splits); and the preludes every built-in WGSL and CUDA source starts with.

pub(crate) mod cpu;
#[cfg(cuda_backend)]
pub(crate) mod cuda;
pub(crate) mod math;
pub(crate) mod rows;
#[cfg(feature = "webgpu")]
pub(crate) mod split;
#[cfg(not(target_arch = "wasm32"))]
pub(crate) mod thin;
#[cfg(feature = "webgpu")]
pub(crate) mod webgpu;
pub(crate) mod words;

/// A op WGSL file by its path below `src/ops/` (`"softmax/softmax.wgsl"`), as compiled
/// in: without comments or indentation (build.rs strips them, keeping every line, so line
/// numbers in errors match the source).
macro_rules! wgsl_file {
    ($path:literal) => {
        include_str!(concat!(env!("OUT_DIR"), "/wgsl/", $path))
    };
}
pub(crate) use wgsl_file;
