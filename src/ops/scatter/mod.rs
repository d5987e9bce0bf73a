//! Scatter: a copy of `data` with updates written or combined at indexed places (ONNX's
//! ScatterElements and ScatterND), with the indices read on the device. Every backend applies
//! the updates that meet at one element in their order (one invocation walks them), so the
//! results are deterministic: under [`ScatterReduction::None`] the last one wins, as in
//! numpy and onnxruntime. i64 values under none move as pairs of u32 words (no `shader-int64`
//! needed); their reductions compute in i64.

backend_modules!();

use super::cost::OpCost;
use super::gather::index_kind;
use super::{backends, launch, Lift, OpRequest, Operand};
use crate::{DType, Error, Queue, Result, Tensor};

/// How an update meets the element it lands on (ONNX's `reduction` attribute).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ScatterReduction {
    /// The update replaces the element.
    #[default]
    None,
    /// The element plus the update (integers wrap).
    Add,
    /// The element times the update (integers wrap).
    Mul,
    /// The larger of the two (NaN if either is NaN).
    Max,
    /// The smaller of the two (NaN if either is NaN).
    Min,
}

impl ScatterReduction {
    /// Every reduction, in code order.
    pub const ALL: [ScatterReduction; 5] = [
        ScatterReduction::None,
        ScatterReduction::Add,
        ScatterReduction::Mul,
        ScatterReduction::Max,
        ScatterReduction::Min,
    ];

    /// Whether the update replaces the element.
    fn is_none(self) -> bool {
        self == ScatterReduction::None
    }

    /// The kernels' code: 0 none, 1 add, 2 mul, 3 max, 4 min.
    fn code(self) -> u32 {
        self as u32
    }

    /// Its name, as ONNX spells it: `none`, `add`, `mul`, `max` or `min`.
    pub fn name(self) -> &'static str {
        ["none", "add", "mul", "max", "min"][self as usize]
    }

    /// The reduction named `name` (as [`ScatterReduction::name`] spells it).
    pub fn from_name(name: &str) -> Option<ScatterReduction> {
        Self::ALL.into_iter().find(|r| r.name() == name)
    }

    /// `old` met by `update` in f64 (the tests' reference; the kernels compute in the
    /// element's type).
    pub fn eval(self, old: f64, update: f64) -> f64 {
        let nan = old.is_nan() || update.is_nan();
        match self {
            ScatterReduction::None => update,
            ScatterReduction::Add => old + update,
            ScatterReduction::Mul => old * update,
            ScatterReduction::Max if nan => f64::NAN,
            ScatterReduction::Max => old.max(update),
            ScatterReduction::Min if nan => f64::NAN,
            ScatterReduction::Min => old.min(update),
        }
    }
}

/// ONNX's ScatterElements: a copy of `data` where, for each position `p` of `indices`, the
/// element at `p` with its `axis` coordinate replaced by `indices[p]` meets `updates[p]` by
/// `reduction`. `indices` (i32, u32 or i64) and `updates` share a shape of `data`'s rank, no
/// longer than `data` on any axis but `axis`. Negative indices count from the end; an index
/// outside `[-len, len)` skips its update (the data there stays). Updates meeting at one
/// element apply in the row-major order of their positions.
pub fn scatter_elements(
    queue: &Queue,
    data: &Tensor,
    indices: &Tensor,
    updates: &Tensor,
    axis: usize,
    reduction: ScatterReduction,
) -> Result<Tensor> {
    let (d, i) = (data.shape(), indices.shape());
    let fits = d.len() == i.len() && (0..d.len()).all(|k| k == axis || i[k] <= d[k]);
    if axis >= d.len() || !fits || updates.shape() != i {
        return Err(Error::Shape {
            op: "scatter_elements",
            detail: format!(
                "data {d:?}, indices {i:?}, updates {:?}, axis {axis}: expected indices and \
                 updates of one shape, of data's rank, no longer than data on each axis but \
                 the axis (below the rank)",
                updates.shape()
            ),
        });
    }
    let form = Form::Elements {
        data: d.to_vec(),
        shape: i.to_vec(),
        axis,
    };
    scatter(queue, data, indices, updates, reduction, form)
}

/// ONNX's ScatterND: a copy of `data` where each index tuple (the last axis of `indices`, of
/// length `k` at most `data`'s rank) picks a slice `data[i0, .., ik-1]`, which meets the
/// update slice at the tuple's position by `reduction`: `updates` is shaped as `indices`
/// without its last axis followed by `data`'s shape after `k` axes. Negative indices count
/// from the end; a tuple with an index outside its axis skips its update. Tuples apply in
/// their order.
pub fn scatter_nd(
    queue: &Queue,
    data: &Tensor,
    indices: &Tensor,
    updates: &Tensor,
    reduction: ScatterReduction,
) -> Result<Tensor> {
    let (d, i) = (data.shape(), indices.shape());
    let depth = i.last().copied().unwrap_or(usize::MAX);
    let want = (depth <= d.len()).then(|| [&i[..i.len() - 1], &d[depth..]].concat());
    if want.as_deref() != Some(updates.shape()) {
        return Err(Error::Shape {
            op: "scatter_nd",
            detail: format!(
                "data {d:?}, indices {i:?}, updates {:?}: expected indices of rank 1 or more \
                 whose last extent is at most data's rank, and updates shaped as the indices' \
                 leading axes then data's axes after that extent",
                updates.shape()
            ),
        });
    }
    let form = Form::Nd {
        data: d.to_vec(),
        depth,
        count: i[..i.len() - 1].iter().product(),
    };
    scatter(queue, data, indices, updates, reduction, form)
}

