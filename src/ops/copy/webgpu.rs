//! Copies on wgpu: copy.wgsl, one invocation per element.

use super::ViewCopy;
#[cfg(test)]
use crate::hal::webgpu::Specialisation;
use crate::hal::webgpu::{Bind, GpuBatch, GpuDevice, WgslSource};
use crate::hal::OpContext;
use crate::ops::common::webgpu::{
    check_binding, grid_1d, specialise, strided_words, StridedWords, COMMON,
};
use crate::Result;

static SOURCE: WgslSource = WgslSource {
    name: "copy.wgsl",
    text: crate::ops::common::wgsl_file!("copy/copy.wgsl"),
    preludes: &[COMMON, StridedWords::DECL],
};

pub(super) fn copy(
    op: &ViewCopy<'_>,
    q: &GpuBatch,
    dev: &GpuDevice,
    _: &OpContext<'_>,
) -> Result<()> {
    let (x, out) = (op.x, op.out);
    check_binding(dev, &x)?;
    check_binding(dev, &out)?;
    let contiguous = out.layout.is_contiguous();
    let pipeline = dev.pipeline(specialise(
        &SOURCE,
        "copy_main",
        vec![("OUT_CONTIGUOUS", u32::from(contiguous))],
    ));
    let grid = grid_1d(dev, out.layout.numel().div_ceil(256) as u64)?;
    // The destination's view is the second.
    let params = strided_words(&out, &[&x, &out])?;
    q.launch(
        dev,
        pipeline,
        params.words(),
        &[(1, Bind::Mem(x.buf)), (2, Bind::Mem(out.buf))],
        grid,
    )
}

/// Every specialisation.
#[cfg(test)]
pub(super) fn specialisations() -> Vec<Specialisation> {
    [0, 1]
        .into_iter()
        .map(|c| specialise(&SOURCE, "copy_main", vec![("OUT_CONTIGUOUS", c)]))
        .collect()
}

/// copy.wgsl run by the CPU's WGSL executor, with the parameter words this file writes, copies
/// as the CPU kernel does: a strided view into a contiguous output, and into a strided one.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod on_the_cpu_executor {
    use super::*;
    use crate::ops::common::webgpu::{bound, run_on_cpu, with_overrides};
    use crate::{BackendChoice, BackendKind, Buffer, Device, Tensor};

    #[test]
    fn copies_match_the_cpu_kernel() {
        let d = Device::open(BackendChoice::Backend(BackendKind::Cpu)).unwrap();
        let x: Vec<u32> = (0..35).map(|i| i * 3 + 1).collect();
        let t = Tensor::from_slice(&d, &x, &[5, 7]).unwrap();
        // Into a contiguous output: the transpose.
        let (view, dense) = (
            t.permute(&[1, 0]).unwrap(),
            Tensor::zeros(&d, &[7, 5], crate::DType::U32).unwrap(),
        );
        // Into a strided output: a contiguous [7, 5] written through the transpose of a [5, 7].
        let (source_t, target) = (
            view.contiguous().unwrap(),
            Tensor::zeros(&d, &[5, 7], crate::DType::U32).unwrap(),
        );
        let target_view = target.permute(&[1, 0]).unwrap();
        let cases = [
            (
                &view,
                &dense,
                1,
                view.contiguous().unwrap().to_vec_blocking::<u32>().unwrap(),
            ),
            (&source_t, &target_view, 0, x.clone()),
        ];
        for (from, to, contiguous, want) in cases {
            let params = strided_words(&to.operand(), &[&from.operand(), &to.operand()]).unwrap();
            let source = with_overrides(
                specialise(&SOURCE, "copy_main", vec![]).full_source(),
                &[("OUT_CONTIGUOUS", contiguous)],
            );
            let src = Buffer::from_slice(
                &d,
                &from.contiguous().unwrap().to_vec_blocking::<u32>().unwrap(),
            )
            .unwrap();
            let src = if contiguous == 1 {
                Buffer::from_slice(&d, &x).unwrap()
            } else {
                src
            };
            let dst = Buffer::from_slice(&d, &[0u32; 35]).unwrap();
            run_on_cpu(
                &d,
                &source,
                "copy_main",
                params.words(),
                &[bound(&src), bound(&dst)],
                [1, 1, 1],
            )
            .unwrap();
            assert_eq!(
                dst.read_blocking().unwrap(),
                want,
                "copy with OUT_CONTIGUOUS {contiguous}"
            );
        }
    }
}
