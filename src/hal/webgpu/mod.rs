//! The wgpu backend: WebGPU in browsers; Vulkan, Metal, DX12 and GL natively.

#[cfg(target_arch = "wasm32")]
mod adopt;
pub(crate) mod backend;
#[cfg(not(target_arch = "wasm32"))]
mod clock;
pub(crate) mod graph;
pub(crate) mod loop_check;
pub(crate) mod pipelines;
mod queue;

use std::sync::{Arc, Mutex};

#[cfg(target_arch = "wasm32")]
pub(crate) use adopt::adopt_buffer;
pub(crate) use pipelines::{Specialisation, WgslSource};
pub(crate) use queue::{Bind, GpuBatch, GpuFence};

use crate::base::signal::{lock, Signal};
use crate::hal::{Held, LoopCheck};
use crate::{BackendKind, DeviceInfo, DeviceType, Error, Features, Limits, Result};

/// An adapter that can be opened.
pub(crate) type Adapter = wgpu::Adapter;

/// A buffer the library made, destroyed when its last holder lets it go (the pool, a read,
/// a batch or graph, queued work once it has run). A browser otherwise frees a `GPUBuffer`
/// only when the garbage collector takes its object, as wgpu does not destroy what it drops.
pub(crate) struct Made(pub(crate) wgpu::Buffer);

impl Drop for Made {
    fn drop(&mut self) {
        // Work submitted on it still runs: WebGPU and wgpu free the memory after it.
        self.0.destroy();
    }
}

/// One block of device memory.
pub(crate) enum GpuMemory {
    /// A buffer of the library's pool.
    Made(Made),
    /// A page's buffer the library wraps (see `adopt`): never destroyed by it.
    #[cfg(target_arch = "wasm32")]
    Page(wgpu::Buffer),
}

impl GpuMemory {
    /// The wgpu buffer.
    pub(crate) fn buffer(&self) -> &wgpu::Buffer {
        match self {
            GpuMemory::Made(m) => &m.0,
            #[cfg(target_arch = "wasm32")]
            GpuMemory::Page(b) => b,
        }
    }
}

/// Usage of every pooled buffer: bindable as storage or uniform, copyable both ways.
const POOL_USAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::UNIFORM)
    .union(wgpu::BufferUsages::COPY_SRC)
    .union(wgpu::BufferUsages::COPY_DST);

/// Features requested when the adapter has them.
fn wanted_features() -> wgpu::Features {
    wgpu::Features::SHADER_F16
        | wgpu::Features::TIMESTAMP_QUERY
        | wgpu::Features::SUBGROUP
        | wgpu::Features::SHADER_INT64
}

/// The APIs wgpu looks at unless `WGPU_BACKEND` names others: Vulkan, Metal, DX12 and a
/// browser's WebGPU. Not GL: on Mesa's llvmpipe its compute returned wrong results as `Ok`
/// (integer division by zero and `MIN / -1`, float-to-int casts, function-local arrays;
/// `WGPU_BACKEND=gl cargo test --test integers --test wgsl_kernels` shows them).
fn backends() -> wgpu::Backends {
    wgpu::Backends::from_env().unwrap_or(wgpu::Backends::PRIMARY)
}

/// The process's one wgpu instance, natively: listing and opening do not create and destroy
/// Vulkan instances, which spares the driver's start-up each time. (Devices are made and
/// destroyed one at a time: [`lifecycle`].)
#[cfg(not(target_arch = "wasm32"))]
fn instance() -> wgpu::Instance {
    static INSTANCE: std::sync::OnceLock<wgpu::Instance> = std::sync::OnceLock::new();
    INSTANCE.get_or_init(new_instance).clone()
}

/// In a browser, an instance per call: wgpu's instance there may not cross threads.
#[cfg(target_arch = "wasm32")]
fn instance() -> wgpu::Instance {
    new_instance()
}

fn new_instance() -> wgpu::Instance {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = backends();
    wgpu::Instance::new(desc)
}

