//! Layer and RMS norms on wgpu: norm.wgsl as row passes.

use super::Norm;
#[cfg(test)]
use crate::hal::webgpu::Specialisation;
use crate::hal::webgpu::{Bind, GpuBatch, GpuDevice, WgslSource};
use crate::hal::OpContext;
#[cfg(test)]
use crate::ops::common::webgpu::specialise;
use crate::ops::common::webgpu::{check_binding, row_passes, u32_of, wgsl_params, RowPasses};
use crate::ops::Operand;
use crate::Result;

static SOURCE: WgslSource = WgslSource {
    name: "norm.wgsl",
    text: crate::ops::common::wgsl_file!("norm/norm.wgsl"),
    preludes: &[
        crate::ops::common::webgpu::COMMON,
        crate::ops::common::webgpu::ACTIVATION,
        NormWords::DECL,
    ],
};

wgsl_params! {
    /// norm.wgsl's parameters.
    struct NormWords: P {
        rows: u32,
        cols: u32,
        /// Offsets of the input, output, weight and bias (0 when absent).
        x: u32,
        out: u32,
        weight: u32,
        bias: u32,
        /// Rows per first index and the input's `Steps` (strided views read in place).
        nb: u32,
        x_a: u32,
        x_b: u32,
        x_col: u32,
        eps: f32,
        /// Columns per chunk and chunks per row.
        chunk_cols: u32,
        chunks: u32,
    }
}

/// Layer or RMS norm of each row, with optional scale, shift and activation.
pub(super) fn norm(op: &Norm<'_>, q: &GpuBatch, dev: &GpuDevice, cx: &OpContext<'_>) -> Result<()> {
    let (x, out, weight, bias) = (op.x, op.out, op.weight, op.bias);
    check_binding(dev, &x)?;
    check_binding(dev, &out)?;
    let offset = |o: &Option<Operand<'_>>| {
        o.as_ref()
            .map_or(Ok(0), |o| u32_of("offset", o.layout.offset))
    };
    let words = NormWords {
        rows: u32_of("rows", op.rows)?,
        cols: u32_of("columns", op.cols)?,
        x: u32_of("offset", x.layout.offset)?,
        out: u32_of("offset", out.layout.offset)?,
        weight: offset(&weight)?,
        bias: offset(&bias)?,
        nb: u32_of("rows", op.nb)?,
        x_a: u32_of("stride", op.x_steps.a)?,
        x_b: u32_of("stride", op.x_steps.b)?,
        x_col: u32_of("stride", op.x_steps.col)?,
        eps: op.eps,
        chunk_cols: 0,
        chunks: 0,
    };
    let params = |chunk_cols, chunks| {
        NormWords {
            chunk_cols,
            chunks,
            ..words
        }
        .words()
        .to_vec()
    };
    let constants = vec![
        ("KIND", op.kind.code()),
        ("HAS_WEIGHT", u32::from(weight.is_some())),
        ("HAS_BIAS", u32::from(bias.is_some())),
        ("ACT", op.act.map_or(0, |f| f.code())),
    ];
    let binds = [
        (1, Bind::Mem(x.buf)),
        (
            2,
            weight
                .as_ref()
                .map_or(Bind::SpareRead, |w| Bind::Mem(w.buf)),
        ),
        (
            3,
            bias.as_ref().map_or(Bind::SpareRead, |b| Bind::Mem(b.buf)),
        ),
        (4, Bind::Mem(out.buf)),
    ];
    let passes = RowPasses {
        source: &SOURCE,
        entry: "norm_main",
        serial_entry: Some("norm_serial_main"),
        constants,
        prelude: vec![],
        stats: (5, 3),
    };
    row_passes(q, dev, cx, passes, [op.rows, op.cols], params, &binds)
}

/// Every specialisation (the module is the same for every override, so one per entry).
#[cfg(test)]
pub(super) fn specialisations() -> Vec<Specialisation> {
    ["norm_main", "norm_serial_main"]
        .into_iter()
        .map(|e| specialise(&SOURCE, e, vec![]))
        .collect()
}

/// norm.wgsl (both entries, layer and RMS, with weight, bias and an activation) run by the
/// CPU's WGSL executor, with the parameter words this file writes, gives the CPU kernel's.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod on_the_cpu_executor {
    use super::*;
    use crate::ops::common::webgpu::{bound, run_on_cpu, with_overrides};
    use crate::ops::norm::{NormKind, NormParams};
    use crate::ops::UnaryOp;
    use crate::{BackendChoice, BackendKind, Buffer, Device, Tensor};

    #[test]
    fn norms_match_the_cpu_kernel() {
        let d = Device::open(BackendChoice::Backend(BackendKind::Cpu)).unwrap();
        let (rows, cols) = (6usize, 41usize);
        let x: Vec<f32> = (0..rows * cols)
            .map(|i| ((i * 7919) % 1999) as f32 / 300.0 - 3.0)
            .collect();
        let (w, b): (Vec<f32>, Vec<f32>) = (
            (0..cols).map(|i| 0.5 + i as f32 / 40.0).collect(),
            (0..cols).map(|i| i as f32 / 80.0 - 0.25).collect(),
        );
        let t = Tensor::from_slice(&d, &x, &[rows, cols]).unwrap();
        let (wt, bt) = (
            Tensor::from_slice(&d, &w, &[cols]).unwrap(),
            Tensor::from_slice(&d, &b, &[cols]).unwrap(),
        );
        let (r, c) = (rows as u32, cols as u32);
        let words = NormWords {
            rows: r,
            cols: c,
            x: 0,
            out: 0,
            weight: 0,
            bias: 0,
            nb: r,
            x_a: 0,
            x_b: c,
            x_col: 1,
            eps: 1e-5,
            chunk_cols: c,
            chunks: 1,
        };
        for kind in [NormKind::Layer, NormKind::Rms] {
            let params = NormParams {
                weight: Some(&wt),
                bias: Some(&bt),
                eps: 1e-5,
                act: Some(UnaryOp::Silu),
            };
            let want = crate::ops::norm::norm(&d.queue(), kind, &t, params)
                .unwrap()
                .to_vec_blocking::<f32>()
                .unwrap();
            let constants = [
                ("KIND", kind.code()),
                ("HAS_WEIGHT", 1),
                ("HAS_BIAS", 1),
                ("ACT", UnaryOp::Silu.code()),
            ];
            let source = with_overrides(
                specialise(&SOURCE, "norm_main", vec![]).full_source(),
                &constants,
            );
            for (entry, groups) in [("norm_main", r), ("norm_serial_main", r.div_ceil(64))] {
                let (xs, ws, bs) = (
                    Buffer::from_slice(&d, &x).unwrap(),
                    Buffer::from_slice(&d, &w).unwrap(),
                    Buffer::from_slice(&d, &b).unwrap(),
                );
                let (out, stats) = (
                    Buffer::from_slice(&d, &vec![-1.0f32; rows * cols]).unwrap(),
                    Buffer::<f32>::zeros(&d, 4).unwrap(),
                );
                let bindings = [
                    bound(&xs),
                    bound(&ws),
                    bound(&bs),
                    bound(&out),
                    bound(&stats),
                ];
                run_on_cpu(&d, &source, entry, words.words(), &bindings, [groups, 1, 1]).unwrap();
                for (i, (g, w)) in out.read_blocking().unwrap().iter().zip(&want).enumerate() {
                    assert!(
                        (g - w).abs() <= 1e-5 * (1.0 + w.abs()),
                        "{entry} {}: element {i} is {g} on the executor, {w} from the CPU kernel",
                        kind.name()
                    );
                }
            }
        }
    }
}
