//! The recurrent operators `LSTM`, `GRU` and `RNN`, composed from the op API one time step
//! at a time: the input projection of every step in one matrix product, then per step the
//! recurrent product, the gates' activations and the state update. Forward, reverse and
//! bidirectional; `sequence_lens` (per-batch lengths: steps past a length leave the state
//! as it is and give zeros), initial states, LSTM's peepholes and coupled gates, GRU's
//! `linear_before_reset`, the `activations` attribute with its alphas and betas, `clip`, and
//! both layouts. Biases ride in the matrix products' epilogues where they can, an LSTM step's
//! gates and state update run as two chained kernels where its activations allow, and one
//! step or one direction is given as a view rather than stacked: a small model's LSTM
//! (Silero VAD's) is a handful of launches a step.

use super::{op, Ctx, OpDef};
use crate::base::error::Result;
use crate::onnx::elem::ElemType;
use crate::onnx::graph::Node;
use crate::onnx::value::{HostData, HostTensor, Val};
use crate::ops::chain::{chain, Chain, Value};
use crate::ops::matmul::linear;
use crate::ops::{BinaryOp, UnaryOp};
use crate::{DType, Tensor};

/// The recurrent operators.
pub(super) const OPS: &[OpDef] = &[
    op("LSTM", |c| recur(c, Cell::Lstm))
        .outputs(3)
        .refusing(|n| spec(n, Cell::Lstm).err()),
    op("GRU", |c| recur(c, Cell::Gru))
        .outputs(2)
        .refusing(|n| spec(n, Cell::Gru).err()),
    op("RNN", |c| recur(c, Cell::Rnn))
        .outputs(2)
        .refusing(|n| spec(n, Cell::Rnn).err()),
];

/// Which recurrence.
#[derive(Clone, Copy, PartialEq)]
enum Cell {
    Lstm,
    Gru,
    Rnn,
}

impl Cell {
    /// Gates stacked in `W` and `R`: LSTM's `iofc`, GRU's `zrh`, RNN's one.
    fn gates(self) -> usize {
        match self {
            Cell::Lstm => 4,
            Cell::Gru => 3,
            Cell::Rnn => 1,
        }
    }

    /// The activation functions of one direction by default (`f, g, h`; `f, g`; `f`).
    fn defaults(self) -> &'static [&'static str] {
        match self {
            Cell::Lstm => &["Sigmoid", "Tanh", "Tanh"],
            Cell::Gru => &["Sigmoid", "Tanh"],
            Cell::Rnn => &["Tanh"],
        }
    }
}

/// An activation function with its parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Act {
    Unary(UnaryOp),
    Affine(f64, f64),
    LeakyRelu(f64),
    ThresholdedRelu(f64),
    ScaledTanh(f64, f64),
    HardSigmoid(f64, f64),
    Elu(f64),
    Softsign,
}

/// What a node asks, read from its attributes.
struct Spec {
    cell: Cell,
    /// One entry per direction: whether it runs back to front.
    reverse: Vec<bool>,
    /// The activations, direction after direction.
    acts: Vec<Act>,
    clip: Option<f64>,
    batch_first: bool,
    hidden: Option<usize>,
    linear_before_reset: bool,
    input_forget: bool,
}

