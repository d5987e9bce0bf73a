//! Unary and binary ops on wgpu: elementwise.wgsl, four elements per invocation where the
//! layouts allow (the vec4 entry points); integer arithmetic in its own entry point, and
//! i64 comparisons, logical ops, minimum and maximum as pairs of words without `shader-int64`.

use super::{Binary, Unary};
use crate::base::layout::Access;
use crate::hal::webgpu::{Bind, GpuBatch, GpuDevice, Specialisation, WgslSource};
use crate::hal::OpContext;
use crate::ops::common::webgpu::{
    check_binding, check_int64, grid_1d, specialise, store, strided_words, u32_of, val,
    StridedWords, ACTIVATION, BINARY, COMMON, STORE_F32, VAL_U32,
};
#[cfg(test)]
use crate::ops::common::webgpu::{STORE_F16, VAL_I32, VAL_I64};
use crate::ops::{BinaryOp, Operand};
use crate::{DType, Result};

static SOURCE: WgslSource = WgslSource {
    name: "elementwise.wgsl",
    text: crate::ops::common::wgsl_file!("elementwise/elementwise.wgsl"),
    preludes: &[COMMON, ACTIVATION, StridedWords::DECL, BINARY],
};

/// The ops int64_words_main computes on i64 as pairs of words, where the adapter lacks
/// `shader-int64` (the other i64 arithmetic is refused there).
const WORD_OPS: [BinaryOp; 10] = [
    BinaryOp::Min,
    BinaryOp::Max,
    BinaryOp::Equal,
    BinaryOp::Less,
    BinaryOp::LessEqual,
    BinaryOp::Greater,
    BinaryOp::GreaterEqual,
    BinaryOp::And,
    BinaryOp::Or,
    BinaryOp::Xor,
];

/// Whether an elementwise launch can take four elements per invocation (the vec4 entry
/// points): the element count, the output offset and every operand offset multiples of 4,
/// the output contiguous, each operand contiguous or a repeated block whose period is a
/// multiple of 4.
fn vec4(out: &Operand<'_>, inputs: &[&Operand<'_>]) -> bool {
    let whole = |o: &Operand<'_>| o.layout.offset % 4 == 0;
    out.layout.numel() % 4 == 0
        && out.layout.is_contiguous()
        && whole(out)
        && inputs.iter().all(|x| {
            whole(x)
                && match x.layout.access() {
                    Access::Contiguous => true,
                    Access::Repeated { period } => period % 4 == 0,
                    Access::Strided => false,
                }
        })
}

/// `out = op(x)`: unary_main, or unary_vec4_main over whole vec4s.
pub(super) fn unary(
    op: &Unary<'_>,
    q: &GpuBatch,
    dev: &GpuDevice,
    _: &OpContext<'_>,
) -> Result<()> {
    let (x, out) = (op.x, op.out);
    check_binding(dev, &x)?;
    check_binding(dev, &out)?;
    let access = x.layout.access();
    let constants = vec![("OP", op.op.code()), ("A_MODE", access.code())];
    let (entry, per) = if vec4(&out, &[&x]) {
        ("unary_vec4_main", 4)
    } else {
        ("unary_main", 1)
    };
    let pipeline = dev.pipeline(Specialisation {
        prelude: vec![store(dev, op.dtype)?, VAL_U32],
        ..specialise(&SOURCE, entry, constants)
    });
    let grid = grid_1d(dev, (out.layout.numel() / per).div_ceil(256) as u64)?;
    let params = StridedWords {
        a_period: u32_of("period", access.period())?,
        ..strided_words(&out, &[&x])?
    };
    q.launch(
        dev,
        pipeline,
        params.words(),
        &[(1, Bind::Mem(x.buf)), (3, Bind::Mem(out.buf))],
        grid,
    )
}

