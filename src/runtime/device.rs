//! Devices: listing them, what they report about themselves, their memory and queues.
//! Opening one (which may time the ops on each candidate) and tuning are in `api/device.rs`.

use std::fmt;
use std::sync::{Arc, Mutex};

use crate::base::id::next_id;
use crate::base::info::{BackendKind, DeviceInfo, DeviceOptions, POISON_WORD};
use crate::hal::{self, BackendDevice, Block, LastUser, Memory, Recorder};
use crate::profile::{Decision, Profile, Profiler};
use crate::runtime::pool::{size_class, MemoryStats, Pool};
use crate::runtime::queue::{Queue, QueueShared};
use crate::runtime::tune_cache::TuneCache;
use crate::{Error, Policy, Result};

/// Every device this build can open: the CPU first, then each CUDA device and GPU adapter.
#[cfg(not(target_arch = "wasm32"))]
pub fn devices() -> Vec<DeviceInfo> {
    pollster::block_on(devices_async())
}

/// [`devices`] without blocking (browsers offer their one WebGPU adapter asynchronously).
pub async fn devices_async() -> Vec<DeviceInfo> {
    hal::enumerate().await.into_iter().map(|c| c.info).collect()
}

/// Why no device of `kind` is listed, or `None` when at least one is (e.g. "CUDA driver
/// library libcuda.so not found ...").
pub async fn unavailable_reason(kind: BackendKind) -> Option<String> {
    let listed = hal::enumerate()
        .await
        .iter()
        .any(|c| c.info.backend == kind);
    (!listed).then(|| hal::missing_reason(kind))
}

/// An opened device. Cheap to clone; all clones share one device.
#[derive(Clone)]
pub struct Device {
    pub(crate) shared: Arc<DeviceShared>,
}

pub(crate) struct DeviceShared {
    pub info: DeviceInfo,
    /// Process-unique number of this opening (two openings of one adapter differ here).
    pub id: u64,
    pub backend: BackendDevice,
    pub pool: Arc<Pool>,
    pub options: DeviceOptions,
    /// The policy the device was opened with (the default policy otherwise).
    pub policy: Policy,
    /// Records launches while enabled.
    pub profiler: Profiler,
    /// Autotuning results for this device (see [`Policy::tune_cache`]).
    pub tune_cache: TuneCache,
    /// How the device was chosen, and the policy fallbacks taken.
    pub decisions: Mutex<Vec<Decision>>,
    pub default_queue: Arc<QueueShared>,
}

/// Whether memory handed out must be zeroed, or will be fully overwritten by the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Init {
    Zeroed,
    Overwritten,
    /// Every word `word` (the status words of `runtime/checks.rs`).
    Filled(u32),
}

impl Device {
    /// Open `candidate` under `policy` (its selection decision is filled in by the caller).
    pub(crate) async fn from_candidate(
        mut candidate: hal::Candidate,
        options: DeviceOptions,
        policy: Policy,
    ) -> Result<Device> {
        if !options.use_int64 && candidate.info.backend == BackendKind::WebGpu {
            // The webgpu device opens without `shader-int64` (see `GpuDevice::open`).
            candidate.info.features.int64 = false;
        }
        let info = candidate.info.clone();
        let backend = candidate.open().await?;
        let default_queue = Arc::new(QueueShared::new(&backend, None));
        Ok(Device {
            shared: Arc::new(DeviceShared {
                info,
                id: next_id(),
                backend,
                pool: Arc::new(Pool::new(options.pool_cache_limit)),
                options,
                tune_cache: TuneCache::for_policy(&policy),
                policy,
                profiler: Profiler::default(),
                decisions: Mutex::new(Vec::new()),
                default_queue,
            }),
        })
    }

    /// Keep (and log) how the device was chosen and the policy fallbacks taken.
    pub(crate) fn with_decisions(self, selection: Decision, fallbacks: Vec<Decision>) -> Device {
        tracing::info!(
            target: "unicompute::choice",
            choice = %selection.choice,
            reason = %selection.reason,
            "device chosen"
        );
        let mut d = crate::base::signal::lock(&self.shared.decisions);
        d.push(selection);
        d.extend(fallbacks);
        drop(d);
        self
    }

