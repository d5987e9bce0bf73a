//! The `com.microsoft` contrib operators of onnxruntime's transformer optimizer output: fused
//! normalisations with a residual (`SkipLayerNormalization`, …), BERT's embedding layer
//! (`EmbedLayerNormalization`), GELU variants and multi-head attention on the fused attention
//! op (grouped-query attention with a cache in `gqa`), rotary position embeddings, and the
//! fused convolution and products (`fused`).

mod fused;
mod gqa;

use super::{one, op, Ctx, OpDef};
use crate::base::error::Result;
use crate::onnx::value::Val;
use crate::onnx::Node;
use crate::ops::attention::{attention, AttentionParams};
use crate::ops::concat::concat;
use crate::ops::gather::gather;
use crate::ops::norm::{layer_norm_stats, norm_trailing};
use crate::ops::{BinaryOp, NormKind, NormParams, ReduceOp, UnaryOp};
use crate::{DType, Tensor};

/// The operators of the `com.microsoft` domain.
pub(super) const OPS: &[OpDef] = &[
    op("SkipLayerNormalization", |c| skip_norm(c, NormKind::Layer)).outputs(4),
    op("SkipSimplifiedLayerNormalization", |c| {
        skip_norm(c, NormKind::Rms)
    })
    .outputs(4)
    .refusing(no_mean),
    op("SimplifiedLayerNormalization", simplified).outputs(2),
    op("EmbedLayerNormalization", embed_norm)
        .outputs(3)
        .refusing(segments_paired),
    op("FastGelu", fast_gelu),
    op("BiasGelu", bias_gelu),
    op("QuickGelu", quick_gelu),
    op("Attention", packed_attention).refusing(packed_refusal),
    op("MultiHeadAttention", multi_head).refusing(multi_head_refusal),
    op("GroupQueryAttention", gqa::group_query)
        .outputs(3)
        .refusing(gqa::refusal),
    op("RotaryEmbedding", rotary).refusing(packed_batching),
    op("FusedConv", fused::conv).refusing(fused::fused_conv_refusal),
    op("FusedGemm", fused::gemm).refusing(fused::gemm_refusal),
    op("FusedMatMul", fused::fused_matmul).refusing(fused::matmul_refusal),
];

/// The operators onnxruntime defines in the default domain although they are contrib ones.
pub(super) const DEFAULT_DOMAIN: &[OpDef] =
    &[op("SimplifiedLayerNormalization", simplified).outputs(2)];

/// Whether `node` names input `i`.
fn has_input(node: &Node, i: usize) -> bool {
    node.inputs.get(i).is_some_and(Option::is_some)
}

/// An RMS normalisation has no mean to give.
fn no_mean(node: &Node) -> Option<String> {
    let asked = node.outputs.get(1).is_some_and(Option::is_some);
    asked.then(|| "output 1 (mean) is asked for; an RMS normalisation has none".into())
}

/// The sum `input + skip (+ bias)` normalised over the last axis, scaled by `gamma` (and
/// shifted by `beta`); also the statistics and the sum itself where asked for.
fn skip_norm(c: &Ctx<'_>, kind: NormKind) -> Result<Vec<Val>> {
    let (x, skip, gamma) = (c.tensor(0)?, c.tensor(1)?, c.tensor(2)?);
    let layer = kind == NormKind::Layer;
    let beta = if layer { c.opt_tensor(3)? } else { None };
    let bias = c.opt_tensor(if layer { 4 } else { 3 })?;
    let eps = c.float("epsilon", 1e-12)?;
    let hidden = x.shape().last().copied().unwrap_or(0);
    if gamma.shape() != [hidden] {
        return Err(c.error(format!(
            "gamma has shape {:?}: expected [{hidden}], the input's last axis",
            gamma.shape()
        )));
    }
    let mut sum = x.add(&skip)?;
    if let Some(b) = &bias {
        sum = sum.add(b)?;
    }
    let params = NormParams {
        weight: Some(&gamma),
        bias: beta.as_ref(),
        eps,
        act: None,
    };
    let y = norm_trailing(c.queue, kind, &sum, 1, params)?;
    let mut out = vec![Val::Device(y)];
    if c.node.outputs.iter().skip(1).any(Option::is_some) {
        let (mean, inv) = if layer {
            layer_norm_stats(c.queue, &sum, 1, eps)?
        } else {
            (sum.clone(), inv_rms(&sum, 1, eps)?)
        };
        out.extend([mean, inv, sum].map(Val::Device));
    }
    Ok(out)
}