/// The scatter of `form`: data and updates lifted to a kernel value type, a copy of the
/// data, the updates applied in place, the result in the data's dtype.
fn scatter(
    queue: &Queue,
    data: &Tensor,
    indices: &Tensor,
    updates: &Tensor,
    reduction: ScatterReduction,
    form: Form,
) -> Result<Tensor> {
    if data.dtype() != updates.dtype() {
        return Err(Error::DType {
            op: "scatter",
            expected: format!("updates of the data's dtype ({})", data.dtype()),
            got: updates.dtype().to_string(),
        });
    }
    for (t, what) in [
        (data, "scatter data"),
        (indices, "indices"),
        (updates, "updates"),
    ] {
        queue.device().check_same(t.device(), what)?;
    }
    let kind = index_kind("scatter", indices)?;
    let lift = Lift::words("scatter", &[data, updates])?;
    let (data, updates) = (lift.up(queue, data)?, lift.up(queue, updates)?);
    let dtype = data.dtype();
    if !matches!(dtype, DType::F32 | DType::I32 | DType::U32 | DType::I64) {
        return Err(Error::DType {
            op: "scatter",
            expected: "float, integer or bool data".into(),
            got: dtype.to_string(),
        });
    }
    let out = Tensor::uninit(queue, data.shape(), dtype)?;
    super::copy::copy_into(queue, &data, &out)?;
    if out.numel() > 0 && updates.numel() > 0 {
        // Moving i64 values takes no 64-bit arithmetic: under none their word pairs scatter
        // as u32 (adapters without shader-int64 take them too).
        let (o, updates, indices, form) = if dtype == DType::I64 && reduction.is_none() {
            in_words(&out, &updates, indices, form)?
        } else {
            (out.clone(), updates, indices.clone(), form)
        };
        let updates = updates.contiguous_on(queue)?;
        let indices = indices.contiguous_on(queue)?.reshape(&[indices.numel()])?;
        let indices = if kind == 2 {
            super::common::words::flat_words(&indices)
        } else {
            indices
        };
        let op = Scatter {
            out: o.operand(),
            indices: indices.operand(),
            updates: updates.operand(),
            dtype: o.dtype(),
            kind,
            reduction,
            form,
        };
        launch(queue, &op, None)?;
    }
    lift.down(queue, out)
}

/// An i64 scatter as one of u32 word pairs: `out` and `updates` with a trailing axis of two
/// words, ScatterElements' indices repeated for both.
fn in_words(
    out: &Tensor,
    updates: &Tensor,
    indices: &Tensor,
    form: Form,
) -> Result<(Tensor, Tensor, Tensor, Form)> {
    let w = super::common::words::as_words("scatter", &[out, updates])?;
    let (o, u) = (w[0].clone(), w[1].clone());
    let pair = |shape: &[usize], n: usize| [shape, &[n]].concat();
    Ok(match form {
        Form::Elements { data, shape, axis } => {
            let idx = indices
                .reshape(&pair(&shape, 1))?
                .broadcast_to(&pair(&shape, 2))?;
            let form = Form::Elements {
                data: pair(&data, 2),
                shape: pair(&shape, 2),
                axis,
            };
            (o, u, idx, form)
        }
        Form::Nd { data, depth, count } => {
            let form = Form::Nd {
                data: pair(&data, 2),
                depth,
                count,
            };
            (o, u, indices.clone(), form)
        }
    })
}

/// Where a scatter's updates land.
pub(crate) enum Form {
    /// ScatterElements: indices and updates of `shape`, into `data` along `axis`.
    Elements {
        data: Vec<usize>,
        shape: Vec<usize>,
        axis: usize,
    },
    /// ScatterND: `count` tuples of `depth` indices into the leading axes of `data`, each
    /// with an update slice of `data`'s trailing axes.
    Nd {
        data: Vec<usize>,
        depth: usize,
        count: usize,
    },
}

/// The updates (contiguous, of the scatter's `form`) met by `reduction` into `out`, which
/// holds the data (contiguous) and is changed in place; `indices` are contiguous words
/// (`kind` 0 u32, 1 i32, 2 i64 as word pairs, low first).
pub(crate) struct Scatter<'a> {
    pub out: Operand<'a>,
    pub indices: Operand<'a>,
    pub updates: Operand<'a>,
    /// The values' dtype: f32, i32, u32 or i64.
    pub dtype: DType,
    pub kind: u32,
    pub reduction: ScatterReduction,
    pub form: Form,
}

impl OpRequest for Scatter<'_> {
    fn cost(&self) -> OpCost {
        OpCost {
            dtype: self.dtype,
            ..OpCost::simple(
                "scatter",
                &[&self.indices, &self.updates],
                self.updates.layout.numel() as u64,
            )
        }
    }

    fn operands(&self) -> Vec<&Operand<'_>> {
        vec![&self.out, &self.indices, &self.updates]
    }

    backends!(scatter);
}

/// The scatter ops as methods, recorded on the device's default queue.
impl Tensor {
    /// A copy with `updates` met into it at `indices` along `axis` (see
    /// [`super::scatter::scatter_elements`]).
    pub fn scatter_elements(
        &self,
        indices: &Tensor,
        updates: &Tensor,
        axis: usize,
        reduction: ScatterReduction,
    ) -> Result<Tensor> {
        let q = self.device().queue();
        scatter_elements(&q, self, indices, updates, axis, reduction)
    }
    /// A copy with the update slices met into it at the index tuples of `indices` (see
    /// [`super::scatter::scatter_nd`]).
    pub fn scatter_nd(
        &self,
        indices: &Tensor,
        updates: &Tensor,
        reduction: ScatterReduction,
    ) -> Result<Tensor> {
        scatter_nd(&self.device().queue(), self, indices, updates, reduction)
    }
}