    /// Why this device was opened (`choice` names it, `reason` says why: asked for, the policy's
    /// order, or the probe's measured times), then any fallbacks the policy allowed.
    pub fn decisions(&self) -> Vec<Decision> {
        crate::base::signal::lock(&self.shared.decisions).clone()
    }

    /// The policy the device runs under.
    pub fn policy(&self) -> &Policy {
        &self.shared.policy
    }

    /// The device's profiler: `device.profiler().enable()` records every launch from then on.
    pub fn profiler(&self) -> &Profiler {
        &self.shared.profiler
    }

    /// Take what the profiler recorded so far, with device times: launches whose work has been
    /// submitted get theirs once the device has run them (this waits for that); launches not
    /// yet submitted stay untimed.
    pub async fn take_profile(&self) -> Profile {
        let backend = &self.shared.backend;
        let mut profile = self
            .shared
            .profiler
            .take(self.backend(), backend, self.info().name.clone(), &|| {
                backend.wait_idle()
            })
            .await;
        profile.decisions.splice(0..0, self.decisions());
        profile
    }

    /// Blocking twin of [`take_profile`](Device::take_profile) (not available in browsers).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn take_profile_blocking(&self) -> Profile {
        pollster::block_on(self.take_profile())
    }

    /// What the device reports about itself.
    pub fn info(&self) -> &DeviceInfo {
        &self.shared.info
    }

    /// The options the device was opened with (a policy's, or `DeviceOptions::default()`).
    pub fn options(&self) -> &DeviceOptions {
        &self.shared.options
    }

    /// The backend this device runs on.
    pub fn backend(&self) -> BackendKind {
        self.shared.info.backend
    }

    /// The browser's `GPUDevice` of a webgpu device, for pages that mix their own WebGPU code
    /// with the library's; `None` on other backends.
    #[cfg(target_arch = "wasm32")]
    pub(crate) fn gpu_device_js(&self) -> Option<wasm_bindgen::JsValue> {
        self.shared.backend.gpu_device_js()
    }

    /// The device's default queue.
    pub fn queue(&self) -> Queue {
        Queue {
            device: self.clone(),
            shared: self.shared.default_queue.clone(),
        }
    }

    /// A new queue. On `webgpu` all queues feed the one hardware queue in submission order;
    /// on `cuda` each is a stream.
    pub fn new_queue(&self) -> Queue {
        Queue {
            device: self.clone(),
            shared: Arc::new(QueueShared::new(&self.shared.backend, None)),
        }
    }

    /// A new queue whose launches `profiler` records (instead of the device's profiler).
    pub(crate) fn new_queue_profiled(&self, profiler: Profiler) -> Queue {
        Queue {
            device: self.clone(),
            shared: Arc::new(QueueShared::new(&self.shared.backend, Some(profiler))),
        }
    }

    /// Pool statistics: live and cached bytes, allocations, pool hits, peak.
    pub fn memory_stats(&self) -> MemoryStats {
        self.shared.backend.maintain();
        self.shared.pool.stats()
    }

    /// Bytes of device memory free right now, where the backend can tell (`cuda`).
    pub fn memory_free(&self) -> Option<u64> {
        self.shared.backend.memory_free()
    }

    /// How many op kernels the device has compiled since it opened: pipelines on `webgpu`,
    /// NVRTC programs (compiled, or read from the disk cache) on `cuda`, each once, at its
    /// first use, then kept for every later launch on the device, by any session or queue.
    /// `None` on the CPU, whose op kernels are native code.
    pub fn kernels_compiled(&self) -> Option<usize> {
        self.shared.backend.kernels_compiled()
    }

    /// Free every cached block of the pool back to the backend.
    pub fn trim_pool(&self) {
        self.shared.pool.trim();
    }

    /// Whether two handles refer to the same opened device.
    pub fn same(&self, other: &Device) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }

    /// `device 2 (name), opened as #7`: the index in [`devices()`] and which opening, so two
    /// openings of one adapter can be told apart in messages.
    fn describe(&self) -> String {
        format!(
            "device {} (`{}`, opened as #{})",
            self.info().index,
            self.info().name,
            self.shared.id
        )
    }

    /// Give the device's resources back now (WebGPU's `GPUDevice.destroy()`), as a lost
    /// device would: every later call on it, or on its queues, buffers and tensors, answers
    /// `DEVICE_LOST`. Open a device again to continue.
    pub fn destroy(&self) {
        self.shared.backend.destroy();
    }

    pub(crate) fn check_same(&self, other: &Device, what: &str) -> Result<()> {
        if self.same(other) {
            Ok(())
        } else {
            Err(Error::DeviceMismatch(format!(
                "{what} belongs to {}, but the operation runs on {}: expected objects of one \
                    opened device",
                other.describe(),
                self.describe()
            )))
        }
    }

    /// Allocate `bytes` of device memory through the pool, initialised as `init` asks, for
    /// work recorded on `queue` (if known). A block no queued work uses is initialised on
    /// the device at once, ahead of any work a queue records for it later. With a queue, the
    /// pool may also hand out a block that the queue's own recorded work (or its capture's)
    /// still uses: its later work runs after that work, so the initialisation is recorded on
    /// it, in order.
    pub(crate) fn alloc(
        &self,
        bytes: u64,
        init: Init,
        queue: Option<&Queue>,
    ) -> Result<Arc<Block>> {
        let limits = &self.shared.info.limits;
        if bytes > limits.max_buffer_size {
            let limit = match self.backend() {
                BackendKind::Cpu => "max_buffer_size (on cpu: 3/4 of the host's physical memory)",
                _ => "max_buffer_size",
            };
            return Err(Error::Limit {
                what: "buffer size in bytes".into(),
                value: bytes,
                limit,
                max: limits.max_buffer_size,
            });
        }
        self.shared.backend.check_healthy()?;
        self.shared.backend.maintain();
        let class = size_class(bytes).min(limits.max_buffer_size.max(bytes).next_multiple_of(4));
        let key = queue.and_then(|q| {
            let zeroed = init == Init::Zeroed;
            q.shared.recording.reuse_key(q.id(), zeroed)
        });
        let (mem, pending, fresh) = self.take_or_allocate(class, key)?;
        let fill = match init {
            Init::Zeroed if !fresh || !self.shared.backend.allocations_are_zeroed() => Some(0),
            Init::Overwritten if self.shared.options.poison_uninitialized => Some(POISON_WORD),
            Init::Filled(word) => Some(word),
            _ => None,
        };
        // Made for the queue (or its capture): what uses it elsewhere waits for its work.
        let user: LastUser = queue.zip(key).map(|(q, key)| {
            let recorder: Arc<dyn Recorder> = q.shared.clone();
            (key, Arc::downgrade(&recorder))
        });
        let owner = self.shared.pool.clone();
        let block = Arc::new(Block::new(mem, class, bytes, owner, user));
        match (fill, queue) {
            (Some(word), Some(q)) if pending => q.fill(&block, word)?,
            (Some(word), _) => self.shared.backend.fill_now(block.memory(), class, word)?,
            (None, _) => {}
        }
        Ok(block)
    }

    /// A cached block of `class` bytes free for work recorded under the last user `key` (see
    /// [`Pool::take`]), or a new one: its memory, whether recorded work may still use it, and
    /// whether it is new.
    fn take_or_allocate(&self, class: u64, key: Option<u64>) -> Result<(Arc<Memory>, bool, bool)> {
        if let Some((mem, pending)) = self.shared.pool.take(class, key) {
            return Ok((mem, pending, false));
        }
        // Out of memory with blocks cached: free them and try once more.
        let mem: Memory = match self.shared.backend.alloc(class) {
            Err(e) if self.shared.pool.stats().bytes_cached > 0 => {
                self.shared.pool.trim();
                self.shared.backend.alloc(class).map_err(|_| e)?
            }
            other => other?,
        };
        self.shared.pool.note_allocation(class);
        Ok((Arc::new(mem), false, true))
    }

    /// A page's `GPUBuffer` of this device as a block that aliases it (no copy); dropping the
    /// block lets the buffer go without pooling or destroying it.
    #[cfg(target_arch = "wasm32")]
    pub(crate) fn adopt_gpu_buffer_js(&self, buffer: &wasm_bindgen::JsValue) -> Result<Arc<Block>> {
        self.shared.backend.check_healthy()?;
        let (mem, bytes) = self.shared.backend.adopt_gpu_buffer_js(buffer)?;
        Ok(Arc::new(Block::new(
            Arc::new(mem),
            bytes,
            bytes,
            Arc::new(crate::runtime::pool::Borrowed),
            None,
        )))
    }
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Device({} on {})", self.info().name, self.backend())
    }
}
