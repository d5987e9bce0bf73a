//! TopK on wgpu: topk.wgsl, one invocation per element, its row counted in the ranges of
//! [`split::topk_range`] (one launch each) where the device ends long loops early.

use super::Topk;
use crate::hal::webgpu::{Bind, GpuBatch, GpuDevice, Specialisation, WgslSource};
use crate::hal::OpContext;
use crate::ops::common::split;
use crate::ops::common::webgpu::{
    check_binding, check_int64, grid_1d, specialise, split_temp, u32_of, val, wgsl_params, COMMON,
};
use crate::Result;

static SOURCE: WgslSource = WgslSource {
    name: "topk.wgsl",
    text: crate::ops::common::wgsl_file!("topk/topk.wgsl"),
    preludes: &[COMMON, TopkWords::DECL],
};

wgsl_params! {
    /// topk.wgsl's parameters.
    struct TopkWords: P {
        /// The input as [outer, len, inner], and how many of each row are kept.
        outer: u32,
        len: u32,
        inner: u32,
        k: u32,
        /// Offsets of the input and of the two outputs.
        x: u32,
        values: u32,
        indices: u32,
        /// The row positions this launch counts over, and its flags (see topk.wgsl).
        range: [u32; 2],
        flags: u32,
    }
}

/// The `k` first elements of each row by rank (`topk_main`), in one launch per row range.
pub(super) fn topk(op: &Topk<'_>, q: &GpuBatch, dev: &GpuDevice, cx: &OpContext<'_>) -> Result<()> {
    check_int64(dev, "topk", &[op.dtype])?;
    for o in [&op.x, &op.values, &op.indices] {
        check_binding(dev, o)?;
    }
    let n = op.outer * op.len * op.inner;
    let mut params = TopkWords {
        outer: u32_of("outer", op.outer)?,
        len: u32_of("length", op.len)?,
        inner: u32_of("inner", op.inner)?,
        k: u32_of("k", op.k)?,
        x: u32_of("offset", op.x.layout.offset)?,
        values: u32_of("offset", op.values.layout.offset)?,
        indices: u32_of("offset", op.indices.layout.offset)?,
        range: [0, 0],
        flags: 0,
    };
    u32_of("elements", n)?;
    let ranges = split::topk_range(dev.max_loop_iterations(), op.len);
    let ranks = if ranges.len() > 1 {
        Some(split_temp(dev, cx, n)?)
    } else {
        None
    };
    let pipeline = dev.pipeline(Specialisation {
        prelude: vec![val(op.dtype)?],
        ..specialise(
            &SOURCE,
            "topk_main",
            vec![("LARGEST", u32::from(op.largest))],
        )
    });
    let binds = [
        (1, Bind::Mem(op.x.buf)),
        (2, Bind::Mem(op.values.buf)),
        (3, Bind::Mem(op.indices.buf)),
        (4, ranks.as_ref().map_or(Bind::SpareWrite, Bind::Mem)),
    ];
    let grid = grid_1d(dev, n.div_ceil(64) as u64)?;
    for (i, range) in ranges.iter().enumerate() {
        params.range = [u32_of("position", range[0])?, u32_of("position", range[1])?];
        params.flags = split::flags(i, ranges.len());
        q.launch(dev, pipeline.clone(), params.words(), &binds, grid)?;
    }
    Ok(())
}

/// Every specialisation: each value type, largest and smallest first.
#[cfg(test)]
pub(super) fn specialisations() -> Vec<Specialisation> {
    use crate::ops::common::webgpu::{VAL_F32, VAL_I32, VAL_I64, VAL_U32};
    let mut all = Vec::new();
    for prelude in [VAL_F32, VAL_I32, VAL_U32, VAL_I64] {
        all.extend((0..2).map(|largest| Specialisation {
            prelude: vec![prelude],
            ..specialise(&SOURCE, "topk_main", vec![("LARGEST", largest)])
        }));
    }
    all
}

