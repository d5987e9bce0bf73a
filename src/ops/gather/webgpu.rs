//! Gather on wgpu: gather.wgsl, one invocation per output word.

use super::Gather;
#[cfg(test)]
use crate::hal::webgpu::Specialisation;
use crate::hal::webgpu::{Bind, GpuBatch, GpuDevice, WgslSource};
use crate::hal::OpContext;
use crate::ops::common::webgpu::{
    check_binding, grid_1d, specialise, u32_of, wgsl_params, COMMON, INDEX,
};
use crate::Result;

static SOURCE: WgslSource = WgslSource {
    name: "gather.wgsl",
    text: crate::ops::common::wgsl_file!("gather/gather.wgsl"),
    preludes: &[COMMON, INDEX, GatherWords::DECL],
};

wgsl_params! {
    /// gather.wgsl's parameters.
    struct GatherWords: G {
        /// The input as [outer, len, inner], and the number of indices.
        outer: u32,
        len: u32,
        inner: u32,
        count: u32,
        /// Offsets of the input, the indices and the output.
        x: u32,
        indices: u32,
        out: u32,
        /// `IndexMode`'s code: 0 error, 1 clip, 2 fill.
        mode: u32,
    }
}

/// Entries of `x` along an axis picked by `indices` (`fill` where out of range).
pub(super) fn gather(
    op: &Gather<'_>,
    q: &GpuBatch,
    dev: &GpuDevice,
    _: &OpContext<'_>,
) -> Result<()> {
    let (x, indices, out) = (op.x, op.indices, op.out);
    for o in [&x, &indices, &out] {
        check_binding(dev, o)?;
    }
    let params = GatherWords {
        outer: u32_of("outer", op.outer)?,
        len: u32_of("length", op.len)?,
        inner: u32_of("inner", op.inner)?,
        count: u32_of("count", op.count)?,
        x: u32_of("offset", x.layout.offset)?,
        indices: u32_of("offset", indices.layout.offset)?,
        out: u32_of("offset", out.layout.offset)?,
        mode: op.mode.code(),
    };
    let pipeline = dev.pipeline(specialise(
        &SOURCE,
        "gather_main",
        vec![("INDEX_KIND", op.kind)],
    ));
    let grid = grid_1d(dev, out.layout.numel().div_ceil(256) as u64)?;
    // The status word sits at a multiple of 256 bytes of its page (Queue::check_word).
    let status = op.status.as_ref().map_or(Bind::SpareWrite, |s| {
        Bind::Range(s.buf, 4 * s.layout.offset as u64, 4)
    });
    let binds = [
        (1, Bind::Mem(x.buf)),
        (2, Bind::Mem(indices.buf)),
        (4, Bind::Mem(out.buf)),
        (5, status),
    ];
    q.launch(dev, pipeline, params.words(), &binds, grid)
}

/// Every specialisation.
#[cfg(test)]
pub(super) fn specialisations() -> Vec<Specialisation> {
    (0..3)
        .map(|kind| specialise(&SOURCE, "gather_main", vec![("INDEX_KIND", kind)]))
        .collect()
}

/// gather.wgsl run by the CPU's WGSL executor, with the parameter words this file writes,
/// gives the CPU kernel's results and status word.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod on_the_cpu_executor {
    use super::*;
    use crate::ops::common::webgpu::{bound, run_on_cpu, stored_words, with_overrides};
    use crate::ops::gather::IndexMode;
    use crate::{BackendChoice, BackendKind, Buffer, Device, Tensor};

    #[test]
    fn gather_matches_the_cpu_kernel() {
        let d = Device::open(BackendChoice::Backend(BackendKind::Cpu)).unwrap();
        let x: Vec<f32> = (0..3 * 11 * 4)
            .map(|i| ((i * 7919) % 997) as f32 / 50.0 - 9.0)
            .collect();
        let t = Tensor::from_slice(&d, &x, &[3, 11, 4]).unwrap();
        // gather along axis 1 with i32 and i64 indices: negative, and out of range either way.
        let i32s = Tensor::from_slice(&d, &[3i32, 0, -1, 11, -12, 5, -11], &[7]).unwrap();
        let i64s =
            Tensor::from_slice(&d, &[3i64, 1 << 40, -1, -(1 << 33), 10, -11, 0], &[7]).unwrap();
        for (idx, kind, first) in [(i32s, 1, 3), (i64s, 2, 1)] {
            for mode in [IndexMode::Error, IndexMode::Clip, IndexMode::Fill] {
                let params = GatherWords {
                    outer: 3,
                    len: 11,
                    inner: 4,
                    count: 7,
                    x: 0,
                    indices: 0,
                    out: 0,
                    mode: mode.code(),
                };
                let source = with_overrides(
                    specialise(&SOURCE, "gather_main", vec![]).full_source(),
                    &[("INDEX_KIND", kind)],
                );
                let (xs, is) = (
                    Buffer::from_slice(&d, &stored_words(&t)).unwrap(),
                    Buffer::from_slice(&d, &stored_words(&idx)).unwrap(),
                );
                let out = Buffer::from_slice(&d, &[0x7fa5_a5a5u32; 84]).unwrap();
                let status = Buffer::from_slice(&d, &[u32::MAX]).unwrap();
                run_on_cpu(
                    &d,
                    &source,
                    "gather_main",
                    params.words(),
                    &[bound(&xs), bound(&is), bound(&out), bound(&status)],
                    [1, 1, 1],
                )
                .unwrap();
                let want = if mode == IndexMode::Error {
                    IndexMode::Fill
                } else {
                    mode
                };
                assert_eq!(
                    out.read_blocking().unwrap(),
                    stored_words(&t.gather_with(1, &idx, want).unwrap()),
                    "gather {kind} {mode:?}"
                );
                let found = if mode == IndexMode::Error {
                    first
                } else {
                    u32::MAX
                };
                assert_eq!(
                    status.read_blocking().unwrap(),
                    [found],
                    "gather's status, {kind} {mode:?}"
                );
            }
        }
    }
}
