//! Cumulative sums on wgpu: scan.wgsl, as row passes.

use super::Cumsum;
#[cfg(test)]
use crate::hal::webgpu::Specialisation;
use crate::hal::webgpu::{Bind, GpuBatch, GpuDevice, WgslSource};
use crate::hal::OpContext;
use crate::ops::common::webgpu::{
    check_binding, check_int64, row_passes, u32_of, val, wgsl_params, RowPasses, COMMON,
};
#[cfg(test)]
use crate::ops::common::webgpu::{specialise, VAL_F32, VAL_I32, VAL_I64, VAL_U32};
use crate::Result;

static SOURCE: WgslSource = WgslSource {
    name: "scan.wgsl",
    text: crate::ops::common::wgsl_file!("scan/scan.wgsl"),
    preludes: &[COMMON, ScanWords::DECL],
};

wgsl_params! {
    /// scan.wgsl's parameters.
    struct ScanWords: P {
        /// The input as [outer, len, inner].
        outer: u32,
        len: u32,
        inner: u32,
        /// Offsets of the input and output.
        x: u32,
        out: u32,
        /// Elements per chunk and chunks per line.
        chunk_len: u32,
        chunks: u32,
    }
}

/// Cumulative sums along each (outer, inner) line, as row passes.
pub(super) fn cumsum(
    op: &Cumsum<'_>,
    q: &GpuBatch,
    dev: &GpuDevice,
    cx: &OpContext<'_>,
) -> Result<()> {
    let (x, out) = (op.x, op.out);
    check_int64(dev, "cumsum", &[op.dtype])?;
    check_binding(dev, &x)?;
    check_binding(dev, &out)?;
    let words = ScanWords {
        outer: u32_of("outer", op.outer)?,
        len: u32_of("length", op.len)?,
        inner: u32_of("inner", op.inner)?,
        x: u32_of("offset", x.layout.offset)?,
        out: u32_of("offset", out.layout.offset)?,
        chunk_len: 0,
        chunks: 0,
    };
    let params = |chunk_len, chunks| {
        ScanWords {
            chunk_len,
            chunks,
            ..words
        }
        .words()
        .to_vec()
    };
    let passes = RowPasses {
        source: &SOURCE,
        entry: "cumsum_main",
        serial_entry: None,
        constants: vec![],
        prelude: vec![val(op.dtype)?],
        stats: (3, 1),
    };
    row_passes(
        q,
        dev,
        cx,
        passes,
        [op.outer * op.inner, op.len],
        params,
        &[(1, Bind::Mem(x.buf)), (2, Bind::Mem(out.buf))],
    )
}

/// Every specialisation.
#[cfg(test)]
pub(super) fn specialisations() -> Vec<Specialisation> {
    let mut all = Vec::new();
    for prelude in [VAL_F32, VAL_I32, VAL_I64, VAL_U32] {
        all.extend((0..3).map(|pass| Specialisation {
            prelude: vec![prelude],
            ..specialise(&SOURCE, "cumsum_main", vec![("PASS", pass)])
        }));
    }
    all
}

/// scan.wgsl run by the CPU's WGSL executor, with the parameter words this file writes, gives
/// the CPU kernel's cumulative sums.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod on_the_cpu_executor {
    use super::*;
    use crate::ops::common::webgpu::{bound, run_on_cpu};
    use crate::{BackendChoice, BackendKind, Buffer, Device, Tensor};

    /// scan.wgsl's cumsum along axis 1 of `x` as `[3, 11, 4]`, whole lines, on the executor.
    fn scan<T: crate::Element>(d: &Device, val: &'static str, x: &[T]) -> Vec<T> {
        let params = ScanWords {
            outer: 3,
            len: 11,
            inner: 4,
            x: 0,
            out: 0,
            chunk_len: 11,
            chunks: 1,
        };
        let source = crate::hal::webgpu::Specialisation {
            prelude: vec![val],
            ..specialise(&SOURCE, "cumsum_main", vec![])
        }
        .full_source();
        let (xs, totals) = (
            Buffer::from_slice(d, x).unwrap(),
            Buffer::from_slice(d, &x[..4]).unwrap(),
        );
        let out = Buffer::from_slice(
            d,
            bytemuck::cast_slice::<u32, T>(&vec![0x7fa5_a5a5u32; x.len()]),
        )
        .unwrap();
        run_on_cpu(
            d,
            &source,
            "cumsum_main",
            params.words(),
            &[bound(&xs), bound(&out), bound(&totals)],
            [12, 1, 1],
        )
        .unwrap();
        out.read_blocking().unwrap()
    }

    #[test]
    fn cumsum_matches_the_cpu_kernel() {
        let d = Device::open(BackendChoice::Backend(BackendKind::Cpu)).unwrap();
        let x: Vec<f32> = (0..3 * 11 * 4)
            .map(|i| ((i * 7919) % 997) as f32 / 50.0 - 9.0)
            .collect();
        let t = Tensor::from_slice(&d, &x, &[3, 11, 4]).unwrap();
        // cumsum along axis 1 (f32 and i32), whole lines.
        let ints: Vec<i32> = x.iter().map(|&v| (v * 1e6) as i32).collect();
        let f32s = scan(&d, crate::ops::common::webgpu::VAL_F32, &x);
        let want = t.cumsum(1).unwrap().to_vec_blocking::<f32>().unwrap();
        for (i, (g, w)) in f32s.iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-5 * (1.0 + w.abs()),
                "f32 cumsum: element {i} is {g}, the CPU's {w}"
            );
        }
        let i32s = scan(&d, crate::ops::common::webgpu::VAL_I32, &ints);
        assert_eq!(
            i32s,
            Tensor::from_slice(&d, &ints, &[3, 11, 4])
                .unwrap()
                .cumsum(1)
                .unwrap()
                .to_vec_blocking::<i32>()
                .unwrap(),
            "i32 cumsum"
        );
    }
}
