//! Fused attention on wgpu: attention.wgsl (or its serial entry point on software adapters),
//! launched over key ranges where the device ends long loops early.

use super::Attention;
#[cfg(test)]
use crate::hal::webgpu::Specialisation;
use crate::hal::webgpu::{Bind, GpuBatch, GpuDevice, Pipeline, WgslSource};
use crate::hal::OpContext;
use crate::ops::common::split;
use crate::ops::common::webgpu::{
    check_binding, grid_1d, software_kernels, specialise, split_temp, u32_of, wgsl_params, COMMON,
};
use crate::Result;

static SOURCE: WgslSource = WgslSource {
    name: "attention.wgsl",
    text: crate::ops::common::wgsl_file!("attention/attention.wgsl"),
    preludes: &[COMMON, AttentionWords::DECL],
};

wgsl_params! {
    /// attention.wgsl's parameters.
    struct AttentionWords: P {
        /// Batch times heads, heads, queries, keys, and the q/k and v head dimensions.
        bh: u32,
        heads: u32,
        lq: u32,
        lk: u32,
        d: u32,
        dv: u32,
        scale: f32,
        /// 1 for a causal mask.
        causal: u32,
        /// Views: offset, then the strides of batch, head, row and column (mask: zero without).
        q: [u32; 5],
        k: [u32; 5],
        v: [u32; 5],
        mask: [u32; 5],
        /// Offset of the output.
        out: u32,
        /// The key range of this launch, and its flags (see attention.wgsl).
        keys: [u32; 2],
        flags: u32,
    }
}

/// Fused attention (attention_main, or attention_serial_main on software adapters).
pub(super) fn attention(
    op: &Attention<'_>,
    q: &GpuBatch,
    dev: &GpuDevice,
    cx: &OpContext<'_>,
) -> Result<()> {
    let (query, key, value, mask, out) = (op.q, op.k, op.v, op.mask, op.out);
    let [b, h, lq, lk, d, dv] = op.dims;
    for o in [&query, &key, &value, &out] {
        check_binding(dev, o)?;
    }
    let view = |o: &crate::ops::Operand<'_>| -> Result<[u32; 5]> {
        check_binding(dev, o)?;
        let [sb, sh, si, sj] = o.layout.strides[..] else {
            return Err(crate::Error::Internal(
                "an attention operand is not 4-D".into(),
            ));
        };
        let s = |s: usize| u32_of("stride", s);
        Ok([
            u32_of("offset", o.layout.offset)?,
            s(sb)?,
            s(sh)?,
            s(si)?,
            s(sj)?,
        ])
    };
    let params = AttentionWords {
        bh: u32_of("batch x heads", b * h)?,
        heads: u32_of("heads", h)?,
        lq: u32_of("queries", lq)?,
        lk: u32_of("keys", lk)?,
        d: d as u32,
        dv: dv as u32,
        scale: op.scale,
        causal: u32::from(op.causal),
        q: view(&query)?,
        k: view(&key)?,
        v: view(&value)?,
        mask: mask.as_ref().map_or(Ok([0; 5]), view)?,
        out: u32_of("offset", out.layout.offset)?,
        keys: [0; 2],
        flags: 0,
    };
    let serial = software_kernels(dev, cx);
    let entry = if serial {
        "attention_serial_main"
    } else {
        "attention_main"
    };
    let pipeline = dev.pipeline(specialise(
        &SOURCE,
        entry,
        vec![("HAS_MASK", u32::from(mask.is_some()))],
    ));
    // The mask binding is in the layout even when HAS_MASK is off.
    let mask_bind = mask.as_ref().map_or(Bind::SpareRead, |m| Bind::Mem(m.buf));
    let binds = [
        (1, Bind::Mem(query.buf)),
        (2, Bind::Mem(key.buf)),
        (3, Bind::Mem(value.buf)),
        (4, mask_bind),
        (5, Bind::Mem(out.buf)),
    ];
    launch_keys(
        q,
        dev,
        cx,
        (pipeline, serial),
        params,
        &binds,
        [b * h * lq, lk, d, dv],
    )
}