/// `EmbedLayerNormalization` takes segment ids and their embedding together or neither.
fn segments_paired(node: &Node) -> Option<String> {
    (has_input(node, 1) != has_input(node, 4)).then(|| {
        "segment_ids (input 1) and segment_embedding (input 4) are not both given or both left \
         out"
        .into()
    })
}

/// `EmbedLayerNormalization`: the word embeddings of `input_ids [b, s]`, plus the position
/// embeddings (of `position_ids [b or 1, s]`, else of 0 to s - 1) and the segment ones of
/// `segment_ids`, layer-normalised with `gamma` and `beta`; also `mask_index`, the count of
/// ones in each row of `mask` (0 without one), and the sum before the norm, where asked for.
fn embed_norm(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let (sum, [b, s]) = embeddings(c)?;
    let gamma = c.tensor(5)?;
    let params = NormParams {
        weight: Some(&gamma),
        bias: Some(&c.tensor(6)?),
        eps: c.float("epsilon", 1e-12)?,
        act: None,
    };
    let y = norm_trailing(c.queue, NormKind::Layer, &sum, 1, params)?;
    if !c.node.outputs.iter().skip(1).any(Option::is_some) {
        return one(y);
    }
    let mask_index = match c.opt_tensor(7)? {
        Some(m) if m.shape() == [b, s] => m
            .binary_scalar(BinaryOp::Equal, 1.0)?
            .cast(DType::I32)?
            .reduce_axes(ReduceOp::Sum, &[1], false)?,
        Some(m) => {
            return Err(c.error(format!(
                "mask has shape {:?}: expected [{b}, {s}], input_ids' shape",
                m.shape()
            )))
        }
        None => Tensor::zeros(c.device, &[b], DType::I32)?,
    };
    Ok([y, mask_index, sum].map(Val::Device).into())
}

/// The summed word, position and segment embeddings of an `EmbedLayerNormalization`, with
/// `input_ids`' `[batch, seq]`.
fn embeddings(c: &Ctx<'_>) -> Result<(Tensor, [usize; 2])> {
    let (ids, words, table) = (c.tensor(0)?, c.tensor(2)?, c.tensor(3)?);
    let (hidden, positions) = match (words.shape(), table.shape()) {
        ([_, h], [p, h2]) if h == h2 => (*h, *p),
        (w, p) => {
            return Err(c.error(format!(
                "word_embedding {w:?} and position_embedding {p:?}: expected [words, hidden] \
                 and [positions, hidden]"
            )))
        }
    };
    let gamma = c.tensor(5)?;
    let (b, s) = match (ids.shape(), gamma.shape()) {
        ([b, s], [g]) if *g == hidden => (*b, *s),
        (i, g) => {
            return Err(c.error(format!(
                "input_ids {i:?} and gamma {g:?}: expected [batch, seq] and [{hidden}]"
            )))
        }
    };
    let at = match c.opt_tensor(8)? {
        Some(p) => gather(c.queue, &table, 0, &p)?,
        None if s <= positions => table.slice(0, 0..s)?,
        None => {
            return Err(c.error(format!(
                "{s} tokens: expected at most position_embedding's {positions}"
            )))
        }
    };
    let mut sum = gather(c.queue, &words, 0, &ids)?.add(&at)?;
    if let (Some(seg), Some(emb)) = (c.opt_tensor(1)?, c.opt_tensor(4)?) {
        sum = sum.add(&gather(c.queue, &emb, 0, &seg)?)?;
    }
    Ok((sum, [b, s]))
}

