//! The quantised matmul on the CPU: columns of the output in parallel tasks; each task
//! dequantises one row of packed weights at a time into a buffer of `k` floats (it stays in
//! the L1 / L2 cache) and takes its dot product with every row of A, so each weight is
//! unpacked once whatever `m` is.

use crate::base::par::*;

use super::{QMatmul, ZERO_FLOAT, ZERO_PACKED};
use crate::hal::cpu::{read_guard, write_guard};
use crate::Result;

/// Output columns per parallel task.
const COLUMNS: usize = 16;

/// The operands' words, each from its view's first element.
struct Words<'a> {
    a: &'a [u32],
    packed: &'a [u32],
    scales: &'a [u32],
    /// Packed zero points from the tensor's first word, or f32 ones.
    zero: Option<&'a [u32]>,
    bias: Option<&'a [u32]>,
}

pub(super) fn qmatmul(op: &QMatmul<'_>) -> Result<()> {
    let (a, packed, scales) = (
        read_guard(op.a.buf)?,
        read_guard(op.packed.buf)?,
        read_guard(op.scales.buf)?,
    );
    let zero = op.zero.as_ref().map(|z| read_guard(z.buf)).transpose()?;
    let bias = op.bias.as_ref().map(|b| read_guard(b.buf)).transpose()?;
    let words = Words {
        a: &a[op.a.layout.offset..],
        packed: &packed[op.packed.layout.offset..],
        scales: &scales[op.scales.layout.offset..],
        zero: zero
            .as_ref()
            .zip(op.zero.as_ref())
            .map(|(w, z)| &w[z.layout.offset..]),
        bias: bias
            .as_ref()
            .zip(op.bias.as_ref())
            .map(|(w, b)| &w[b.layout.offset..]),
    };
    let (m, n) = (op.m, op.n);
    let dims = Dims {
        m,
        k: op.k,
        bits: op.bits,
        block: op.block,
        blocks: op.blocks(),
        block_words: op.block_words(),
        zero_mode: op.zero_mode,
        zero_row_bytes: op.zero_row_bytes(),
    };
    let columns: Vec<Vec<f32>> = (0..n.div_ceil(COLUMNS))
        .into_par_iter()
        .map(|t| task(dims, &words, t * COLUMNS..((t + 1) * COLUMNS).min(n)))
        .collect();
    let mut os = write_guard(op.out.buf)?;
    let out = &mut os[op.out.layout.offset..op.out.layout.offset + m * n];
    for (t, sums) in columns.iter().enumerate() {
        let width = sums.len() / m.max(1);
        for (r, row) in sums.chunks(width.max(1)).enumerate() {
            let at = r * n + t * COLUMNS;
            for (o, v) in out[at..at + row.len()].iter_mut().zip(row) {
                *o = v.to_bits();
            }
        }
    }
    Ok(())
}

/// What the tasks read of the launch: its sizes (not its operands, which threads cannot
/// share in every build).
#[derive(Clone, Copy)]
struct Dims {
    m: usize,
    k: usize,
    bits: usize,
    block: usize,
    blocks: usize,
    block_words: usize,
    zero_mode: u32,
    zero_row_bytes: usize,
}

/// The outputs of `cols` for every row of A, row-major (`m x cols.len()`).
fn task(op: Dims, w: &Words<'_>, cols: std::ops::Range<usize>) -> Vec<f32> {
    let (m, k) = (op.m, op.k);
    let width = cols.len();
    let mut row = vec![0.0f32; k];
    let mut sums = vec![0.0f32; m * width];
    for (j, c) in cols.enumerate() {
        dequantise(op, w, c, &mut row);
        let bias = w.bias.map_or(0.0, |b| f32::from_bits(b[c]));
        for r in 0..m {
            sums[r * width + j] = dot(&w.a[r * k..(r + 1) * k], &row) + bias;
        }
    }
    sums
}

/// Row `c` of the weights, dequantised into `row` (`k` floats; the padding of the last block
/// is left out).
fn dequantise(op: Dims, w: &Words<'_>, c: usize, row: &mut [f32]) {
    let (bits, blocks, per_block) = (op.bits, op.blocks, op.block_words);
    let mask = (1u32 << bits) - 1;
    let per_word = 32 / bits;
    let words = &w.packed[c * blocks * per_block..(c + 1) * blocks * per_block];
    for (b, (block, values)) in words
        .chunks(per_block)
        .zip(row.chunks_mut(op.block))
        .enumerate()
    {
        let scale = f32::from_bits(w.scales[c * blocks + b]);
        let zero = zero_point(op, w, c, b);
        for (word, out) in block.iter().zip(values.chunks_mut(per_word)) {
            for (i, o) in out.iter_mut().enumerate() {
                let q = (word >> (i * bits)) & mask;
                *o = (q as f32 - zero) * scale;
            }
        }
    }
}

/// The zero point of block `b` of row `c`.
fn zero_point(op: Dims, w: &Words<'_>, c: usize, b: usize) -> f32 {
    match (op.zero_mode, w.zero) {
        (ZERO_PACKED, Some(z)) => {
            let bit = c * op.zero_row_bytes * 8 + b * op.bits;
            ((z[bit / 32] >> (bit % 32)) & ((1u32 << op.bits) - 1)) as f32
        }
        (ZERO_FLOAT, Some(z)) => f32::from_bits(z[c * op.blocks + b]),
        _ => (1u32 << (op.bits - 1)) as f32,
    }
}

/// `Σ a_i · f32(b_i)` over words of f32 `a` and floats `b`, in eight lanes (vectorised).
fn dot(a: &[u32], b: &[f32]) -> f32 {
    let mut lanes = [0.0f32; 8];
    let (a8, b8) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ar, br) = (a8.remainder(), b8.remainder());
    for (x, y) in a8.zip(b8) {
        for ((l, x), y) in lanes.iter_mut().zip(x).zip(y) {
            *l += f32::from_bits(*x) * y;
        }
    }
    let tail: f32 = ar.iter().zip(br).map(|(x, y)| f32::from_bits(*x) * y).sum();
    lanes.iter().sum::<f32>() + tail
}
