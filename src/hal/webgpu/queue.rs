//! Recording and submitting work on wgpu. Commands are collected per queue and encoded into
//! one command buffer at submit; all small host data of a batch (launch parameters, writes)
//! travels in one upload buffer.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::graph::GpuGraph;
use super::UserPipeline;
use super::{GpuDevice, Made, Pipeline};
use crate::base::signal::{lock, Signal};
use crate::hal::timer::{PendingSpan, Span};
use crate::hal::UserArg;
use crate::hal::{Block, Held};
use crate::hal::{Mapped, Memory};
use crate::{Error, Result};

/// A batch is submitted on its own once it holds this many commands...
const MAX_BATCH_COMMANDS: usize = 2048;
/// ...or this many bytes of upload data...
const MAX_BATCH_UPLOAD: usize = 64 << 20;
/// ...or this many timed launches (two timestamp queries each; WebGPU allows 4096 per set).
const MAX_BATCH_SPANS: usize = 1024;

/// What a binding points at.
#[derive(Clone)]
pub(crate) enum Resource {
    /// A range of the batch's upload buffer.
    Upload { offset: u64, size: u64 },
    /// A range of a device buffer.
    Buffer {
        buffer: wgpu::Buffer,
        offset: u64,
        size: u64,
    },
}

/// One binding of a dispatch.
pub(super) struct Entry {
    pub group: u32,
    pub binding: u32,
    pub resource: Resource,
}

/// One recorded command of a batch.
pub(super) enum Command {
    Dispatch {
        pipeline: wgpu::ComputePipeline,
        entries: Vec<Entry>,
        workgroups: [u32; 3],
    },
    Upload {
        offset: u64,
        dst: wgpu::Buffer,
        dst_offset: u64,
        size: u64,
    },
    Copy {
        src: wgpu::Buffer,
        src_offset: u64,
        dst: wgpu::Buffer,
        dst_offset: u64,
        size: u64,
    },
    /// One run of captured work.
    Graph(Arc<GpuGraph>),
}

/// The commands of one profiled launch, `begin..end` of its batch.
struct TimedSpan {
    begin: usize,
    end: usize,
    time: PendingSpan,
}

/// Where a profiled launch began: its batch (by serial number) and first command.
pub(crate) struct SpanStart {
    serial: u64,
    begin: usize,
}

#[derive(Default)]
pub(super) struct Batch {
    /// Counts the queue's batches, so a launch split by an automatic submit is noticed.
    serial: u64,
    pub commands: Vec<Command>,
    pub upload: Vec<u8>,
    /// What the recorded commands use, held until they have run.
    pub held: Vec<Held>,
    spans: Vec<TimedSpan>,
    /// The batch is being captured: it is kept whole for a [`GpuGraph`], never submitted.
    capturing: bool,
}

impl Batch {
    /// Append `data` to the upload area at an offset aligned to `align`; returns the offset.
    fn push_upload(&mut self, data: &[u8], align: usize) -> u64 {
        let offset = self.upload.len().next_multiple_of(align);
        self.upload.resize(offset, 0);
        self.upload.extend_from_slice(data);
        offset as u64
    }

    /// Hold `block` for a command recorded now.
    fn hold(&mut self, block: &Arc<Block>) {
        self.held.push(Held::of(block));
    }

    fn is_full(&self) -> bool {
        self.commands.len() >= MAX_BATCH_COMMANDS
            || self.upload.len() >= MAX_BATCH_UPLOAD
            || self.spans.len() >= MAX_BATCH_SPANS
    }
}

