//! Casts on wgpu: cast.wgsl, and cast64.wgsl for casts to and from i64 (as pairs of words,
//! so they run without `shader-int64`).

use super::Cast;
#[cfg(test)]
use crate::hal::webgpu::Specialisation;
use crate::hal::webgpu::{Bind, GpuBatch, GpuDevice, WgslSource};
use crate::hal::OpContext;
use crate::ops::common::webgpu::{
    check_binding, grid_1d, specialise, strided_words, StridedWords, COMMON,
};
use crate::{DType, Error, Result};

const TEXT: &str = crate::ops::common::wgsl_file!("cast/cast.wgsl");
static SOURCE: WgslSource = WgslSource {
    name: "cast.wgsl",
    text: TEXT,
    preludes: &[COMMON, StridedWords::DECL],
};
/// Casts to and from i64: cast.wgsl with the entry point over pairs of words after it.
static CAST64: WgslSource = WgslSource {
    name: "cast64.wgsl",
    text: crate::ops::common::wgsl_file!("cast/cast64.wgsl"),
    preludes: &[COMMON, StridedWords::DECL, TEXT],
};

/// `out = x` converted from `from` to `to`.
pub(super) fn cast(op: &Cast<'_>, q: &GpuBatch, dev: &GpuDevice, _: &OpContext<'_>) -> Result<()> {
    let (x, out) = (op.x, op.out);
    check_binding(dev, &x)?;
    check_binding(dev, &out)?;
    if out.layout.offset % (4 / op.to.size()).max(1) != 0 {
        return Err(Error::Internal(
            "a narrow cast output starts inside a word".into(),
        ));
    }
    let constants = vec![("FROM", op.from.code()), ("TO", op.to.code())];
    let pipeline = match op.from == DType::I64 || op.to == DType::I64 {
        true => dev.pipeline(specialise(&CAST64, "cast64_main", constants)),
        false => dev.pipeline(specialise(&SOURCE, "cast_main", constants)),
    };
    // A 16- or 8-bit output is written a word (two or four elements) per invocation.
    let grid = grid_1d(
        dev,
        out.layout
            .numel()
            .div_ceil((4 / op.to.size()).max(1))
            .div_ceil(256) as u64,
    )?;
    // Auto layouts hold only the bindings an entry point uses.
    let binds = [(1, Bind::Mem(x.buf)), (4, Bind::Mem(out.buf))];
    q.launch(
        dev,
        pipeline,
        strided_words(&out, &[&x])?.words(),
        &binds,
        grid,
    )
}

/// Every specialisation.
#[cfg(test)]
pub(super) fn specialisations() -> Vec<Specialisation> {
    let mut all = Vec::new();
    let codes = [0, 1, 2, 3, 4, 6, 7, 8];
    for from in codes {
        for to in codes {
            all.push(specialise(
                &SOURCE,
                "cast_main",
                vec![("FROM", from), ("TO", to)],
            ));
        }
        all.push(specialise(
            &CAST64,
            "cast64_main",
            vec![("FROM", from), ("TO", 5)],
        ));
        all.push(specialise(
            &CAST64,
            "cast64_main",
            vec![("FROM", 5), ("TO", from)],
        ));
    }
    all
}

/// cast.wgsl run by the CPU's WGSL executor, with the parameter words this file writes,
/// gives the CPU kernels' results.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod on_the_cpu_executor {
    use super::*;
    use crate::ops::common::webgpu::{run_words, stored_words, with_overrides};
    use crate::{BackendChoice, BackendKind, DType, Device, Tensor};

    #[test]
    fn casts_match_the_cpu_kernels() {
        let d = Device::open(BackendChoice::Backend(BackendKind::Cpu)).unwrap();
        let values: Vec<f32> = (0..35).map(|i| (i as f32 - 17.0) * 3.7).collect();
        let base = Tensor::from_slice(&d, &values, &[7, 5]).unwrap();
        let all = [
            DType::F32,
            DType::I32,
            DType::U32,
            DType::F16,
            DType::BF16,
            DType::Bool,
            DType::U8,
            DType::I8,
        ];
        for from in all {
            let x = base.cast(from).unwrap();
            for to in all {
                let out = Tensor::zeros(&d, &[7, 5], to).unwrap();
                let params = strided_words(&out.operand(), &[&x.operand()]).unwrap();
                let source = with_overrides(
                    specialise(&SOURCE, "cast_main", vec![]).full_source(),
                    &[("FROM", from.code()), ("TO", to.code())],
                );
                let want = stored_words(&x.cast(to).unwrap());
                let per = 4 / to.size();
                let groups = (35usize.div_ceil(per) as u32).div_ceil(256);
                let got = run_words(
                    &d,
                    &source,
                    "cast_main",
                    params.words(),
                    &[stored_words(&x)],
                    want.len(),
                    groups,
                );
                // The last word of a narrow output: only its elements' bits count.
                let mask = |i: usize| {
                    if 35 % per != 0 && i + 1 == want.len() {
                        u32::MAX >> (32 - 35 % per * 8 * to.size())
                    } else {
                        u32::MAX
                    }
                };
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert_eq!(g & mask(i), w & mask(i), "cast {from} -> {to}: word {i}");
                }
            }
        }
    }
}
