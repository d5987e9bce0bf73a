//! The profiler: for every launch of a built-in op or a user kernel while it is enabled, the
//! device time (wgpu timestamp queries, CUDA events, the host clock on `cpu`), the op name,
//! operand shapes, bytes and FLOPs, and the kernel variant the chooser chose and why.
//! [`Device::take_profile`](crate::Device::take_profile) collects them into a [`Profile`]:
//! a per-op summary table and a Chrome trace (opens in Perfetto or `chrome://tracing`).
//!
//! Disabled (the default), a launch pays one relaxed atomic load.
//!
//! ```no_run
//! # #[cfg(target_arch = "wasm32")] fn main() {}
//! # #[cfg(not(target_arch = "wasm32"))]
//! # fn main() -> unicompute::Result<()> {
//! use unicompute::{BackendChoice, Device, Tensor};
//! let device = Device::open(BackendChoice::Auto)?;
//! device.profiler().enable();
//! let x = Tensor::from_slice(&device, &[1.0f32; 4096], &[64, 64])?;
//! let y = x.matmul(&x)?.softmax()?;
//! y.to_vec_blocking::<f32>()?;
//! let profile = device.take_profile_blocking();
//! println!("{}", profile.table());
//! profile.save_chrome_trace("trace.json")?;
//! # Ok(())
//! # }
//! ```

mod trace;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use web_time::Instant;

use crate::base::signal::lock;
use crate::hal::timer::{Span, Timing};
use crate::hal::{BackendDevice, FenceImpl};
use crate::{BackendKind, DType};

pub use crate::hal::timer::Clock;
pub use trace::OpSummary;

/// A choice the chooser made: which kernel variant (or backend) and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decision {
    /// The op (`matmul`, `reduce`) or `backend` for the device choice.
    pub op: String,
    /// What was chosen: a variant name, or a backend and device.
    pub choice: String,
    /// Why, in words (named by the policy, autotuned with times, the backend's default...).
    pub reason: String,
    /// Measured times of the candidates in microseconds, where the choice was measured.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub times_us: std::collections::BTreeMap<String, f64>,
}

/// One recorded launch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LaunchRecord {
    /// Op name (`add`, `add_relu`, `matmul`, `linear`, `sum`, ...) or a user kernel's entry point.
    pub op: String,
    /// Shapes of the inputs, then the output (user kernels: the bound buffers' lengths).
    pub shapes: Vec<Vec<usize>>,
    /// Storage dtype of the main operands.
    pub dtype: String,
    /// Bytes read plus bytes written.
    pub bytes: u64,
    /// Floating-point operations.
    pub flops: u64,
    /// The kernel variant that ran, where the op has variants.
    pub variant: Option<String>,
    /// Why that variant (the chooser's reason).
    pub reason: Option<String>,
    /// Id of the queue the launch was recorded on.
    pub queue: u64,
    /// The clock that timed it.
    pub clock: Clock,
    /// Host time of recording, microseconds since the profiler was created.
    pub host_start_us: f64,
    /// Device start in microseconds on the device's own clock (comparable between launches
    /// of one device; a trace shifts them to start at zero).
    pub device_start_us: Option<f64>,
    /// Device time of the launch in microseconds.
    pub device_us: Option<f64>,
}

/// One read back to the host, in its two phases.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReadRecord {
    /// Id of the queue the read was recorded on.
    pub queue: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Host time of the request, microseconds since the profiler was created.
    pub host_start_us: f64,
    /// Until the bytes could be copied, in microseconds: submitting the queue's work, the
    /// device finishing it and copying the bytes to a mappable staging buffer (webgpu), and
    /// mapping them.
    pub wait_us: f64,
    /// The one host copy, from where the bytes lie into the returned array (a JS typed array
    /// in a browser), in microseconds.
    pub copy_us: f64,
}

/// A record waiting for its device time.
struct Pending {
    record: LaunchRecord,
    timing: Timing,
}

/// A device's profiler (see the module docs). Cheap to clone; clones share the records.
#[derive(Clone)]
pub struct Profiler {
    inner: Arc<ProfilerInner>,
}

struct ProfilerInner {
    enabled: AtomicBool,
    epoch: Instant,
    pending: Mutex<Vec<Pending>>,
    reads: Mutex<Vec<ReadRecord>>,
    /// The first CUDA start event seen: CUDA launch starts are measured from it.
    cuda_epoch: Mutex<Option<FenceImpl>>,
}

impl Default for Profiler {
    fn default() -> Self {
        Profiler {
            inner: Arc::new(ProfilerInner {
                enabled: AtomicBool::new(false),
                epoch: Instant::now(),
                pending: Mutex::new(Vec::new()),
                reads: Mutex::new(Vec::new()),
                cuda_epoch: Mutex::new(None),
            }),
        }
    }
}

