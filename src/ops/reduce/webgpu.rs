//! Reductions on wgpu: reduce.wgsl in passes, its workgroups combining values through a tree
//! in workgroup memory (reduce_tree.wgsl) or subgroup operations (reduce_subgroups.wgsl), or
//! without either (`serial`, for software adapters).

use super::{passes, Reduce};
use crate::hal::webgpu::{Bind, GpuBatch, GpuDevice, Specialisation, WgslSource};
use crate::hal::OpContext;
use crate::ops::common::webgpu::{
    check_binding, check_int64, grid_1d, specialise, u32_of, val, wgsl_params, COMMON,
};
use crate::{DType, Error, Result};

static SOURCE: WgslSource = WgslSource {
    name: "reduce.wgsl",
    text: crate::ops::common::wgsl_file!("reduce/reduce.wgsl"),
    preludes: &[COMMON, super::REDUCE_WGSL, ReduceWords::DECL],
};

wgsl_params! {
    /// reduce.wgsl's parameters: one pass over an [outer, len, inner] input.
    struct ReduceWords: P {
        outer: u32,
        len: u32,
        inner: u32,
        /// Elements per chunk (unused by the serial kernel), and chunks per row.
        chunk: u32,
        chunks: u32,
        /// Offsets of the input and the output.
        x: u32,
        out: u32,
        /// Factor of the final values (1/len for a mean's last pass).
        scale: f32,
    }
}

/// The workgroup combination step of reduce.wgsl: a tree in workgroup memory, or subgroup
/// operations (where the adapter has them) with the tree for argmax.
const TREE: &str = crate::ops::common::wgsl_file!("reduce/reduce_tree.wgsl");
const WITH_TREE: [&str; 2] = [
    TREE,
    "fn workgroup_combine(acc: VAL, ai: u32, lid: u32) -> Combined \
    { return tree_combine(acc, ai, lid); }",
];
/// Natively naga takes subgroup specialisations without an `enable subgroups;` directive (and
/// rejects the directive); browsers require it.
const ENABLE_SUBGROUPS: &str = if cfg!(target_arch = "wasm32") {
    "enable subgroups;"
} else {
    ""
};
const WITH_SUBGROUPS: [&str; 3] = [
    ENABLE_SUBGROUPS,
    TREE,
    crate::ops::common::wgsl_file!("reduce/reduce_subgroups.wgsl"),
];

/// Elements each reduction workgroup combines per pass (256 threads x 4).
const CHUNK: usize = 1024;
/// Elements each invocation of the `serial` reduction combines per pass.
const SERIAL_CHUNK: usize = 32;

/// The reduction variants of this device: the workgroup `tree`, `subgroup` (subgroup
/// operations combine each workgroup's values) where the adapter has subgroups, and `serial`
/// (each invocation reduces a chunk alone: no workgroup memory, no barriers).
pub(super) fn variants(dev: &GpuDevice) -> Vec<&'static str> {
    if dev.has_subgroups() {
        vec!["subgroup", "tree", "serial"]
    } else {
        vec!["tree", "serial"]
    }
}

/// The reduction variant this device runs unless told otherwise, and why: `serial` on
/// software adapters, else `subgroup` where the adapter has subgroups and `use_subgroups` is
/// on, else `tree`.
pub(super) fn default_variant(
    dev: &GpuDevice,
    options: &crate::DeviceOptions,
) -> (&'static str, String) {
    if dev.is_software() && options.software_kernels {
        return (
            "serial",
            "the default on software adapters, which run each workgroup's SIMD \
            groups as coroutines on a CPU thread, switching at every barrier \
            (DeviceOptions::software_kernels)"
                .into(),
        );
    }
    let use_subgroups = options.use_subgroups;
    if use_subgroups && variants(dev).contains(&"subgroup") {
        (
            "subgroup",
            "the default (DeviceOptions::use_subgroups is true)".into(),
        )
    } else {
        (
            "tree",
            format!(
                "the default (DeviceOptions::use_subgroups is {use_subgroups}{})",
                if use_subgroups {
                    ", but the adapter has no subgroups"
                } else {
                    ""
                }
            ),
        )
    }
}

/// What the passes of a reduction share: the elements a workgroup (or an invocation) takes,
/// the invocations per workgroup, the combination step's prelude and the entry point.
struct Setup {
    chunk: usize,
    per_group: usize,
    combine: Vec<&'static str>,
    entry: &'static str,
}