/// Adapters that can run compute shaders, with what they report. Natively every adapter; in
/// a browser, which cannot list adapters, the high-performance one if there is one.
pub(crate) async fn enumerate() -> Vec<(DeviceInfo, Adapter)> {
    // Under the lock devices are made under: NVIDIA's Vulkan driver crashed (SIGSEGV in
    // `expose_adapter`) listing adapters while another thread made or destroyed a device.
    #[cfg(not(target_arch = "wasm32"))]
    let adapters = {
        let _opening = lifecycle::release_parked();
        // Natively the listing is done when first polled: no await while the lock is held.
        pollster::block_on(instance().enumerate_adapters(backends()))
    };
    #[cfg(target_arch = "wasm32")]
    if !has_navigator_gpu() {
        return Vec::new();
    }
    #[cfg(target_arch = "wasm32")]
    let adapters: Vec<Adapter> = instance()
        .request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            ..Default::default()
        })
        .await
        .into_iter()
        .collect();
    let mut found: Vec<(DeviceInfo, Adapter)> = adapters
        .into_iter()
        .filter(|a| {
            a.get_downlevel_capabilities()
                .flags
                .contains(wgpu::DownlevelFlags::COMPUTE_SHADERS)
        })
        .map(|a| (describe(&a), a))
        .collect();
    // Native APIs before GL (listed only when `WGPU_BACKEND` names it), which lacks parts of
    // compute.
    found.sort_by_key(|(info, _)| (info.device_type.preference(), info.api == "Gl"));
    found
}

/// Whether the JS global offers `navigator.gpu` the way wgpu looks for it: on a `Window` or
/// a `WorkerGlobalScope` (browsers, workers; Node only when a WebGPU package installs
/// `navigator.gpu` and a `Window` global). Elsewhere wgpu must not be asked at all.
#[cfg(target_arch = "wasm32")]
fn has_navigator_gpu() -> bool {
    let global = js_sys::global();
    let defined = |v: &wasm_bindgen::JsValue| !v.is_undefined() && !v.is_null();
    let get = |target: &wasm_bindgen::JsValue, key: &str| {
        js_sys::Reflect::get(target, &key.into()).unwrap_or_default()
    };
    let scope = defined(&get(&global, "Window")) || defined(&get(&global, "WorkerGlobalScope"));
    scope && defined(&get(&get(&global, "navigator"), "gpu"))
}

/// Loop iterations per invocation after which Mesa's llvmpipe (lavapipe, `driver`
/// "llvmpipe") ends every loop of the invocation: one counter of 65,535 shared by all its
/// loops (measured on Mesa 22.3.6 / LLVM 15). Other adapters have no such limit.
fn loop_limit(ai: &wgpu::AdapterInfo) -> Option<u64> {
    let text = format!("{} {} {}", ai.name, ai.driver, ai.driver_info).to_lowercase();
    (text.contains("llvmpipe") || text.contains("lavapipe")).then_some(65_535)
}

/// Whether the adapter's name or driver says it is a GPU API implemented on the CPU, whatever
/// type it reports (browsers report only `isFallbackAdapter`, which older ones lack).
fn software_by_name(ai: &wgpu::AdapterInfo) -> bool {
    let text = format!("{} {} {}", ai.name, ai.driver, ai.driver_info).to_lowercase();
    [
        "swiftshader",
        "llvmpipe",
        "lavapipe",
        "microsoft basic render",
    ]
    .iter()
    .any(|n| text.contains(n))
}

fn describe(adapter: &Adapter) -> DeviceInfo {
    let ai = adapter.get_info();
    let l = adapter.limits();
    let f = adapter.features();
    DeviceInfo {
        index: 0,
        name: ai.name.clone(),
        backend: BackendKind::WebGpu,
        device_type: match ai.device_type {
            _ if software_by_name(&ai) => DeviceType::SoftwareGpu,
            wgpu::DeviceType::DiscreteGpu => DeviceType::DiscreteGpu,
            wgpu::DeviceType::IntegratedGpu => DeviceType::IntegratedGpu,
            wgpu::DeviceType::VirtualGpu => DeviceType::VirtualGpu,
            wgpu::DeviceType::Cpu => DeviceType::SoftwareGpu,
            wgpu::DeviceType::Other => DeviceType::Other,
        },
        api: format!("{:?}", ai.backend),
        driver: format!("{} {}", ai.driver, ai.driver_info)
            .trim()
            .to_string(),
        limits: Limits {
            max_buffer_size: l.max_buffer_size,
            max_storage_binding_size: l.max_storage_buffer_binding_size,
            max_uniform_binding_size: l.max_uniform_buffer_binding_size,
            max_workgroup_size: [
                l.max_compute_workgroup_size_x,
                l.max_compute_workgroup_size_y,
                l.max_compute_workgroup_size_z,
            ],
            max_invocations_per_workgroup: l.max_compute_invocations_per_workgroup,
            max_workgroups: [l.max_compute_workgroups_per_dimension; 3],
            max_workgroup_storage_size: l.max_compute_workgroup_storage_size,
            max_storage_buffers_per_kernel: l.max_storage_buffers_per_shader_stage,
            storage_offset_alignment: l
                .min_storage_buffer_offset_alignment
                .max(l.min_uniform_buffer_offset_alignment),
            max_loop_iterations: loop_limit(&ai),
        },
        features: Features {
            f16: f.contains(wgpu::Features::SHADER_F16),
            timestamps: f.contains(wgpu::Features::TIMESTAMP_QUERY),
            subgroups: f.contains(wgpu::Features::SUBGROUP),
            int64: f.contains(wgpu::Features::SHADER_INT64),
        },
        memory_total: None,
        compute_capability: None,
        threads: None,
    }
}

