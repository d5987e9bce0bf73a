//! Chains on the CPU: chunks of the output in parallel, each evaluated a block at a time
//! through every step into the plan's scratch slots (a block's values stay in cache), with
//! the elementwise family's own per-op loops, so a chain's values equal its ops run one by
//! one.

use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};

use super::plan::scalar_f32;
use super::{ChainRequest, Plan, Step};
use crate::base::layout::Layout;
use crate::base::par;
use crate::hal::cpu::{read_guard, write_guard};
use crate::ops::common::cpu::{offsets_from, run_from, CHUNK};
use crate::ops::common::math;
use crate::ops::elementwise::{with_binary, with_unary};
use crate::ops::{BinaryOp, UnaryOp};
use crate::{DType, Result};

/// Elements of one block: every slot of a block fits in the L1 or L2 cache.
const BLOCK: usize = 512;

/// An input's elements as stored.
enum Stored<'a> {
    F32(&'a [f32]),
    Half(&'a [u16], DType),
}

/// Elements `start..start + dst.len()` of a view of `src`, as f32.
fn load(src: &Stored<'_>, layout: &Layout, start: usize, dst: &mut [f32]) {
    match *src {
        Stored::F32(data) => {
            let (mut i, mut rest) = (start, dst);
            while let Some(run) = run_from(data, layout, i, rest.len()) {
                let (now, later) = rest.split_at_mut(run.len());
                now.copy_from_slice(run);
                (i, rest) = (i + run.len(), later);
                if rest.is_empty() {
                    return;
                }
            }
            for (o, at) in rest.iter_mut().zip(offsets_from(layout, i)) {
                *o = data[at];
            }
        }
        Stored::Half(data, dtype) => {
            if layout.is_contiguous() {
                let bits = &data[layout.offset + start..][..dst.len()];
                match dtype {
                    DType::F16 => bytemuck::cast_slice::<u16, f16>(bits).convert_to_f32_slice(dst),
                    _ => bytemuck::cast_slice::<u16, bf16>(bits).convert_to_f32_slice(dst),
                }
                return;
            }
            let widen = |h: u16| match dtype {
                DType::F16 => f16::from_bits(h).to_f32(),
                _ => bf16::from_bits(h).to_f32(),
            };
            for (o, at) in dst.iter_mut().zip(offsets_from(layout, start)) {
                *o = widen(data[at]);
            }
        }
    }
}

/// `values` rounded to `dtype` where that is 16-bit.
fn round(values: &mut [f32], dtype: DType) {
    match dtype {
        DType::F16 => values
            .iter_mut()
            .for_each(|v| *v = f16::from_f32(*v).to_f32()),
        DType::BF16 => values
            .iter_mut()
            .for_each(|v| *v = bf16::from_f32(*v).to_f32()),
        _ => {}
    }
}

/// `dst = op(src)`, the elementwise family's loop for `op`.
fn unary(op: UnaryOp, src: &[f32], dst: &mut [f32]) {
    with_unary!(op, |f| math::map(src, dst, f));
}

/// `dst = op(a, b)`, the elementwise family's function for `op`.
fn binary(op: BinaryOp, a: &[f32], b: &[f32], dst: &mut [f32]) {
    with_binary!(op, |g| {
        for ((o, &x), &y) in dst.iter_mut().zip(a).zip(b) {
            *o = g(x, y);
        }
    });
}

/// Every step of `plan` over one block of `len` elements: input `k` read from `direct[k]`
/// where that is given (its own elements, read in place), else from its slot; `slots` holds
/// `plan.slot_count()` buffers of at least `len` elements. The last step, where it is the
/// output, is written to `out` if given (f32 outputs), else to its slot.
fn steps(
    plan: &Plan,
    slots: &mut [Vec<f32>],
    direct: &[Option<&[f32]>],
    len: usize,
    mut out: Option<&mut [f32]>,
) {
    let inputs = plan.input_dtypes().len();
    let count = plan.steps().len();
    for (i, step) in plan.steps().iter().enumerate() {
        let n = inputs + i;
        // The result's slot holds none of the step's operands (see `Plan::assign_slots`).
        let mut dst = std::mem::take(&mut slots[plan.slot(n)]);
        let last = i + 1 == count && n == plan.output();
        let target = match out.as_deref_mut() {
            Some(o) if last => o,
            _ => &mut dst[..len],
        };
        let read = |v| {
            let v = plan.index(v);
            match direct.get(v) {
                Some(Some(run)) => *run,
                _ => &slots[plan.slot(v)][..len],
            }
        };
        match *step {
            Step::Unary(op, x) => unary(op, read(x), target),
            Step::Binary(op, a, b) => binary(op, read(a), read(b), target),
            Step::Scalar(value, dtype) => target.fill(scalar_f32(value, dtype)),
            Step::Cast(x, _) => target.copy_from_slice(read(x)),
        }
        if !matches!(step, Step::Scalar(..)) {
            round(target, plan.dtype(n));
        }
        slots[plan.slot(n)] = dst;
    }
}

/// Store `values` as elements of `dtype` in `dst` (bytes).
fn store(values: &[f32], dtype: DType, dst: &mut [u8]) {
    match dtype {
        DType::F16 => bytemuck::cast_slice_mut::<u8, f16>(dst).convert_from_f32_slice(values),
        DType::BF16 => bytemuck::cast_slice_mut::<u8, bf16>(dst).convert_from_f32_slice(values),
        _ => dst.copy_from_slice(bytemuck::cast_slice(values)),
    }
}

/// `out = chain(inputs)`: chunks of the output in parallel, a block at a time.
pub(super) fn chain(op: &ChainRequest<'_>) -> Result<()> {
    let plan = op.plan;
    let guards = op
        .inputs
        .iter()
        .map(|x| read_guard(x.buf))
        .collect::<Result<Vec<_>>>()?;
    let stored: Vec<Stored<'_>> = guards
        .iter()
        .zip(plan.input_dtypes())
        .map(|(g, &d)| match d {
            DType::F32 => Stored::F32(bytemuck::cast_slice(g)),
            _ => Stored::Half(bytemuck::cast_slice(g), d),
        })
        .collect();
    let mut os = write_guard(op.out.buf)?;
    let (size, out_dtype) = (plan.out_dtype().size(), plan.out_dtype());
    let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut os[..]);
    let out = &mut bytes[op.out.layout.offset * size..][..op.out.layout.numel() * size];
    let output = plan.slot(plan.output());
    // The layouts alone cross into the tasks (operands hold buffers, not `Sync` in wasm).
    let layouts: Vec<_> = op.inputs.iter().map(|x| x.layout).collect();
    // The last step writes an f32 output in place; its slot is then not the output's.
    let in_place = out_dtype == DType::F32 && plan.output() + 1 == plan.index_count();
    par::chunks_mut(out, CHUNK * size, |c, chunk| {
        let mut slots = vec![vec![0f32; BLOCK]; plan.slot_count()];
        let mut direct = vec![None; stored.len()];
        for (b, dst) in chunk.chunks_mut(BLOCK * size).enumerate() {
            let (start, len) = (c * CHUNK + b * BLOCK, dst.len() / size);
            for (k, (src, &layout)) in stored.iter().zip(&layouts).enumerate() {
                direct[k] = match *src {
                    Stored::F32(data) => run_from(data, layout, start, len),
                    Stored::Half(..) => None,
                }
                .filter(|run| run.len() == len);
                if direct[k].is_none() {
                    load(src, layout, start, &mut slots[plan.slot(k)][..len]);
                }
            }
            match bytemuck::try_cast_slice_mut::<u8, f32>(dst)
                .ok()
                .filter(|_| in_place)
            {
                Some(target) => steps(plan, &mut slots, &direct, len, Some(target)),
                None => {
                    steps(plan, &mut slots, &direct, len, None);
                    store(&slots[output][..len], out_dtype, dst);
                }
            }
        }
    });
    Ok(())
}