/// The node's attributes as a [`Spec`], or why they cannot run.
fn spec(node: &Node, cell: Cell) -> std::result::Result<Spec, String> {
    let a = &node.attrs;
    let text = |e: crate::Error| e.to_string();
    let int = |name: &str, default: i64| -> std::result::Result<i64, String> {
        Ok(a.int(name).map_err(text)?.copied().unwrap_or(default))
    };
    let direction = a.string("direction").map_err(text)?;
    let reverse = match direction.map_or("forward", String::as_str) {
        "forward" => vec![false],
        "reverse" => vec![true],
        "bidirectional" => vec![false, true],
        other => {
            return Err(format!(
                "direction '{other}'; expected forward, reverse or bidirectional"
            ))
        }
    };
    let layout = int("layout", 0)?;
    if !(0..=1).contains(&layout) {
        return Err(format!("layout {layout}; expected 0 or 1"));
    }
    let clip = a.float("clip").map_err(text)?.map(|&v| f64::from(v));
    if clip.is_some_and(|v| v.is_nan() || v <= 0.0) {
        return Err(format!("clip {clip:?}; expected a positive threshold"));
    }
    let hidden = match int("hidden_size", -1)? {
        -1 => None,
        h if h > 0 => Some(h as usize),
        h => return Err(format!("hidden_size {h}; expected a positive size")),
    };
    let acts = activations(node, cell, reverse.len())?;
    Ok(Spec {
        cell,
        reverse,
        acts,
        clip,
        batch_first: layout == 1,
        hidden,
        linear_before_reset: cell == Cell::Gru && int("linear_before_reset", 0)? != 0,
        input_forget: cell == Cell::Lstm && int("input_forget", 0)? != 0,
    })
}

/// The activations of every direction: the node's list (one per function and direction, or
/// one per function for all directions), else the defaults. Alphas and betas are taken in
/// order by the functions that have them (as onnxruntime does), defaults where they run out.
fn activations(node: &Node, cell: Cell, dirs: usize) -> std::result::Result<Vec<Act>, String> {
    let a = &node.attrs;
    let text = |e: crate::Error| e.to_string();
    let funcs = cell.defaults().len();
    let names: Vec<String> = match a.strings("activations").map_err(text)? {
        Some(list) if list.len() == funcs * dirs => list.clone(),
        Some(list) if list.len() == funcs => (0..dirs).flat_map(|_| list.clone()).collect(),
        Some(list) => {
            return Err(format!(
                "{} activations {list:?}; expected {funcs} per direction ({dirs} directions)",
                list.len()
            ))
        }
        None => cell
            .defaults()
            .repeat(dirs)
            .iter()
            .map(|s| s.to_string())
            .collect(),
    };
    let alphas = a.floats("activation_alpha").map_err(text)?.cloned();
    let betas = a.floats("activation_beta").map_err(text)?.cloned();
    let mut alphas = alphas.unwrap_or_default().into_iter().map(f64::from);
    let mut betas = betas.unwrap_or_default().into_iter().map(f64::from);
    let mut out = Vec::with_capacity(names.len());
    for name in &names {
        let mut alpha = |d: Option<f64>| alphas.next().or(d);
        let mut beta = |d: Option<f64>| betas.next().or(d);
        let needs = |v: Option<f64>, what: &str| {
            v.ok_or_else(|| format!("activation {name} needs its {what}; none is given"))
        };
        out.push(match name.to_ascii_lowercase().as_str() {
            "relu" => Act::Unary(UnaryOp::Relu),
            "tanh" => Act::Unary(UnaryOp::Tanh),
            "sigmoid" => Act::Unary(UnaryOp::Sigmoid),
            "softplus" => Act::Unary(UnaryOp::Softplus),
            "softsign" => Act::Softsign,
            "affine" => Act::Affine(needs(alpha(None), "alpha")?, needs(beta(None), "beta")?),
            "leakyrelu" => Act::LeakyRelu(needs(alpha(Some(0.01)), "alpha")?),
            "thresholdedrelu" => Act::ThresholdedRelu(needs(alpha(Some(1.0)), "alpha")?),
            "scaledtanh" => {
                Act::ScaledTanh(needs(alpha(None), "alpha")?, needs(beta(None), "beta")?)
            }
            "hardsigmoid" => Act::HardSigmoid(
                needs(alpha(Some(0.2)), "alpha")?,
                needs(beta(Some(0.5)), "beta")?,
            ),
            "elu" => Act::Elu(needs(alpha(Some(1.0)), "alpha")?),
            _ => {
                return Err(format!(
                    "activation '{name}' is unknown; expected Relu, Tanh, Sigmoid, Affine, \
                     LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign or \
                     Softplus"
                ))
            }
        });
    }
    Ok(out)
}

