//! What a device is and how to open it: the backend kinds, device types, limits, features,
//! descriptions and options that every layer names.

use std::fmt;
use std::str::FromStr;

use crate::base::error::{Error, Result};

/// Environment variable that overrides [`BackendChoice::Auto`]: `cpu`, `webgpu`, `cuda`,
/// `auto`, or an index into [`crate::devices_async`].
pub const BACKEND_ENV: &str = "UNICOMPUTE_BACKEND";

/// The API a device runs on.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BackendKind {
    /// Host code, always available (also inside WebAssembly).
    Cpu,
    /// wgpu: WebGPU in browsers, Vulkan / Metal / DX12 / GL natively.
    WebGpu,
    /// NVIDIA GPUs through CUDA.
    Cuda,
}

impl BackendKind {
    /// Lower-case name as used on the command line and in `UNICOMPUTE_BACKEND`.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Cpu => "cpu",
            BackendKind::WebGpu => "webgpu",
            BackendKind::Cuda => "cuda",
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which device [`Device::open`](crate::Device::open) should open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendChoice {
    /// `UNICOMPUTE_BACKEND` if set, else the best device: a hardware GPU, then a software
    /// adapter, then the CPU.
    Auto,
    /// The best device of one backend.
    Backend(BackendKind),
    /// Entry `n` of [`crate::devices_async`].
    Index(usize),
}

impl FromStr for BackendChoice {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" | "" => Ok(BackendChoice::Auto),
            "cpu" => Ok(BackendChoice::Backend(BackendKind::Cpu)),
            "webgpu" | "wgpu" | "gpu" => Ok(BackendChoice::Backend(BackendKind::WebGpu)),
            "cuda" => Ok(BackendChoice::Backend(BackendKind::Cuda)),
            other => other
                .parse::<usize>()
                .map(BackendChoice::Index)
                .map_err(|_| {
                    Error::Invalid(format!(
                    "unknown backend choice `{s}`: expected auto, cpu, webgpu, cuda or a device \
                        index"
                ))
                }),
        }
    }
}

/// Kind of hardware behind a device.
#[derive(serde::Serialize, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeviceType {
    /// A discrete GPU.
    DiscreteGpu,
    /// A GPU sharing memory with the CPU.
    IntegratedGpu,
    /// A GPU exposed through a virtual machine.
    VirtualGpu,
    /// A GPU API implemented in software on the CPU (lavapipe, SwiftShader, WARP).
    SoftwareGpu,
    /// The host CPU backend.
    Cpu,
    /// Anything the driver could not classify.
    Other,
}

impl fmt::Display for DeviceType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl DeviceType {
    /// Rank used by `auto`: lower is preferred.
    pub(crate) fn preference(self) -> u8 {
        match self {
            DeviceType::DiscreteGpu => 0,
            DeviceType::IntegratedGpu => 1,
            DeviceType::VirtualGpu | DeviceType::Other => 2,
            DeviceType::SoftwareGpu => 3,
            DeviceType::Cpu => 4,
        }
    }
}

/// Hard limits of a device.
#[derive(serde::Serialize, Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest single buffer in bytes.
    pub max_buffer_size: u64,
    /// Largest range of a buffer one storage binding may cover, in bytes.
    pub max_storage_binding_size: u64,
    /// Largest uniform binding in bytes.
    pub max_uniform_binding_size: u64,
    /// Largest workgroup extent per dimension.
    pub max_workgroup_size: [u32; 3],
    /// Most invocations in one workgroup.
    pub max_invocations_per_workgroup: u32,
    /// Most workgroups (CUDA: blocks) of one launch in x, y and z.
    pub max_workgroups: [u32; 3],
    /// Workgroup shared memory in bytes.
    pub max_workgroup_storage_size: u32,
    /// Most storage buffers one kernel may bind.
    pub max_storage_buffers_per_kernel: u32,
    /// Required alignment, in bytes, of a storage binding's offset.
    pub storage_offset_alignment: u32,
    /// Most loop iterations one kernel invocation may run, all its loops together, before the
    /// driver silently ends every loop of that invocation; `None`: no such limit. Mesa's
    /// llvmpipe (lavapipe) counts every back-edge of every loop against one counter of 65,535
    /// per SIMD group of invocations (a subgroup). The library's ops split their work to stay
    /// under it; user kernels' loops are counted there, and one that reaches it fails the
    /// next read ([`crate::Kernel::from_wgsl`]).
    pub max_loop_iterations: Option<u64>,
}

/// Optional capabilities of a device.
#[derive(serde::Serialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Features {
    /// f16 values and arithmetic in WGSL kernels (`enable f16;`, WebGPU's `shader-f16`).
    pub f16: bool,
    /// Device timestamps for timing.
    pub timestamps: bool,
    /// Subgroup (warp / wave) operations.
    pub subgroups: bool,
    /// i64 arithmetic, reductions and cumulative sums in the library's ops: always on cpu and
    /// cuda; on webgpu where the adapter has `shader-int64` (native Vulkan, Metal, DX12; never
    /// in browsers), elsewhere those ops on i64 are `UNSUPPORTED` (casts, comparisons,
    /// minimum and maximum of i64 run everywhere, as pairs of 32-bit words).
    pub int64: bool,
}

