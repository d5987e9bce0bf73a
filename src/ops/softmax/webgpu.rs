//! The row-statistics ops on wgpu: softmax.wgsl with the op's epilogue prepended.

#[cfg(test)]
use super::Epilogue;
use super::RowStats;
#[cfg(test)]
use crate::hal::webgpu::Specialisation;
use crate::hal::webgpu::{Bind, GpuBatch, GpuDevice, WgslSource};
use crate::hal::OpContext;
use crate::ops::common::webgpu::{check_binding, row_passes, u32_of, wgsl_params, RowPasses};
use crate::Result;

/// The row kernels, which call the epilogue's `row_factor` and `finish`.
static SOURCE: WgslSource = WgslSource {
    name: "softmax.wgsl",
    text: crate::ops::common::wgsl_file!("softmax/softmax.wgsl"),
    preludes: &[crate::ops::common::webgpu::COMMON, SoftmaxWords::DECL],
};

wgsl_params! {
    /// softmax.wgsl's parameters.
    struct SoftmaxWords: P {
        rows: u32,
        cols: u32,
        /// Offsets of the input and output.
        x: u32,
        out: u32,
        /// Rows per first index, and each operand's `Steps`.
        nb: u32,
        x_a: u32,
        x_b: u32,
        x_col: u32,
        out_a: u32,
        out_b: u32,
        out_col: u32,
        /// Columns per chunk and chunks per row.
        chunk_cols: u32,
        chunks: u32,
    }
}

/// The row passes of `op` (see [`row_passes`]).
pub(super) fn rows(
    op: &RowStats<'_>,
    q: &GpuBatch,
    dev: &GpuDevice,
    cx: &OpContext<'_>,
) -> Result<()> {
    let (x, out) = (op.x, op.out);
    check_binding(dev, &x)?;
    check_binding(dev, &out)?;
    let (xs, os) = (op.x_steps, op.out_steps);
    let words = SoftmaxWords {
        rows: u32_of("rows", op.rows)?,
        cols: u32_of("columns", op.cols)?,
        x: u32_of("offset", x.layout.offset)?,
        out: u32_of("offset", out.layout.offset)?,
        nb: u32_of("rows", op.nb)?,
        x_a: u32_of("stride", xs.a)?,
        x_b: u32_of("stride", xs.b)?,
        x_col: u32_of("stride", xs.col)?,
        out_a: u32_of("stride", os.a)?,
        out_b: u32_of("stride", os.b)?,
        out_col: u32_of("stride", os.col)?,
        chunk_cols: 0,
        chunks: 0,
    };
    let params = |chunk_cols, chunks| {
        SoftmaxWords {
            chunk_cols,
            chunks,
            ..words
        }
        .words()
        .to_vec()
    };
    let passes = RowPasses {
        source: &SOURCE,
        entry: "softmax_main",
        serial_entry: Some("softmax_serial_main"),
        constants: vec![],
        prelude: vec![op.epilogue.wgsl],
        stats: (3, 2),
    };
    row_passes(
        q,
        dev,
        cx,
        passes,
        [op.rows, op.cols],
        params,
        &[(1, Bind::Mem(x.buf)), (2, Bind::Mem(out.buf))],
    )
}

/// Softmax's specialisations.
#[cfg(test)]
pub(super) fn specialisations() -> Vec<Specialisation> {
    with_epilogue(&super::SOFTMAX)
}

/// Every specialisation with `epilogue`.
#[cfg(test)]
pub(super) fn with_epilogue(epilogue: &'static Epilogue) -> Vec<Specialisation> {
    let specialise = |entry, pass| Specialisation {
        source: &SOURCE,
        entry,
        constants: vec![("PASS", pass)],
        prelude: vec![epilogue.wgsl],
        generated: None,
    };
    ["softmax_main", "softmax_serial_main"]
        .into_iter()
        .flat_map(|e| (0..3).map(move |pass| specialise(e, pass)))
        .collect()
}

/// softmax.wgsl (both entries) run by the CPU's WGSL executor, with the parameter words this
/// file writes for contiguous rows, gives the CPU kernel's softmax.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod on_the_cpu_executor {
    use super::*;
    use crate::ops::common::webgpu::{bound, run_on_cpu};
    use crate::{BackendChoice, BackendKind, Buffer, Device, Tensor};

    #[test]
    fn softmax_matches_the_cpu_kernel() {
        let d = Device::open(BackendChoice::Backend(BackendKind::Cpu)).unwrap();
        let (rows, cols) = (5usize, 37usize);
        let x: Vec<f32> = (0..rows * cols)
            .map(|i| ((i * 7919) % 1999) as f32 / 100.0 - 10.0)
            .collect();
        let want = Tensor::from_slice(&d, &x, &[rows, cols])
            .unwrap()
            .softmax()
            .unwrap()
            .to_vec_blocking::<f32>()
            .unwrap();
        let (r, c) = (rows as u32, cols as u32);
        let words = SoftmaxWords {
            rows: r,
            cols: c,
            x: 0,
            out: 0,
            nb: r,
            x_a: 0,
            x_b: c,
            x_col: 1,
            out_a: 0,
            out_b: c,
            out_col: 1,
            chunk_cols: c,
            chunks: 1,
        };
        let source = Specialisation {
            source: &SOURCE,
            entry: "softmax_main",
            constants: vec![],
            prelude: vec![super::super::SOFTMAX.wgsl],
            generated: None,
        }
        .full_source();
        for (entry, groups) in [("softmax_main", r), ("softmax_serial_main", r.div_ceil(64))] {
            let (xs, out, stats) = (
                Buffer::from_slice(&d, &x).unwrap(),
                Buffer::from_slice(&d, &vec![-1.0f32; rows * cols]).unwrap(),
                Buffer::<f32>::zeros(&d, 4).unwrap(),
            );
            run_on_cpu(
                &d,
                &source,
                entry,
                words.words(),
                &[bound(&xs), bound(&out), bound(&stats)],
                [groups, 1, 1],
            )
            .unwrap();
            for (i, (g, w)) in out.read_blocking().unwrap().iter().zip(&want).enumerate() {
                assert!(
                    (g - w).abs() <= 2e-6 * (1.0 + w.abs()),
                    "{entry}: element {i} is {g} on the executor, {w} from the CPU kernel"
                );
            }
        }
    }
}
