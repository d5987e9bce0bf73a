//! The CUDA backend (cudarc): pooled device memory, queues as streams, fences as events,
//! op kernels from the ops' `.cu` sources compiled by NVRTC for the device's architecture, and
//! matmul through cuBLAS. The driver, NVRTC and cuBLAS are loaded at run time: without a
//! driver no CUDA device is listed and opening one says what is missing.

pub(crate) mod backend;
pub(crate) mod blas;
pub(crate) mod compile;
pub(crate) mod graph;
mod memory;
mod queue;
pub(crate) mod wgsl;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::{result, sys, CudaContext, CudaFunction, CudaStream, DriverError};
use cudarc::nvrtc::Ptx;

pub(crate) use memory::DeviceMemory;
pub(crate) use queue::{address, device_memory, CudaBatch, CudaFence};

use compile::CompileFailure;
pub(crate) use compile::{CudaSource, Specialisation};
/// What an op kernel's parameter struct implements to be passed by value (see
/// `ops::common::cuda::cuda_params!`).
pub(crate) use cudarc::driver::DeviceRepr;
use queue::Retirement;

use crate::base::signal::lock;
use crate::{BackendKind, DeviceInfo, DeviceType, Error, Features, Limits, Result};

/// A driver error as text: its name and description.
pub(crate) fn driver_error(e: DriverError) -> String {
    let name = e
        .error_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("CUresult {}", e.0 as i32));
    match e.error_string() {
        Ok(text) => format!("{name} ({})", text.to_string_lossy()),
        Err(_) => name,
    }
}

/// Oldest driver API the backend runs on (cudarc binds CUDA 13.0 entry points).
const MIN_DRIVER_API: i32 = 13000;

/// The file names searched for a CUDA library, without repeats.
pub(crate) fn library_names(lib: &str) -> String {
    let mut seen = std::collections::HashSet::new();
    let names: Vec<String> = cudarc::get_lib_name_candidates(lib)
        .into_iter()
        .filter(|n| seen.insert(n.clone()))
        .collect();
    names.join(", ")
}

/// The CUDA devices the driver lists, or why there are none (probed once per process).
fn probe() -> &'static std::result::Result<Vec<DeviceInfo>, String> {
    static PROBE: OnceLock<std::result::Result<Vec<DeviceInfo>, String>> = OnceLock::new();
    PROBE.get_or_init(|| {
        std::panic::catch_unwind(probe_driver).unwrap_or_else(|_| {
            Err("loading the CUDA driver failed (a symbol is missing from \
                libcuda: the driver is older than CUDA 13)"
                .into())
        })
    })
}

fn probe_driver() -> std::result::Result<Vec<DeviceInfo>, String> {
    // SAFETY: only checks whether the library can be loaded.
    if !unsafe { sys::is_culib_present() } {
        let names = library_names("cuda");
        return Err(format!(
            "CUDA driver library libcuda.so not found (searched {names}): install \
            the NVIDIA driver"
        ));
    }
    result::init().map_err(|e| format!("cuInit failed: {}", driver_error(e)))?;
    let mut version = 0;
    // SAFETY: plain out-parameter.
    unsafe { sys::cuDriverGetVersion(&mut version) }
        .result()
        .map_err(|e| format!("cuDriverGetVersion failed: {}", driver_error(e)))?;
    if version < MIN_DRIVER_API {
        return Err(format!(
            "the CUDA driver supports CUDA {}.{}, but the cuda backend is built against CUDA 13.0 \
                (driver API functions it calls are missing): update the NVIDIA driver to 580 or \
                newer",
            version / 1000,
            version % 1000 / 10
        ));
    }
    let count = result::device::get_count()
        .map_err(|e| format!("cuDeviceGetCount failed: {}", driver_error(e)))?;
    if count <= 0 {
        return Err("the CUDA driver lists no GPU".into());
    }
    (0..count)
        .map(|ordinal| {
            describe(ordinal)
                .map_err(|e| format!("querying CUDA device {ordinal}: {}", driver_error(e)))
        })
        .collect()
}