/// `act(x)`.
fn apply(act: Act, x: &Tensor) -> Result<Tensor> {
    match act {
        Act::Unary(op) => x.unary(op),
        Act::Affine(a, b) => x.affine(a, b),
        Act::LeakyRelu(a) => {
            let low = x.binary_scalar(BinaryOp::Min, 0.0)?.mul_scalar(a)?;
            x.binary_scalar(BinaryOp::Max, 0.0)?.add(&low)
        }
        Act::ThresholdedRelu(a) => {
            // x where x > alpha, else 0: relu(x - alpha) is non-zero exactly there.
            let above = x.sub_scalar(a)?.unary(UnaryOp::Relu)?;
            let zero = Tensor::zeros(x.device(), &[1], x.dtype())?;
            crate::ops::select::where_(&x.device().queue(), &above, x, &zero)
        }
        Act::ScaledTanh(a, b) => x.mul_scalar(b)?.unary(UnaryOp::Tanh)?.mul_scalar(a),
        Act::HardSigmoid(a, b) => x
            .affine(a, b)?
            .binary_scalar(BinaryOp::Min, 1.0)?
            .binary_scalar(BinaryOp::Max, 0.0),
        Act::Elu(a) => {
            let low = x.binary_scalar(BinaryOp::Min, 0.0)?.unary(UnaryOp::Exp)?;
            low.affine(a, -a)?.add(&x.unary(UnaryOp::Relu)?)
        }
        Act::Softsign => x.div(&x.unary(UnaryOp::Abs)?.add_scalar(1.0)?),
    }
}

/// The weights of one direction, laid out for the steps.
struct Weights {
    /// `R` transposed, `[hidden, gates * hidden]` (GRU without `linear_before_reset`: the
    /// `z` and `r` gates only).
    rt: Tensor,
    /// GRU without `linear_before_reset`: `Rh` transposed.
    rt_h: Option<Tensor>,
    /// GRU with `linear_before_reset`: `Rbh`, added inside the reset gate's product.
    rbh: Option<Tensor>,
    /// LSTM's peepholes `i`, `o`, `f` (the order of the first three gates).
    peep: Option<[Tensor; 3]>,
}

/// One direction's recurrence.
struct Dir<'a> {
    spec: &'a Spec,
    /// This direction's activations (`f, g, h`).
    acts: &'a [Act],
    w: Weights,
    hidden: usize,
}

/// The state carried from step to step: `H`, and LSTM's cell `C`.
#[derive(Clone)]
struct State {
    h: Tensor,
    c: Option<Tensor>,
}