/// `1 / sqrt(mean(x²) + eps)` over the last `count` axes, kept.
fn inv_rms(x: &Tensor, count: usize, eps: f32) -> Result<Tensor> {
    let axes: Vec<usize> = (x.rank() - count..x.rank()).collect();
    x.mul(x)?
        .reduce_axes(ReduceOp::Mean, &axes, true)?
        .add_scalar(eps.into())?
        .unary(UnaryOp::Rsqrt)
}

/// `SimplifiedLayerNormalization`: RMS normalisation over the axes from `axis` on, scaled;
/// with `1 / rms` as a second output where asked for.
fn simplified(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let x = c.tensor(0)?;
    let axis = c.axis(c.int("axis", -1)?, x.rank())?;
    let count = x.rank() - axis;
    let scale = c.tensor(1)?;
    let eps = c.float("epsilon", 1e-5)?;
    let params = NormParams {
        weight: Some(&scale),
        bias: None,
        eps,
        act: None,
    };
    let y = norm_trailing(c.queue, NormKind::Rms, &x, count, params)?;
    let mut out = vec![Val::Device(y)];
    if c.node.outputs.get(1).is_some_and(Option::is_some) {
        out.push(Val::Device(inv_rms(&x, count, eps)?));
    }
    Ok(out)
}

/// Input 0 plus input 1 where given.
fn with_bias(c: &Ctx<'_>) -> Result<Tensor> {
    let x = c.tensor(0)?;
    match c.opt_tensor(1)? {
        Some(b) => x.add(&b),
        None => Ok(x),
    }
}

/// `FastGelu`: GELU's tanh approximation of `x (+ bias)`.
fn fast_gelu(c: &Ctx<'_>) -> Result<Vec<Val>> {
    one(with_bias(c)?.unary(UnaryOp::GeluTanh)?)
}

/// `BiasGelu`: GELU (the erf form) of `a + b`.
fn bias_gelu(c: &Ctx<'_>) -> Result<Vec<Val>> {
    one(c.tensor(0)?.add(&c.tensor(1)?)?.unary(UnaryOp::GeluErf)?)
}

/// `QuickGelu`: `x * sigmoid(alpha * x)`.
fn quick_gelu(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let x = c.tensor(0)?;
    let alpha = c.float("alpha", 1.702)?;
    let gate = x.mul_scalar(alpha.into())?.unary(UnaryOp::Sigmoid)?;
    one(x.mul(&gate)?)
}

/// What both attention operators refuse: inputs `past` from index `past` on, the cache
/// attributes, and a mask filter that is not finite.
fn cache_refusal(node: &Node, past: usize) -> Option<String> {
    if let Some(i) = (past..node.inputs.len()).find(|&i| has_input(node, i)) {
        return Some(format!(
            "input {i} (a past key/value cache) is given; only attention without a cache runs"
        ));
    }
    for name in ["do_rotary", "past_present_share_buffer"] {
        if node.attrs.int(name).ok().flatten().is_some_and(|&v| v != 0) {
            return Some(format!("{name} is set; expected 0"));
        }
    }
    None
}

/// `Attention` runs without a past cache or rotary embedding.
fn packed_refusal(node: &Node) -> Option<String> {
    cache_refusal(node, 4)
        .or_else(|| has_input(node, 6).then(|| "input 6 (past_sequence_length) is given".into()))
}

/// `MultiHeadAttention` runs with separate query, key and value and no cache.
fn multi_head_refusal(node: &Node) -> Option<String> {
    if !(has_input(node, 1) && has_input(node, 2)) {
        return Some("key or value is missing: packed query/key/value is not supported".into());
    }
    cache_refusal(node, 6)
}

/// The attention settings of a node: heads, causal, scale and the masked-out score.
struct Heads {
    heads: usize,
    causal: bool,
    scale: Option<f32>,
    filter: f32,
}

impl Heads {
    fn of(c: &Ctx<'_>) -> Result<Heads> {
        let heads = c.int("num_heads", 0)?;
        if heads < 1 {
            return Err(c.error(format!("num_heads is {heads}: expected at least 1")));
        }
        let scale = c.float("scale", 0.0)?;
        Ok(Heads {
            heads: heads as usize,
            causal: c.int("unidirectional", 0)? != 0,
            scale: (scale != 0.0).then_some(scale),
            filter: c.float("mask_filter_value", -10000.0)?,
        })
    }

