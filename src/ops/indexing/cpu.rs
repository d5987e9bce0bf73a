//! Casts, `where`, gather and cumulative sums on the CPU, chunks in parallel.

use crate::base::par::*;

use super::{cast_bits64, Cast, Cumsum, Gather, Where};
use crate::ops::common::cpu::{elements, offsets_from, out_elements, out_words, Stored, CHUNK};
use crate::hal::cpu::{read_guard, write_guard};
use crate::ops::Operand;
use crate::{DType, Result};

/// Element `i` (of `size` bytes: 2, 4 or 8) of `bytes`, zero-extended.
fn load(bytes: &[u8], i: usize, size: usize) -> u64 {
    let mut word = [0u8; 8];
    word[..size].copy_from_slice(&bytes[i * size..(i + 1) * size]);
    u64::from_le_bytes(word)
}

/// Contiguous conversions between f32 and f16 / bf16 through `half`'s slice conversions
/// (vectorised where the CPU has F16C); `false` if the pair or layout is not one of them.
fn cast_fast(src: &[u8], x: &Operand<'_>, from: DType, to: DType, dst: &mut [u8]) -> bool {
    use half::slice::HalfFloatSliceExt;
    use half::{bf16, f16};
    if !x.layout.is_contiguous() {
        return false;
    }
    let n = x.layout.numel();
    let start = x.layout.offset * from.size();
    let src = &src[start..start + n * from.size()];
    let chunk = CHUNK;
    match (from, to) {
        (DType::F32, DType::F16) => dst.par_chunks_mut(2 * chunk).zip(src.par_chunks(4 * chunk)).for_each(|(d, s)| {
            bytemuck::cast_slice_mut::<u8, f16>(d).convert_from_f32_slice(bytemuck::cast_slice(s));
        }),
        (DType::F32, DType::BF16) => dst.par_chunks_mut(2 * chunk).zip(src.par_chunks(4 * chunk)).for_each(|(d, s)| {
            bytemuck::cast_slice_mut::<u8, bf16>(d).convert_from_f32_slice(bytemuck::cast_slice(s));
        }),
        (DType::F16, DType::F32) => dst.par_chunks_mut(4 * chunk).zip(src.par_chunks(2 * chunk)).for_each(|(d, s)| {
            bytemuck::cast_slice::<u8, f16>(s).convert_to_f32_slice(bytemuck::cast_slice_mut(d));
        }),
        (DType::BF16, DType::F32) => dst.par_chunks_mut(4 * chunk).zip(src.par_chunks(2 * chunk)).for_each(|(d, s)| {
            bytemuck::cast_slice::<u8, bf16>(s).convert_to_f32_slice(bytemuck::cast_slice_mut(d));
        }),
        _ => return false,
    }
    true
}

pub(super) fn cast(op: &Cast<'_>) -> Result<()> {
    let (x, from, to, out) = (op.x, op.from, op.to, op.out);
    let xs = read_guard(x.buf)?;
    let mut os = write_guard(out.buf)?;
    let src: &[u8] = bytemuck::cast_slice(&xs);
    {
        let start = out.layout.offset * to.size();
        let dst = &mut bytemuck::cast_slice_mut::<u32, u8>(&mut os)[start..start + out.layout.numel() * to.size()];
        if cast_fast(src, &x, from, to, dst) {
            return Ok(());
        }
    }
    let (in_size, out_size) = (from.size(), to.size());
    let n = out.layout.numel();
    let start = out.layout.offset * out_size;
    let dst = &mut bytemuck::cast_slice_mut::<u32, u8>(&mut os)[start..start + n * out_size];
    dst.par_chunks_mut(CHUNK * out_size).enumerate().for_each(|(c, chunk)| {
        for (o, xi) in chunk.chunks_exact_mut(out_size).zip(offsets_from(x.layout, c * CHUNK)) {
            let bits = cast_bits64(load(src, xi, in_size), from, to);
            o.copy_from_slice(&bits.to_le_bytes()[..out_size]);
        }
    });
    Ok(())
}