/// `out = act(op(a, b))` over broadcast operands: binary_main, or binary_vec4_main.
pub(super) fn binary(
    op: &Binary<'_>,
    q: &GpuBatch,
    dev: &GpuDevice,
    _: &OpContext<'_>,
) -> Result<()> {
    let (a, b, out) = (op.a, op.b, op.out);
    for o in [&a, &b, &out] {
        check_binding(dev, o)?;
    }
    let (a_access, b_access) = (a.layout.access(), b.layout.access());
    let constants = vec![
        ("OP", op.op.code()),
        ("ACT", op.act.map_or(0, |f| f.code())),
        ("A_MODE", a_access.code()),
        ("B_MODE", b_access.code()),
    ];
    let words = op.dtype == DType::I64 && !dev.has_int64() && WORD_OPS.contains(&op.op);
    if !words {
        check_int64(dev, op.op.name(), &[op.dtype])?;
    }
    let integer = op.dtype.is_integer();
    let (entry, per) = match (integer, vec4(&out, &[&a, &b])) {
        (true, _) if words => ("int64_words_main", 1),
        (true, _) => ("int_binary_main", 1),
        (false, true) => ("binary_vec4_main", 4),
        (false, false) => ("binary_main", 1),
    };
    let prelude = if words {
        vec![STORE_F32, VAL_U32]
    } else if integer {
        vec![STORE_F32, val(op.dtype)?]
    } else {
        vec![store(dev, op.dtype)?, VAL_U32]
    };
    let pipeline = dev.pipeline(Specialisation {
        prelude,
        ..specialise(&SOURCE, entry, constants)
    });
    let grid = grid_1d(dev, (out.layout.numel() / per).div_ceil(256) as u64)?;
    let binds = [
        (1, Bind::Mem(a.buf)),
        (2, Bind::Mem(b.buf)),
        (3, Bind::Mem(out.buf)),
    ];
    let params = StridedWords {
        a_period: u32_of("period", a_access.period())?,
        b_period: u32_of("period", b_access.period())?,
        ..strided_words(&out, &[&a, &b])?
    };
    q.launch(dev, pipeline, params.words(), &binds, grid)
}

/// The module in both storage dtypes and both integer types.
#[cfg(test)]
pub(super) fn specialisations() -> Vec<Specialisation> {
    let preludes = [
        [STORE_F32, VAL_U32],
        [STORE_F16, VAL_U32],
        [STORE_F32, VAL_I32],
        [STORE_F32, VAL_I64],
    ];
    preludes
        .into_iter()
        .map(|p| Specialisation {
            prelude: p.to_vec(),
            ..specialise(&SOURCE, "unary_main", vec![])
        })
        .collect()
}