    /// `[b, s, heads * d]` as the view `[b, heads, s, d]`.
    fn split(&self, c: &Ctx<'_>, t: &Tensor, what: &str) -> Result<Tensor> {
        let s = t.shape().to_vec();
        if s.len() != 3 || s[2] % self.heads != 0 {
            return Err(c.error(format!(
                "{what} has shape {s:?}: expected [batch, seq, hidden] with hidden a \
                 multiple of num_heads {}",
                self.heads
            )));
        }
        t.reshape(&[s[0], s[1], self.heads, s[2] / self.heads])?
            .permute(&[0, 2, 1, 3])
    }

    /// Attention of the `[b, s, hidden]` projections, given as `[b, s, hidden]` again.
    fn run(&self, c: &Ctx<'_>, [q, k, v]: [&Tensor; 3], mask: Option<&Tensor>) -> Result<Tensor> {
        let (qh, kh, vh) = (
            self.split(c, q, "query")?,
            self.split(c, k, "key")?,
            self.split(c, v, "value")?,
        );
        let params = AttentionParams {
            mask,
            causal: self.causal,
            scale: self.scale,
        };
        let o = attention(c.queue, &qh, &kh, &vh, params)?;
        let s = o.shape().to_vec();
        o.permute(&[0, 2, 1, 3])?
            .contiguous()?
            .reshape(&[s[0], s[2], s[1] * s[3]])
    }

    /// The additive mask of a key mask (`[b]` key lengths, `[b, lk]` or `[b, lq, lk]` 0/1)
    /// plus an attention bias `[b or 1, heads or 1, lq, lk]`, either optional; `bl` is
    /// `[b, lk]`.
    fn mask(&self, c: &Ctx<'_>, keys: usize, bl: [usize; 2]) -> Result<Option<Tensor>> {
        let (b, bias) = (bl[0], c.opt_tensor(5)?);
        if c.opt(keys).is_none() {
            return Ok(bias);
        }
        let shape = c.input(keys)?.shape()?.to_vec();
        let mask = match shape.len() {
            1 if shape[0] == b => self.lengths_mask(c, keys, bl)?,
            2 | 3 if shape[0] == b => {
                let mut to = shape.clone();
                to.insert(1, 1);
                if to.len() == 3 {
                    to.insert(1, 1);
                }
                let m = c.tensor(keys)?.cast(DType::F32)?;
                // 1 keeps a key (0), 0 masks it out (the filter value).
                m.affine((-self.filter).into(), self.filter.into())?
                    .reshape(&to)?
            }
            _ => {
                return Err(c.error(format!(
                    "input {keys} (the key mask) has shape {shape:?}: expected [{b}] key \
                     lengths, or [{b}, keys] or [{b}, queries, keys] of 0 and 1"
                )))
            }
        };
        Ok(Some(match bias {
            Some(bias) => mask.add(&bias)?,
            None => mask,
        }))
    }

    /// `[b, 1, 1, lk]`: 0 for the keys before each batch's length, the filter value after.
    fn lengths_mask(&self, c: &Ctx<'_>, keys: usize, [b, lk]: [usize; 2]) -> Result<Tensor> {
        let lens = c.ints(keys)?.unwrap_or_default();
        let data: Vec<f32> = (0..b * lk)
            .map(|at| {
                let keep = lens.get(at / lk).is_some_and(|&n| ((at % lk) as i64) < n);
                if keep {
                    0.0
                } else {
                    self.filter
                }
            })
            .collect();
        Tensor::from_slice(c.device, &data, &[b, 1, 1, lk])
    }
}

