//! `GroupQueryAttention`: causal attention with fewer key/value heads than query heads and a
//! key/value cache, as exporters for small language models write it, on the fused attention
//! op. Follows onnxruntime 1.32's CPU kernel: each batch entry's total length is its
//! `seqlens_k + 1`; a first prompt (`sequence == total_sequence_length`) has no past, any other
//! run appends its keys after the `total - sequence` cached ones.

use super::{has_input, Ctx, Heads};
use crate::base::error::Result;
use crate::onnx::value::Val;
use crate::onnx::Node;
use crate::ops::attention::{attention, AttentionParams};
use crate::ops::concat::concat;
use crate::Tensor;

/// What `GroupQueryAttention` does not take, found at load: packed query/key/value, rotary
/// embedding, a local window, softcap, smooth softmax, the QK output, the inputs past
/// `total_sequence_length`, and head counts that do not divide.
pub(super) fn refusal(node: &Node) -> Option<String> {
    if !(has_input(node, 1) && has_input(node, 2)) {
        return Some("key or value is missing: packed query/key/value is not supported".into());
    }
    if has_input(node, 3) != has_input(node, 4) {
        return Some("past_key and past_value are not both given or both left out".into());
    }
    if let Some(i) = (7..node.inputs.len()).find(|&i| has_input(node, i)) {
        return Some(format!(
            "input {i} (cos/sin cache, position_ids, attention_bias or head_sink) is given; \
             expected none"
        ));
    }
    let int = |name: &str| node.attrs.int(name).ok().flatten().copied();
    for (name, off) in [
        ("do_rotary", 0),
        ("smooth_softmax", 0),
        ("qk_output", 0),
        ("local_window_size", -1),
    ] {
        if let Some(v) = int(name).filter(|&v| v != off) {
            return Some(format!("{name} is {v}; expected {off}"));
        }
    }
    if let Some(v) = node
        .attrs
        .float("softcap")
        .ok()
        .flatten()
        .filter(|&&v| v != 0.0)
    {
        return Some(format!("softcap is {v}; expected 0"));
    }
    match (int("num_heads"), int("kv_num_heads")) {
        (Some(n), Some(kv)) if n > 0 && kv > 0 && n % kv == 0 => None,
        (n, kv) => Some(format!(
            "num_heads {n:?} and kv_num_heads {kv:?}: expected positive counts, the first a \
             multiple of the second"
        )),
    }
}

/// `GroupQueryAttention` of `query [b, s, heads * d]` over `key`, `value [b, s, kv_heads * d]`
/// appended to `past_key`, `past_value [b, kv_heads, past, d]`: the output `[b, s, heads * d]`
/// and `present_key`, `present_value [b, kv_heads, max(total, past), d]` (zero after each
/// entry's keys). Query `i` of an entry with `p` cached keys attends to keys `0..=p + i`.
pub(super) fn group_query(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let (heads, kv) = (c.int("num_heads", 1)?, c.int("kv_num_heads", 1)?);
    let scale = c.float("scale", 0.0)?;
    let split = |heads: i64| Heads {
        heads: heads as usize,
        causal: false,
        scale: (scale != 0.0).then_some(scale),
        filter: 0.0,
    };
    let (q_heads, kv_heads) = (split(heads), split(kv));
    let q = q_heads.split(c, &c.tensor(0)?, "query")?;
    let k = kv_heads.split(c, &c.tensor(1)?, "key")?;
    let v = kv_heads.split(c, &c.tensor(2)?, "value")?;
    let [b, _, s, d] = [0, 1, 2, 3].map(|i| q.shape()[i]);
    if k.shape() != [b, kv_heads.heads, s, d] || v.shape() != k.shape() {
        return Err(c.error(format!(
            "query {:?}, key {:?} and value {:?} (as [batch, heads, seq, head]): expected key \
             and value of [{b}, {}, {s}, {d}]",
            q.shape(),
            k.shape(),
            v.shape(),
            kv_heads.heads
        )));
    }
    let past = [c.opt_tensor(3)?, c.opt_tensor(4)?];
    let geometry = Cache::of(c, [b, kv_heads.heads, s, d], past[0].as_ref())?;
    let [pk, pv] = past;
    let present_k = geometry.present(c, pk.as_ref(), &k)?;
    let present_v = geometry.present(c, pv.as_ref(), &v)?;
    // Each key/value head serves `heads / kv` query heads, in order.
    let group = q_heads.heads / kv_heads.heads;
    let widen = |t: &Tensor| {
        t.reshape(&[b, kv_heads.heads, 1, geometry.present, d])?
            .broadcast_to(&[b, kv_heads.heads, group, geometry.present, d])?
            .reshape(&[b, q_heads.heads, geometry.present, d])
    };
    let mask = geometry.mask(c)?;
    let params = AttentionParams {
        mask: Some(&mask),
        causal: false,
        scale: q_heads.scale,
    };
    let o = attention(
        c.queue,
        &q,
        &widen(&present_k)?,
        &widen(&present_v)?,
        params,
    )?;
    let y = o
        .permute(&[0, 2, 1, 3])?
        .contiguous()?
        .reshape(&[b, s, q_heads.heads * d])?;
    Ok([y, present_k, present_v].map(Val::Device).into())
}