/// What a device reports about itself.
#[derive(serde::Serialize, Debug, Clone, PartialEq)]
pub struct DeviceInfo {
    /// Position in [`crate::devices_async`].
    pub index: usize,
    /// Adapter or processor name.
    pub name: String,
    /// The API it runs on.
    pub backend: BackendKind,
    /// Kind of hardware.
    pub device_type: DeviceType,
    /// The native API below the backend (e.g. `Vulkan`), or `host` for the CPU.
    pub api: String,
    /// Driver name and version, where known.
    pub driver: String,
    /// Hard limits.
    pub limits: Limits,
    /// Optional capabilities.
    pub features: Features,
    /// Total device memory in bytes, where the API can tell.
    pub memory_total: Option<u64>,
    /// CUDA compute capability `[major, minor]` (`None` on other backends).
    pub compute_capability: Option<[u32; 2]>,
    /// Host threads the `cpu` backend runs kernels on (its rayon pool; in a browser, Web
    /// Workers with the npm package's `unicompute/threads`); `None` on other backends.
    pub threads: Option<usize>,
}

/// Options for [`Device::open_with`](crate::Device::open_with).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceOptions {
    /// Bytes of freed memory the pool keeps for reuse.
    pub pool_cache_limit: u64,
    /// Fill memory that a kernel is about to overwrite with a poison pattern first, so a
    /// kernel that misses an element is caught by tests. Costs one fill per allocation.
    pub poison_uninitialized: bool,
    /// Lowest precision f32 matmuls may compute in (inputs and outputs stay f32).
    pub matmul_precision: MatmulPrecision,
    /// Use subgroup (warp) operations in reductions where the adapter has them; off to compare
    /// or to work around a driver.
    pub use_subgroups: bool,
    /// On software adapters (SwiftShader, llvmpipe: `DeviceType::SoftwareGpu`), run the kernel
    /// variants made for them: reductions, softmax and norms without workgroup barriers or
    /// workgroup memory (each a coroutine switch of every SIMD group there). Off to run the
    /// GPU kernels there as well (tests, comparisons).
    pub software_kernels: bool,
    /// A storage binding size below the device's (`max_storage_binding_size`), in bytes, for
    /// webgpu matmuls: they split a product whose operands are larger into pieces that fit
    /// (tests lower it to run the split on small operands). `None`: the device's limit.
    pub max_binding_size: Option<u64>,
    /// Use `shader-int64` on webgpu adapters that have it. Off opens the device as if the
    /// adapter lacked it (as browsers' adapters do: [`Features::int64`] false), so i64 casts
    /// and comparisons run their 32-bit word kernels natively (tests); cpu and cuda ignore it.
    pub use_int64: bool,
}

impl Default for DeviceOptions {
    fn default() -> Self {
        DeviceOptions {
            pool_cache_limit: 1 << 30,
            poison_uninitialized: false,
            matmul_precision: MatmulPrecision::F32,
            use_subgroups: true,
            software_kernels: true,
            max_binding_size: None,
            use_int64: true,
        }
    }
}

/// How much precision an f32 matmul may trade for speed. Lower settings are permissions:
/// a backend without the faster path computes in full f32. On `cuda` they select cuBLAS's
/// tensor-core paths (TF32, or inputs rounded to bf16 / f16, always accumulating in f32);
/// `cpu` and `webgpu` compute in f32 whatever the setting.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum MatmulPrecision {
    /// Full f32 (the default).
    #[default]
    F32,
    /// Inputs rounded to TF32 (10-bit mantissa), f32 accumulation.
    Tf32,
    /// Inputs rounded to bf16 (7-bit mantissa), f32 accumulation.
    Bf16,
    /// Inputs rounded to f16 (10-bit mantissa, 5-bit exponent), f32 accumulation.
    F16,
}

impl MatmulPrecision {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            MatmulPrecision::F32 => "f32",
            MatmulPrecision::Tf32 => "tf32",
            MatmulPrecision::Bf16 => "bf16",
            MatmulPrecision::F16 => "f16",
        }
    }
}

impl FromStr for MatmulPrecision {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        [
            MatmulPrecision::F32,
            MatmulPrecision::Tf32,
            MatmulPrecision::Bf16,
            MatmulPrecision::F16,
        ]
        .into_iter()
        .find(|p| p.name() == s.trim().to_ascii_lowercase())
        .ok_or_else(|| {
            Error::Invalid(format!(
                "unknown matmul precision `{s}`: expected f32, tf32, bf16 or f16"
            ))
        })
    }
}

/// Bit pattern written by [`DeviceOptions::poison_uninitialized`]: as f32 about -1.1e36,
/// as an integer a value no test produces.
pub const POISON_WORD: u32 = 0xFB55_5555;
