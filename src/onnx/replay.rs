//! Runs as replays. A session whose feeds keep their shapes captures one run
//! (`Queue::capture`) and replays it: the host cost of one launch rather than one per node.
//! The first run with a set of shapes runs node by node; the second captures, and it and
//! later ones replay. Each replay's feeds are copied into the memory the capture read, and its
//! outputs out of the memory it wrote, so that every run gives tensors of its own. Where the
//! capture is refused (a node needs a device value on the host: control flow, shapes computed
//! from data; a backend without capture, the CPU) those shapes stay eager. A few sets of
//! shapes are kept, the least recently used dropped first.

use std::sync::{Arc, Mutex};

use super::value::Val;
use crate::base::error::{Error, Result};
use crate::base::signal::lock;
use crate::ops::copy::copy_into;
use crate::{DType, Graph, Queue, Tensor};

/// How many sets of shapes a session keeps captures (or refusals) for.
const KEPT: usize = 4;

/// What a capture is for: each feed's shape and dtype, in the graph's input order.
pub(crate) type Key = Vec<(Vec<usize>, DType)>;

/// A run captured for one [`Key`].
pub(crate) struct Captured {
    /// The tensors the captured work reads as the feeds.
    inputs: Vec<Tensor>,
    /// The work.
    graph: Graph,
    /// The graph's outputs: device ones hold each replay's results; host ones (computed
    /// from shapes alone) are the same every run.
    outputs: Vec<Val>,
}

/// Where one set of shapes stands.
#[derive(Clone)]
enum Entry {
    /// Run once, node by node.
    Seen,
    /// Captured: it replays.
    Captured(Arc<Captured>),
    /// The capture was refused: it runs node by node.
    Eager,
}

/// What a run with a given key does.
pub(crate) enum Next {
    /// Run node by node.
    Eager,
    /// Capture with [`capture`], then replay.
    Capture,
    /// Replay this capture.
    Replay(Arc<Captured>),
}

/// A session's captures, by key, the most recently used last.
#[derive(Default)]
pub(crate) struct Replays {
    entries: Mutex<Vec<(Key, Entry)>>,
}

impl Replays {
    /// What a run whose feeds have `key` does, noting that it was seen.
    pub(crate) fn next(&self, key: &Key) -> Next {
        let mut entries = lock(&self.entries);
        let Some(at) = entries.iter().position(|(k, _)| k == key) else {
            if entries.len() == KEPT {
                entries.remove(0);
            }
            entries.push((key.clone(), Entry::Seen));
            return Next::Eager;
        };
        let entry = entries.remove(at);
        let next = match &entry.1 {
            Entry::Seen => Next::Capture,
            Entry::Captured(c) => Next::Replay(c.clone()),
            Entry::Eager => Next::Eager,
        };
        entries.push(entry);
        next
    }

    /// Records how the capture for `key` went: its result, or `None` where it was refused.
    pub(crate) fn store(&self, key: &Key, captured: Option<Arc<Captured>>) {
        let mut entries = lock(&self.entries);
        let entry = match captured {
            Some(c) => Entry::Captured(c),
            None => Entry::Eager,
        };
        match entries.iter_mut().find(|(k, _)| k == key) {
            Some(e) => e.1 = entry,
            None => {
                if entries.len() == KEPT {
                    entries.remove(0);
                }
                entries.push((key.clone(), entry));
            }
        }
    }
}

/// The key of `feeds`, if each is a device tensor (not host data, not a sequence).
pub(crate) fn key(feeds: &[Val]) -> Option<Key> {
    feeds
        .iter()
        .map(|v| match v {
            Val::Device(t) => Some((t.shape().to_vec(), t.dtype())),
            _ => None,
        })
        .collect()
}

/// Captures the work of `run` on `queue`, which runs the graph on the given input tensors
/// (fresh ones of `key`'s shapes and dtypes) and gives its outputs. `None` where the capture
/// is refused, or an output is a sequence (whose tensors a later replay would overwrite).
pub(crate) fn capture(
    queue: &Queue,
    key: &Key,
    run: impl FnOnce(Vec<Tensor>) -> Result<Vec<Val>>,
) -> Result<Option<Arc<Captured>>> {
    let inputs = key
        .iter()
        .map(|(shape, dtype)| Tensor::zeros(queue.device(), shape, *dtype))
        .collect::<Result<Vec<_>>>()?;
    let given = inputs.clone();
    match queue.capture(|_| run(given)) {
        Ok((_, outputs)) if outputs.iter().any(|v| v.as_seq().is_some()) => Ok(None),
        Ok((graph, outputs)) => Ok(Some(Arc::new(Captured {
            inputs,
            graph,
            outputs,
        }))),
        Err(_) => Ok(None),
    }
}

impl Captured {
    /// One replay on `feeds` (of the capture's key), on `queue`: the outputs, copies of
    /// their own.
    pub(crate) fn replay(&self, queue: &Queue, feeds: &[Val]) -> Result<Vec<Val>> {
        self.feed(queue, feeds)?;
        self.graph.replay()?;
        self.copied_outputs(queue)
    }

    /// Compiles the kernels a replay launches besides the captured work (the copies of the
    /// feeds and the outputs) by making those copies once, of zero feeds, the outputs' copies
    /// dropped; nothing captured runs.
    pub(crate) fn prepare(&self, queue: &Queue) -> Result<()> {
        let zeros = (self.inputs.iter())
            .map(|t| Tensor::zeros(queue.device(), t.shape(), t.dtype()).map(Val::Device))
            .collect::<Result<Vec<_>>>()?;
        self.feed(queue, &zeros)?;
        self.copied_outputs(queue).map(drop)
    }

    /// Copies `feeds` into the tensors the captured work reads.
    fn feed(&self, queue: &Queue, feeds: &[Val]) -> Result<()> {
        for (feed, input) in feeds.iter().zip(&self.inputs) {
            let Val::Device(t) = feed else {
                return Err(Error::Internal("a replay was fed a host value".into()));
            };
            copy_into(queue, t, input)?;
        }
        Ok(())
    }

    /// The outputs, device ones copied into tensors of their own.
    fn copied_outputs(&self, queue: &Queue) -> Result<Vec<Val>> {
        self.outputs
            .iter()
            .map(|v| match v {
                Val::Device(t) => {
                    let out = Tensor::uninit(queue, t.shape(), t.dtype())?;
                    copy_into(queue, t, &out)?;
                    Ok(Val::Device(out))
                }
                // Host data, computed from shapes alone: the same every run.
                other => Ok(other.clone()),
            })
            .collect()
    }
}