/// Whether a condition word is true: non-zero (for f32: not ±0, so NaN is true).
fn truthy(bits: u32, dtype: DType) -> bool {
    if dtype == DType::F32 {
        bits & 0x7fff_ffff != 0
    } else {
        bits != 0
    }
}

pub(super) fn where_(op: &Where<'_>) -> Result<()> {
    let (cond, cond_dtype, a, b, out) = (op.cond, op.cond_dtype, op.a, op.b, op.out);
    let (cs, as_, bs) = (read_guard(cond.buf)?, read_guard(a.buf)?, read_guard(b.buf)?);
    let mut os = write_guard(out.buf)?;
    out_words(&mut os, &out).par_chunks_mut(CHUNK).enumerate().for_each(|(c, chunk)| {
        let start = c * CHUNK;
        let lanes = offsets_from(cond.layout, start).zip(offsets_from(a.layout, start)).zip(offsets_from(b.layout, start));
        for (o, ((ci, ai), bi)) in chunk.iter_mut().zip(lanes) {
            *o = if truthy(cs[ci], cond_dtype) { as_[ai] } else { bs[bi] };
        }
    });
    Ok(())
}

pub(super) fn gather(op: &Gather<'_>) -> Result<()> {
    let (x, indices, signed, out, fill) = (op.x, op.indices, op.signed, op.out, op.fill);
    let (len, inner, count) = (op.len, op.inner, op.count);
    let (xs, is) = (read_guard(x.buf)?, read_guard(indices.buf)?);
    let mut os = write_guard(out.buf)?;
    let xw = &xs[x.layout.offset..];
    let idx = &is[indices.layout.offset..indices.layout.offset + count];
    let rows = out_words(&mut os, &out);
    // Each task fills one [count, inner] block of an outer index.
    rows.par_chunks_mut((count * inner).max(1)).enumerate().for_each(|(o, block)| {
        for (j, dst) in block.chunks_mut(inner.max(1)).enumerate() {
            let raw = idx[j];
            let at = if signed { usize::try_from(raw as i32).ok() } else { Some(raw as usize) };
            match at.filter(|&t| t < len) {
                Some(t) => dst.copy_from_slice(&xw[(o * len + t) * inner..(o * len + t + 1) * inner]),
                None => dst.fill(fill),
            }
        }
    });
    Ok(())
}

/// Cumulative sums along the middle axis of a contiguous `[outer, len, inner]` input.
pub(super) fn cumsum(op: &Cumsum<'_>) -> Result<()> {
    match op.dtype {
        // Floats sum in f64, integers in their own width (the sums wrap, the same bits for i32 and u32).
        DType::I32 | DType::U32 => scan::<u32, u32>(op, 0, |a, v| a.wrapping_add(v), |a| a),
        DType::I64 => scan::<[u32; 2], i64>(op, 0, |a, v| a.wrapping_add(v.get()), <[u32; 2]>::put),
        _ => scan::<f32, f64>(op, 0.0, |a, v| a + f64::from(v), |a| a as f32),
    }
}

/// Each task scans one `[len, inner]` block, inner columns side by side: the running value
/// starts at `zero`, takes each element with `add`, and each output is its `finish`.
fn scan<T: Stored, A: Copy + Send + Sync>(op: &Cumsum<'_>, zero: A, add: impl Fn(A, T) -> A + Sync, finish: impl Fn(A) -> T + Sync) -> Result<()> {
    let (x, out, outer, len, inner) = (op.x, op.out, op.outer, op.len, op.inner);
    let xs = read_guard(x.buf)?;
    let mut os = write_guard(out.buf)?;
    let xv: &[T] = &elements(&xs)[x.layout.offset..x.layout.offset + outer * len * inner];
    let ov: &mut [T] = out_elements(&mut os, &out);
    ov.par_chunks_mut((len * inner).max(1)).zip(xv.par_chunks((len * inner).max(1))).for_each(|(o, x)| {
        let mut acc = vec![zero; inner];
        for (orow, xrow) in o.chunks_mut(inner.max(1)).zip(x.chunks(inner.max(1))) {
            for ((o, &v), a) in orow.iter_mut().zip(xrow).zip(acc.iter_mut()) {
                *a = add(*a, v);
                *o = finish(*a);
            }
        }
    });
    Ok(())
}