impl Dir<'_> {
    /// `act(clip(x))`.
    fn gate(&self, x: &Tensor, act: Act) -> Result<Tensor> {
        match self.spec.clip {
            Some(t) => apply(
                act,
                &x.binary_scalar(BinaryOp::Max, -t)?
                    .binary_scalar(BinaryOp::Min, t)?,
            ),
            None => apply(act, x),
        }
    }

    /// Columns `k * hidden ..` of gate `k` of `t`.
    fn part(&self, t: &Tensor, k: usize) -> Result<Tensor> {
        t.slice(1, k * self.hidden..(k + 1) * self.hidden)
    }

    /// One step from `s`, `xt` the step's input projection with its biases.
    fn step(&self, xt: &Tensor, s: &State) -> Result<State> {
        match self.spec.cell {
            Cell::Rnn => Ok(State {
                h: self.gate(&self.recurrent(xt, &s.h)?, self.acts[0])?,
                c: None,
            }),
            Cell::Gru => self.gru(xt, s),
            Cell::Lstm => self.lstm(xt, s),
        }
    }

    /// `xt + h Rᵀ`: for one sequence (`xt` one row), `xt` added in the product's epilogue.
    fn recurrent(&self, xt: &Tensor, h: &Tensor) -> Result<Tensor> {
        match xt.shape() {
            &[1, width] => {
                let row = xt.reshape(&[width])?;
                linear(&h.device().queue(), h, &self.w.rt, Some(&row), None)
            }
            _ => xt.add(&h.matmul(&self.w.rt)?),
        }
    }

    fn gru(&self, xt: &Tensor, s: &State) -> Result<State> {
        let (f, g) = (self.acts[0], self.acts[1]);
        let hr = s.h.matmul(&self.w.rt)?;
        let z = self.gate(&self.part(xt, 0)?.add(&self.part(&hr, 0)?)?, f)?;
        let r = self.gate(&self.part(xt, 1)?.add(&self.part(&hr, 1)?)?, f)?;
        let inner = match (&self.w.rt_h, &self.w.rbh) {
            (Some(rt_h), _) => r.mul(&s.h)?.matmul(rt_h)?,
            (None, Some(rbh)) => r.mul(&self.part(&hr, 2)?.add(rbh)?)?,
            (None, None) => r.mul(&self.part(&hr, 2)?)?,
        };
        let hh = self.gate(&self.part(xt, 2)?.add(&inner)?, g)?;
        // (1 - z) hh + z h = hh + z (h - hh)
        let h = hh.add(&z.mul(&s.h.sub(&hh)?)?)?;
        Ok(State { h, c: None })
    }

    fn lstm(&self, xt: &Tensor, s: &State) -> Result<State> {
        let (f, g, h) = (self.acts[0], self.acts[1], self.acts[2]);
        let pre = self.recurrent(xt, &s.h)?;
        let c_prev = s
            .c
            .as_ref()
            .ok_or_else(|| crate::Error::Internal("an LSTM step without its cell state".into()))?;
        if let Some(next) = self.lstm_chained(&pre, c_prev)? {
            return Ok(next);
        }
        let peep = |k: usize, c: &Tensor| -> Result<Tensor> {
            let x = self.part(&pre, k)?;
            match &self.w.peep {
                Some(p) => x.add(&p[k].mul(c)?),
                None => Ok(x),
            }
        };
        let i = self.gate(&peep(0, c_prev)?, f)?;
        let forget = if self.spec.input_forget {
            i.scalar_binary(1.0, BinaryOp::Sub)?
        } else {
            self.gate(&peep(2, c_prev)?, f)?
        };
        let cand = self.gate(&self.part(&pre, 3)?, g)?;
        let c = forget.mul(c_prev)?.add(&i.mul(&cand)?)?;
        let o = self.gate(&peep(1, &c)?, f)?;
        // As onnxruntime does: clip bounds the gates' inputs, not the cell state's.
        let h = o.mul(&apply(h, &c)?)?;
        Ok(State { h, c: Some(c) })
    }

    /// [`Dir::lstm`]'s gates and state update from the pre-activations `pre` as two chained
    /// kernels ([`chain`]): the cell state from the input, forget and candidate gates, then
    /// `H` from the output gate. `None` where they cannot chain: peepholes, an activation
    /// with parameters, an element type the chains do not take.
    fn lstm_chained(&self, pre: &Tensor, c_prev: &Tensor) -> Result<Option<State>> {
        let [Act::Unary(f), Act::Unary(g), Act::Unary(h)] = self.acts[..] else {
            return Ok(None);
        };
        let dtype = pre.dtype();
        let chains = matches!(dtype, DType::F32 | DType::F16 | DType::BF16);
        if self.w.peep.is_some() || !chains || c_prev.dtype() != dtype {
            return Ok(None);
        }
        let mut cell = Chain::new();
        let mut parts = vec![self.part(pre, 0)?];
        let i = self.chained_gate(&mut cell, Value::Input(0), f, dtype);
        let forget = if self.spec.input_forget {
            let one = cell.scalar(1.0, dtype);
            cell.binary(BinaryOp::Sub, one, i)
        } else {
            parts.push(self.part(pre, 2)?);
            self.chained_gate(&mut cell, Value::Input(1), f, dtype)
        };
        let cand = self.chained_gate(&mut cell, Value::Input(parts.len()), g, dtype);
        parts.push(self.part(pre, 3)?);
        let kept = cell.binary(BinaryOp::Mul, forget, Value::Input(parts.len()));
        parts.push(c_prev.clone());
        let added = cell.binary(BinaryOp::Mul, i, cand);
        cell.binary(BinaryOp::Add, kept, added);
        let mut out = Chain::new();
        let o = self.chained_gate(&mut out, Value::Input(0), f, dtype);
        let squashed = out.unary(h, Value::Input(1));
        out.binary(BinaryOp::Mul, o, squashed);
        let queue = pre.device().queue();
        let c = chain(&queue, &cell, &parts.iter().collect::<Vec<_>>())?;
        let h = chain(&queue, &out, &[&self.part(pre, 1)?, &c])?;
        Ok(Some(State { h, c: Some(c) }))
    }

    /// `act(clip(x))` as steps of `ch`, `dtype` the chain's.
    fn chained_gate(&self, ch: &mut Chain, x: Value, act: UnaryOp, dtype: DType) -> Value {
        let x = match self.spec.clip {
            Some(t) => {
                let (low, high) = (ch.scalar(-t, dtype), ch.scalar(t, dtype));
                let above = ch.binary(BinaryOp::Max, x, low);
                ch.binary(BinaryOp::Min, above, high)
            }
            None => x,
        };
        ch.unary(act, x)
    }

    /// Every step over `xw` (`[seq, batch, gates * hidden]`, already in this direction's
    /// order); `masks` (`[seq, batch, 1]`) keep the state where a sequence has ended. Gives
    /// `Y` (`[seq, batch, hidden]`) and the last state.
    fn run(&self, xw: &Tensor, masks: Option<&Tensor>, mut s: State) -> Result<(Tensor, State)> {
        let (seq, batch) = (xw.shape()[0], xw.shape()[1]);
        let width = xw.shape()[2];
        let mut ys = Vec::with_capacity(seq);
        for t in 0..seq {
            let xt = xw.slice(0, t..t + 1)?.reshape(&[batch, width])?;
            let next = self.step(&xt, &s)?;
            match masks {
                Some(m) => {
                    let m = m.slice(0, t..t + 1)?.reshape(&[batch, 1])?;
                    let keep = |new: &Tensor, old: &Tensor| {
                        crate::ops::select::where_(&new.device().queue(), &m, new, old)
                    };
                    ys.push(next.h.mul(&m)?);
                    s = State {
                        h: keep(&next.h, &s.h)?,
                        c: match (&next.c, &s.c) {
                            (Some(new), Some(old)) => Some(keep(new, old)?),
                            _ => None,
                        },
                    };
                }
                None => {
                    ys.push(next.h.clone());
                    s = next;
                }
            }
        }
        let y = stack(xw, &ys, &[batch, self.hidden])?;
        Ok((y, s))
    }
}