/// A buffer bound to an op kernel.
#[derive(Clone, Copy)]
pub(crate) enum Bind<'a> {
    /// Pooled device memory (bound from its start, as far as a binding may reach).
    Mem(&'a Arc<Block>),
    /// Bytes `[start, start + len)` of pooled device memory: `start` a multiple of
    /// [`GpuDevice::storage_offset_alignment`], `len` of whole words within one binding.
    Range(&'a Arc<Block>, u64, u64),
    /// The device's spare read-only buffer, for a binding this launch does not use.
    SpareRead,
    /// The device's spare writable buffer.
    SpareWrite,
}

fn misaligned(what: &str, offset: u64) -> Error {
    Error::Invalid(format!(
        "{what} starts at byte {offset}: webgpu moves whole 4-byte words, so a view of 16-bit \
            elements must start at an even element (cast or make the tensor contiguous first)"
    ))
}

/// Padding bytes that round a transfer of `len` bytes at `offset` of `dst` up to whole words,
/// or an error if they would overwrite bytes of another view: the start must be aligned, and
/// an unaligned end is only allowed at the end of the allocation.
fn word_span(dst: &Arc<Block>, offset: u64, len: u64, what: &str) -> Result<u64> {
    if offset % 4 != 0 {
        return Err(misaligned(what, offset));
    }
    let pad = len.next_multiple_of(4) - len;
    if pad != 0 && offset + len != dst.bytes() {
        return Err(Error::Invalid(format!(
            "{what} of {len} bytes ends inside a 4-byte word that other elements share: webgpu \
                moves whole words, so a view of 16-bit elements must hold an even number of \
                elements unless it runs to the end of its buffer"
        )));
    }
    Ok(pad)
}

/// The wgpu buffer behind pooled memory.
pub(crate) fn gpu(mem: &Arc<Block>) -> Result<&wgpu::Buffer> {
    match mem.memory() {
        Memory::WebGpu(b) => Ok(b.buffer()),
        _ => Err(Error::Internal(
            "a non-webgpu buffer reached the webgpu backend".into(),
        )),
    }
}

/// A queue's recorded, not yet submitted work.
#[derive(Default)]
pub(crate) struct GpuBatch {
    batch: std::sync::Mutex<Batch>,
}

impl GpuBatch {
    /// Record with `f`, then submit on its own if the batch has grown large (unless it is
    /// being captured).
    fn record(&self, dev: &GpuDevice, f: impl FnOnce(&mut Batch) -> Result<()>) -> Result<()> {
        let full = {
            let mut batch = lock(&self.batch);
            f(&mut batch)?;
            batch.is_full() && !batch.capturing
        };
        if full {
            self.submit(dev)?;
        }
        Ok(())
    }

    pub(crate) fn write(
        &self,
        dev: &GpuDevice,
        dst: &Arc<Block>,
        offset: u64,
        data: &[u8],
    ) -> Result<()> {
        let padded;
        let data = match word_span(dst, offset, data.len() as u64, "write")? {
            0 => data,
            pad => {
                padded = [data, &[0u8; 3][..pad as usize]].concat();
                &padded[..]
            }
        };
        let target = gpu(dst)?.clone();
        self.record(dev, |b| {
            if b.commands.is_empty() && !b.capturing {
                // Nothing recorded before it on this queue: wgpu orders the write before the
                // next submission.
                dev.queue.write_buffer(&target, offset, data);
                return Ok(());
            }
            let at = b.push_upload(data, 4);
            b.commands.push(Command::Upload {
                offset: at,
                dst: target,
                dst_offset: offset,
                size: data.len() as u64,
            });
            b.hold(dst);
            Ok(())
        })
    }

    pub(crate) fn copy(
        &self,
        dev: &GpuDevice,
        src: &Arc<Block>,
        src_offset: u64,
        dst: &Arc<Block>,
        dst_offset: u64,
        size: u64,
    ) -> Result<()> {
        if src_offset % 4 != 0 {
            return Err(misaligned("copy source", src_offset));
        }
        let size = size + word_span(dst, dst_offset, size, "copy destination")?;
        let (s, d) = (gpu(src)?.clone(), gpu(dst)?.clone());
        // WebGPU forbids a copy within one buffer: go through a temporary one.
        let bounce = (src.id() == dst.id()).then(|| {
            let usage = wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
            dev.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("bounce"),
                size,
                usage,
                mapped_at_creation: false,
            })
        });
        self.record(dev, |b| {
            match bounce {
                Some(t) => {
                    b.commands.push(Command::Copy {
                        src: s,
                        src_offset,
                        dst: t.clone(),
                        dst_offset: 0,
                        size,
                    });
                    b.commands.push(Command::Copy {
                        src: t,
                        src_offset: 0,
                        dst: d,
                        dst_offset,
                        size,
                    });
                }
                None => b.commands.push(Command::Copy {
                    src: s,
                    src_offset,
                    dst: d,
                    dst_offset,
                    size,
                }),
            }
            b.hold(src);
            b.hold(dst);
            Ok(())
        })
    }

    /// Mark the start of a profiled launch.
    pub(crate) fn begin_span(&self) -> SpanStart {
        let b = lock(&self.batch);
        SpanStart {
            serial: b.serial,
            begin: b.commands.len(),
        }
    }

    /// Mark the end of the profiled launch begun at `start`: timestamp queries around its
    /// compute passes will set `time` after the batch has run. (A launch that an automatic
    /// submit split is timed from the start of the later batch.)
    pub(crate) fn end_span(&self, start: SpanStart, time: PendingSpan) {
        let mut b = lock(&self.batch);
        let begin = if start.serial == b.serial {
            start.begin
        } else {
            0
        };
        let end = b.commands.len();
        b.spans.push(TimedSpan { begin, end, time });
    }

    /// Record an op kernel launch with `params` at binding 0 and `binds` at the others.
    pub(crate) fn launch(
        &self,
        dev: &GpuDevice,
        pipeline: Pipeline,
        params: &[u32],
        binds: &[(u32, Bind<'_>)],
        workgroups: [u32; 3],
    ) -> Result<()> {
        let max = dev.limits.max_storage_buffer_binding_size;
        let mut entries = Vec::with_capacity(binds.len() + 1);
        let mut held = Vec::new();
        for (binding, bind) in binds {
            let (buffer, offset, size) = match bind {
                Bind::Mem(m) => {
                    held.push(*m);
                    (gpu(m)?.clone(), 0, m.capacity().min(max) / 4 * 4)
                }
                Bind::Range(m, start, len) => {
                    held.push(*m);
                    let len = (*len).min(m.capacity().saturating_sub(*start)).min(max);
                    (gpu(m)?.clone(), *start, len / 4 * 4)
                }
                Bind::SpareRead => (dev.spare_read.clone(), 0, 256),
                Bind::SpareWrite => (dev.spare_write.clone(), 0, 256),
            };
            entries.push(Entry {
                group: 0,
                binding: *binding,
                resource: Resource::Buffer {
                    buffer,
                    offset,
                    size,
                },
            });
        }
        let align = dev.limits.min_storage_buffer_offset_alignment as usize;
        self.record(dev, |b| {
            let offset = b.push_upload(bytemuck::cast_slice(params), align);
            entries.push(Entry {
                group: 0,
                binding: 0,
                resource: Resource::Upload {
                    offset,
                    size: (params.len() * 4) as u64,
                },
            });
            b.commands.push(Command::Dispatch {
                pipeline,
                entries,
                workgroups,
            });
            for block in &held {
                b.hold(block);
            }
            Ok(())
        })
    }

    /// Record a user kernel launch (already checked against its reflection).
    pub(crate) fn launch_user(
        &self,
        dev: &GpuDevice,
        pipeline: &UserPipeline,
        args: &[UserArg<'_>],
        workgroups: [u32; 3],
    ) -> Result<()> {
        let mut entries = Vec::with_capacity(args.len());
        let mut held = Vec::with_capacity(args.len());
        for arg in args {
            let &UserArg::Buffer {
                block,
                group,
                binding,
                byte_offset,
                byte_len,
            } = arg
            else {
                let binding = if let UserArg::Scalar { binding, .. } = arg {
                    *binding
                } else {
                    0
                };
                return Err(Error::Launch(format!(
                    "binding {binding} is a scalar: WGSL kernels take buffers only"
                )));
            };
            held.push(block);
            entries.push(Entry {
                group,
                binding,
                resource: Resource::Buffer {
                    buffer: gpu(block)?.clone(),
                    offset: byte_offset,
                    size: byte_len,
                },
            });
        }
        self.record(dev, |batch| {
            batch.commands.push(Command::Dispatch {
                pipeline: pipeline.pipeline.clone(),
                entries,
                workgroups,
            });
            for block in held {
                batch.hold(block);
            }
            Ok(())
        })
    }

    /// Submit what was recorded before, then keep what is recorded from now on for a graph.
    pub(crate) fn begin_capture(&self, dev: &GpuDevice) -> Result<()> {
        self.submit(dev)?;
        lock(&self.batch).capturing = true;
        Ok(())
    }

    /// Stop capturing: the captured batch as a graph (`keep`), or dropped.
    pub(crate) fn end_capture(&self, dev: &GpuDevice, keep: bool) -> Result<Option<GpuGraph>> {
        let batch = {
            let mut guard = lock(&self.batch);
            let next = Batch {
                serial: guard.serial + 1,
                ..Batch::default()
            };
            std::mem::replace(&mut *guard, next)
        };
        if !keep {
            return Ok(None);
        }
        GpuGraph::new(dev, batch).map(Some)
    }

    /// Record one run of `graph`.
    pub(crate) fn replay(&self, dev: &GpuDevice, graph: &Arc<GpuGraph>) -> Result<()> {
        self.record(dev, |b| {
            b.commands.push(Command::Graph(graph.clone()));
            b.held.extend(graph.held().iter().cloned());
            Ok(())
        })
    }

    /// Encode and submit everything recorded so far. The batch stays locked until wgpu has
    /// the submission, so that batches of one queue reach the device in recording order even
    /// when several threads submit.
    pub(crate) fn submit(&self, dev: &GpuDevice) -> Result<GpuFence> {
        let mut guard = lock(&self.batch);
        if guard.capturing {
            return Err(crate::hal::capture_refusal("submitting"));
        }
        let next = Batch {
            serial: guard.serial + 1,
            ..Batch::default()
        };
        let batch = std::mem::replace(&mut *guard, next);
        let upload = upload_buffer(dev, batch.upload)?;
        let mut encoder = dev
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("unicompute batch"),
            });
        #[cfg(not(target_arch = "wasm32"))]
        let stamp = dev.clock.as_ref().map(|c| (c, c.begin(&mut encoder)));
        let stamps =
            (!batch.spans.is_empty()).then(|| Stamps::new(dev, &batch.spans, &batch.commands));
        encode(
            dev,
            &mut encoder,
            &batch.commands,
            upload.as_ref().map(|u| &u.0),
            stamps.as_ref(),
        )?;
        let readback = stamps.as_ref().map(|s| s.resolve(dev, &mut encoder));
        #[cfg(not(target_arch = "wasm32"))]
        let stamp = stamp.map(|(clock, n)| {
            clock.end(&mut encoder, n);
            n
        });
        let index = dev.queue.submit([encoder.finish()]);
        // Its bytes are read by the work just submitted, after which WebGPU frees them.
        drop(upload);
        if let (Some(stamps), Some(readback)) = (stamps, readback) {
            stamps.deliver(dev, readback, batch.spans);
        }
        let done = Signal::new();
        let signal = done.clone();
        dev.queue.on_submitted_work_done(move || signal.set(()));
        drop(guard);
        dev.hold_until(done.clone(), batch.held);
        dev.check_healthy()?;
        Ok(GpuFence {
            done,
            index,
            #[cfg(not(target_arch = "wasm32"))]
            stamp,
        })
    }

    /// Copy a range back after all recorded work, to a mappable staging buffer, and lend the
    /// mapped bytes to `take`.
    pub(crate) async fn read<R>(
        &self,
        dev: &GpuDevice,
        src: &Arc<Block>,
        offset: u64,
        bytes: u64,
        take: impl FnOnce(Mapped<'_>) -> R,
    ) -> Result<R> {
        // WebGPU copies whole words: read the enclosing aligned range, keep the part asked for.
        let lead = offset % 4;
        let (offset, size) = (offset - lead, (lead + bytes).next_multiple_of(4));
        let source = gpu(src)?.clone();
        let staging = {
            let mut b = lock(&self.batch);
            if b.capturing {
                return Err(crate::hal::capture_refusal("reading"));
            }
            let staging = Made(dev.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("readback"),
                size,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }));
            b.commands.push(Command::Copy {
                src: source,
                src_offset: offset,
                dst: staging.0.clone(),
                dst_offset: 0,
                size,
            });
            b.hold(src);
            staging
        };
        self.submit(dev)?;
        let mapped: Signal<Result<(), String>> = Signal::new();
        let m = mapped.clone();
        staging
            .0
            .slice(..)
            .map_async(wgpu::MapMode::Read, move |r| {
                m.set(r.map_err(|e| e.to_string()))
            });
        #[cfg(not(target_arch = "wasm32"))]
        dev.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| Error::Device(format!("waiting for the device: {e}")))?;
        mapped
            .await
            .map_err(|e| Error::Device(format!("reading back {bytes} bytes failed: {e}")))?;
        // Browsers report device errors asynchronously: one raised by the work just read
        // (a rejected shader, say) has arrived by now and must not pass as a result.
        dev.check_healthy()?;
        let taken = lend_mapped(&staging.0, lead, bytes, take);
        staging.0.unmap();
        drop(staging);
        dev.maintain();
        taken
    }
}

