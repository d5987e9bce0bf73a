//! How a launch's device time is known: the clock that timed it, and the span itself, known
//! at once (host clock), later (webgpu timestamp queries) or between two fences (CUDA events).
//! The profiler above collects them; the backends fill them in.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use serde::Serialize;

use super::FenceImpl;
use crate::base::signal::Signal;

/// Which clock timed a launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Clock {
    /// wgpu timestamp queries written at the start and end of the launch's compute passes.
    TimestampQuery,
    /// CUDA events recorded on the stream before and after the launch.
    CudaEvent,
    /// The host clock around the launch (`cpu` runs work as it is recorded).
    Host,
    /// The host clock around a submit-and-wait of the launch alone (adapters without
    /// timestamp queries; the profiler then serialises launches).
    HostSerialised,
    /// No clock could time the launch (an adapter without timestamps in a browser).
    None,
}

/// Device time of one launch in nanoseconds: start on the clock's own axis, and duration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Span {
    pub start_ns: f64,
    pub dur_ns: f64,
}

impl Span {
    /// From `start` until now, on the host clock whose zero is `epoch`.
    pub(crate) fn since(epoch: web_time::Instant, start: web_time::Instant) -> Span {
        Span {
            start_ns: start.duration_since(epoch).as_secs_f64() * 1e9,
            dur_ns: start.elapsed().as_secs_f64() * 1e9,
        }
    }
}

/// A device time that arrives once the device has run the launch (webgpu timestamp queries).
#[derive(Clone)]
pub(crate) struct PendingSpan {
    /// Set from the readback of the batch's timestamps (`None`: the launch had no pass).
    pub value: Signal<Option<Span>>,
    /// Whether the batch holding the launch has been submitted.
    pub submitted: Arc<AtomicBool>,
}

impl PendingSpan {
    pub(crate) fn new() -> Self {
        PendingSpan {
            value: Signal::new(),
            submitted: Arc::new(AtomicBool::new(false)),
        }
    }
}

/// How a launch's device time will be known.
pub(crate) enum Timing {
    /// Known now (host clock), or never.
    Ready(Option<Span>),
    /// Written by the device later.
    Pending(PendingSpan),
    /// Between two fences (CUDA events).
    #[cfg_attr(not(cuda_backend), allow(dead_code))]
    Fences { start: FenceImpl, end: FenceImpl },
}
