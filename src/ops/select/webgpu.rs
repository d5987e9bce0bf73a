//! `where` on wgpu: select.wgsl, one invocation per element.

use super::Where;
#[cfg(test)]
use crate::hal::webgpu::Specialisation;
use crate::hal::webgpu::{Bind, GpuBatch, GpuDevice, WgslSource};
use crate::hal::OpContext;
use crate::ops::common::webgpu::{
    check_binding, grid_1d, specialise, strided_words, StridedWords, COMMON,
};
use crate::Result;

static SOURCE: WgslSource = WgslSource {
    name: "select.wgsl",
    text: crate::ops::common::wgsl_file!("select/select.wgsl"),
    preludes: &[COMMON, StridedWords::DECL],
};

/// `out = cond ? a : b`.
pub(super) fn where_(
    op: &Where<'_>,
    q: &GpuBatch,
    dev: &GpuDevice,
    _: &OpContext<'_>,
) -> Result<()> {
    let (cond, a, b, out) = (op.cond, op.a, op.b, op.out);
    for o in [&cond, &a, &b, &out] {
        check_binding(dev, o)?;
    }
    let constants = vec![("COND_F32", u32::from(op.cond_dtype == crate::DType::F32))];
    let pipeline = dev.pipeline(specialise(&SOURCE, "where_main", constants));
    let grid = grid_1d(dev, out.layout.numel().div_ceil(256) as u64)?;
    let binds = [
        (1, Bind::Mem(cond.buf)),
        (2, Bind::Mem(a.buf)),
        (3, Bind::Mem(b.buf)),
        (4, Bind::Mem(out.buf)),
    ];
    q.launch(
        dev,
        pipeline,
        strided_words(&out, &[&cond, &a, &b])?.words(),
        &binds,
        grid,
    )
}

/// Every specialisation.
#[cfg(test)]
pub(super) fn specialisations() -> Vec<Specialisation> {
    [0, 1]
        .into_iter()
        .map(|on| specialise(&SOURCE, "where_main", vec![("COND_F32", on)]))
        .collect()
}

/// select.wgsl run by the CPU's WGSL executor, with the parameter words this file writes,
/// gives the CPU kernel's result.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod on_the_cpu_executor {
    use super::*;
    use crate::ops::common::webgpu::{run_words, stored_words};
    use crate::{BackendChoice, BackendKind, DType, Device, Tensor};

    #[test]
    fn where_matches_the_cpu_kernel() {
        let d = Device::open(BackendChoice::Backend(BackendKind::Cpu)).unwrap();
        let x: Vec<f32> = (0..3 * 11 * 4)
            .map(|i| ((i * 7919) % 997) as f32 / 50.0 - 9.0)
            .collect();
        let t = Tensor::from_slice(&d, &x, &[3, 11, 4]).unwrap();
        // where: a u32 condition broadcast over rows, f32 operands.
        let cond = Tensor::from_slice(&d, &[1u32, 0, 0, 1], &[4]).unwrap();
        let other = Tensor::from_slice(&d, &[-1.0f32], &[1]).unwrap();
        let out = Tensor::zeros(&d, &[3, 11, 4], DType::F32).unwrap();
        let views = [
            cond.broadcast_to(&[3, 11, 4]).unwrap(),
            t.clone(),
            other.broadcast_to(&[3, 11, 4]).unwrap(),
        ];
        let params = strided_words(
            &out.operand(),
            &views
                .iter()
                .map(|v| v.operand())
                .collect::<Vec<_>>()
                .iter()
                .collect::<Vec<_>>(),
        )
        .unwrap();
        let source = specialise(&SOURCE, "where_main", vec![]).full_source();
        let got = run_words(
            &d,
            &source,
            "where_main",
            params.words(),
            &[stored_words(&cond), stored_words(&t), stored_words(&other)],
            132,
            1,
        );
        assert_eq!(
            got,
            stored_words(&cond.select(&t, &other).unwrap()),
            "where"
        );
    }
}
