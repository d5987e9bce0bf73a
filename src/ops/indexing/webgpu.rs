//! Casts, `where`, gather (indexing.wgsl) and cumulative sums (scan.wgsl) on wgpu.

use super::{Cast, Cumsum, Gather, Where};
use crate::ops::common::webgpu::{builtin, check_binding, check_int64, grid_1d, row_passes, strided_words, u32_of, val, wgsl_params, RowPasses, StridedWords, COMMON};
#[cfg(test)]
use crate::ops::common::webgpu::{VAL_F32, VAL_I32, VAL_I64, VAL_U32};
#[cfg(test)]
use crate::hal::webgpu::Builtin;
use crate::hal::webgpu::{Bind, GpuDevice, GpuQueue, WgslSource};
use crate::hal::OpContext;
use crate::{DType, Error, Result};

const INDEXING_TEXT: &str = crate::ops::common::wgsl_file!("indexing/indexing.wgsl");
static INDEXING: WgslSource = WgslSource { name: "indexing.wgsl", text: INDEXING_TEXT, preludes: &[COMMON, StridedWords::DECL, GatherWords::DECL] };
/// Casts to and from i64: indexing.wgsl with the i64 entry point after it (a module of its
/// own, since a module with i64 in it validates only where the adapter has `shader-int64`).
static CAST64: WgslSource = WgslSource { name: "cast64.wgsl", text: crate::ops::common::wgsl_file!("indexing/cast64.wgsl"), preludes: &[COMMON, StridedWords::DECL, GatherWords::DECL, INDEXING_TEXT] };
static SCAN: WgslSource = WgslSource { name: "scan.wgsl", text: crate::ops::common::wgsl_file!("indexing/scan.wgsl"), preludes: &[COMMON, ScanWords::DECL] };

wgsl_params! {
    /// gather_main's parameters (indexing.wgsl).
    struct GatherWords: G {
        /// The input as [outer, len, inner], and the number of indices.
        outer: u32,
        len: u32,
        inner: u32,
        count: u32,
        /// Offsets of the input, the indices and the output.
        x: u32,
        indices: u32,
        out: u32,
        /// `IndexMode`'s code: 0 error, 1 clip, 2 fill.
        mode: u32,
    }
}

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

/// `out = x` converted from `from` to `to`.
pub(super) fn cast(op: &Cast<'_>, q: &GpuQueue, dev: &GpuDevice, _: &OpContext<'_>) -> Result<()> {
    let (x, out) = (op.x, op.out);
    check_int64(dev, "cast", &[op.from, op.to])?;
    check_binding(dev, &x)?;
    check_binding(dev, &out)?;
    if op.to.size() == 2 && out.layout.offset % 2 != 0 {
        return Err(Error::Internal("a 16-bit cast output starts inside a word".into()));
    }
    let constants = vec![("FROM", op.from.code()), ("TO", op.to.code())];
    // Browsers have no `shader-int64` (refused above): the wasm build leaves cast64.wgsl out.
    let int64 = cfg!(not(target_arch = "wasm32")) && (op.from == DType::I64 || op.to == DType::I64);
    let pipeline = match int64 {
        true => dev.pipeline(builtin(&CAST64, "cast64_main", constants)),
        false => dev.pipeline(builtin(&INDEXING, "cast_main", constants)),
    };
    // A 16-bit output is written a word (two elements) per invocation.
    let grid = grid_1d(dev, out.layout.numel().div_ceil((4 / op.to.size()).max(1)).div_ceil(256) as u64)?;
    // Auto layouts hold only the bindings an entry point uses.
    let binds = [(1, Bind::Mem(x.buf)), (4, Bind::Mem(out.buf))];
    q.launch(dev, pipeline, strided_words(&out, &[&x])?.words(), &binds, grid)
}

/// `out = cond ? a : b`.
pub(super) fn where_(op: &Where<'_>, q: &GpuQueue, dev: &GpuDevice, _: &OpContext<'_>) -> Result<()> {
    let (cond, a, b, out) = (op.cond, op.a, op.b, op.out);
    for o in [&cond, &a, &b, &out] {
        check_binding(dev, o)?;
    }
    let constants = vec![("COND_F32", u32::from(op.cond_dtype == crate::DType::F32))];
    let pipeline = dev.pipeline(builtin(&INDEXING, "where_main", constants));
    let grid = grid_1d(dev, out.layout.numel().div_ceil(256) as u64)?;
    let binds = [(1, Bind::Mem(cond.buf)), (2, Bind::Mem(a.buf)), (3, Bind::Mem(b.buf)), (4, Bind::Mem(out.buf))];
    q.launch(dev, pipeline, strided_words(&out, &[&cond, &a, &b])?.words(), &binds, grid)
}

