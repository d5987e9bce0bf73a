//! Casts on the CPU, chunks in parallel (f32 <-> f16 / bf16 through `half`'s vectorised
//! slice conversions where the views are contiguous).

use crate::base::par::*;

use super::{cast_bits64, Cast};
use crate::hal::cpu::{read_guard, write_guard};
use crate::ops::common::cpu::{offsets_from, CHUNK};
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
        (DType::F32, DType::F16) => dst
            .par_chunks_mut(2 * chunk)
            .zip(src.par_chunks(4 * chunk))
            .for_each(|(d, s)| {
                bytemuck::cast_slice_mut::<u8, f16>(d)
                    .convert_from_f32_slice(bytemuck::cast_slice(s));
            }),
        (DType::F32, DType::BF16) => dst
            .par_chunks_mut(2 * chunk)
            .zip(src.par_chunks(4 * chunk))
            .for_each(|(d, s)| {
                bytemuck::cast_slice_mut::<u8, bf16>(d)
                    .convert_from_f32_slice(bytemuck::cast_slice(s));
            }),
        (DType::F16, DType::F32) => dst
            .par_chunks_mut(4 * chunk)
            .zip(src.par_chunks(2 * chunk))
            .for_each(|(d, s)| {
                bytemuck::cast_slice::<u8, f16>(s)
                    .convert_to_f32_slice(bytemuck::cast_slice_mut(d));
            }),
        (DType::BF16, DType::F32) => dst
            .par_chunks_mut(4 * chunk)
            .zip(src.par_chunks(2 * chunk))
            .for_each(|(d, s)| {
                bytemuck::cast_slice::<u8, bf16>(s)
                    .convert_to_f32_slice(bytemuck::cast_slice_mut(d));
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
        let dst = &mut bytemuck::cast_slice_mut::<u32, u8>(&mut os)
            [start..start + out.layout.numel() * to.size()];
        if cast_fast(src, &x, from, to, dst) {
            return Ok(());
        }
    }
    let (in_size, out_size) = (from.size(), to.size());
    let n = out.layout.numel();
    let start = out.layout.offset * out_size;
    let dst = &mut bytemuck::cast_slice_mut::<u32, u8>(&mut os)[start..start + n * out_size];
    dst.par_chunks_mut(CHUNK * out_size)
        .enumerate()
        .for_each(|(c, chunk)| {
            for (o, xi) in chunk
                .chunks_exact_mut(out_size)
                .zip(offsets_from(x.layout, c * CHUNK))
            {
                let bits = cast_bits64(load(src, xi, in_size), from, to);
                o.copy_from_slice(&bits.to_le_bytes()[..out_size]);
            }
        });
    Ok(())
}