/// The [`Setup`] of the variant `call` names (or the device's default); an error when the
/// adapter lacks that variant.
fn setup(call: &Reduce<'_>, dev: &GpuDevice, cx: &OpContext<'_>) -> Result<Setup> {
    let variant = match call.variant {
        Some(v) => v,
        None => default_variant(dev, cx.options).0,
    };
    if !variants(dev).contains(&variant) {
        return Err(Error::Unsupported {
            backend: crate::BackendKind::WebGpu,
            what: format!(
                "reduce variant `{variant}` on this adapter (it has {:?})",
                variants(dev)
            ),
        });
    }
    let serial = variant == "serial";
    let (chunk, per_group) = if serial {
        (SERIAL_CHUNK, 64)
    } else {
        (CHUNK, 1)
    };
    // i64 values combine through workgroup memory: subgroup operations on 64-bit integers
    // need more than `shader-int64` of the adapter.
    let subgroups = variant == "subgroup" && call.dtype != DType::I64;
    let mut combine = if subgroups {
        WITH_SUBGROUPS.to_vec()
    } else {
        WITH_TREE.to_vec()
    };
    combine.push(val(call.dtype)?);
    let entry = if serial {
        "reduce_serial_main"
    } else {
        "reduce_main"
    };
    Ok(Setup {
        chunk,
        per_group,
        combine,
        entry,
    })
}

/// The reduction in passes of one workgroup (or, `serial`, one invocation) per (row, chunk),
/// each pass's partial results in temporaries, until one chunk per row remains.
pub(super) fn reduce(
    call: &Reduce<'_>,
    q: &GpuBatch,
    dev: &GpuDevice,
    cx: &OpContext<'_>,
) -> Result<()> {
    let op = call.op;
    check_int64(dev, op.name(), &[call.dtype])?;
    check_binding(dev, &call.x)?;
    check_binding(dev, &call.out)?;
    let Setup {
        chunk,
        per_group,
        combine,
        entry,
    } = setup(call, dev, cx)?;
    passes::run(
        call,
        cx,
        |_, len| (len.div_ceil(chunk), chunk),
        |pass| {
            // The kernel writes values in every pass: an argmax's last pass gets a scratch block.
            let out_offset = pass
                .out_values
                .as_ref()
                .or(pass.out_indices.as_ref())
                .map_or(0, |(_, o)| *o);
            let scratch = if pass.out_values.is_none() {
                Some((cx.temp)(
                    ((out_offset + pass.outer * pass.inner) * call.dtype.size().max(4)) as u64,
                )?)
            } else {
                None
            };
            let params = ReduceWords {
                outer: u32_of("rows", pass.outer)?,
                len: u32_of("reduced length", pass.len)?,
                inner: u32_of("inner length", pass.inner)?,
                chunk: u32_of("chunk", pass.chunk)?,
                chunks: u32_of("chunks", pass.chunks)?,
                x: u32_of("offset", pass.values.1)?,
                out: u32_of("offset", out_offset)?,
                scale: pass.scale,
            };
            let constants = vec![("OP", op.code()), ("FIRST", u32::from(pass.first()))];
            let pipeline = dev.pipeline(Specialisation {
                prelude: combine.clone(),
                ..specialise(&SOURCE, entry, constants)
            });
            let out_values = pass
                .out_values
                .as_ref()
                .map(|(b, _)| b)
                .or(scratch.as_ref())
                .ok_or_else(|| Error::Internal("reduction without an output".into()))?;
            let binds = [
                (1, Bind::Mem(&pass.values.0)),
                (2, pass.indices.as_ref().map_or(Bind::SpareRead, Bind::Mem)),
                (3, Bind::Mem(out_values)),
                (
                    4,
                    pass.out_indices
                        .as_ref()
                        .map_or(Bind::SpareWrite, |(b, _)| Bind::Mem(b)),
                ),
            ];
            q.launch(
                dev,
                pipeline,
                params.words(),
                &binds,
                grid_1d(
                    dev,
                    (pass.outer * pass.inner * pass.chunks).div_ceil(per_group) as u64,
                )?,
            )
        },
    )
}

/// The module with each combination step, on each value type.
#[cfg(test)]
pub(super) fn specialisations() -> Vec<Specialisation> {
    use crate::ops::common::webgpu::{VAL_F32, VAL_I32, VAL_I64, VAL_U32};
    let steps = [WITH_TREE.to_vec(), WITH_SUBGROUPS.to_vec()];
    let preludes = steps
        .into_iter()
        .flat_map(|step| [VAL_F32, VAL_I32, VAL_U32].map(|v| [step.clone(), vec![v]].concat()));
    // i64 combines through the tree only (see `reduce`).
    let preludes = preludes.chain([[WITH_TREE.to_vec(), vec![VAL_I64]].concat()]);
    preludes
        .map(|prelude| Specialisation {
            prelude,
            ..specialise(&SOURCE, "reduce_main", vec![])
        })
        .collect()
}

