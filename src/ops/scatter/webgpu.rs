//! Scatter on wgpu: scatter.wgsl, one invocation per line of updates (ScatterElements) or per
//! element of a slice (ScatterND), each walking its updates in order; the walks split across
//! launches where the device ends long loops early.

use super::{Form, Scatter};
use crate::base::layout::contiguous_strides;
use crate::hal::webgpu::{Bind, GpuBatch, GpuDevice, Specialisation, WgslSource};
use crate::hal::OpContext;
use crate::ops::common::split::{budget, pieces};
use crate::ops::common::webgpu::{
    check_binding, check_int64, grid_1d, specialise, u32_of, val, wgsl_params, COMMON, INDEX,
};
use crate::Result;

static SOURCE: WgslSource = WgslSource {
    name: "scatter.wgsl",
    text: crate::ops::common::wgsl_file!("scatter/scatter.wgsl"),
    preludes: &[COMMON, INDEX, ScatterWords::DECL],
};

wgsl_params! {
    /// scatter.wgsl's parameters.
    struct ScatterWords: C {
        /// Invocations: lines of updates (elements), or elements of a slice (nd).
        lines: u32,
        /// Steps of a line (elements; nd: unused).
        len: u32,
        /// Elements between steps of a line (elements), or of a slice (nd).
        inner: u32,
        /// The steps of each walk this launch takes.
        begin: u32,
        end: u32,
        /// The index kind (0 u32, 1 i32, 2 i64) and `ScatterReduction`'s code.
        kind: u32,
        reduction: u32,
        /// The rank of the lines' shape (elements), or the indices per tuple (nd).
        rank: u32,
        /// Offsets of the indices (in words) and of the updates.
        indices: u32,
        updates: u32,
        /// The data's extent and stride along the axis (elements).
        axis_len: u32,
        axis_stride: u32,
        /// The lines' shape (elements), or the extents the tuples index (nd).
        shape: [u32; 8],
        /// The output's offset, then the data's strides (of those axes, nd).
        view: [u32; 9],
    }
}

/// The updates met into `out`, in launches of whole steps within the loop budget.
pub(super) fn scatter(
    op: &Scatter<'_>,
    q: &GpuBatch,
    dev: &GpuDevice,
    _: &OpContext<'_>,
) -> Result<()> {
    check_int64(dev, "scatter", &[op.dtype])?;
    for o in [&op.out, &op.indices, &op.updates] {
        check_binding(dev, o)?;
    }
    let Walk {
        entry,
        words,
        steps,
        per_step,
        fixed,
    } = walk(op)?;
    let pipeline = dev.pipeline(Specialisation {
        prelude: vec![val(op.dtype)?],
        ..specialise(&SOURCE, entry, vec![])
    });
    let grid = grid_1d(dev, u64::from(words.lines.div_ceil(64)))?;
    let binds = [
        (1, Bind::Mem(op.out.buf)),
        (2, Bind::Mem(op.indices.buf)),
        (3, Bind::Mem(op.updates.buf)),
    ];
    let per =
        budget(dev.max_loop_iterations()).map_or(steps, |b| b.saturating_sub(fixed) / per_step);
    for [begin, end] in pieces(steps, per) {
        let params = ScatterWords {
            begin: begin as u32,
            end: end as u32,
            ..words
        };
        q.launch(dev, pipeline.clone(), params.words(), &binds, grid)?;
    }
    Ok(())
}

/// What each invocation of a scatter walks.
struct Walk {
    /// The entry point.
    entry: &'static str,
    /// The parameter words, for every step.
    words: ScatterWords,
    /// The steps of each invocation's walk.
    steps: usize,
    /// Loop iterations per step, and outside the steps, of an invocation.
    per_step: usize,
    fixed: usize,
}

/// The walk of `op`'s form.
fn walk(op: &Scatter<'_>) -> Result<Walk> {
    let mut w = ScatterWords {
        lines: 0,
        len: 0,
        inner: 0,
        begin: 0,
        end: 0,
        kind: op.kind,
        reduction: op.reduction.code(),
        rank: 0,
        indices: u32_of("offset", op.indices.layout.offset)?,
        updates: u32_of("offset", op.updates.layout.offset)?,
        axis_len: 0,
        axis_stride: 0,
        shape: [1; 8],
        view: [0; 9],
    };
    w.view[0] = u32_of("offset", op.out.layout.offset)?;
    match &op.form {
        Form::Elements { data, shape, axis } => {
            let ds = contiguous_strides(data);
            let (len, inner) = (shape[*axis], shape[axis + 1..].iter().product());
            for (k, (&n, &s)) in shape.iter().zip(&ds).enumerate() {
                w.shape[k] = if k == *axis { 1 } else { u32_of("extent", n)? };
                w.view[k + 1] = u32_of("stride", s)?;
            }
            let lines = shape.iter().product::<usize>() / len.max(1);
            (w.lines, w.len, w.inner) =
                (u32_of("lines", lines)?, len as u32, u32_of("inner", inner)?);
            w.rank = shape.len() as u32;
            w.axis_len = u32_of("extent", data[*axis])?;
            w.axis_stride = u32_of("stride", ds[*axis])?;
            // The line's offset (a loop over the rank), then one iteration a step.
            Ok(Walk {
                entry: "scatter_elements_main",
                words: w,
                steps: len,
                per_step: 1,
                fixed: shape.len() + 2,
            })
        }
        Form::Nd { data, depth, count } => {
            let ds = contiguous_strides(data);
            for c in 0..*depth {
                w.shape[c] = u32_of("extent", data[c])?;
                w.view[c + 1] = u32_of("stride", ds[c])?;
            }
            let slice = u32_of("slice", data[*depth..].iter().product())?;
            (w.lines, w.inner, w.rank) = (slice, slice, *depth as u32);
            u32_of("index tuples", *count)?;
            // Each tuple: one iteration and the loop over its indices.
            Ok(Walk {
                entry: "scatter_nd_main",
                words: w,
                steps: *count,
                per_step: depth + 2,
                fixed: 1,
            })
        }
    }
}