/// elementwise.wgsl's binary and unary kernels run by the CPU backend's WGSL executor, with
/// the parameter words this file writes, give the CPU kernels' results: the built-in shader
/// checked against the CPU's own kernels, in every operand addressing mode.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod on_the_cpu_executor {
    use super::*;
    use crate::ops::common::webgpu::VAL_I32;
    use crate::ops::common::webgpu::{bound, run_on_cpu};
    use crate::ops::{BinaryOp, UnaryOp};
    use crate::{BackendChoice, BackendKind, Buffer, Device, Tensor};

    /// `entry` (taking `per` elements an invocation) over `inputs` (broadcast views of
    /// contiguous tensors) on the executor, elementwise.wgsl with f32 storage, `val` as its
    /// integer type, and the override constants set to `constants`.
    fn run<T: crate::Element>(
        d: &Device,
        (entry, per, val): (&str, usize, &'static str),
        constants: &[(&str, u32)],
        inputs: &[(&Tensor, &[T])],
        out: &Tensor,
    ) -> Vec<T> {
        let operands: Vec<_> = inputs.iter().map(|(t, _)| t.operand()).collect();
        let mut words =
            strided_words(&out.operand(), &operands.iter().collect::<Vec<_>>()).unwrap();
        words.a_period = u32_of("period", operands[0].layout.access().period()).unwrap();
        if let Some(b) = operands.get(1) {
            words.b_period = u32_of("period", b.layout.access().period()).unwrap();
        }
        let source = crate::ops::common::webgpu::with_overrides(
            Specialisation {
                prelude: vec![STORE_F32, val],
                ..specialise(&SOURCE, "binary_main", vec![])
            }
            .full_source(),
            constants,
        );
        let buffers: Vec<Buffer<T>> = inputs
            .iter()
            .map(|(_, data)| Buffer::from_slice(d, data).unwrap())
            .collect();
        let poison = vec![0x7fa5_a5a5u32; out.numel()];
        let result = Buffer::from_slice(d, bytemuck::cast_slice::<u32, T>(&poison)).unwrap();
        let bindings: Vec<_> = buffers.iter().map(bound).chain([bound(&result)]).collect();
        run_on_cpu(
            d,
            &source,
            entry,
            words.words(),
            &bindings,
            [(out.numel() / per).div_ceil(256) as u32, 1, 1],
        )
        .unwrap();
        result.read_blocking().unwrap()
    }

    fn assert_near(got: &[f32], want: &[f32], what: &str) {
        for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
            let ok =
                (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= 2e-6 * (1.0 + w.abs());
            assert!(
                ok,
                "{what}: element {i} is {g} on the executor, {w} from the CPU kernel"
            );
        }
    }

    #[test]
    fn binary_and_unary_kernels_match_the_cpu_kernels() {
        let d = Device::open(BackendChoice::Backend(BackendKind::Cpu)).unwrap();
        let data = |n: usize, seed: usize| -> Vec<f32> {
            (0..n)
                .map(|i| ((i * 7919 + seed * 104_729) % 1999) as f32 / 500.0 - 2.0)
                .collect()
        };
        // Strided (mode 0), contiguous (1) and a repeated row (2) operands.
        let cases: [(&[usize], &[usize]); 3] = [
            (&[5, 1, 7], &[1, 3, 1]),
            (&[4, 9], &[4, 9]),
            (&[6, 8], &[8]),
        ];
        for (sa, sb) in cases {
            let (xa, xb) = (data(sa.iter().product(), 1), data(sb.iter().product(), 2));
            let (a, b) = (
                Tensor::from_slice(&d, &xa, sa).unwrap(),
                Tensor::from_slice(&d, &xb, sb).unwrap(),
            );
            let shape = crate::base::layout::broadcast_shapes("test", sa, sb).unwrap();
            let (va, vb) = (
                a.broadcast_to(&shape).unwrap(),
                b.broadcast_to(&shape).unwrap(),
            );
            let out = Tensor::zeros(&d, &shape, crate::DType::F32).unwrap();
            let modes = [
                ("A_MODE", va.operand().layout.access().code()),
                ("B_MODE", vb.operand().layout.access().code()),
            ];
            // The vec4 entries where the launch would take them.
            let mut entries = vec![("binary_main", "unary_main", 1)];
            if vec4(&out.operand(), &[&va.operand(), &vb.operand()]) {
                entries.push(("binary_vec4_main", "unary_vec4_main", 4));
            }
            for (binary, unary, per) in entries {
                for op in BinaryOp::ALL {
                    let got = run(
                        &d,
                        (binary, per, VAL_U32),
                        &[("OP", op.code()), modes[0], modes[1]],
                        &[(&va, &xa[..]), (&vb, &xb[..])],
                        &out,
                    );
                    // The logic ops' kernels give 1 or 0, which `binary` makes bool.
                    let wide = a.binary(op, &b).unwrap().cast(crate::DType::F32).unwrap();
                    let want = wide.to_vec_blocking::<f32>().unwrap();
                    assert_near(
                        &got,
                        &want,
                        &format!("{binary} {} of {sa:?} and {sb:?}", op.name()),
                    );
                }
                for op in UnaryOp::ALL {
                    let got = run(
                        &d,
                        (unary, per, VAL_U32),
                        &[("OP", op.code()), modes[0]],
                        &[(&va, &xa[..])],
                        &out,
                    );
                    let want = va.unary(op).unwrap().to_vec_blocking::<f32>().unwrap();
                    assert_near(
                        &got,
                        &want,
                        &format!("{unary} {} of {sa:?} as {shape:?}", op.name()),
                    );
                }
            }
            int_binary_matches(&d, (sa, sb), (&xa, &xb), &shape, modes, &out);
        }
    }

    /// int_binary_main on i32 operands (`xa` and `xb` scaled and truncated) against the CPU
    /// kernel.
    fn int_binary_matches(
        d: &Device,
        (sa, sb): (&[usize], &[usize]),
        (xa, xb): (&[f32], &[f32]),
        shape: &[usize],
        modes: [(&'static str, u32); 2],
        out: &Tensor,
    ) {
        let (ia, ib): (Vec<i32>, Vec<i32>) = (
            xa.iter().map(|v| (v * 1e3) as i32).collect(),
            xb.iter().map(|v| (v * 7.0) as i32).collect(),
        );
        let (ta, tb) = (
            Tensor::from_slice(d, &ia, sa).unwrap(),
            Tensor::from_slice(d, &ib, sb).unwrap(),
        );
        let (tva, tvb) = (
            ta.broadcast_to(shape).unwrap(),
            tb.broadcast_to(shape).unwrap(),
        );
        for op in BinaryOp::ALL {
            let got = run(
                d,
                ("int_binary_main", 1, VAL_I32),
                &[("OP", op.code()), modes[0], modes[1]],
                &[(&tva, &ia[..]), (&tvb, &ib[..])],
                out,
            );
            assert_eq!(
                got,
                ta.binary(op, &tb)
                    .unwrap()
                    .cast(crate::DType::I32)
                    .unwrap()
                    .to_vec_blocking::<i32>()
                    .unwrap(),
                "int_binary_main {} of {sa:?} and {sb:?}",
                op.name()
            );
        }
    }
}