/// Entries of `x` along an axis picked by `indices` (`fill` where out of range).
pub(super) fn gather(op: &Gather<'_>, q: &GpuQueue, dev: &GpuDevice, _: &OpContext<'_>) -> Result<()> {
    let (x, indices, out) = (op.x, op.indices, op.out);
    for o in [&x, &indices, &out] {
        check_binding(dev, o)?;
    }
    let params = GatherWords {
        outer: u32_of("outer", op.outer)?,
        len: u32_of("length", op.len)?,
        inner: u32_of("inner", op.inner)?,
        count: u32_of("count", op.count)?,
        x: u32_of("offset", x.layout.offset)?,
        indices: u32_of("offset", indices.layout.offset)?,
        out: u32_of("offset", out.layout.offset)?,
        mode: op.mode.code(),
    };
    let pipeline = dev.pipeline(builtin(&INDEXING, "gather_main", vec![("INDEX_KIND", op.kind)]));
    let grid = grid_1d(dev, out.layout.numel().div_ceil(256) as u64)?;
    // The status word sits at the start of its own block (Queue::check_word).
    let status = op.status.as_ref().map_or(Bind::SpareWrite, |s| Bind::Mem(s.buf));
    let binds = [(1, Bind::Mem(x.buf)), (2, Bind::Mem(indices.buf)), (4, Bind::Mem(out.buf)), (5, status)];
    q.launch(dev, pipeline, params.words(), &binds, grid)
}

/// Cumulative sums along each (outer, inner) line, as row passes.
pub(super) fn cumsum(op: &Cumsum<'_>, q: &GpuQueue, dev: &GpuDevice, cx: &OpContext<'_>) -> Result<()> {
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
    let params = |chunk_len, chunks| ScanWords { chunk_len, chunks, ..words }.words().to_vec();
    let passes = RowPasses { source: &SCAN, entry: "cumsum_main", serial_entry: None, constants: vec![], prelude: vec![val(op.dtype)?], stats: (3, 1) };
    row_passes(q, dev, cx, passes, [op.outer * op.inner, op.len], params, &[(1, Bind::Mem(x.buf)), (2, Bind::Mem(out.buf))])
}

/// Every specialisation.
#[cfg(test)]
pub(super) fn builtins() -> Vec<Builtin> {
    let mut all = Vec::new();
    for from in 0..5 {
        for to in 0..5 {
            all.push(builtin(&INDEXING, "cast_main", vec![("FROM", from), ("TO", to)]));
        }
        all.push(builtin(&CAST64, "cast64_main", vec![("FROM", from), ("TO", 5)]));
        all.push(builtin(&CAST64, "cast64_main", vec![("FROM", 5), ("TO", from)]));
    }
    for on in [0, 1] {
        all.push(builtin(&INDEXING, "where_main", vec![("COND_F32", on)]));
    }
    for kind in 0..3 {
        all.push(builtin(&INDEXING, "gather_main", vec![("INDEX_KIND", kind)]));
    }
    for prelude in [VAL_F32, VAL_I32, VAL_U32, VAL_I64] {
        all.extend((0..3).map(|pass| Builtin { prelude: vec![prelude], ..builtin(&SCAN, "cumsum_main", vec![("PASS", pass)]) }));
    }
    all
}