/// `parts` (each of `shape`) stacked on a new first axis; none gives an empty tensor of
/// `like`'s dtype, one a view of it.
fn stack(like: &Tensor, parts: &[Tensor], shape: &[usize]) -> Result<Tensor> {
    let mut one = vec![1];
    one.extend(shape);
    match parts {
        [] => {
            one[0] = 0;
            return Tensor::zeros(like.device(), &one, like.dtype());
        }
        [only] => return only.reshape(&one),
        _ => {}
    }
    let views = parts
        .iter()
        .map(|p| p.reshape(&one))
        .collect::<Result<Vec<_>>>()?;
    Tensor::concat(&views.iter().collect::<Vec<_>>(), 0)
}

/// The node's inputs, checked and in layout 0.
struct Inputs {
    /// `[seq, batch, input]`.
    x: Tensor,
    w: Tensor,
    r: Tensor,
    b: Option<Tensor>,
    /// Per-batch lengths where some sequence is shorter than `seq`.
    lens: Option<Vec<usize>>,
    h0: Option<Tensor>,
    c0: Option<Tensor>,
    p: Option<Tensor>,
    hidden: usize,
}

/// Reads and checks the node's inputs against `s`.
fn inputs(c: &Ctx<'_>, s: &Spec) -> Result<Inputs> {
    let swap = |t: Tensor| {
        if s.batch_first {
            t.permute(&[1, 0, 2])
        } else {
            Ok(t)
        }
    };
    let (x, w, r) = (swap(c.tensor(0)?)?, c.tensor(1)?, c.tensor(2)?);
    let dirs = s.reverse.len();
    let gates = s.cell.gates();
    if x.rank() != 3 || r.rank() != 3 {
        return Err(c.error(format!(
            "X {:?} and R {:?}: expected rank 3",
            x.shape(),
            r.shape()
        )));
    }
    let hidden = r.shape()[2];
    let (seq, batch, input) = (x.shape()[0], x.shape()[1], x.shape()[2]);
    let expect = |what: &str, t: &Tensor, want: &[usize]| {
        if t.shape() == want {
            Ok(())
        } else {
            Err(c.error(format!("{what} is {:?}; expected {want:?}", t.shape())))
        }
    };
    expect("W", &w, &[dirs, gates * hidden, input])?;
    expect("R", &r, &[dirs, gates * hidden, hidden])?;
    if s.hidden.is_some_and(|h| h != hidden) {
        return Err(c.error(format!("hidden_size {:?}; R holds {hidden}", s.hidden)));
    }
    let b = c.opt_tensor(3)?;
    if let Some(b) = &b {
        expect("B", b, &[dirs, 2 * gates * hidden])?;
    }
    let state = |i: usize, what: &str| -> Result<Option<Tensor>> {
        let t = c.opt_tensor(i)?.map(swap).transpose()?;
        if let Some(t) = &t {
            expect(what, t, &[dirs, batch, hidden])?;
        }
        Ok(t)
    };
    let (h0, c0) = (state(5, "initial_h")?, state(6, "initial_c")?);
    let p = if s.cell == Cell::Lstm {
        c.opt_tensor(7)?
    } else {
        None
    };
    if let Some(p) = &p {
        expect("P", p, &[dirs, 3 * hidden])?;
    }
    let lens = lengths(c, seq, batch)?;
    Ok(Inputs {
        x,
        w,
        r,
        b,
        lens,
        h0,
        c0,
        p,
        hidden,
    })
}