/// attention.wgsl launches over the key ranges of [`split::attention_keys`] (or, for the
/// software adapters' `attention_serial_main`, one invocation per row, of
/// [`split::attention_serial_keys`]), the running softmax state kept between them in a
/// temporary.
fn launch_keys(
    q: &GpuBatch,
    dev: &GpuDevice,
    cx: &OpContext<'_>,
    (pipeline, serial): (Pipeline, bool),
    mut params: AttentionWords,
    binds: &[(u32, Bind<'_>)],
    [rows, lk, d, dv]: [usize; 4],
) -> Result<()> {
    let keys = if serial {
        split::attention_serial_keys(dev.max_loop_iterations(), lk, d, dv)
    } else {
        split::attention_keys(dev.max_loop_iterations(), lk, d)
    };
    let state = if keys.len() > 1 {
        Some(split_temp(dev, cx, rows * (dv + 2))?)
    } else {
        None
    };
    let mut binds = binds.to_vec();
    binds.push((6, state.as_ref().map_or(Bind::SpareWrite, Bind::Mem)));
    let grid = grid_1d(dev, if serial { rows.div_ceil(64) } else { rows } as u64)?;
    for (i, range) in keys.iter().enumerate() {
        params.keys = [u32_of("key", range[0])?, u32_of("key", range[1])?];
        params.flags = split::flags(i, keys.len());
        q.launch(dev, pipeline.clone(), params.words(), &binds, grid)?;
    }
    Ok(())
}

/// Every entry point (the module is the same for every override).
#[cfg(test)]
pub(super) fn specialisations() -> Vec<Specialisation> {
    ["attention_main", "attention_serial_main"]
        .into_iter()
        .map(|e| specialise(&SOURCE, e, vec![]))
        .collect()
}

/// attention.wgsl (both entries, with an additive mask and the causal rule) run by the CPU's
/// WGSL executor, with the parameter words this file writes, gives the CPU kernel's result.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod on_the_cpu_executor {
    use super::*;
    use crate::ops::attention::AttentionParams;
    use crate::ops::common::webgpu::{bound, run_on_cpu, with_overrides};
    use crate::{BackendChoice, BackendKind, Buffer, Device, Tensor};

    fn values(n: usize, seed: usize) -> Vec<f32> {
        (0..n)
            .map(|i| ((i * 7919 + seed * 104_729) % 1999) as f32 / 500.0 - 2.0)
            .collect()
    }

    /// A 4-D view's offset and strides as attention.wgsl reads them.
    fn view(t: &Tensor) -> [u32; 5] {
        let s = t.strides();
        [
            t.offset() as u32,
            s[0] as u32,
            s[1] as u32,
            s[2] as u32,
            s[3] as u32,
        ]
    }

    #[test]
    fn attention_matches_the_cpu_kernel() {
        let d = Device::open(BackendChoice::Backend(BackendKind::Cpu)).unwrap();
        let (h, lq, lk, dk, dv) = (2usize, 5usize, 7usize, 8usize, 6usize);
        let (qv, kv, vv, mv) = (
            values(h * lq * dk, 1),
            values(h * lk * dk, 2),
            values(h * lk * dv, 3),
            values(lq * lk, 4),
        );
        let q = Tensor::from_slice(&d, &qv, &[1, h, lq, dk]).unwrap();
        let k = Tensor::from_slice(&d, &kv, &[1, h, lk, dk]).unwrap();
        let v = Tensor::from_slice(&d, &vv, &[1, h, lk, dv]).unwrap();
        let mask = Tensor::from_slice(&d, &mv, &[lq, lk]).unwrap();
        let want = q
            .attention(
                &k,
                &v,
                AttentionParams {
                    mask: Some(&mask),
                    causal: true,
                    scale: None,
                },
            )
            .unwrap()
            .to_vec_blocking::<f32>()
            .unwrap();
        let mask4 = mask.broadcast_to(&[1, h, lq, lk]).unwrap();
        let words = AttentionWords {
            bh: h as u32,
            heads: h as u32,
            lq: lq as u32,
            lk: lk as u32,
            d: dk as u32,
            dv: dv as u32,
            scale: 1.0 / (dk as f32).sqrt(),
            causal: 1,
            q: view(&q),
            k: view(&k),
            v: view(&v),
            mask: view(&mask4),
            out: 0,
            keys: [0, lk as u32],
            flags: split::flags(0, 1),
        };
        let source = with_overrides(
            specialise(&SOURCE, "attention_main", vec![]).full_source(),
            &[("HAS_MASK", 1)],
        );
        for (entry, groups) in [
            ("attention_main", h * lq),
            ("attention_serial_main", (h * lq).div_ceil(64)),
        ] {
            let buffer = |v: &[f32]| Buffer::from_slice(&d, v).unwrap();
            let (qb, kb, vb, mb) = (buffer(&qv), buffer(&kv), buffer(&vv), buffer(&mv));
            let (out, state) = (
                Buffer::from_slice(&d, &vec![-1.1e36f32; want.len()]).unwrap(),
                Buffer::<f32>::zeros(&d, 4).unwrap(),
            );
            let bindings = [
                bound(&qb),
                bound(&kb),
                bound(&vb),
                bound(&mb),
                bound(&out),
                bound(&state),
            ];
            run_on_cpu(
                &d,
                &source,
                entry,
                words.words(),
                &bindings,
                [groups as u32, 1, 1],
            )
            .unwrap();
            assert_near(&out.read_blocking().unwrap(), &want, entry);
        }
    }

    /// Each element of `got` within 1e-5 (relative) of `want`'s.
    fn assert_near(got: &[f32], want: &[f32], entry: &str) {
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-5 * (1.0 + w.abs()),
                "{entry}: element {i} is {g}, the CPU's {w}"
            );
        }
    }
}