/// indexing.wgsl's cast, where and gather and scan.wgsl's cumsum run by the CPU's WGSL
/// executor, with the parameter words this file writes, give the CPU kernels' results.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod on_the_cpu_executor {
    use super::*;
    use crate::ops::common::webgpu::{bound, run_on_cpu, with_overrides};
    use crate::ops::indexing::IndexMode;
    use crate::{BackendChoice, BackendKind, Buffer, DType, Device, Tensor};

    /// A contiguous tensor's elements as the words they are stored in (16-bit ones two a word).
    fn words(t: &Tensor) -> Vec<u32> {
        match t.dtype() {
            DType::F32 => t.to_vec_blocking::<f32>().unwrap().iter().map(|v| v.to_bits()).collect(),
            DType::I32 => t.to_vec_blocking::<i32>().unwrap().iter().map(|&v| v as u32).collect(),
            DType::U32 => t.to_vec_blocking::<u32>().unwrap(),
            DType::F16 => pack(t.to_vec_blocking::<half::f16>().unwrap().iter().map(|v| v.to_bits())),
            DType::BF16 => pack(t.to_vec_blocking::<half::bf16>().unwrap().iter().map(|v| v.to_bits())),
            DType::I64 => t.to_vec_blocking::<i64>().unwrap().iter().flat_map(|&v| [v as u32, (v >> 32) as u32]).collect(),
        }
    }

    fn pack(halves: impl Iterator<Item = u16>) -> Vec<u32> {
        let halves: Vec<u16> = halves.collect();
        halves.chunks(2).map(|c| u32::from(c[0]) | c.get(1).map_or(0, |&h| u32::from(h) << 16)).collect()
    }

    /// `entry` of `source` on the executor over `inputs` (at bindings 1, 2, ...), the output
    /// `out_words` long at the next binding.
    fn run(d: &Device, source: &str, entry: &str, params: &[u32], inputs: &[Vec<u32>], out_words: usize, groups: u32) -> Vec<u32> {
        let buffers: Vec<Buffer<u32>> = inputs.iter().map(|w| Buffer::from_slice(d, w).unwrap()).collect();
        let out = Buffer::from_slice(d, &vec![0x7fa5_a5a5u32; out_words]).unwrap();
        let bindings: Vec<_> = buffers.iter().map(bound).chain([bound(&out)]).collect();
        run_on_cpu(d, source, entry, params, &bindings, [groups, 1, 1]).unwrap();
        out.read_blocking().unwrap()
    }

    /// scan.wgsl's cumsum along axis 1 of `x` as `[3, 11, 4]`, whole lines, on the executor.
    fn scan<T: crate::Element>(d: &Device, val: &'static str, x: &[T]) -> Vec<T> {
        let params = ScanWords { outer: 3, len: 11, inner: 4, x: 0, out: 0, chunk_len: 11, chunks: 1 };
        let source = crate::hal::webgpu::Builtin { prelude: vec![val], ..builtin(&SCAN, "cumsum_main", vec![]) }.full_source();
        let (xs, totals) = (Buffer::from_slice(d, x).unwrap(), Buffer::from_slice(d, &x[..4]).unwrap());
        let out = Buffer::from_slice(d, bytemuck::cast_slice::<u32, T>(&vec![0x7fa5_a5a5u32; x.len()])).unwrap();
        run_on_cpu(d, &source, "cumsum_main", params.words(), &[bound(&xs), bound(&out), bound(&totals)], [12, 1, 1]).unwrap();
        out.read_blocking().unwrap()
    }

    #[test]
    fn casts_match_the_cpu_kernels() {
        let d = Device::open(BackendChoice::Backend(BackendKind::Cpu)).unwrap();
        let values: Vec<f32> = (0..35).map(|i| (i as f32 - 17.0) * 3.7).collect();
        let base = Tensor::from_slice(&d, &values, &[7, 5]).unwrap();
        let all = [DType::F32, DType::I32, DType::U32, DType::F16, DType::BF16];
        for from in all {
            let x = base.cast(from).unwrap();
            for to in all {
                let out = Tensor::zeros(&d, &[7, 5], to).unwrap();
                let params = strided_words(&out.operand(), &[&x.operand()]).unwrap();
                let source = with_overrides(builtin(&INDEXING, "cast_main", vec![]).full_source(), &[("FROM", from.code()), ("TO", to.code())]);
                let want = words(&x.cast(to).unwrap());
                let groups = (35usize.div_ceil(4 / to.size()) as u32).div_ceil(256);
                let got = run(&d, &source, "cast_main", params.words(), &[words(&x)], want.len(), groups);
                // A lone 16-bit element's word: only its own half counts.
                let mask = |i: usize| if to.size() == 2 && 35 % 2 == 1 && i + 1 == want.len() { 0xffff } else { u32::MAX };
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert_eq!(g & mask(i), w & mask(i), "cast {from} -> {to}: word {i}");
                }
            }
        }
    }

    #[test]
    fn where_gather_and_cumsum_match_the_cpu_kernels() {
        let d = Device::open(BackendChoice::Backend(BackendKind::Cpu)).unwrap();
        let x: Vec<f32> = (0..3 * 11 * 4).map(|i| ((i * 7919) % 997) as f32 / 50.0 - 9.0).collect();
        let t = Tensor::from_slice(&d, &x, &[3, 11, 4]).unwrap();
        // where: a u32 condition broadcast over rows, f32 operands.
        let cond = Tensor::from_slice(&d, &[1u32, 0, 0, 1], &[4]).unwrap();
        let other = Tensor::from_slice(&d, &[-1.0f32], &[1]).unwrap();
        let out = Tensor::zeros(&d, &[3, 11, 4], DType::F32).unwrap();
        let views = [cond.broadcast_to(&[3, 11, 4]).unwrap(), t.clone(), other.broadcast_to(&[3, 11, 4]).unwrap()];
        let params = strided_words(&out.operand(), &views.iter().map(|v| v.operand()).collect::<Vec<_>>().iter().collect::<Vec<_>>()).unwrap();
        let source = builtin(&INDEXING, "where_main", vec![]).full_source();
        let got = run(&d, &source, "where_main", params.words(), &[words(&cond), words(&t), words(&other)], 132, 1);
        assert_eq!(got, words(&cond.select(&t, &other).unwrap()), "where");
        // gather along axis 1 with i32 and i64 indices: negative, and out of range either way.
        let i32s = Tensor::from_slice(&d, &[3i32, 0, -1, 11, -12, 5, -11], &[7]).unwrap();
        let i64s = Tensor::from_slice(&d, &[3i64, 1 << 40, -1, -(1 << 33), 10, -11, 0], &[7]).unwrap();
        for (idx, kind, first) in [(i32s, 1, 3), (i64s, 2, 1)] {
            for mode in [IndexMode::Error, IndexMode::Clip, IndexMode::Fill] {
                let params = GatherWords { outer: 3, len: 11, inner: 4, count: 7, x: 0, indices: 0, out: 0, mode: mode.code() };
                let source = with_overrides(builtin(&INDEXING, "gather_main", vec![]).full_source(), &[("INDEX_KIND", kind)]);
                let (xs, is) = (Buffer::from_slice(&d, &words(&t)).unwrap(), Buffer::from_slice(&d, &words(&idx)).unwrap());
                let out = Buffer::from_slice(&d, &[0x7fa5_a5a5u32; 84]).unwrap();
                let status = Buffer::from_slice(&d, &[u32::MAX]).unwrap();
                run_on_cpu(&d, &source, "gather_main", params.words(), &[bound(&xs), bound(&is), bound(&out), bound(&status)], [1, 1, 1]).unwrap();
                let want = if mode == IndexMode::Error { IndexMode::Fill } else { mode };
                assert_eq!(out.read_blocking().unwrap(), words(&t.gather_with(1, &idx, want).unwrap()), "gather {kind} {mode:?}");
                let found = if mode == IndexMode::Error { first } else { u32::MAX };
                assert_eq!(status.read_blocking().unwrap(), [found], "gather's status, {kind} {mode:?}");
            }
        }
        // cumsum along axis 1 (f32 and i32), whole lines.
        let ints: Vec<i32> = x.iter().map(|&v| (v * 1e6) as i32).collect();
        let f32s = scan(&d, crate::ops::common::webgpu::VAL_F32, &x);
        let want = t.cumsum(1).unwrap().to_vec_blocking::<f32>().unwrap();
        for (i, (g, w)) in f32s.iter().zip(&want).enumerate() {
            assert!((g - w).abs() <= 1e-5 * (1.0 + w.abs()), "f32 cumsum: element {i} is {g}, the CPU's {w}");
        }
        let i32s = scan(&d, crate::ops::common::webgpu::VAL_I32, &ints);
        assert_eq!(i32s, Tensor::from_slice(&d, &ints, &[3, 11, 4]).unwrap().cumsum(1).unwrap().to_vec_blocking::<i32>().unwrap(), "i32 cumsum");
    }
}