/// Where a run's keys go in the cache: each batch entry's count of cached keys before them,
/// and the present cache's length.
struct Cache {
    /// `[b, kv_heads, s, d]` of the new keys.
    dims: [usize; 4],
    /// The cached keys of each batch entry that precede the new ones.
    before: Vec<usize>,
    /// The present cache's length: `max(total_sequence_length, past)`.
    present: usize,
}

impl Cache {
    /// The cache of a run with new keys of `dims`, from `seqlens_k`, `total_sequence_length`
    /// and the past cache's shape.
    fn of(c: &Ctx<'_>, dims: [usize; 4], past: Option<&Tensor>) -> Result<Cache> {
        let [b, kv, s, d] = dims;
        let past = match past.map(Tensor::shape) {
            None => 0,
            Some([pb, pk, p, pd]) if [*pb, *pk, *pd] == [b, kv, d] => *p,
            Some(other) => {
                return Err(c.error(format!(
                    "past_key has shape {other:?}: expected [{b}, {kv}, past, {d}]"
                )))
            }
        };
        let lens = c.ints(5)?.unwrap_or_default();
        let total = match c.ints(6)?.as_deref() {
            Some(&[t]) if t >= 1 => t as usize,
            t => {
                return Err(c.error(format!(
                    "total_sequence_length is {t:?}: expected one positive count"
                )))
            }
        };
        let first = s == total;
        if !first && s > 1 && b != 1 {
            return Err(c.error(format!(
                "{s} new tokens with total_sequence_length {total}: a batch of {b}, expected 1 \
                 when a prompt follows a cache"
            )));
        }
        if past > 0 && total != past + s && total > past {
            return Err(c.error(format!(
                "total_sequence_length {total}: expected the past cache's {past} plus the {s} \
                 new tokens, or at most {past} (a cache of fixed length)"
            )));
        }
        let present = total.max(past);
        let before = Self::before(c, &lens, [b, s], first, [past, present])?;
        Ok(Cache {
            dims,
            before,
            present,
        })
    }

    /// Each batch entry's cached keys before the new ones: none in a first prompt, else its
    /// `seqlens_k + 1 - s`, which must fit the past and leave room in the present cache.
    fn before(
        c: &Ctx<'_>,
        lens: &[i64],
        [b, s]: [usize; 2],
        first: bool,
        [past, present]: [usize; 2],
    ) -> Result<Vec<usize>> {
        if lens.len() != b {
            return Err(c.error(format!(
                "seqlens_k has {} entries: expected {b}, one per batch entry",
                lens.len()
            )));
        }
        lens.iter()
            .map(|&l| {
                let cached = if first { 0 } else { l + 1 - s as i64 };
                let fits = cached >= 0
                    && (first || cached as usize <= past)
                    && cached as usize + s <= present;
                fits.then_some(cached as usize).ok_or_else(|| {
                    c.error(format!(
                        "seqlens_k {l} with {s} new tokens: {cached} cached keys, expected 0 to \
                         {past} (the past cache's) and at most {present} keys in all"
                    ))
                })
            })
            .collect()
    }

    /// The present cache `[b, kv_heads, present, d]`: each entry's cached rows of `past`, then
    /// `new`, then zeros.
    fn present(&self, c: &Ctx<'_>, past: Option<&Tensor>, new: &Tensor) -> Result<Tensor> {
        let [_, kv, s, d] = self.dims;
        let entries = self
            .before
            .iter()
            .enumerate()
            .map(|(i, &cached)| {
                let mut parts = Vec::new();
                if let Some(p) = past.filter(|_| cached > 0) {
                    parts.push(p.slice(0, i..i + 1)?.slice(2, 0..cached)?);
                }
                parts.push(new.slice(0, i..i + 1)?);
                let rest = self.present - cached - s;
                if rest > 0 {
                    parts.push(Tensor::zeros(c.device, &[1, kv, rest, d], new.dtype())?);
                }
                concat(c.queue, &parts.iter().collect::<Vec<_>>(), 2)
            })
            .collect::<Result<Vec<Tensor>>>()?;
        concat(c.queue, &entries.iter().collect::<Vec<_>>(), 0)
    }

    /// The additive mask `[b, 1, s, present]`: 0 where query `i` of an entry with `p` cached
    /// keys may see key `j` (`j <= p + i`), `-inf` elsewhere.
    fn mask(&self, c: &Ctx<'_>) -> Result<Tensor> {
        let [b, _, s, _] = self.dims;
        let t = self.present;
        let data: Vec<f32> = (0..b * s * t)
            .map(|at| {
                let (entry, i, j) = (at / (s * t), at / t % s, at % t);
                if j <= self.before[entry] + i {
                    0.0
                } else {
                    f32::NEG_INFINITY
                }
            })
            .collect();
        Tensor::from_slice(c.device, &data, &[b, 1, s, t])
    }
}
