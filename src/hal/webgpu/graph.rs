//! Captured work on wgpu: a queue's batch kept for replay. WebGPU cannot submit a command
//! buffer twice, so a graph keeps what encoding costs most on the host, ready to encode again:
//! its pipelines with their bind groups made once, its upload bytes in a buffer of its own, and
//! its dispatches grouped into compute passes. A replay encodes those passes into the batch of
//! the queue that replays it.

use std::sync::Arc;

use super::queue::{bind_groups, upload_buffer, Batch, Command};
use super::{GpuDevice, Made};
use crate::hal::Held;
use crate::{Error, Result};

/// One dispatch, ready to encode.
#[derive(Clone)]
struct Dispatch {
    pipeline: wgpu::ComputePipeline,
    groups: Vec<(u32, wgpu::BindGroup)>,
    workgroups: [u32; 3],
}

/// One step of a graph: a compute pass or a copy between buffers.
#[derive(Clone)]
enum Step {
    Pass(Vec<Dispatch>),
    Copy {
        src: wgpu::Buffer,
        src_offset: u64,
        dst: wgpu::Buffer,
        dst_offset: u64,
        size: u64,
    },
}

/// A queue's captured work.
pub(crate) struct GpuGraph {
    steps: Vec<Step>,
    /// The blocks the work reads and writes, held whole for the graph's life.
    held: Vec<Held>,
    /// The buffers of the captured writes and launch parameters: this graph's, and those of
    /// the graphs replayed inside its capture, whose steps bind them (each destroyed with the
    /// last graph that holds it).
    uploads: Vec<Arc<Made>>,
}

impl GpuGraph {
    /// The graph of a captured batch: its upload bytes go to a buffer of their own, and each
    /// dispatch gets its bind groups now.
    pub(super) fn new(dev: &GpuDevice, batch: Batch) -> Result<GpuGraph> {
        let upload = upload_buffer(dev, batch.upload)?.map(Arc::new);
        let mut steps: Vec<Step> = Vec::new();
        let mut held = batch.held;
        let mut uploads: Vec<_> = upload.iter().cloned().collect();
        let upload = upload.as_deref().map(|u| &u.0);
        for command in batch.commands {
            match command {
                Command::Dispatch {
                    pipeline,
                    entries,
                    workgroups,
                } => {
                    let groups = bind_groups(dev, &pipeline, &entries, upload)?;
                    let dispatch = Dispatch {
                        pipeline,
                        groups,
                        workgroups,
                    };
                    match steps.last_mut() {
                        Some(Step::Pass(pass)) => pass.push(dispatch),
                        _ => steps.push(Step::Pass(vec![dispatch])),
                    }
                }
                Command::Upload {
                    offset,
                    dst,
                    dst_offset,
                    size,
                } => {
                    let src = upload.cloned().ok_or_else(|| {
                        Error::Internal("a captured write without upload bytes".into())
                    })?;
                    steps.push(Step::Copy {
                        src,
                        src_offset: offset,
                        dst,
                        dst_offset,
                        size,
                    });
                }
                Command::Copy {
                    src,
                    src_offset,
                    dst,
                    dst_offset,
                    size,
                } => steps.push(Step::Copy {
                    src,
                    src_offset,
                    dst,
                    dst_offset,
                    size,
                }),
                // A replay inside a capture: its steps become this graph's.
                Command::Graph(inner) => {
                    steps.extend(inner.steps.iter().cloned());
                    held.extend(inner.held.iter().cloned());
                    uploads.extend(inner.uploads.iter().cloned());
                }
            }
        }
        Ok(GpuGraph {
            steps,
            held,
            uploads,
        })
    }

    /// The blocks the graph reads and writes.
    pub(crate) fn held(&self) -> &[Held] {
        &self.held
    }

    /// How many compute passes a run encodes.
    pub(super) fn passes(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| matches!(s, Step::Pass(_)))
            .count()
    }

    /// Encode one run; `timestamps(pass, passes)` gives the timestamp writes of each pass.
    pub(super) fn encode<'a>(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        timestamps: impl Fn(usize, usize) -> Option<wgpu::ComputePassTimestampWrites<'a>>,
    ) {
        let passes = self.passes();
        let mut pass_index = 0;
        for step in &self.steps {
            match step {
                Step::Pass(dispatches) => {
                    let timestamp_writes = timestamps(pass_index, passes);
                    pass_index += 1;
                    let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                        label: Some("graph"),
                        timestamp_writes,
                    });
                    for d in dispatches {
                        pass.set_pipeline(&d.pipeline);
                        for (g, bg) in &d.groups {
                            pass.set_bind_group(*g, bg, &[]);
                        }
                        pass.dispatch_workgroups(d.workgroups[0], d.workgroups[1], d.workgroups[2]);
                    }
                }
                Step::Copy {
                    src,
                    src_offset,
                    dst,
                    dst_offset,
                    size,
                } => encoder.copy_buffer_to_buffer(src, *src_offset, dst, *dst_offset, *size),
            }
        }
    }
}