/// A device buffer holding a batch's upload bytes (`None` for none), which dispatches bind
/// and copies read from.
pub(super) fn upload_buffer(dev: &GpuDevice, mut data: Vec<u8>) -> Result<Option<Made>> {
    if data.is_empty() {
        return Ok(None);
    }
    data.resize(data.len().next_multiple_of(4), 0);
    let made = Made(dev.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("upload"),
        size: data.len() as u64,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: true,
    }));
    let buf = &made.0;
    buf.slice(..)
        .get_mapped_range_mut()
        .map_err(|e| Error::Device(format!("mapping the upload buffer: {e}")))?
        .copy_from_slice(&data);
    buf.unmap();
    Ok(Some(made))
}

/// Lend `bytes` bytes from `lead` of the mapped `staging` buffer to `take`: in a browser the
/// `ArrayBuffer` of the mapping itself (wgpu's own view would first copy it into the wasm).
fn lend_mapped<R>(
    staging: &wgpu::Buffer,
    lead: u64,
    bytes: u64,
    take: impl FnOnce(Mapped<'_>) -> R,
) -> Result<R> {
    #[cfg(target_arch = "wasm32")]
    if let Some(js) = staging.as_webgpu() {
        let range = js
            .get_mapped_range()
            .map_err(|e| Error::Device(format!("mapping the readback buffer: {e:?}")))?;
        return Ok(take(Mapped::Js(
            js_sys::Uint8Array::new_with_byte_offset_and_length(&range, lead as u32, bytes as u32),
        )));
    }
    let view = staging
        .slice(..)
        .get_mapped_range()
        .map_err(|e| Error::Device(format!("mapping the readback buffer: {e}")))?;
    Ok(take(Mapped::Host(
        &view[lead as usize..(lead + bytes) as usize],
    )))
}

/// Timestamp queries of a batch with profiled launches: launch `s` gets query `2s` at the
/// start of its first compute pass and `2s + 1` at the end of its last.
struct Stamps {
    set: wgpu::QuerySet,
    /// The profiled launch each command belongs to.
    owner: Vec<Option<usize>>,
    /// First and last dispatch of each profiled launch (`None`: it dispatched nothing).
    first: Vec<Option<usize>>,
    last: Vec<Option<usize>>,
}

impl Stamps {
    fn new(dev: &GpuDevice, spans: &[TimedSpan], commands: &[Command]) -> Stamps {
        let n = commands.len();
        let mut owner = vec![None; n];
        for (s, span) in spans.iter().enumerate() {
            for o in &mut owner[span.begin.min(n)..span.end.min(n)] {
                *o = Some(s);
            }
        }
        let (mut first, mut last) = (vec![None; spans.len()], vec![None; spans.len()]);
        for (i, c) in commands.iter().enumerate() {
            let dispatches = match c {
                Command::Dispatch { .. } => true,
                Command::Graph(g) => g.passes() > 0,
                _ => false,
            };
            if let (true, Some(s)) = (dispatches, owner[i]) {
                first[s].get_or_insert(i);
                last[s] = Some(i);
            }
        }
        let set = dev.device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("profiler"),
            ty: wgpu::QueryType::Timestamp,
            count: 2 * spans.len() as u32,
        });
        Stamps {
            set,
            owner,
            first,
            last,
        }
    }

    /// The timestamp writes of a compute pass holding dispatches `i..j`, all of one owner.
    fn writes(&self, i: usize, j: usize) -> Option<wgpu::ComputePassTimestampWrites<'_>> {
        let s = self.owner[i]?;
        let begin = (self.first[s] == Some(i)).then_some(2 * s as u32);
        let end = (self.last[s] == Some(j - 1)).then_some(2 * s as u32 + 1);
        (begin.is_some() || end.is_some()).then_some(wgpu::ComputePassTimestampWrites {
            query_set: &self.set,
            beginning_of_pass_write_index: begin,
            end_of_pass_write_index: end,
        })
    }

    /// The timestamp writes of pass `pass` of the `passes` of graph command `i`: a graph is
    /// timed from the start of its first pass to the end of its last.
    fn graph_writes(
        &self,
        i: usize,
        pass: usize,
        passes: usize,
    ) -> Option<wgpu::ComputePassTimestampWrites<'_>> {
        let s = self.owner[i]?;
        let begin = (pass == 0 && self.first[s] == Some(i)).then_some(2 * s as u32);
        let end = (pass + 1 == passes && self.last[s] == Some(i)).then_some(2 * s as u32 + 1);
        (begin.is_some() || end.is_some()).then_some(wgpu::ComputePassTimestampWrites {
            query_set: &self.set,
            beginning_of_pass_write_index: begin,
            end_of_pass_write_index: end,
        })
    }

    /// Resolve the queries into a buffer the host can map.
    fn resolve(&self, dev: &GpuDevice, encoder: &mut wgpu::CommandEncoder) -> wgpu::Buffer {
        let size = 8 * u64::from(self.set.count());
        let (resolved, readback) = query_buffers(dev, ["timestamps", "timestamps readback"], size);
        encoder.resolve_query_set(&self.set, 0..self.set.count(), &resolved, 0);
        encoder.copy_buffer_to_buffer(&resolved, 0, &readback, 0, size);
        readback
    }

    /// After the batch's submission: map the timestamps when the device has written them and
    /// hand each profiled launch its span.
    fn deliver(self, dev: &GpuDevice, readback: wgpu::Buffer, spans: Vec<TimedSpan>) {
        for span in &spans {
            span.time
                .submitted
                .store(true, std::sync::atomic::Ordering::Release);
        }
        let period = f64::from(dev.queue.get_timestamp_period());
        let mapped = readback.clone();
        let first = self.first;
        readback
            .slice(..)
            .map_async(wgpu::MapMode::Read, move |result| {
                let ticks: Option<Vec<u64>> = result.ok().and_then(|()| {
                    mapped
                        .slice(..)
                        .get_mapped_range()
                        .ok()
                        .map(|v| bytemuck::pod_collect_to_vec(&v))
                });
                for (s, span) in spans.iter().enumerate() {
                    let value = match (&ticks, first[s]) {
                        (Some(t), Some(_)) => Some(Span {
                            start_ns: t[2 * s] as f64 * period,
                            dur_ns: t[2 * s + 1].saturating_sub(t[2 * s]) as f64 * period,
                        }),
                        _ => None,
                    };
                    span.time.value.set(value);
                }
                if ticks.is_some() {
                    mapped.unmap();
                }
            });
    }
}