/// reduce.wgsl (each combination step, each value type) run in one pass by the CPU backend's
/// WGSL executor, with the parameter words this file writes, gives the CPU kernels' results.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod on_the_cpu_executor {
    use super::*;
    use crate::ops::common::webgpu::{bound, run_on_cpu};
    use crate::ops::common::webgpu::{VAL_F32, VAL_I32, VAL_U32};
    use crate::ops::reduce::ReduceOp;
    use crate::{BackendChoice, BackendKind, Buffer, DType, Device, Tensor};

    /// One pass of `entry` over `[outer, len, inner]` values `x`, as `op`: the result's words.
    fn run<T: crate::Element>(
        d: &Device,
        prelude: Vec<&'static str>,
        entry: &'static str,
        op: ReduceOp,
        x: &[T],
        [outer, len, inner]: [usize; 3],
    ) -> Vec<u32> {
        let source = crate::ops::common::webgpu::with_overrides(
            Specialisation {
                prelude,
                ..specialise(&SOURCE, entry, vec![])
            }
            .full_source(),
            &[("OP", op.code())],
        );
        let words = ReduceWords {
            outer: outer as u32,
            len: len as u32,
            inner: inner as u32,
            chunk: len as u32,
            chunks: 1,
            x: 0,
            out: 0,
            scale: 1.0,
        };
        let xs = Buffer::from_slice(d, x).unwrap();
        let spare = Buffer::from_slice(d, &[0u32; 4]).unwrap();
        let poison = vec![0xdead_beefu32; outer * inner];
        let values = Buffer::from_slice(d, bytemuck::cast_slice::<u32, T>(&poison)).unwrap();
        let indices = Buffer::from_slice(d, &poison).unwrap();
        let bindings = [bound(&xs), bound(&spare), bound(&values), bound(&indices)];
        let groups = if entry == "reduce_main" {
            outer * inner
        } else {
            (outer * inner).div_ceil(64)
        };
        run_on_cpu(
            d,
            &source,
            entry,
            words.words(),
            &bindings,
            [groups as u32, 1, 1],
        )
        .unwrap();
        if op == ReduceOp::Argmax {
            indices.read_blocking().unwrap()
        } else {
            bytemuck::cast_slice(&values.read_blocking().unwrap()).to_vec()
        }
    }

    /// The CPU kernel's result of `op` over axis 1 of `t`, as words.
    fn cpu_words(t: &Tensor, op: ReduceOp) -> Vec<u32> {
        let r = t.reduce(op, Some(1)).unwrap();
        match r.dtype() {
            DType::F32 => r
                .to_vec_blocking::<f32>()
                .unwrap()
                .iter()
                .map(|v| v.to_bits())
                .collect(),
            DType::I32 => r
                .to_vec_blocking::<i32>()
                .unwrap()
                .iter()
                .map(|&v| v as u32)
                .collect(),
            _ => r.to_vec_blocking::<u32>().unwrap(),
        }
    }

    #[test]
    fn reductions_match_the_cpu_kernels() {
        let d = Device::open(BackendChoice::Backend(BackendKind::Cpu)).unwrap();
        let shape = [3usize, 37, 5];
        let n: usize = shape.iter().product();
        let ints: Vec<i32> = (0..n).map(|i| ((i * 7919) % 2001) as i32 - 1000).collect();
        let floats: Vec<f32> = ints.iter().map(|&v| v as f32 / 64.0).collect();
        let unsigned: Vec<u32> = ints.iter().map(|&v| v as u32).collect();
        let steps = [
            ("tree", WITH_TREE.to_vec()),
            ("subgroups", WITH_SUBGROUPS.to_vec()),
        ];
        for (name, step) in steps {
            for op in [
                ReduceOp::Sum,
                ReduceOp::Max,
                ReduceOp::Min,
                ReduceOp::Argmax,
                ReduceOp::Prod,
            ] {
                for entry in ["reduce_main", "reduce_serial_main"] {
                    let prelude = |v| [step.clone(), vec![v]].concat();
                    let cases = [
                        (
                            Tensor::from_slice(&d, &floats, &shape).unwrap(),
                            run(&d, prelude(VAL_F32), entry, op, &floats, shape),
                        ),
                        (
                            Tensor::from_slice(&d, &ints, &shape).unwrap(),
                            run(&d, prelude(VAL_I32), entry, op, &ints, shape),
                        ),
                        (
                            Tensor::from_slice(&d, &unsigned, &shape).unwrap(),
                            run(&d, prelude(VAL_U32), entry, op, &unsigned, shape),
                        ),
                    ];
                    for (t, got) in cases {
                        for (i, (&g, &w)) in got.iter().zip(&cpu_words(&t, op)).enumerate() {
                            let (gf, wf) = (f32::from_bits(g), f32::from_bits(w));
                            // Float sums and products round in another order.
                            let close = t.dtype() == DType::F32
                                && matches!(op, ReduceOp::Sum | ReduceOp::Prod)
                                && (gf - wf).abs() <= 1e-4 * (1.0 + wf.abs());
                            assert!(
                                g == w || close,
                                "{entry} with {name}, {} {}: output {i} is \
                                {g:#x}, the CPU kernel's {w:#x}",
                                t.dtype(),
                                op.name()
                            );
                        }
                    }
                }
            }
        }
    }
}