/// `sequence_lens` where some sequence is shorter than `seq`; each must lie in `0..=seq`.
fn lengths(c: &Ctx<'_>, seq: usize, batch: usize) -> Result<Option<Vec<usize>>> {
    let Some(raw) = c.ints(4)? else {
        return Ok(None);
    };
    if raw.len() != batch {
        return Err(c.error(format!(
            "sequence_lens has {} entries; expected one per batch entry ({batch})",
            raw.len()
        )));
    }
    let lens = raw
        .iter()
        .map(|&l| {
            usize::try_from(l)
                .ok()
                .filter(|&l| l <= seq)
                .ok_or_else(|| c.error(format!("sequence length {l} is outside 0..={seq}")))
        })
        .collect::<Result<Vec<usize>>>()?;
    Ok(lens.iter().any(|&l| l < seq).then_some(lens))
}

/// A host tensor of `like`'s element type uploaded to its device.
fn upload(like: &Tensor, shape: Vec<usize>, data: Vec<f32>) -> Result<Tensor> {
    HostTensor {
        elem: ElemType::from_dtype(like.dtype()),
        shape,
        data: HostData::F32(data),
    }
    .upload(like.device())
}

/// The steps each sequence takes: `[seq, batch, 1]`, 1 before its length and 0 after.
fn masks(x: &Tensor, lens: &[usize]) -> Result<Tensor> {
    let seq = x.shape()[0];
    let data = (0..seq)
        .flat_map(|t| lens.iter().map(move |&l| f32::from(u8::from(t < l))))
        .collect();
    upload(x, vec![seq, lens.len(), 1], data)
}