/// `Attention`: `input [b, s, in] @ weights [in, q + k + v] (+ bias)` split into the query,
/// key and value projections (`qkv_hidden_sizes`, else three equal parts), attended per head.
fn packed_attention(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let h = Heads::of(c)?;
    let (x, w) = (c.tensor(0)?, c.tensor(1)?);
    let total = w.shape().last().copied().unwrap_or(0);
    let sizes = match c.int_list("qkv_hidden_sizes")? {
        Some(s) if s.len() == 3 && s[0] == s[1] && s.iter().all(|&v| v > 0) => {
            [s[0] as usize, s[1] as usize, s[2] as usize]
        }
        Some(s) => {
            return Err(c.error(format!(
                "qkv_hidden_sizes is {s:?}: expected three positive sizes, query's equal key's"
            )))
        }
        None => [total / 3; 3],
    };
    if x.rank() != 3 || w.rank() != 2 || sizes.iter().sum::<usize>() != total {
        return Err(c.error(format!(
            "input {:?} and weights {:?}: expected [batch, seq, in] and [in, {}]",
            x.shape(),
            w.shape(),
            sizes.iter().sum::<usize>()
        )));
    }
    // A `[q + k + v]` bias rides in the projection's epilogue; any other shape is added.
    let qkv = match c.opt_tensor(2)? {
        Some(bias) if bias.shape() == [total] => {
            crate::ops::matmul::linear(c.queue, &x, &w, Some(&bias), None)?
        }
        Some(bias) => crate::ops::matmul::matmul(c.queue, &x, &w)?.add(&bias)?,
        None => crate::ops::matmul::matmul(c.queue, &x, &w)?,
    };
    let q = qkv.slice(2, 0..sizes[0])?;
    let k = qkv.slice(2, sizes[0]..sizes[0] + sizes[1])?;
    let v = qkv.slice(2, sizes[0] + sizes[1]..total)?;
    let mask = h.mask(c, 3, [x.shape()[0], x.shape()[1]])?;
    one(h.run(c, [&q, &k, &v], mask.as_ref())?)
}

/// `MultiHeadAttention` of projected query `[b, s, hidden]`, key and value `[b, l, hidden]`,
/// with their biases (`[q + k + v]`) added where given.
fn multi_head(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let h = Heads::of(c)?;
    let (mut q, mut k, mut v) = (c.tensor(0)?, c.tensor(1)?, c.tensor(2)?);
    if let Some(bias) = c.opt_tensor(3)? {
        let (dq, dk) = (q.shape().last().copied(), k.shape().last().copied());
        let (dq, dk) = (dq.unwrap_or(0), dk.unwrap_or(0));
        let dv = bias.numel().saturating_sub(dq + dk);
        if bias.rank() != 1 || v.shape().last() != Some(&dv) {
            return Err(c.error(format!(
                "bias has shape {:?}: expected [{}], the query's, key's and value's widths",
                bias.shape(),
                dq + dk + v.shape().last().copied().unwrap_or(0)
            )));
        }
        q = q.add(&bias.slice(0, 0..dq)?)?;
        k = k.add(&bias.slice(0, dq..dq + dk)?)?;
        v = v.add(&bias.slice(0, dq + dk..dq + dk + dv)?)?;
    }
    let at = |t: &Tensor, i: usize| t.shape().get(i).copied().unwrap_or(0);
    let mask = h.mask(c, 4, [at(&q, 0), at(&k, 1)])?;
    one(h.run(c, [&q, &k, &v], mask.as_ref())?)
}

/// `RotaryEmbedding` runs on one sequence per batch entry.
fn packed_batching(node: &Node) -> Option<String> {
    let on = node.attrs.int("is_packed_batching").ok().flatten();
    on.is_some_and(|&v| v != 0)
        .then(|| "is_packed_batching is set; expected 0".into())
}

