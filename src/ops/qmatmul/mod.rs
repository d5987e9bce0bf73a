//! Matmul with block-quantised weights, as onnxruntime's `MatMulNBits` stores them:
//! `A · dequant(B)ᵀ (+ bias)`. Every backend's kernel reads B as its packed 4- or 8-bit words
//! and dequantises them in registers (the CPU one row of B at a time, into a buffer of `k`
//! floats); B is never unpacked to f32 in device memory.

backend_modules!();

use super::cost::OpCost;
use super::{backends, cast, copy, launch, widen, OpRequest, Operand};
use crate::base::layout::Layout;
use crate::{DType, Error, Queue, Result, Tensor};

/// Block-quantised weights `[n, k]` as `MatMulNBits` stores them: each row's `k` weights in
/// blocks of `block` (the last one padded), weight `j` of a block `(q_j - zero) * scale`,
/// the `q_j` unsigned `bits`-bit values packed low bits first.
#[derive(Clone, Copy)]
pub struct QuantWeights<'a> {
    /// u8 `[n, blocks, block · bits / 8]`: the packed values.
    pub packed: &'a Tensor,
    /// `n · blocks` floats (f32, f16 or bf16): each block's scale.
    pub scales: &'a Tensor,
    /// Each block's zero point: u8 packed like the values (`n` rows of
    /// `ceil(blocks · bits / 8)` bytes) or `n · blocks` floats; `None`: `2^(bits - 1)`.
    pub zero_points: Option<&'a Tensor>,
    /// Weights per row (the product's inner extent).
    pub k: usize,
    /// Bits per weight: 4 or 8.
    pub bits: usize,
    /// Weights per block: a power of two, at least 16.
    pub block: usize,
}

impl QuantWeights<'_> {
    /// Rows of weights (the product's output extent).
    pub fn n(&self) -> usize {
        self.packed.shape().first().copied().unwrap_or(0)
    }

    /// Blocks per row.
    pub fn blocks(&self) -> usize {
        self.k.div_ceil(self.block.max(1))
    }

    /// Bytes of one block.
    pub fn block_bytes(&self) -> usize {
        self.block * self.bits / 8
    }

    /// Bytes of one row's packed zero points.
    pub fn zero_row_bytes(&self) -> usize {
        (self.blocks() * self.bits).div_ceil(8)
    }

    /// Error unless the layout attributes and the tensors agree.
    fn check(&self) -> Result<()> {
        if self.bits != 4 && self.bits != 8 {
            return Err(Error::Invalid(format!(
                "qmatmul: bits = {}: expected 4 or 8",
                self.bits
            )));
        }
        if self.block < 16 || !self.block.is_power_of_two() || self.k == 0 {
            return Err(Error::Invalid(format!(
                "qmatmul: block = {}, k = {}: expected a power-of-two block of at least 16 \
                 and a positive k",
                self.block, self.k
            )));
        }
        let (n, blocks) = (self.n(), self.blocks());
        let p = self.packed;
        if p.dtype() != DType::U8 || p.shape() != [n, blocks, self.block_bytes()] {
            return Err(Error::shape(
                "qmatmul",
                format!(
                    "packed weights are {} {:?}: expected u8 [n, {blocks}, {}] (n rows, \
                     blocks of k, bytes per block)",
                    p.dtype(),
                    p.shape(),
                    self.block_bytes()
                ),
            ));
        }
        per_block("scales", self.scales, n * blocks)?;
        match self.zero_points {
            Some(z) if z.dtype() == DType::U8 => {
                if z.numel() != n * self.zero_row_bytes() {
                    return Err(Error::shape(
                        "qmatmul",
                        format!(
                            "packed zero points have {} bytes: expected n · ceil(blocks · \
                             bits / 8) = {}",
                            z.numel(),
                            n * self.zero_row_bytes()
                        ),
                    ));
                }
                Ok(())
            }
            Some(z) => per_block("zero points", z, n * blocks),
            None => Ok(()),
        }
    }
}

/// Error unless `t` holds `count` floats.
fn per_block(what: &str, t: &Tensor, count: usize) -> Result<()> {
    if !t.dtype().is_float() || t.numel() != count {
        return Err(Error::shape(
            "qmatmul",
            format!(
                "{what} are {} {:?}: expected {count} floats (n · blocks)",
                t.dtype(),
                t.shape()
            ),
        ));
    }
    Ok(())
}