/// `t` (`[seq, batch, k]`) with each sequence reversed within its length (all of `seq`
/// without lengths); its own inverse.
fn reverse(t: &Tensor, lens: Option<&[usize]>) -> Result<Tensor> {
    let queue = t.device().queue();
    let Some(lens) = lens else {
        return crate::ops::gather::flip(&queue, t, 0);
    };
    let (seq, batch, k) = (t.shape()[0], t.shape()[1], t.shape()[2]);
    let rows: Vec<i32> = (0..seq)
        .flat_map(|s| {
            lens.iter().enumerate().map(move |(b, &l)| {
                let from = if s < l { l - 1 - s } else { s };
                (from * batch + b) as i32
            })
        })
        .collect();
    let idx = Tensor::from_slice(t.device(), &rows, &[rows.len()])?;
    let flat = t.reshape(&[seq * batch, k])?;
    crate::ops::gather::gather(&queue, &flat, 0, &idx)?.reshape(&[seq, batch, k])
}

/// Direction `d`'s part of a `[dirs, ...]` tensor, without the first axis.
fn of_dir(t: &Tensor, d: usize) -> Result<Tensor> {
    t.slice(0, d..d + 1)?.reshape(&t.shape()[1..])
}

fn recur(c: &Ctx<'_>, cell: Cell) -> Result<Vec<Val>> {
    let s = spec(c.node, cell).map_err(|why| c.error(why))?;
    let inp = inputs(c, &s)?;
    let seq = inp.x.shape()[0];
    let funcs = cell.defaults().len();
    let masks = inp.lens.as_ref().map(|l| masks(&inp.x, l)).transpose()?;
    let lens = inp.lens.as_deref();
    let (mut ys, mut hs, mut cs) = (Vec::new(), Vec::new(), Vec::new());
    for (d, &back) in s.reverse.iter().enumerate() {
        let dir = Dir {
            spec: &s,
            acts: &s.acts[d * funcs..(d + 1) * funcs],
            w: weights(&s, &inp, d, seq)?,
            hidden: inp.hidden,
        };
        let back = back && seq > 0;
        let x = if back {
            reverse(&inp.x, lens)?
        } else {
            inp.x.clone()
        };
        let (y, last) = dir.run(
            &project(&s, &inp, d, &x)?,
            masks.as_ref(),
            initial(cell, &inp, d)?,
        )?;
        ys.push(if back { reverse(&y, lens)? } else { y });
        hs.push(last.h);
        cs.extend(last.c);
    }
    outputs(&s, &inp, &ys, &hs, &cs)
}

/// Direction `d`'s input projection of every step of `x`, with the biases that do not go
/// inside a gate: `[seq, batch, gates * hidden]`.
fn project(s: &Spec, inp: &Inputs, d: usize, x: &Tensor) -> Result<Tensor> {
    let (seq, batch, input) = (x.shape()[0], x.shape()[1], x.shape()[2]);
    let width = s.cell.gates() * inp.hidden;
    if seq * batch == 0 {
        return Tensor::zeros(x.device(), &[seq, batch, width], x.dtype());
    }
    let w = of_dir(&inp.w, d)?.permute(&[1, 0])?;
    let bias = match &inp.b {
        Some(b) => {
            let b = of_dir(b, d)?;
            let (bw, br) = (b.slice(0, 0..width)?, b.slice(0, width..2 * width)?);
            Some(if s.linear_before_reset {
                // Rbh goes inside the reset gate's product.
                let zr = 2 * inp.hidden;
                let sum = bw.slice(0, 0..zr)?.add(&br.slice(0, 0..zr)?)?;
                Tensor::concat(&[&sum, &bw.slice(0, zr..width)?], 0)?
            } else {
                bw.add(&br)?
            })
        }
        None => None,
    };
    let rows = x.reshape(&[seq * batch, input])?;
    let xw = linear(&x.device().queue(), &rows, &w, bias.as_ref(), None)?;
    xw.reshape(&[seq, batch, width])
}