/// Encode a batch: each run of consecutive dispatches shares one compute pass (wgpu still
/// orders the dispatches), copies go between passes. With `stamps`, a pass holds the
/// dispatches of one profiled launch only, and carries its timestamp writes.
fn encode(
    dev: &GpuDevice,
    encoder: &mut wgpu::CommandEncoder,
    commands: &[Command],
    upload: Option<&wgpu::Buffer>,
    stamps: Option<&Stamps>,
) -> Result<()> {
    let no_upload = || Error::Internal("a command refers to an empty upload area".into());
    let mut i = 0;
    while i < commands.len() {
        match &commands[i] {
            Command::Dispatch { .. } => {
                i += encode_dispatches(dev, encoder, &commands[i..], i, upload, stamps)?;
            }
            Command::Upload {
                offset,
                dst,
                dst_offset,
                size,
            } => {
                encoder.copy_buffer_to_buffer(
                    upload.ok_or_else(no_upload)?,
                    *offset,
                    dst,
                    *dst_offset,
                    *size,
                );
                i += 1;
            }
            Command::Copy {
                src,
                src_offset,
                dst,
                dst_offset,
                size,
            } => {
                encoder.copy_buffer_to_buffer(src, *src_offset, dst, *dst_offset, *size);
                i += 1;
            }
            Command::Graph(graph) => {
                graph.encode(encoder, |pass, passes| {
                    stamps.and_then(|s| s.graph_writes(i, pass, passes))
                });
                i += 1;
            }
        }
    }
    Ok(())
}