fn describe(ordinal: i32) -> std::result::Result<DeviceInfo, DriverError> {
    use sys::CUdevice_attribute as A;
    let dev = result::device::get(ordinal)?;
    // SAFETY: `dev` came from cuDeviceGet.
    let attr = |a: A| unsafe { result::device::get_attribute(dev, a) }.map(|v| v.max(0) as u32);
    let total = unsafe { result::device::total_mem(dev) }? as u64;
    let mut version = 0;
    // SAFETY: plain out-parameter.
    unsafe { sys::cuDriverGetVersion(&mut version) }.result()?;
    let cc = [
        attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
        attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
    ];
    let nvrtc = match compile::nvrtc_version() {
        Ok((major, minor)) => format!("NVRTC {major}.{minor}"),
        Err(_) => "no NVRTC (kernels cannot compile)".into(),
    };
    let cublas = if blas::available() {
        "cuBLAS"
    } else {
        "no cuBLAS (matmul uses matmul.cu)"
    };
    Ok(DeviceInfo {
        index: 0,
        name: result::device::get_name(dev)?,
        backend: BackendKind::Cuda,
        device_type: if attr(A::CU_DEVICE_ATTRIBUTE_INTEGRATED)? != 0 {
            DeviceType::IntegratedGpu
        } else {
            DeviceType::DiscreteGpu
        },
        api: format!("CUDA sm_{}{}", cc[0], cc[1]),
        driver: format!(
            "driver API {}.{}, {nvrtc}, {cublas}",
            version / 1000,
            version % 1000 / 10
        ),
        limits: Limits {
            max_buffer_size: total,
            max_storage_binding_size: total,
            max_uniform_binding_size: total,
            max_workgroup_size: [
                attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
                attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
                attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
            ],
            max_invocations_per_workgroup: attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            max_workgroups: [
                attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
                attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
                attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
            ],
            max_workgroup_storage_size: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?,
            max_storage_buffers_per_kernel: u32::MAX,
            storage_offset_alignment: 4,
            max_loop_iterations: None,
        },
        // f16: the WGSL translation computes f16 in f32 and stores it in 16 bits.
        features: Features {
            f16: true,
            timestamps: true,
            subgroups: true,
            int64: true,
        },
        memory_total: Some(total),
        compute_capability: Some(cc),
        threads: None,
    })
}

/// CUDA devices with their ordinals.
pub(crate) fn enumerate() -> Vec<(DeviceInfo, usize)> {
    probe()
        .as_ref()
        .map(|list| {
            list.iter()
                .cloned()
                .enumerate()
                .map(|(i, d)| (d, i))
                .collect()
        })
        .unwrap_or_default()
}

/// Why no CUDA device can be opened.
pub(crate) fn missing_reason() -> String {
    match probe() {
        Err(why) => why.clone(),
        Ok(_) => "every CUDA device is listed; none matched".into(),
    }
}

/// An opened CUDA device.
pub(crate) struct CudaDevice {
    ctx: Arc<CudaContext>,
    /// NVRTC architecture: `sm_90` (cubin), or `compute_XY` (PTX) for a GPU newer than NVRTC.
    arch: String,
    /// Streaming multiprocessors (sizes grids).
    sm_count: u32,
    /// Compute capability 8.0 or newer: `mma.sync` on f16 and bf16 (the tensor cores).
    matrix_units: bool,
    /// Stream of the immediate fills of fresh allocations.
    fill_stream: Arc<CudaStream>,
    functions: Mutex<HashMap<Specialisation, CudaFunction>>,
    retirement: Arc<Retirement>,
    /// Set by the first asynchronous failure: the context is unusable afterwards.
    failed: Mutex<Option<String>>,
}

impl Drop for CudaDevice {
    /// Unloading the kernel modules may synchronise the context: not while a stream captures.
    fn drop(&mut self) {
        let functions = std::mem::take(&mut *lock(&self.functions));
        graph::release_objects(functions);
    }
}

/// Whether loading failed because of the image itself (a stale or damaged cache entry).
fn is_bad_image(e: DriverError) -> bool {
    use sys::cudaError_enum as E;
    matches!(
        e.0,
        E::CUDA_ERROR_INVALID_IMAGE
            | E::CUDA_ERROR_NO_BINARY_FOR_GPU
            | E::CUDA_ERROR_INVALID_PTX
            | E::CUDA_ERROR_UNSUPPORTED_PTX_VERSION
    )
}

/// A compiled user kernel.
pub(crate) struct UserFunction {
    pub function: CudaFunction,
    /// Whether each buffer's pointer is followed by its length in bytes (a kernel translated
    /// from WGSL, which clamps its accesses and has `arrayLength`).
    pub lengths: bool,
}