/// Direction `d`'s weights laid out for `steps` steps: the transposes of `R` are views for
/// one step, and copied once for more, so that each step's product reads them in order.
fn weights(s: &Spec, inp: &Inputs, d: usize, steps: usize) -> Result<Weights> {
    let hd = inp.hidden;
    let r = of_dir(&inp.r, d)?;
    let t = |m: Tensor| match m.permute(&[1, 0])? {
        m if steps > 1 => m.contiguous(),
        m => Ok(m),
    };
    let (rt, rt_h) = if s.cell == Cell::Gru && !s.linear_before_reset {
        (
            t(r.slice(0, 0..2 * hd)?)?,
            Some(t(r.slice(0, 2 * hd..3 * hd)?)?),
        )
    } else {
        (t(r)?, None)
    };
    let rbh = match &inp.b {
        Some(b) if s.linear_before_reset => Some(of_dir(b, d)?.slice(0, 5 * hd..6 * hd)?),
        _ => None,
    };
    let peep = match &inp.p {
        Some(p) => {
            let p = of_dir(p, d)?;
            let k = |k: usize| p.slice(0, k * hd..(k + 1) * hd);
            Some([k(0)?, k(1)?, k(2)?])
        }
        None => None,
    };
    Ok(Weights {
        rt,
        rt_h,
        rbh,
        peep,
    })
}

/// Direction `d`'s first state: the initial values given, else zeros; a cell state for
/// LSTM only.
fn initial(cell: Cell, inp: &Inputs, d: usize) -> Result<State> {
    let x = &inp.x;
    let zero = || Tensor::zeros(x.device(), &[x.shape()[1], inp.hidden], x.dtype());
    let h = match &inp.h0 {
        Some(h) => of_dir(h, d)?,
        None => zero()?,
    };
    let c = match &inp.c0 {
        _ if cell != Cell::Lstm => None,
        Some(c) => Some(of_dir(c, d)?),
        None => Some(zero()?),
    };
    Ok(State { h, c })
}

/// `Y` (`[seq, dirs, batch, hidden]`), `Y_h` and (LSTM) `Y_c` (`[dirs, batch, hidden]`),
/// in the node's layout.
fn outputs(
    s: &Spec,
    inp: &Inputs,
    ys: &[Tensor],
    hs: &[Tensor],
    cs: &[Tensor],
) -> Result<Vec<Val>> {
    let (seq, batch, hd) = (inp.x.shape()[0], inp.x.shape()[1], inp.hidden);
    let y = if seq == 0 {
        Tensor::zeros(inp.x.device(), &[0, ys.len(), batch, hd], inp.x.dtype())?
    } else if let [only] = ys {
        only.reshape(&[seq, 1, batch, hd])?
    } else {
        let parts = ys
            .iter()
            .map(|y| y.reshape(&[seq, 1, batch, hd]))
            .collect::<Result<Vec<_>>>()?;
        Tensor::concat(&parts.iter().collect::<Vec<_>>(), 1)?
    };
    let mut out = vec![y, stack(&inp.x, hs, &[batch, hd])?];
    if s.cell == Cell::Lstm {
        out.push(stack(&inp.x, cs, &[batch, hd])?);
    }
    out.into_iter()
        .enumerate()
        .map(|(i, t)| {
            let t = match (s.batch_first, i) {
                (false, _) => t,
                (true, 0) => t.permute(&[2, 0, 1, 3])?.contiguous()?,
                (true, _) => t.permute(&[1, 0, 2])?.contiguous()?,
            };
            Ok(Val::Device(t))
        })
        .collect()
}