/// topk.wgsl run by the CPU's WGSL executor, with the parameter words this file writes, gives
/// the CPU kernel's values and indices: whole rows in one launch, and rows counted in three
/// pieces.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod on_the_cpu_executor {
    use super::*;
    use crate::ops::common::webgpu::{bound, run_on_cpu, with_overrides, VAL_F32, VAL_I32};
    use crate::{BackendChoice, BackendKind, Buffer, Device, Tensor};

    /// topk.wgsl over axis 1 of `x` as `[3, 11, 4]` keeping `k`, in the pieces `ranges`.
    fn run<T: crate::Element>(
        d: &Device,
        val: &'static str,
        x: &[T],
        k: usize,
        largest: bool,
        ranges: &[[u32; 2]],
    ) -> (Vec<u32>, Vec<u32>) {
        let source = with_overrides(
            Specialisation {
                prelude: vec![val],
                ..specialise(&SOURCE, "topk_main", vec![])
            }
            .full_source(),
            &[("LARGEST", u32::from(largest))],
        );
        let n = 3 * k * 4;
        let (xs, values, indices, ranks) = (
            Buffer::from_slice(d, x).unwrap(),
            Buffer::from_slice(d, &vec![0xdead_beefu32; n]).unwrap(),
            Buffer::from_slice(d, &vec![0xdead_beefu32; n]).unwrap(),
            Buffer::from_slice(d, &vec![0xdead_beefu32; x.len()]).unwrap(),
        );
        for (i, &range) in ranges.iter().enumerate() {
            let words = TopkWords {
                outer: 3,
                len: 11,
                inner: 4,
                k: k as u32,
                x: 0,
                values: 0,
                indices: 0,
                range,
                flags: split::flags(i, ranges.len()),
            };
            let bindings = [bound(&xs), bound(&values), bound(&indices), bound(&ranks)];
            let groups = [x.len().div_ceil(64) as u32, 1, 1];
            run_on_cpu(d, &source, "topk_main", words.words(), &bindings, groups).unwrap();
        }
        (
            values.read_blocking().unwrap(),
            indices.read_blocking().unwrap(),
        )
    }

    /// The CPU kernel's values (as words) and indices of `t`'s top `k` along axis 1.
    fn cpu(t: &Tensor, k: usize, largest: bool) -> (Vec<u32>, Vec<u32>) {
        let (v, i) = t.topk(k, 1, largest).unwrap();
        let words = match v.dtype() {
            crate::DType::F32 => v
                .to_vec_blocking::<f32>()
                .unwrap()
                .iter()
                .map(|x| x.to_bits())
                .collect(),
            _ => v
                .to_vec_blocking::<i32>()
                .unwrap()
                .iter()
                .map(|&x| x as u32)
                .collect(),
        };
        (words, i.to_vec_blocking().unwrap())
    }

    #[test]
    fn topk_matches_the_cpu_kernel() {
        let d = Device::open(BackendChoice::Backend(BackendKind::Cpu)).unwrap();
        // Few distinct values (ties), and NaN among the floats.
        let ints: Vec<i32> = (0..3 * 11 * 4).map(|i: i32| (i * 7919) % 13 - 6).collect();
        let mut floats: Vec<f32> = ints.iter().map(|&v| v as f32 / 4.0).collect();
        floats[5] = f32::NAN;
        floats[50] = f32::NAN;
        let whole: &[[u32; 2]] = &[[0, 11]];
        let pieces: &[[u32; 2]] = &[[0, 4], [4, 5], [5, 11]];
        for (k, largest, ranges) in [(3, true, whole), (11, false, whole), (5, true, pieces)] {
            let t = Tensor::from_slice(&d, &floats, &[3, 11, 4]).unwrap();
            assert_eq!(
                run(&d, VAL_F32, &floats, k, largest, ranges),
                cpu(&t, k, largest),
                "f32, k {k}, largest {largest}, {} launches",
                ranges.len()
            );
            let t = Tensor::from_slice(&d, &ints, &[3, 11, 4]).unwrap();
            assert_eq!(
                run(&d, VAL_I32, &ints, k, largest, ranges),
                cpu(&t, k, largest),
                "i32, k {k}, largest {largest}, {} launches",
                ranges.len()
            );
        }
    }
}