/// Every specialisation.
#[cfg(test)]
pub(super) fn specialisations() -> Vec<Specialisation> {
    use crate::ops::common::webgpu::{VAL_F32, VAL_I32, VAL_I64, VAL_U32};
    let mut all = Vec::new();
    for entry in ["scatter_elements_main", "scatter_nd_main"] {
        for prelude in [VAL_F32, VAL_I32, VAL_I64, VAL_U32] {
            all.push(Specialisation {
                prelude: vec![prelude],
                ..specialise(&SOURCE, entry, vec![])
            });
        }
    }
    all
}

/// scatter.wgsl run by the CPU's WGSL executor, with the parameter words this file writes,
/// gives the CPU kernel's results.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod on_the_cpu_executor {
    use super::*;
    use crate::ops::common::webgpu::{bound, run_on_cpu, VAL_F32};
    use crate::ops::scatter::ScatterReduction;
    use crate::{BackendChoice, BackendKind, Buffer, DType, Device, Tensor};

    #[test]
    fn scatter_matches_the_cpu_kernel() {
        let d = Device::open(BackendChoice::Backend(BackendKind::Cpu)).unwrap();
        let x: Vec<f32> = (0..3 * 11 * 4)
            .map(|i| ((i * 7919) % 997) as f32 / 50.0 - 9.0)
            .collect();
        let data = Tensor::from_slice(&d, &x, &[3, 11, 4]).unwrap();
        // Along axis 1, 13 indices a line into 11 (duplicates, negatives, out of range);
        // 7 tuples of 2 into [3, 11] (slices of 4).
        let idx: Vec<i32> = (0..2 * 13 * 3).map(|i| (i * 37 % 27) - 13).collect();
        let elements = Tensor::from_slice(&d, &idx, &[2, 13, 3]).unwrap();
        let tuples: Vec<i32> = (0..14).map(|i| (i * 5 % 9) - 4).collect();
        let nd = Tensor::from_slice(&d, &tuples, &[7, 2]).unwrap();
        let upd = |n: usize| -> Tensor {
            let v: Vec<f32> = (0..n).map(|i| (i % 13) as f32 / 4.0 - 1.5).collect();
            Tensor::from_slice(&d, &v, &[n]).unwrap()
        };
        let (ue, un) = (upd(78), upd(28));
        for r in ScatterReduction::ALL {
            let cases = [
                (
                    Form::Elements {
                        data: vec![3, 11, 4],
                        shape: vec![2, 13, 3],
                        axis: 1,
                    },
                    &elements,
                    &ue,
                ),
                (
                    Form::Nd {
                        data: vec![3, 11, 4],
                        depth: 2,
                        count: 7,
                    },
                    &nd,
                    &un,
                ),
            ];
            for (form, indices, updates) in cases {
                let want = match form {
                    Form::Elements { .. } => {
                        let u = updates.reshape(&[2, 13, 3]).unwrap();
                        data.scatter_elements(indices, &u, 1, r).unwrap()
                    }
                    Form::Nd { .. } => {
                        let u = updates.reshape(&[7, 4]).unwrap();
                        data.scatter_nd(indices, &u, r).unwrap()
                    }
                };
                let op = Scatter {
                    out: data.operand(),
                    indices: indices.operand(),
                    updates: updates.operand(),
                    dtype: DType::F32,
                    kind: 1,
                    reduction: r,
                    form,
                };
                let (entry, got) = executed(&d, &op, &x, indices, updates);
                assert_eq!(got, want.to_vec_blocking::<f32>().unwrap(), "{entry} {r:?}");
            }
        }
    }

    /// `op`'s entry point run on the executor over `x` with i32 `indices` and f32 `updates`
    /// (one launch of every step), and what it leaves in `x`.
    fn executed(
        d: &Device,
        op: &Scatter<'_>,
        x: &[f32],
        indices: &Tensor,
        updates: &Tensor,
    ) -> (&'static str, Vec<f32>) {
        let walk = walk(op).unwrap();
        let (entry, w) = (
            walk.entry,
            ScatterWords {
                end: walk.steps as u32,
                ..walk.words
            },
        );
        let source = Specialisation {
            prelude: vec![VAL_F32],
            ..specialise(&SOURCE, entry, vec![])
        }
        .full_source();
        let out = Buffer::from_slice(d, x).unwrap();
        let is = Buffer::from_slice(d, &indices.to_vec_blocking::<i32>().unwrap()).unwrap();
        let us = Buffer::from_slice(d, &updates.to_vec_blocking::<f32>().unwrap()).unwrap();
        let binds = [bound(&out), bound(&is), bound(&us)];
        run_on_cpu(d, &source, entry, w.words(), &binds, [1, 1, 1]).unwrap();
        (entry, out.read_blocking().unwrap())
    }
}
