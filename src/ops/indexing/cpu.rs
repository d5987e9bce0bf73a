//! Casts, `where`, gather and cumulative sums on the CPU, chunks in parallel.

use crate::base::par::*;

use super::{cast_bits64, resolve_index, Cast, Cumsum, Gather, Where};
use crate::ops::common::cpu::{integer_bits, offsets_from, out_words, put_integer, CHUNK};
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
    let (x, indices, out) = (op.x, op.indices, op.out);
    let (len, inner, count) = (op.len, op.inner, op.count);
    let (xs, is) = (read_guard(x.buf)?, read_guard(indices.buf)?);
    let per = if op.kind == 2 { 2 } else { 1 };
    let words = &is[indices.layout.offset..indices.layout.offset + count * per];
    let at: Vec<Option<usize>> = (0..count).map(|j| resolve_index(index_value(words, op.kind, j), len, op.mode)).collect();
    if let (Some(status), Some(first)) = (op.status, at.iter().position(Option::is_none)) {
        let mut ss = write_guard(status.buf)?;
        let word = &mut out_words(&mut ss, &status)[0];
        *word = (*word).min(first as u32);
    }
    let mut os = write_guard(out.buf)?;
    let xw = &xs[x.layout.offset..];
    let rows = out_words(&mut os, &out);
    // Each task fills one [count, inner] block of an outer index.
    rows.par_chunks_mut((count * inner).max(1)).enumerate().for_each(|(o, block)| {
        for (&t, dst) in at.iter().zip(block.chunks_mut(inner.max(1))) {
            match t {
                Some(t) => dst.copy_from_slice(&xw[(o * len + t) * inner..(o * len + t + 1) * inner]),
                None => dst.fill(0),
            }
        }
    });
    Ok(())
}

/// Index `j` of `words` (`kind` 0 u32, 1 i32, 2 i64 as word pairs, low first).
fn index_value(words: &[u32], kind: u32, j: usize) -> i64 {
    match kind {
        0 => i64::from(words[j]),
        1 => i64::from(words[j] as i32),
        _ => (u64::from(words[2 * j]) | u64::from(words[2 * j + 1]) << 32) as i64,
    }
}

/// Cumulative sums along the middle axis of a contiguous `[outer, len, inner]` input.
pub(super) fn cumsum(op: &Cumsum<'_>) -> Result<()> {
    match op.dtype {
        // Floats sum in f64; integers as their bits in a u64, wrapping (the low 32 bits of a
        // 32-bit type's sum are its wrapping sum, the same bits for i32 and u32).
        DType::F32 => scan(op, 1, 0.0, |a, x, e| a + f64::from(f32::from_bits(x[e])), |o, a| o[0] = (a as f32).to_bits()),
        d => {
            let wide = d == DType::I64;
            scan(op, if wide { 2 } else { 1 }, 0u64, |a, x, e| a.wrapping_add(integer_bits(x, e, wide)), put_integer)
        }
    }
}

/// Each task scans one `[len, inner]` block of elements of `per` words, inner columns side
/// by side: the running value starts at `zero`, takes element `e` of the block's words with
/// `add`, and `finish` writes each output's words from it.
fn scan<A: Copy + Send + Sync>(op: &Cumsum<'_>, per: usize, zero: A, add: impl Fn(A, &[u32], usize) -> A + Sync, finish: impl Fn(&mut [u32], A) + Sync) -> Result<()> {
    let (x, out, n, inner) = (op.x, op.out, op.outer * op.len * op.inner, op.inner.max(1));
    let xs = read_guard(x.buf)?;
    let mut os = write_guard(out.buf)?;
    let xv = &xs[x.layout.offset * per..][..n * per];
    let ov = &mut os[out.layout.offset * per..][..n * per];
    let block = (op.len * inner).max(1) * per;
    ov.par_chunks_mut(block).zip(xv.par_chunks(block)).for_each(|(o, x)| {
        let (mut acc, mut column) = (vec![zero; inner], 0);
        for (e, dst) in o.chunks_mut(per).enumerate() {
            acc[column] = add(acc[column], x, e);
            finish(dst, acc[column]);
            column = if column + 1 == inner { 0 } else { column + 1 };
        }
    });
    Ok(())
}