impl CudaDevice {
    pub(crate) fn open(ordinal: usize, info: &DeviceInfo) -> Result<CudaDevice> {
        let opened = std::panic::catch_unwind(|| -> std::result::Result<_, DriverError> {
            let ctx = CudaContext::new(ordinal)?;
            // SAFETY: the backend makes no `CudaSlice`, whose uses the events would track; it
            // orders its streams itself. With tracking on, the first stream of each opening
            // synchronizes the whole (primary, shared) context, which fails, and breaks the
            // capture, while another thread captures a stream (seen on an H200).
            unsafe { ctx.disable_event_tracking() };
            let fill_stream = ctx.new_stream()?;
            let sms =
                ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
            Ok((ctx, fill_stream, sms))
        });
        let (ctx, fill_stream, sms) = opened
            .map_err(|_| {
                Error::NoDevice(format!(
                    "opening `{}` panicked inside the CUDA driver bindings",
                    info.name
                ))
            })?
            .map_err(|e| {
                Error::NoDevice(format!(
                    "opening `{}` failed: {}",
                    info.name,
                    driver_error(e)
                ))
            })?;
        Ok(CudaDevice {
            arch: compile::target_arch(info.compute_capability.unwrap_or([8, 0])),
            sm_count: sms.max(1) as u32,
            matrix_units: info.compute_capability.is_some_and(|[major, _]| major >= 8),
            fill_stream,
            functions: Mutex::new(HashMap::new()),
            retirement: Arc::new(Retirement::new()),
            failed: Mutex::new(None),
            ctx,
        })
    }

    pub(crate) fn alloc(&self, bytes: u64) -> Result<DeviceMemory> {
        DeviceMemory::new(&self.ctx, bytes)
    }

    /// Fill the first `bytes` of `mem`, which no queued work uses, with `word`, and wait.
    pub(crate) fn fill_now(&self, mem: &DeviceMemory, bytes: u64, word: u32) -> Result<()> {
        self.ctx
            .bind_to_thread()
            .map_err(|e| self.fail("binding the context", e))?;
        // SAFETY: the block holds at least `bytes`; the stream is this context's.
        unsafe {
            sys::cuMemsetD32Async(
                mem.ptr,
                word,
                (bytes / 4) as usize,
                self.fill_stream.cu_stream(),
            )
        }
        .result()
        .map_err(|e| self.fail("filling device memory", e))?;
        self.fill_stream
            .synchronize()
            .map_err(|e| self.fail("filling device memory", e))
    }

    /// Release what finished work held.
    pub(crate) fn maintain(&self) {
        if let Err(e) = self.retirement.poll() {
            self.fail("completing queued work", e);
        }
    }

    /// Refuse every later call (`Device::destroy`); the context goes with the last reference.
    pub(crate) fn destroy(&self) {
        lock(&self.failed)
            .get_or_insert_with(|| "the device was destroyed (`Device::destroy`)".into());
    }

    pub(crate) fn check_healthy(&self) -> Result<()> {
        match lock(&self.failed).clone() {
            Some(msg) => Err(Error::DeviceLost(format!(
                "{msg}; the CUDA context is unusable: open the device again to continue"
            ))),
            None => Ok(()),
        }
    }

    /// Record an error from asynchronous work (it poisons the CUDA context) and describe it.
    pub(crate) fn fail(&self, what: &str, e: DriverError) -> Error {
        let msg = format!("{what}: {}", driver_error(e));
        use sys::cudaError_enum as E;
        // Errors of a kernel that ran make the context unusable; argument errors do not.
        if matches!(
            e.0,
            E::CUDA_ERROR_ILLEGAL_ADDRESS
                | E::CUDA_ERROR_LAUNCH_FAILED
                | E::CUDA_ERROR_ILLEGAL_INSTRUCTION
                | E::CUDA_ERROR_MISALIGNED_ADDRESS
                | E::CUDA_ERROR_HARDWARE_STACK_ERROR
                | E::CUDA_ERROR_ASSERT
                | E::CUDA_ERROR_ECC_UNCORRECTABLE
                | E::CUDA_ERROR_LAUNCH_TIMEOUT
                | E::CUDA_ERROR_ILLEGAL_STATE
        ) {
            lock(&self.failed).get_or_insert_with(|| msg.clone());
        }
        Error::Device(msg)
    }

    pub(crate) fn memory_free(&self) -> Option<u64> {
        self.ctx.mem_get_info().ok().map(|(free, _)| free as u64)
    }

    /// Streaming multiprocessors (sizes grids).
    pub(crate) fn sm_count(&self) -> u32 {
        self.sm_count
    }

    /// Whether kernels may multiply f16 and bf16 on the tensor cores (`mma.sync`, 8.0+).
    pub(crate) fn has_matrix_units(&self) -> bool {
        self.matrix_units
    }