/// Work submitted to the device whose buffers are held until it finishes.
struct InFlight {
    done: Signal<()>,
    _held: Vec<Held>,
}

#[cfg(not(target_arch = "wasm32"))]
mod lifecycle;

/// A compiled op kernel, as [`GpuDevice::pipeline`] gives it to [`GpuBatch::launch`].
pub(crate) type Pipeline = wgpu::ComputePipeline;

/// An opened wgpu device.
pub(crate) struct GpuDevice {
    pub(in crate::hal) device: wgpu::Device,
    queue: wgpu::Queue,
    limits: wgpu::Limits,
    /// [`crate::Limits::max_loop_iterations`] of this adapter.
    max_loop_iterations: Option<u64>,
    /// A GPU API implemented on the CPU (SwiftShader, llvmpipe; `isFallbackAdapter` in
    /// browsers): invocations run in SIMD lanes of CPU threads and every workgroup barrier
    /// switches coroutines, so the row kernels take barrier-free variants (see
    /// `ops::reduce::variants`).
    software: bool,
    pipelines: pipelines::PipelineCache,
    /// First validation / out-of-memory error since the last check.
    error: Arc<Mutex<Option<String>>>,
    /// Set once if the device is lost: every later call fails.
    lost: Arc<Mutex<Option<String>>>,
    in_flight: Mutex<Vec<InFlight>>,
    /// Bound where a kernel declares a binding a particular launch does not need.
    spare_read: wgpu::Buffer,
    spare_write: wgpu::Buffer,
    /// Timestamps ending each submission, for the time between fences (natively, on
    /// adapters with timestamp queries).
    #[cfg(not(target_arch = "wasm32"))]
    clock: Option<clock::SubmitClock>,
}

/// Natively, the device's wgpu handles are parked, to be released under the process's
/// device lock (see [`lifecycle`]).
#[cfg(not(target_arch = "wasm32"))]
impl Drop for GpuDevice {
    fn drop(&mut self) {
        lifecycle::park(self.device.clone(), self.queue.clone());
    }
}