/// Encode the run of dispatches that `commands` (command `first` onwards of the batch)
/// starts with, one profiled launch at most with `stamps`, in one compute pass; how many
/// commands it took.
fn encode_dispatches(
    dev: &GpuDevice,
    encoder: &mut wgpu::CommandEncoder,
    commands: &[Command],
    first: usize,
    upload: Option<&wgpu::Buffer>,
    stamps: Option<&Stamps>,
) -> Result<usize> {
    let owner = |i: usize| stamps.and_then(|s| s.owner[i]);
    let run = commands
        .iter()
        .enumerate()
        .take_while(|(d, c)| {
            matches!(c, Command::Dispatch { .. }) && owner(first + d) == owner(first)
        })
        .count();
    let mut prepared = Vec::with_capacity(run);
    for cmd in &commands[..run] {
        if let Command::Dispatch {
            pipeline,
            entries,
            workgroups,
        } = cmd
        {
            prepared.push((
                pipeline,
                bind_groups(dev, pipeline, entries, upload)?,
                workgroups,
            ));
        }
    }
    let timestamp_writes = stamps.and_then(|s| s.writes(first, first + run));
    let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
        label: None,
        timestamp_writes,
    });
    for (pipeline, groups, workgroups) in &prepared {
        pass.set_pipeline(pipeline);
        for (g, bg) in groups {
            pass.set_bind_group(*g, bg, &[]);
        }
        pass.dispatch_workgroups(workgroups[0], workgroups[1], workgroups[2]);
    }
    Ok(run)
}