/// `RotaryEmbedding`: each head's first `rotary_embedding_dim` features (the cache's width
/// twice) rotated by the angles of its position, as halves or (`interleaved`) as pairs; of
/// `[b, s, hidden]` (heads from `num_heads`, else the cache's width) or `[b, heads, s, d]`.
fn rotary(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let x = c.tensor(0)?;
    let (cos, sin) = (c.host(2)?, c.host(3)?);
    let (rows, half) = match cos.shape[..] {
        [r, h] if sin.shape == cos.shape && h > 0 => (r, h),
        _ => {
            return Err(c.error(format!(
                "cos_cache {:?} and sin_cache {:?}: expected equal [positions, rotary dim / 2]",
                cos.shape, sin.shape
            )))
        }
    };
    let shape = x.shape().to_vec();
    let heads = match (shape.len(), c.int("num_heads", 0)?) {
        (3, n) if n > 0 => n as usize,
        (3, _) => shape[2] / (2 * half),
        (_, _) => shape.get(1).copied().unwrap_or(0),
    };
    let bad = |why: &str| c.error(format!("input {shape:?}, cos_cache {:?}: {why}", cos.shape));
    let x4 = match shape[..] {
        [b, s, hidden] if heads > 0 && hidden % heads == 0 => {
            x.reshape(&[b, s, heads, hidden / heads])?
        }
        [_, _, _, _] => x.permute(&[0, 2, 1, 3])?,
        _ => {
            return Err(bad(
                "expected [batch, seq, hidden] or [batch, heads, seq, head]",
            ))
        }
    };
    let [b, s, _, d] = [0, 1, 2, 3].map(|i| x4.shape()[i]);
    // As onnxruntime: the rotary dimension is the head's unless the attribute sets it.
    let dim = match c.int("rotary_embedding_dim", 0)? {
        0 => d,
        r => r as usize,
    };
    if dim != 2 * half || dim > d {
        return Err(bad(&format!(
            "rotary dimension {dim} (rotary_embedding_dim, else the head's {d}): expected twice \
             the cache's width and at most the head"
        )));
    }
    let ids = c.ints(1)?.unwrap_or_default();
    let position = |at: usize| match ids.len() {
        1 => ids[0] + (at % s) as i64,
        _ => ids.get(at).copied().unwrap_or(-1),
    };
    let (cos, sin) = (cos.to_f64(), sin.to_f64());
    let mut angles = [
        Vec::with_capacity(b * s * half),
        Vec::with_capacity(b * s * half),
    ];
    for at in 0..b * s {
        let p = position(at);
        if p < 0 || p as usize >= rows {
            return Err(bad(&format!(
                "position {p} is outside the cache's {rows} rows"
            )));
        }
        let row = p as usize * half..(p as usize + 1) * half;
        angles[0].extend(cos[row.clone()].iter().map(|&v| v as f32));
        angles[1].extend(sin[row].iter().map(|&v| v as f32));
    }
    let y = rotate(c, &x4, angles, c.int("interleaved", 0)? != 0)?;
    one(if shape.len() == 3 {
        y.reshape(&shape)?
    } else {
        y.permute(&[0, 2, 1, 3])?.contiguous()?
    })
}

/// `x [b, s, heads, d]` with its first `2 * half` features rotated by the `[b * s * half]`
/// cosines and sines (halves: `x1 cos - x2 sin, x2 cos + x1 sin`; or the same of pairs).
fn rotate(c: &Ctx<'_>, x: &Tensor, [cos, sin]: [Vec<f32>; 2], interleaved: bool) -> Result<Tensor> {
    let [b, s, n, d] = [0, 1, 2, 3].map(|i| x.shape()[i]);
    let half = cos.len() / (b * s);
    let rot = x.slice(3, 0..2 * half)?;
    let (pairs, at) = if interleaved {
        (rot.reshape(&[b, s, n, half, 2])?, 4)
    } else {
        (rot.reshape(&[b, s, n, 2, half])?, 3)
    };
    let angle_shape: &[usize] = if interleaved {
        &[b, s, 1, half, 1]
    } else {
        &[b, s, 1, 1, half]
    };
    let cos = Tensor::from_slice(c.device, &cos, angle_shape)?;
    let sin = Tensor::from_slice(c.device, &sin, angle_shape)?;
    let (x1, x2) = (pairs.slice(at, 0..1)?, pairs.slice(at, 1..2)?);
    let y1 = x1.mul(&cos)?.sub(&x2.mul(&sin)?)?;
    let y2 = x2.mul(&cos)?.add(&x1.mul(&sin)?)?;
    let y = concat(c.queue, &[&y1, &y2], at)?.reshape(&[b, s, n, 2 * half])?;
    if 2 * half == d {
        return Ok(y);
    }
    concat(c.queue, &[&y, &x.slice(3, 2 * half..d)?], 3)
}
