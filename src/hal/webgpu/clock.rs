//! Device time between fences, natively on adapters with timestamp queries: every submission
//! begins and ends with an empty compute pass whose end writes a timestamp into its pair of
//! slots in a ring of queries (the cost of two query writes), and only `elapsed` reads two
//! slots back. Work between two fences is timed from the beginning of the first submission
//! after the earlier one, so time the device waited for the host to submit before it is
//! not counted.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::queue::query_buffers;
use super::GpuDevice;
use crate::base::signal::Signal;
use crate::{Error, Result};

/// Slots of the ring (WebGPU's largest query set), two a submission: a fence can be timed
/// until `SLOTS / 2` later submissions have reused its pair.
const SLOTS: u64 = wgpu::QUERY_SET_MAX_QUERIES as u64;

/// Submissions whose timestamps the ring keeps.
const KEPT: u64 = SLOTS / 2;

/// Where the resolved end slot lies in the readback (resolves start on 256-byte boundaries).
const END_AT: u64 = wgpu::QUERY_RESOLVE_BUFFER_ALIGNMENT;

/// The ring of timestamps that begin and end the device's submissions.
pub(super) struct SubmitClock {
    set: wgpu::QuerySet,
    /// Submissions stamped so far: submission `n` writes slots `2 (n % KEPT)` (its
    /// beginning) and the one after it (its end).
    next: AtomicU64,
}

impl SubmitClock {
    pub(super) fn new(device: &wgpu::Device) -> SubmitClock {
        SubmitClock {
            set: device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("fence timestamps"),
                ty: wgpu::QueryType::Timestamp,
                count: SLOTS as u32,
            }),
            next: AtomicU64::new(0),
        }
    }

    /// Begin the submission being encoded with a timestamp, written when the device starts
    /// it; returns the submission's number, for [`SubmitClock::end`].
    pub(super) fn begin(&self, encoder: &mut wgpu::CommandEncoder) -> u64 {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        self.write(encoder, slot(n, false));
        n
    }

    /// End submission `n` with a timestamp, written once the device has finished all work
    /// before it.
    pub(super) fn end(&self, encoder: &mut wgpu::CommandEncoder, n: u64) {
        self.write(encoder, slot(n, true));
    }

    /// An empty compute pass whose end writes the timestamp of `slot`.
    fn write(&self, encoder: &mut wgpu::CommandEncoder, slot: u32) {
        encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("fence timestamp"),
            timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                query_set: &self.set,
                beginning_of_pass_write_index: None,
                end_of_pass_write_index: Some(slot),
            }),
        });
    }

    /// Device time from the beginning of the submission after `start` to the end of
    /// submission `end` (zero unless `end` came after `start`), once both have run.
    pub(super) fn elapsed(&self, dev: &GpuDevice, start: u64, end: u64) -> Result<Duration> {
        self.check_kept(start.min(end))?;
        if end <= start {
            return Ok(Duration::ZERO);
        }
        let readback = self.resolve(dev, slot(start + 1, false), slot(end, true))?;
        // Every submission that could have reused a slot before the resolve ran has taken
        // its number by now.
        self.check_kept(start)?;
        let ticks: Vec<u64> = {
            let view = readback
                .slice(..)
                .get_mapped_range()
                .map_err(|e| Error::Device(format!("mapping the fence timestamps: {e}")))?;
            bytemuck::pod_collect_to_vec(&view)
        };
        readback.unmap();
        let (t0, t1) = (ticks[0], ticks[(END_AT / 8) as usize]);
        let period = f64::from(dev.queue.get_timestamp_period());
        Ok(Duration::from_secs_f64(
            t1.saturating_sub(t0) as f64 * period / 1e9,
        ))
    }

    /// An error if the slot of submission `n` may have been written again since.
    fn check_kept(&self, n: u64) -> Result<()> {
        let later = self.next.load(Ordering::Acquire) - n - 1;
        if later < KEPT {
            return Ok(());
        }
        Err(Error::Invalid(format!(
            "a fence of the time span is {later} submissions old: webgpu keeps the device \
                timestamps of the last {KEPT} submissions, so time between fences less far \
                apart"
        )))
    }

    /// Copy slots `first` and `last` to a mapped buffer, once both have been written (wgpu
    /// runs submissions in order).
    fn resolve(&self, dev: &GpuDevice, first: u32, last: u32) -> Result<wgpu::Buffer> {
        let (resolved, readback) = query_buffers(
            dev,
            ["fence timestamps", "fence timestamps readback"],
            END_AT + 8,
        );
        let mut encoder = dev
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("fence timestamps"),
            });
        for (slot, at) in [(first, 0), (last, END_AT)] {
            encoder.resolve_query_set(&self.set, slot..slot + 1, &resolved, at);
        }
        encoder.copy_buffer_to_buffer(&resolved, 0, &readback, 0, END_AT + 8);
        dev.queue.submit([encoder.finish()]);
        let mapped: Signal<std::result::Result<(), String>> = Signal::new();
        let m = mapped.clone();
        readback.slice(..).map_async(wgpu::MapMode::Read, move |r| {
            m.set(r.map_err(|e| e.to_string()))
        });
        dev.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| Error::Device(format!("waiting for the device: {e}")))?;
        pollster::block_on(mapped)
            .map_err(|e| Error::Device(format!("reading the fence timestamps: {e}")))?;
        dev.check_healthy()?;
        Ok(readback)
    }
}

/// The slot of submission `n`'s beginning or (`end`) end.
fn slot(n: u64, end: bool) -> u32 {
    (2 * (n % KEPT) + u64::from(end)) as u32
}
