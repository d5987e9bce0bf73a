//! Copies on wgpu: copy.wgsl, one invocation per element.

use super::ViewCopy;
use crate::ops::common::webgpu::{builtin, check_binding, grid_1d, strided_words, StridedWords, COMMON};
#[cfg(test)]
use crate::hal::webgpu::Builtin;
use crate::hal::webgpu::{Bind, GpuDevice, GpuQueue, WgslSource};
use crate::hal::OpContext;
use crate::Result;

static SOURCE: WgslSource = WgslSource { name: "copy.wgsl", text: crate::ops::common::wgsl_file!("copy/copy.wgsl"), preludes: &[COMMON, StridedWords::DECL] };

pub(super) fn copy(op: &ViewCopy<'_>, q: &GpuQueue, dev: &GpuDevice, _: &OpContext<'_>) -> Result<()> {
    let (x, out) = (op.x, op.out);
    check_binding(dev, &x)?;
    check_binding(dev, &out)?;
    let contiguous = out.layout.is_contiguous();
    let pipeline = dev.pipeline(builtin(&SOURCE, "copy_main", vec![("OUT_CONTIGUOUS", u32::from(contiguous))]));
    let grid = grid_1d(dev, out.layout.numel().div_ceil(256) as u64)?;
    // The destination's view is the second.
    let params = strided_words(&out, &[&x, &out])?;
    q.launch(dev, pipeline, params.words(), &[(1, Bind::Mem(x.buf)), (2, Bind::Mem(out.buf))], grid)
}

/// Every specialisation.
#[cfg(test)]
pub(super) fn builtins() -> Vec<Builtin> {
    [0, 1].into_iter().map(|c| builtin(&SOURCE, "copy_main", vec![("OUT_CONTIGUOUS", c)])).collect()
}
