//! Fused attention on wgpu: attention.wgsl (or its serial entry point on software adapters),
//! launched over key ranges where the device ends long loops early.

use super::Attention;
use crate::ops::common::webgpu::{builtin, check_binding, grid_1d, software_kernels, split_temp, u32_of};
#[cfg(test)]
use crate::hal::webgpu::Builtin;
use crate::ops::common::split;
use crate::hal::webgpu::{Bind, GpuDevice, GpuQueue, WgslSource};
use crate::hal::OpContext;
use crate::Result;

static SOURCE: WgslSource = WgslSource { name: "attention.wgsl", text: include_str!("attention.wgsl"), preludes: &[crate::ops::common::webgpu::COMMON] };

/// Fused attention (attention_main, or attention_serial_main on software adapters).
pub(super) fn attention(op: &Attention<'_>, q: &GpuQueue, dev: &GpuDevice, cx: &OpContext<'_>) -> Result<()> {
    let (query, key, value, mask, out) = (op.q, op.k, op.v, op.mask, op.out);
    let [b, h, lq, lk, d, dv] = op.dims;
    for o in [&query, &key, &value, &out] {
        check_binding(dev, o)?;
    }
    let mut params = vec![u32_of("batch x heads", b * h)?, u32_of("heads", h)?, u32_of("queries", lq)?, u32_of("keys", lk)?, d as u32, dv as u32, op.scale.to_bits(), u32::from(op.causal)];
    for o in [Some(&query), Some(&key), Some(&value), mask.as_ref()] {
        match o {
            Some(o) => {
                check_binding(dev, o)?;
                params.push(u32_of("offset", o.layout.offset)?);
                for &s in &o.layout.strides {
                    params.push(u32_of("stride", s)?);
                }
            }
            None => params.extend([0; 5]),
        }
    }
    params.push(u32_of("offset", out.layout.offset)?);
    let serial = software_kernels(dev, cx);
    let entry = if serial { "attention_serial_main" } else { "attention_main" };
    let pipeline = dev.pipeline(builtin(&SOURCE, entry, vec![("HAS_MASK", u32::from(mask.is_some()))]));
    // The mask binding is in the layout even when HAS_MASK is off.
    let mask_bind = mask.as_ref().map_or(Bind::SpareRead, |m| Bind::Mem(m.buf));
    let binds = [(1, Bind::Mem(query.buf)), (2, Bind::Mem(key.buf)), (3, Bind::Mem(value.buf)), (4, mask_bind), (5, Bind::Mem(out.buf))];
    launch_keys(q, dev, cx, (pipeline, serial), params, &binds, [b * h * lq, lk, d, dv])
}

/// attention.wgsl launches over the key ranges of [`split::attention_keys`] (or, for the
/// software adapters' `attention_serial_main`, one invocation per row, of
/// [`split::attention_serial_keys`]), the running softmax state kept between them in a
/// temporary: `params` up to the key range, which this appends with the flags.
fn launch_keys(
    q: &GpuQueue,
    dev: &GpuDevice,
    cx: &OpContext<'_>,
    (pipeline, serial): (wgpu::ComputePipeline, bool),
    mut params: Vec<u32>,
    binds: &[(u32, Bind<'_>)],
    [rows, lk, d, dv]: [usize; 4],
) -> Result<()> {
    let keys = if serial { split::attention_serial_keys(dev.max_loop_iterations, lk, d, dv) } else { split::attention_keys(dev.max_loop_iterations, lk, d) };
    let state = if keys.len() > 1 { Some(split_temp(dev, cx, rows * (dv + 2))?) } else { None };
    let mut binds = binds.to_vec();
    binds.push((6, state.as_ref().map_or(Bind::SpareWrite, Bind::Mem)));
    let grid = grid_1d(dev, if serial { rows.div_ceil(64) } else { rows } as u64)?;
    let at = params.len();
    params.resize(at + 3, 0);
    for (i, range) in keys.iter().enumerate() {
        params[at] = u32_of("key", range[0])?;
        params[at + 1] = u32_of("key", range[1])?;
        params[at + 2] = split::flags(i, keys.len());
        q.launch(dev, pipeline.clone(), &params, &binds, grid)?;
    }
    Ok(())
}

/// Every entry point (the module is the same for every override).
#[cfg(test)]
pub(super) fn builtins() -> Vec<Builtin> {
    ["attention_main", "attention_serial_main"].into_iter().map(|e| builtin(&SOURCE, e, vec![])).collect()
}