/// The bind groups of one dispatch, by group index.
pub(super) fn bind_groups(
    dev: &GpuDevice,
    pipeline: &wgpu::ComputePipeline,
    entries: &[Entry],
    upload: Option<&wgpu::Buffer>,
) -> Result<Vec<(u32, wgpu::BindGroup)>> {
    let no_upload = || Error::Internal("a command refers to an empty upload area".into());
    let mut groups: BTreeMap<u32, Vec<wgpu::BindGroupEntry<'_>>> = BTreeMap::new();
    for e in entries {
        let (buffer, offset, size) = match &e.resource {
            Resource::Upload { offset, size } => (upload.ok_or_else(no_upload)?, *offset, *size),
            Resource::Buffer {
                buffer,
                offset,
                size,
            } => (buffer, *offset, *size),
        };
        groups
            .entry(e.group)
            .or_default()
            .push(wgpu::BindGroupEntry {
                binding: e.binding,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer,
                    offset,
                    size: wgpu::BufferSize::new(size),
                }),
            });
    }
    Ok(groups
        .into_iter()
        .map(|(g, entries)| {
            let layout = pipeline.get_bind_group_layout(g);
            (
                g,
                dev.device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: None,
                    layout: &layout,
                    entries: &entries,
                }),
            )
        })
        .collect())
}