impl GpuDevice {
    // The parked devices' lock is held on purpose while the new device opens (see
    // `lifecycle::release_parked`), and is dropped right after.
    #[allow(clippy::await_holding_lock)]
    pub(crate) async fn open(adapter: Adapter, info: &DeviceInfo) -> Result<GpuDevice> {
        // `DeviceOptions::use_int64` off clears `int64` in the info: open without it.
        let mut features = adapter.features() & wanted_features();
        if !info.features.int64 {
            features.remove(wgpu::Features::SHADER_INT64);
        }
        let desc = wgpu::DeviceDescriptor {
            label: Some("unicompute"),
            required_features: features,
            required_limits: adapter.limits(),
            ..Default::default()
        };
        #[cfg(not(target_arch = "wasm32"))]
        let parked = lifecycle::release_parked();
        let (device, queue) = adapter
            .request_device(&desc)
            .await
            .map_err(|e| Error::NoDevice(format!("opening `{}` failed: {e}", info.name)))?;
        #[cfg(not(target_arch = "wasm32"))]
        drop(parked);
        let error = Arc::new(Mutex::new(None));
        let lost = Arc::new(Mutex::new(None));
        {
            let error = error.clone();
            device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
                let mut slot = lock(&error);
                if slot.is_none() {
                    *slot = Some(e.to_string());
                }
            }));
            let lost = lost.clone();
            device.set_device_lost_callback(move |reason, message| {
                *lock(&lost) = Some(format!("device lost ({reason:?}): {message}"));
            });
        }
        let spare = |label| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: 256,
                usage: POOL_USAGE,
                mapped_at_creation: false,
            })
        };
        Ok(GpuDevice {
            limits: device.limits(),
            max_loop_iterations: info.limits.max_loop_iterations,
            software: info.device_type == DeviceType::SoftwareGpu,
            spare_read: spare("spare read"),
            spare_write: spare("spare write"),
            pipelines: pipelines::PipelineCache::default(),
            in_flight: Mutex::new(Vec::new()),
            #[cfg(not(target_arch = "wasm32"))]
            clock: features
                .contains(wgpu::Features::TIMESTAMP_QUERY)
                .then(|| clock::SubmitClock::new(&device)),
            device,
            queue,
            error,
            lost,
        })
    }

    /// Whether the device can write timestamp queries at compute pass boundaries.
    pub(crate) fn has_timestamps(&self) -> bool {
        self.device
            .features()
            .contains(wgpu::Features::TIMESTAMP_QUERY)
    }

    /// A new zero-filled buffer (wgpu zero-initialises). Natively an out-of-memory or
    /// validation error is caught here, so no invalid buffer ever reaches the pool or a later
    /// op; browsers report such errors asynchronously, on the next call.
    pub(crate) fn alloc(&self, bytes: u64) -> Result<GpuMemory> {
        #[cfg(not(target_arch = "wasm32"))]
        let scopes = (
            self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory),
            self.device.push_error_scope(wgpu::ErrorFilter::Validation),
        );
        let buffer = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("unicompute"),
            size: bytes,
            usage: POOL_USAGE,
            mapped_at_creation: false,
        });
        #[cfg(not(target_arch = "wasm32"))]
        {
            let (oom, validation) = scopes;
            let errors = [
                pollster::block_on(validation.pop()),
                pollster::block_on(oom.pop()),
            ];
            if let Some(e) = errors.into_iter().flatten().next() {
                buffer.destroy();
                return Err(Error::Device(format!(
                    "allocating {bytes} bytes of device memory failed: {e}"
                )));
            }
        }
        Ok(GpuMemory::Made(Made(buffer)))
    }

    /// Give the device's resources back now: every later call answers `DEVICE_LOST`.
    pub(crate) fn destroy(&self) {
        lock(&self.lost)
            .get_or_insert_with(|| "device lost (destroyed): `Device::destroy` was called".into());
        self.device.destroy();
    }

    /// Fill the first `bytes` of a buffer no queued work uses: zeros by a clear submitted at
    /// once, other words (test poison) by a queue write, which precedes every later submission.
    pub(crate) fn fill_now(&self, memory: &GpuMemory, bytes: u64, word: u32) {
        let buffer = memory.buffer();
        if word == 0 {
            let mut encoder = self
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("zero"),
                });
            encoder.clear_buffer(buffer, 0, Some(bytes));
            self.queue.submit([encoder.finish()]);
        } else {
            let words = vec![word; (bytes / 4) as usize];
            self.queue
                .write_buffer(buffer, 0, bytemuck::cast_slice(&words));
        }
    }

    /// Run completion callbacks and release buffers of finished work.
    pub(crate) fn maintain(&self) {
        #[cfg(not(target_arch = "wasm32"))]
        let _ = self.device.poll(wgpu::PollType::Poll);
        let finished: Vec<InFlight> = {
            let mut list = lock(&self.in_flight);
            let (done, pending): (Vec<_>, Vec<_>) = list.drain(..).partition(|f| f.done.is_set());
            *list = pending;
            done
        };
        drop(finished); // outside the lock: dropping returns memory to the pool
    }

    /// Hold `buffers` until `done` is set.
    pub(crate) fn hold_until(&self, done: Signal<()>, buffers: Vec<Held>) {
        lock(&self.in_flight).push(InFlight {
            done,
            _held: buffers,
        });
    }

    pub(crate) fn check_healthy(&self) -> Result<()> {
        if let Some(msg) = lock(&self.lost).clone() {
            return Err(Error::DeviceLost(format!(
                "{msg}; open the device again (or another one) to continue"
            )));
        }
        if let Some(msg) = lock(&self.error).take() {
            return Err(Error::Device(msg));
        }
        Ok(())
    }

    /// Pipeline of an op kernel.
    pub(crate) fn pipeline(&self, kernel: pipelines::Specialisation) -> Pipeline {
        self.pipelines.get(&self.device, kernel)
    }

    /// How many op kernel pipelines the device has made (its pipeline cache's entries).
    pub(crate) fn pipelines_made(&self) -> usize {
        self.pipelines.made()
    }

    /// Whether the device has `shader-int64` (i64 in kernels).
    pub(crate) fn has_int64(&self) -> bool {
        self.device
            .features()
            .contains(wgpu::Features::SHADER_INT64)
    }

    /// Whether the device has `shader-f16` (f16 arithmetic and storage in kernels).
    pub(crate) fn has_f16(&self) -> bool {
        self.device.features().contains(wgpu::Features::SHADER_F16)
    }

    /// Whether the device has subgroup operations.
    pub(crate) fn has_subgroups(&self) -> bool {
        self.device.features().contains(wgpu::Features::SUBGROUP)
    }

    /// [`crate::Limits::max_loop_iterations`] of this adapter.
    pub(crate) fn max_loop_iterations(&self) -> Option<u64> {
        self.max_loop_iterations
    }

    /// Whether the adapter implements the GPU API on the CPU (see the field `software`).
    pub(crate) fn is_software(&self) -> bool {
        self.software
    }

    /// The most workgroups of one grid dimension.
    pub(crate) fn max_workgroups_per_dimension(&self) -> u32 {
        self.limits.max_compute_workgroups_per_dimension
    }

    /// The most bytes one storage binding may span.
    pub(crate) fn max_binding_size(&self) -> u64 {
        self.limits.max_storage_buffer_binding_size
    }

    /// The alignment, in bytes, of the start of a storage binding within its buffer.
    pub(crate) fn storage_offset_alignment(&self) -> u64 {
        self.limits.min_storage_buffer_offset_alignment.into()
    }

    /// Compile a user kernel (already validated by naga), reporting any wgpu error (natively
    /// at once; in browsers, which report asynchronously, on the next call, as other device
    /// errors are). On a device that ends long loops early, the loops are counted
    /// ([`loop_check`]).
    pub(crate) fn create_user_pipeline(
        &self,
        source: &str,
        entry: &str,
        constants: &[(&str, f64)],
    ) -> Result<UserPipeline> {
        let counted = match self.max_loop_iterations {
            Some(limit) => {
                let subgroups = self.device.features().contains(wgpu::Features::SUBGROUP);
                loop_check::instrument(source, entry, limit, subgroups)?
            }
            None => None,
        };
        let (source, loop_check) = match &counted {
            Some((text, check)) => (text.as_str(), Some(*check)),
            None => (source, None),
        };
        // Natively wgpu's naga reads it; browsers want the directives naga refuses.
        #[cfg(not(target_arch = "wasm32"))]
        let source = crate::hal::wgsl_enables::for_naga(source);
        #[cfg(target_arch = "wasm32")]
        let source = std::borrow::Cow::Borrowed(source);
        #[cfg(not(target_arch = "wasm32"))]
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let module = self
            .device
            .create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(entry),
                source: wgpu::ShaderSource::Wgsl(source),
            });
        let pipeline = self
            .device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry),
                layout: None,
                module: &module,
                entry_point: Some(entry),
                compilation_options: wgpu::PipelineCompilationOptions {
                    constants,
                    ..Default::default()
                },
                cache: None,
            });
        #[cfg(not(target_arch = "wasm32"))]
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(Error::Invalid(format!(
                "the device rejected kernel `{entry}`: {e}"
            )));
        }
        Ok(UserPipeline {
            pipeline,
            loop_check,
        })
    }
}

/// A compiled user kernel.
pub(crate) struct UserPipeline {
    pub pipeline: wgpu::ComputePipeline,
    /// Where its loop count's status word binds, if its loops are counted.
    pub loop_check: Option<LoopCheck>,
}