    /// The function of an op kernel, compiled (or read from the disk cache) on first use.
    pub(crate) fn program(&self, kernel: Specialisation) -> Result<CudaFunction> {
        if let Some(f) = lock(&self.functions).get(&kernel) {
            return Ok(f.clone());
        }
        let (source, options) = (kernel.source(), kernel.options(&self.arch));
        let dir = compile::cache_dir();
        let internal = |e: CompileFailure| match e {
            CompileFailure::Nvrtc(why) => Error::Unsupported {
                backend: BackendKind::Cuda,
                what: format!("op kernel `{}`: {why}", kernel.entry),
            },
            CompileFailure::Source(log) => Error::Internal(format!(
                "op kernel {} `{}` does not compile for {}: {log}",
                kernel.name(),
                kernel.entry,
                self.arch
            )),
        };
        let loaded = self.load(
            &compile::cubin(&source, kernel.name(), &options, dir.as_ref()).map_err(internal)?,
            kernel.entry,
        );
        let function = match loaded {
            Ok(f) => f,
            Err(e) if is_bad_image(e) => {
                // A stale or damaged cache entry: compile afresh.
                compile::forget(&source, &options, dir.as_ref());
                let fresh =
                    compile::cubin(&source, kernel.name(), &options, None).map_err(internal)?;
                self.load(&fresh, kernel.entry)
                    .map_err(|e| self.fail(&format!("loading op kernel `{}`", kernel.entry), e))?
            }
            Err(e) => return Err(self.fail(&format!("loading op kernel `{}`", kernel.entry), e)),
        };
        lock(&self.functions).insert(kernel, function.clone());
        Ok(function)
    }

    /// How many op kernels the device has loaded (compiled by NVRTC, or read from the disk
    /// cache), each once, at its first use.
    pub(crate) fn programs_loaded(&self) -> usize {
        lock(&self.functions).len()
    }

    fn load(&self, image: &[u8], entry: &str) -> std::result::Result<CudaFunction, DriverError> {
        let module = self.ctx.load_module(Ptx::from_binary(image.to_vec()))?;
        module.load_function(entry)
    }

    /// Compile a user kernel; compile errors become [`Error::Shader`] with the NVRTC log.
    pub(crate) fn compile_user(&self, source: &str, entry: &str) -> Result<UserFunction> {
        let options = compile::base_options(&self.arch);
        let dir = compile::cache_dir();
        let cubin =
            compile::cubin(source, "kernel.cu", &options, dir.as_ref()).map_err(|e| match e {
                CompileFailure::Nvrtc(why) => Error::Unsupported {
                    backend: BackendKind::Cuda,
                    what: format!("CUDA kernel `{entry}`: {why}"),
                },
                CompileFailure::Source(log) => {
                    let line = compile::first_error(&log).map_or(1, |e| e.line);
                    let source_line = source
                        .lines()
                        .nth(line.saturating_sub(1) as usize)
                        .unwrap_or("")
                        .trim_end()
                        .to_string();
                    Error::Shader {
                        line,
                        column: 0,
                        message: log,
                        source_line,
                    }
                }
            })?;
        let loaded = match self.load(&cubin, entry) {
            Err(e) if is_bad_image(e) => {
                compile::forget(source, &options, dir.as_ref());
                let fresh = compile::cubin(source, "kernel.cu", &options, None).map_err(|_| {
                    Error::Device(format!("recompiling CUDA kernel `{entry}` failed"))
                })?;
                self.load(&fresh, entry)
            }
            other => other,
        };
        loaded
            .map(|function| UserFunction {
                function,
                lengths: false,
            })
            .map_err(|e| {
                Error::Invalid(format!(
                    "loading CUDA kernel `{entry}` failed: {}",
                    driver_error(e)
                ))
            })
    }

    /// Translate the WGSL kernel `entry` of `source` to CUDA C and compile it.
    pub(crate) fn compile_wgsl(
        &self,
        source: &str,
        entry: &str,
        constants: &[(&str, f64)],
    ) -> Result<UserFunction> {
        let translated = wgsl::translate(source, entry, constants)?;
        let compiled = self
            .compile_user(&translated, wgsl::ENTRY)
            .map_err(|e| match e {
                // At the WGSL statement whose translation failed, where `#line` names one.
                Error::Shader { message, .. } => {
                    wgsl::compile_failure(source, entry, &self.arch, &message)
                }
                other => other,
            })?;
        Ok(UserFunction {
            lengths: true,
            ..compiled
        })
    }
}