impl Profiler {
    /// Record every launch from now on.
    pub fn enable(&self) {
        self.inner.enabled.store(true, Ordering::Relaxed);
    }

    /// Stop recording (records so far are kept until taken).
    pub fn disable(&self) {
        self.inner.enabled.store(false, Ordering::Relaxed);
    }

    /// Whether launches are being recorded.
    pub fn is_enabled(&self) -> bool {
        self.inner.enabled.load(Ordering::Relaxed)
    }

    /// Forget every record so far.
    pub fn clear(&self) {
        lock(&self.inner.pending).clear();
        lock(&self.inner.reads).clear();
    }

    /// Microseconds since the profiler was created.
    pub(crate) fn now_us(&self) -> f64 {
        self.inner.epoch.elapsed().as_secs_f64() * 1e6
    }

    /// The instant host-clock spans are measured from.
    pub(crate) fn epoch(&self) -> Instant {
        self.inner.epoch
    }

    /// Keep a launch and how its time will be known.
    pub(crate) fn push(&self, record: LaunchRecord, timing: Timing) {
        if let Timing::Fences { start, .. } = &timing {
            lock(&self.inner.cuda_epoch).get_or_insert_with(|| start.clone());
        }
        lock(&self.inner.pending).push(Pending { record, timing });
    }

    /// Keep a read back.
    pub(crate) fn push_read(&self, record: ReadRecord) {
        lock(&self.inner.reads).push(record);
    }

    /// Take every record so far, resolving device times: `wait_device` lets the device finish
    /// submitted work (natively; browsers deliver timings through the event loop).
    pub(crate) async fn take(
        &self,
        backend: BackendKind,
        dev: &BackendDevice,
        device: String,
        wait_device: &dyn Fn(),
    ) -> Profile {
        let pending = std::mem::take(&mut *lock(&self.inner.pending));
        let epoch = lock(&self.inner.cuda_epoch).clone();
        let mut launches = Vec::with_capacity(pending.len());
        let mut waited = false;
        for Pending { mut record, timing } in pending {
            let span = match timing {
                Timing::Ready(span) => span,
                Timing::Pending(p) if !p.submitted.load(Ordering::Acquire) => None,
                Timing::Pending(p) => {
                    if !p.value.is_set() && !waited && cfg!(not(target_arch = "wasm32")) {
                        wait_device();
                        waited = true;
                    }
                    if p.value.is_set() || cfg!(target_arch = "wasm32") {
                        p.value.await
                    } else {
                        None
                    }
                }
                Timing::Fences { start, end } => {
                    let dur = end.elapsed_since(&start, dev, backend).ok();
                    let at = epoch
                        .as_ref()
                        .and_then(|e| start.elapsed_since(e, dev, backend).ok())
                        .unwrap_or_default();
                    dur.map(|d| Span {
                        start_ns: at.as_secs_f64() * 1e9,
                        dur_ns: d.as_secs_f64() * 1e9,
                    })
                }
            };
            record.device_start_us = span.map(|s| s.start_ns / 1e3);
            record.device_us = span.map(|s| s.dur_ns / 1e3);
            launches.push(record);
        }
        let reads = std::mem::take(&mut *lock(&self.inner.reads));
        Profile {
            backend,
            device,
            launches,
            reads,
            decisions: Vec::new(),
        }
    }
}

/// What a profiler recorded: launches with their device times, and the decisions made.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Profile {
    /// Backend of the device.
    pub backend: BackendKind,
    /// Name of the device.
    pub device: String,
    /// Every launch, in recording order.
    pub launches: Vec<LaunchRecord>,
    /// Every read back to the host, in order.
    pub reads: Vec<ReadRecord>,
    /// Decisions not tied to one launch: how the device was chosen, policy fallbacks.
    pub decisions: Vec<Decision>,
}

impl Profile {
    /// Sum of the launches' device times, in seconds.
    pub fn device_seconds(&self) -> f64 {
        self.launches
            .iter()
            .filter_map(|l| l.device_us)
            .sum::<f64>()
            / 1e6
    }
}

/// A launch record's fields that do not depend on its timing.
// One argument per field of the record: a struct for them would be the record itself.
#[allow(clippy::too_many_arguments)]
pub(crate) fn record(
    op: String,
    shapes: Vec<Vec<usize>>,
    dtype: DType,
    bytes: u64,
    flops: u64,
    queue: u64,
    clock: Clock,
    host_start_us: f64,
) -> LaunchRecord {
    LaunchRecord {
        op,
        shapes,
        dtype: dtype.to_string(),
        bytes,
        flops,
        variant: None,
        reason: None,
        queue,
        clock,
        host_start_us,
        device_start_us: None,
        device_us: None,
    }
}