/// `a · dequant(w)ᵀ (+ bias)` over the last axis of `a` (`[.., k]`, any float dtype; f16 and
/// bf16 computed in f32), giving `[.., n]` in `a`'s dtype. `bias` holds `n` floats.
pub fn qmatmul(
    queue: &Queue,
    a: &Tensor,
    w: &QuantWeights<'_>,
    bias: Option<&Tensor>,
) -> Result<Tensor> {
    w.check()?;
    let inputs = [Some(a), Some(w.packed), Some(w.scales), w.zero_points, bias];
    for t in inputs.into_iter().flatten() {
        queue.device().check_same(t.device(), "qmatmul operand")?;
    }
    let (k, n) = (w.k, w.n());
    if a.shape().last() != Some(&k) || !a.dtype().is_float() {
        return Err(Error::shape(
            "qmatmul",
            format!(
                "A is {} {:?}: expected floats with the last axis k = {k}",
                a.dtype(),
                a.shape()
            ),
        ));
    }
    if let Some(b) = bias {
        per_block("bias values", b, n)?;
    }
    let mut shape = a.shape().to_vec();
    let m = a.numel() / k;
    shape.pop();
    shape.push(n);
    let out = Tensor::uninit(queue, &shape, DType::F32)?;
    if out.numel() > 0 {
        record(queue, a, w, bias, &out, m)?;
    }
    if a.dtype() == DType::F32 {
        Ok(out)
    } else {
        cast::cast(queue, &out, a.dtype())
    }
}

/// Records the launch of `out = a · dequant(w)ᵀ (+ bias)` (`m` rows) on f32 operands.
fn record(
    queue: &Queue,
    a: &Tensor,
    w: &QuantWeights<'_>,
    bias: Option<&Tensor>,
    out: &Tensor,
    m: usize,
) -> Result<()> {
    let f32_of = |t: &Tensor| widen(queue, t)?.contiguous_on(queue);
    let a = f32_of(a)?;
    let scales = f32_of(w.scales)?;
    let packed = packed_words(queue, w.packed)?;
    let zero = match w.zero_points {
        Some(z) if z.dtype() == DType::U8 => Some((packed_words(queue, z)?, ZERO_PACKED)),
        Some(z) => Some((f32_of(z)?, ZERO_FLOAT)),
        None => None,
    };
    let bias = bias.map(f32_of).transpose()?;
    launch(
        queue,
        &QMatmul {
            a: a.operand(),
            packed: packed.operand(),
            scales: scales.operand(),
            zero: zero.as_ref().map(|(t, _)| t.operand()),
            zero_mode: zero.as_ref().map_or(ZERO_MID, |&(_, mode)| mode),
            bias: bias.as_ref().map(Tensor::operand),
            out: out.operand(),
            m,
            n: w.n(),
            k: w.k,
            bits: w.bits,
            block: w.block,
        },
        None,
    )
}

/// A u8 tensor's bytes as the u32 words the kernels read (four a word, lowest first),
/// starting at a word: a view where the bytes are contiguous from a word's start, else a copy.
fn packed_words(queue: &Queue, t: &Tensor) -> Result<Tensor> {
    let mut t = t.contiguous_on(queue)?;
    if t.layout.offset % 4 != 0 {
        let fresh = Tensor::uninit(queue, t.shape(), t.dtype())?;
        copy::copy_into(queue, &t, &fresh)?;
        t = fresh;
    }
    // Blocks hold whole words, so the last word lies inside the block.
    Ok(Tensor {
        layout: Layout::contiguous(&[t.numel().div_ceil(4)], t.layout.offset / 4),
        dtype: DType::U32,
        ..t
    })
}

/// Zero-point mode of the kernels: none given, `2^(bits - 1)`.
pub(crate) const ZERO_MID: u32 = 0;
/// Zero points packed like the weights, rows of `ceil(blocks · bits / 8)` bytes.
pub(crate) const ZERO_PACKED: u32 = 1;
/// Zero points as f32, one per block.
pub(crate) const ZERO_FLOAT: u32 = 2;

/// `out[m, n] = a[m, k] · dequant(packed)ᵀ (+ bias)`, all contiguous: `a`, `scales` (`n ·
/// blocks`), float zero points and `bias` (`n`) f32; `packed` and packed zero points u32
/// words of the packed bytes.
pub(crate) struct QMatmul<'a> {
    pub a: Operand<'a>,
    pub packed: Operand<'a>,
    pub scales: Operand<'a>,
    pub zero: Option<Operand<'a>>,
    pub zero_mode: u32,
    pub bias: Option<Operand<'a>>,
    pub out: Operand<'a>,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub bits: usize,
    pub block: usize,
}