/// Marks one submission; signalled from wgpu's completion callback.
#[derive(Clone)]
pub(crate) struct GpuFence {
    done: Signal<()>,
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    index: wgpu::SubmissionIndex,
    /// The submission's number on the device's clock (adapters with timestamp queries).
    #[cfg(not(target_arch = "wasm32"))]
    stamp: Option<u64>,
}

impl GpuFence {
    pub(crate) fn is_signalled(&self) -> bool {
        self.done.is_set()
    }

    pub(crate) async fn wait(&self, dev: &GpuDevice) -> Result<()> {
        #[cfg(not(target_arch = "wasm32"))]
        dev.device
            .poll(wgpu::PollType::Wait {
                submission_index: Some(self.index.clone()),
                timeout: None,
            })
            .map_err(|e| Error::Device(format!("waiting for the device: {e}")))?;
        self.done.clone().await;
        dev.maintain();
        dev.check_healthy()
    }

    /// Device time from the beginning of the submission after `start` to the end of this
    /// fence's, from the timestamps of the submissions; `None` without them.
    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) fn elapsed_since(
        &self,
        start: &GpuFence,
        dev: &GpuDevice,
    ) -> Option<Result<std::time::Duration>> {
        Some(dev.clock.as_ref()?.elapsed(dev, start.stamp?, self.stamp?))
    }

    /// In a browser, none: reading timestamps back needs the event loop.
    #[cfg(target_arch = "wasm32")]
    pub(crate) fn elapsed_since(
        &self,
        _: &GpuFence,
        _: &GpuDevice,
    ) -> Option<Result<std::time::Duration>> {
        None
    }
}

/// A buffer `size` bytes long that timestamp queries resolve into, and one the host maps to
/// read them, with their labels.
pub(super) fn query_buffers(
    dev: &GpuDevice,
    [resolve, read]: [&str; 2],
    size: u64,
) -> (wgpu::Buffer, wgpu::Buffer) {
    let buffer = |label, usage| {
        dev.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size,
            usage,
            mapped_at_creation: false,
        })
    };
    (
        buffer(
            resolve,
            wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
        ),
        buffer(
            read,
            wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        ),
    )
}