impl QMatmul<'_> {
    /// Blocks per row of weights.
    pub(crate) fn blocks(&self) -> usize {
        self.k.div_ceil(self.block)
    }

    /// u32 words of one block of packed weights.
    pub(crate) fn block_words(&self) -> usize {
        self.block * self.bits / 32
    }

    /// Bytes of one row's packed zero points.
    pub(crate) fn zero_row_bytes(&self) -> usize {
        (self.blocks() * self.bits).div_ceil(8)
    }
}

impl OpRequest for QMatmul<'_> {
    fn cost(&self) -> OpCost {
        let ops = self.operands();
        let bytes = ops.iter().map(|o| super::cost::distinct(o) * 4).sum();
        OpCost {
            name: "qmatmul".into(),
            shapes: ops.iter().map(|o| o.layout.shape.clone()).collect(),
            dtype: DType::F32,
            bytes,
            flops: 2 * (self.m * self.n * self.k) as u64,
            variant: None,
        }
    }

    fn operands(&self) -> Vec<&Operand<'_>> {
        let mut ops = vec![&self.a, &self.packed, &self.scales];
        ops.extend(self.zero.as_ref());
        ops.extend(self.bias.as_ref());
        ops.push(&self.out);
        ops
    }

    backends!(qmatmul);
}

/// The quantised matmul as a method, recorded on the device's default queue.
impl Tensor {
    /// `self · dequant(w)ᵀ (+ bias)` over the last axis (see [`qmatmul`]).
    pub fn qmatmul(&self, w: &QuantWeights<'_>, bias: Option<&Tensor>) -> Result<Tensor> {
        qmatmul(&self.device().queue(), self, w, bias)
    }
}

/// Host copies of quantised weights, for the f64 reference.
pub struct HostQuant<'a> {
    /// The packed bytes, `[n, blocks, block · bits / 8]`.
    pub packed: &'a [u8],
    /// `n · blocks` scales.
    pub scales: &'a [f64],
    /// Packed zero-point bytes (rows of `ceil(blocks · bits / 8)`).
    pub zero_bytes: Option<&'a [u8]>,
    /// Float zero points, `n · blocks` (used when `zero_bytes` is `None`).
    pub zero_floats: Option<&'a [f64]>,
    /// Rows of weights.
    pub n: usize,
    /// Weights per row.
    pub k: usize,
    /// Bits per weight.
    pub bits: usize,
    /// Weights per block.
    pub block: usize,
}

impl HostQuant<'_> {
    /// Weight `j` of row `r`, dequantised.
    pub fn weight(&self, r: usize, j: usize) -> f64 {
        let blocks = self.k.div_ceil(self.block);
        let b = j / self.block;
        let bit = (r * blocks * self.block + j) * self.bits;
        let q = (self.packed[bit / 8] >> (bit % 8)) & ((1u16 << self.bits) - 1) as u8;
        let zero = match (self.zero_bytes, self.zero_floats) {
            (Some(z), _) => {
                let bit = r * (blocks * self.bits).div_ceil(8) * 8 + b * self.bits;
                f64::from((z[bit / 8] >> (bit % 8)) & ((1u16 << self.bits) - 1) as u8)
            }
            (None, Some(z)) => z[r * blocks + b],
            (None, None) => f64::from(1u32 << (self.bits - 1)),
        };
        (f64::from(q) - zero) * self.scales[r * blocks + b]
    }
}

/// The f64 reference: `a` (`m x k`, row-major) times the dequantised weights transposed, plus
/// `bias` (`n`), as `m x n`.
pub fn reference(a: &[f64], m: usize, w: &HostQuant<'_>, bias: Option<&[f64]>) -> Vec<f64> {
    let (n, k) = (w.n, w.k);
    let weights: Vec<f64> = (0..n * k).map(|i| w.weight(i / k, i % k)).collect();
    let mut out = vec![0.0; m * n];
    for (i, o) in out.iter_mut().enumerate() {
        let (r, c) = (i / n, i % n);
        let dot: f64 = (0..k).map(|j| a[r * k + j] * weights[c * k + j]).sum();
        *o = dot + bias.map_or(0.0, |b| b[c]);
    }
    out
}
