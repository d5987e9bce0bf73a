//! Shape and data-movement operators. Those that shape computations chain (`Shape`,
//! `Gather`, `Concat`, `Unsqueeze`, `Cast`, …) run on the host when their inputs are there,
//! so a model's shape subgraph never touches the device.

use super::{one, op, Ctx, OpDef};
use crate::base::error::Result;
use crate::onnx::elem::ElemType;
use crate::onnx::value::{device_dtype, host_of, HostData, HostTensor, Val};
use crate::Tensor;

/// The shape and data-movement operators.
pub(super) const OPS: &[OpDef] = &[
    op("Reshape", reshape),
    op("Flatten", flatten),
    op("Squeeze", squeeze),
    op("Unsqueeze", unsqueeze),
    op("Transpose", transpose),
    op("Concat", concat),
    op("Shape", shape),
    op("Size", size),
    op("Gather", gather),
    op("Cast", cast),
    op("Constant", constant),
    op("ConstantOfShape", constant_of_shape),
    op("Range", range),
    op("Expand", expand),
    op("Slice", super::slice::slice),
    op("Tile", tile),
    op("Pad", super::pad::pad),
    op("CastLike", cast_like),
    op("Split", split).outputs(usize::MAX),
    op("DepthToSpace", depth_to_space),
    op("SpaceToDepth", space_to_depth),
];

/// Input 0 with a new shape: on the host, the same data; on the device, a reshape.
fn with_shape(c: &Ctx<'_>, shape: Vec<usize>) -> Result<Vec<Val>> {
    match c.input(0)? {
        Val::Host(h) => {
            let n: usize = shape.iter().product();
            if n != h.shape.iter().product::<usize>() {
                return Err(c.error(format!("cannot reshape {:?} to {shape:?}", h.shape)));
            }
            Ok(vec![Val::Host(HostTensor { shape, ..h.clone() })])
        }
        v => one(v.tensor(c.device)?.reshape(&shape)?),
    }
}

/// `Reshape`: 0 copies the input's extent (unless `allowzero`), -1 takes what is left.
fn reshape(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let input = c.input(0)?.shape()?.to_vec();
    let spec = c
        .ints(1)?
        .ok_or_else(|| c.error("the shape input is missing".into()))?;
    let allow_zero = c.int("allowzero", 0)? != 0;
    let mut shape = Vec::with_capacity(spec.len());
    let mut infer = None;
    for (i, &d) in spec.iter().enumerate() {
        shape.push(match d {
            0 if !allow_zero => *input.get(i).ok_or_else(|| {
                c.error(format!(
                    "shape {spec:?} copies axis {i} of a rank-{} input",
                    input.len()
                ))
            })?,
            -1 if infer.is_none() => {
                infer = Some(i);
                1
            }
            d if d >= 0 => d as usize,
            _ => return Err(c.error(format!("shape {spec:?} is not a valid reshape"))),
        });
    }
    if let Some(i) = infer {
        let known: usize = shape.iter().product();
        let total: usize = input.iter().product();
        if known == 0 || total % known != 0 {
            return Err(c.error(format!("cannot reshape {input:?} to {spec:?}")));
        }
        shape[i] = total / known;
    }
    with_shape(c, shape)
}

fn flatten(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let s = c.input(0)?.shape()?.to_vec();
    let axis = c.int("axis", 1)?;
    let axis = if axis == s.len() as i64 {
        s.len()
    } else {
        c.axis(axis, s.len())?
    };
    with_shape(
        c,
        vec![s[..axis].iter().product(), s[axis..].iter().product()],
    )
}

/// The axes of `Squeeze` / `Unsqueeze`: an attribute before opset 13, an input from it.
fn axes_of(c: &Ctx<'_>) -> Result<Option<Vec<i64>>> {
    if c.opset < 13 {
        c.int_list("axes")
    } else {
        c.ints(1)
    }
}

fn squeeze(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let s = c.input(0)?.shape()?.to_vec();
    let axes = match axes_of(c)? {
        Some(a) => a
            .iter()
            .map(|&a| c.axis(a, s.len()))
            .collect::<Result<Vec<_>>>()?,
        None => (0..s.len()).filter(|&i| s[i] == 1).collect(),
    };
    if let Some(&a) = axes.iter().find(|&&a| s[a] != 1) {
        return Err(c.error(format!("axis {a} of {s:?} is not 1; it cannot be squeezed")));
    }
    let shape = (0..s.len())
        .filter(|i| !axes.contains(i))
        .map(|i| s[i])
        .collect();
    with_shape(c, shape)
}

fn unsqueeze(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let s = c.input(0)?.shape()?.to_vec();
    let axes = axes_of(c)?.ok_or_else(|| c.error("axes are missing".into()))?;
    let rank = s.len() + axes.len();
    let mut axes = axes
        .iter()
        .map(|&a| c.axis(a, rank))
        .collect::<Result<Vec<_>>>()?;
    axes.sort_unstable();
    let mut rest = s.iter();
    let shape = (0..rank)
        .map(|i| {
            if axes.contains(&i) {
                1
            } else {
                rest.next().copied().unwrap_or(1)
            }
        })
        .collect();
    with_shape(c, shape)
}

fn transpose(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let x = c.tensor(0)?;
    let rank = x.rank();
    let perm = match c.int_list("perm")? {
        Some(p) => p
            .iter()
            .map(|&a| c.axis(a, rank))
            .collect::<Result<Vec<_>>>()?,
        None => (0..rank).rev().collect(),
    };
    one(x.permute(&perm)?)
}

fn concat(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let vals: Vec<&Val> = (0..c.inputs.len())
        .filter(|&i| c.opt(i).is_some())
        .map(|i| c.input(i))
        .collect::<Result<_>>()?;
    let rank = vals
        .first()
        .map_or(Ok(0), |v| v.shape().map(<[usize]>::len))?;
    let axis = c.axis(c.int("axis", 0)?, rank)?;
    let hosts: Vec<HostTensor> = vals.iter().filter_map(|v| v.as_host()).cloned().collect();
    if hosts.len() == vals.len() {
        return Ok(vec![Val::Host(host_concat(&hosts, axis))]);
    }
    let tensors = vals
        .iter()
        .map(|v| v.tensor(c.device))
        .collect::<Result<Vec<_>>>()?;
    let tensors: Vec<&Tensor> = tensors.iter().collect();
    if let Some(out) = c.dest {
        // Made early for inputs written in place (`joins`): the rest are copied in.
        if crate::ops::concat::concat_into(c.queue, &tensors, axis, out)? {
            return one(out.clone());
        }
    }
    one(crate::ops::concat::concat(c.queue, &tensors, axis)?)
}

/// Host tensors joined along `axis` (their element type is the first one's).
pub(super) fn host_concat(parts: &[HostTensor], axis: usize) -> HostTensor {
    let mut shape = parts[0].shape.clone();
    shape[axis] = parts.iter().map(|p| p.shape[axis]).sum();
    let outer: usize = shape[..axis].iter().product();
    let chunk = |p: &HostTensor| p.shape[axis..].iter().product::<usize>();
    let data = match &parts[0].data {
        HostData::F32(_) => HostData::F32(join(parts, outer, chunk, |p| match &p.data {
            HostData::F32(v) => v.clone(),
            HostData::I64(v) => v.iter().map(|&x| x as f32).collect(),
        })),
        HostData::I64(_) => HostData::I64(join(parts, outer, chunk, |p| p.to_i64())),
    };
    HostTensor {
        elem: parts[0].elem,
        shape,
        data,
    }
}

/// Rows of each part in turn, `outer` times.
fn join<T: Clone>(
    parts: &[HostTensor],
    outer: usize,
    chunk: impl Fn(&HostTensor) -> usize,
    data: impl Fn(&HostTensor) -> Vec<T>,
) -> Vec<T> {
    let all: Vec<Vec<T>> = parts.iter().map(&data).collect();
    let mut out = Vec::new();
    for o in 0..outer {
        for (p, d) in parts.iter().zip(&all) {
            let n = chunk(p);
            out.extend_from_slice(&d[o * n..(o + 1) * n]);
        }
    }
    out
}

/// `Shape` (with `start` and `end` from opset 15), on the host.
fn shape(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let s: Vec<i64> = c.input(0)?.shape()?.iter().map(|&d| d as i64).collect();
    let r = s.len() as i64;
    let clamp = |v: i64| (if v < 0 { v + r } else { v }).clamp(0, r) as usize;
    let start = clamp(c.int("start", 0)?);
    let end = clamp(c.int("end", r)?).max(start);
    let dims = s[start..end].to_vec();
    Ok(vec![Val::Host(HostTensor::i64(vec![dims.len()], dims))])
}

fn size(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let n = c.input(0)?.shape()?.iter().product::<usize>() as i64;
    Ok(vec![Val::Host(HostTensor::i64(vec![], vec![n]))])
}

fn gather(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let rank = c.input(0)?.shape()?.len();
    let axis = c.axis(c.int("axis", 0)?, rank)?;
    if let (Val::Host(x), Val::Host(idx)) = (c.input(0)?, c.input(1)?) {
        return host_gather(c, x, axis, idx).map(|h| vec![Val::Host(h)]);
    }
    one(crate::ops::gather::gather(
        c.queue,
        &c.tensor(0)?,
        axis,
        &c.tensor(1)?,
    )?)
}

/// `x` taken along `axis` at `idx` on the host.
pub(super) fn host_gather(
    c: &Ctx<'_>,
    x: &HostTensor,
    axis: usize,
    idx: &HostTensor,
) -> Result<HostTensor> {
    let len = x.shape[axis];
    let outer: usize = x.shape[..axis].iter().product();
    let inner: usize = x.shape[axis + 1..].iter().product();
    let picks = idx
        .to_i64()
        .iter()
        .map(|&i| {
            let j = if i < 0 { i + len as i64 } else { i };
            usize::try_from(j)
                .ok()
                .filter(|&j| j < len)
                .ok_or_else(|| c.error(format!("index {i} is outside an axis of {len}")))
        })
        .collect::<Result<Vec<usize>>>()?;
    let take = |v: &[i64]| -> Vec<i64> {
        (0..outer)
            .flat_map(|o| {
                picks
                    .iter()
                    .flat_map(move |&j| (0..inner).map(move |k| (o, j, k)))
            })
            .map(|(o, j, k)| v[(o * len + j) * inner + k])
            .collect()
    };
    let data = match &x.data {
        HostData::I64(v) => HostData::I64(take(v)),
        HostData::F32(v) => {
            let bits: Vec<i64> = v.iter().map(|x| i64::from(x.to_bits())).collect();
            HostData::F32(
                take(&bits)
                    .iter()
                    .map(|&b| f32::from_bits(b as u32))
                    .collect(),
            )
        }
    };
    let mut shape = x.shape[..axis].to_vec();
    shape.extend(&idx.shape);
    shape.extend(&x.shape[axis + 1..]);
    Ok(HostTensor {
        elem: x.elem,
        shape,
        data,
    })
}

fn cast(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let to = ElemType::from_code(c.int("to", 0)? as i32).map_err(|e| c.error(e.to_string()))?;
    match c.input(0)? {
        Val::Host(h) => Ok(vec![Val::Host(host_cast(h, to))]),
        v => match device_dtype(to) {
            Ok(dtype) => one(v.tensor(c.device)?.cast(dtype)?),
            Err(_) => Ok(vec![Val::Host(host_cast(&c.host(0)?, to))]),
        },
    }
}

/// `h` as element type `to`, as the device casts convert: floats truncate toward zero and
/// saturate into integers, integers wrap into narrower ones, bools are 0 or 1, and f16 and
/// bf16 values are rounded to theirs (to nearest, ties to even).
fn host_cast(h: &HostTensor, to: ElemType) -> HostTensor {
    let float = matches!(
        to,
        ElemType::F32 | ElemType::F64 | ElemType::F16 | ElemType::BF16
    );
    let round = |x: f64| match to {
        ElemType::F16 => half::f16::from_f64(x).to_f32(),
        ElemType::BF16 => half::bf16::from_f64(x).to_f32(),
        _ => x as f32,
    };
    let data = match &h.data {
        _ if float => HostData::F32(h.to_f64().into_iter().map(round).collect()),
        HostData::F32(v) => HostData::I64(v.iter().map(|&x| to.saturate(x)).collect()),
        HostData::I64(v) => HostData::I64(v.iter().map(|&x| to.wrap(x)).collect()),
    };
    HostTensor {
        elem: to,
        shape: h.shape.clone(),
        data,
    }
}

/// `Constant`: a tensor attribute, or one of the `value_*` forms.
fn constant(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let a = c.attrs();
    if let Some(crate::onnx::Attr::Tensor(t)) = a.get("value") {
        return Ok(vec![Val::from_constant(t, c.device)?]);
    }
    let host = if let Some(v) = a.float("value_float")? {
        HostTensor {
            elem: ElemType::F32,
            shape: vec![],
            data: HostData::F32(vec![*v]),
        }
    } else if let Some(v) = a.floats("value_floats")? {
        let data = HostData::F32(v.clone());
        HostTensor {
            elem: ElemType::F32,
            shape: vec![v.len()],
            data,
        }
    } else if let Some(v) = a.int("value_int")? {
        HostTensor::i64(vec![], vec![*v])
    } else if let Some(v) = a.ints("value_ints")? {
        HostTensor::i64(vec![v.len()], v.clone())
    } else {
        return Err(c.error("it has no value attribute this runner reads".into()));
    };
    Ok(vec![Val::Host(host)])
}

fn constant_of_shape(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let shape: Vec<usize> = c
        .ints(0)?
        .unwrap_or_default()
        .iter()
        .map(|&d| d as usize)
        .collect();
    let fill = match c.attrs().get("value") {
        Some(crate::onnx::Attr::Tensor(t)) => host_of(t)?,
        _ => HostTensor {
            elem: ElemType::F32,
            shape: vec![1],
            data: HostData::F32(vec![0.0]),
        },
    };
    let n: usize = shape.iter().product();
    let data = match &fill.data {
        HostData::F32(v) => HostData::F32(vec![v.first().copied().unwrap_or(0.0); n]),
        HostData::I64(v) => HostData::I64(vec![v.first().copied().unwrap_or(0); n]),
    };
    let host = HostTensor {
        elem: fill.elem,
        shape,
        data,
    };
    if n > 4096 && device_dtype(host.elem).is_ok() {
        return one(host.upload(c.device)?);
    }
    Ok(vec![Val::Host(host)])
}

/// `Range`: `start, start + delta, …` below `limit` (above it for a negative delta).
fn range(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let (start, limit, delta) = (c.host(0)?, c.host(1)?, c.host(2)?);
    let first = |h: &HostTensor| h.to_f64().first().copied().unwrap_or(0.0);
    let (s, l, d) = (first(&start), first(&limit), first(&delta));
    if d == 0.0 {
        return Err(c.error("delta is 0".into()));
    }
    let n = ((l - s) / d).ceil().max(0.0) as usize;
    let data = match start.data {
        HostData::I64(_) => {
            let (s, d) = (s as i64, d as i64);
            HostData::I64((0..n as i64).map(|i| s + i * d).collect())
        }
        HostData::F32(_) => HostData::F32((0..n).map(|i| (s + i as f64 * d) as f32).collect()),
    };
    Ok(vec![Val::Host(HostTensor {
        elem: start.elem,
        shape: vec![n],
        data,
    })])
}

fn expand(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let x = c.tensor(0)?;
    let spec: Vec<usize> = c
        .ints(1)?
        .unwrap_or_default()
        .iter()
        .map(|&d| d as usize)
        .collect();
    let shape = crate::base::layout::broadcast_shapes("Expand", x.shape(), &spec)?;
    one(x.broadcast_to(&shape)?.contiguous()?)
}

fn tile(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let mut x = c.tensor(0)?;
    let repeats = c.ints(1)?.unwrap_or_default();
    if repeats.len() != x.rank() || repeats.iter().any(|&r| r < 0) {
        return Err(c.error(format!("repeats {repeats:?} for a rank-{} input", x.rank())));
    }
    for (axis, &r) in repeats.iter().enumerate() {
        if r != 1 {
            let copies: Vec<&Tensor> = std::iter::repeat_n(&x, r as usize).collect();
            x = crate::ops::concat::concat(c.queue, &copies, axis)?;
        }
    }
    one(x)
}

/// `CastLike`: input 0 in input 1's element type.
fn cast_like(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let like = c.input(1)?.elem()?;
    match c.input(0)? {
        Val::Host(h) => Ok(vec![Val::Host(host_cast(h, like))]),
        v => one(v.tensor(c.device)?.cast(device_dtype(like)?)?),
    }
}

/// `Split` along `axis`: into the sizes given (attribute before opset 13, input from it),
/// else into as many equal parts as the node has outputs (`num_outputs` from opset 18).
fn split(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let x = c.tensor(0)?;
    let axis = c.axis(c.int("axis", 0)?, x.rank())?;
    let n = x.shape()[axis];
    let sizes = if c.opset < 13 {
        c.int_list("split")?
    } else {
        c.ints(1)?
    };
    let sizes: Vec<usize> = match sizes {
        Some(s) => s.iter().map(|&v| v.max(0) as usize).collect(),
        None => {
            let parts = c.node.outputs.len().max(1);
            let each = n.div_ceil(parts);
            (0..parts)
                .map(|i| each.min(n.saturating_sub(i * each)))
                .collect()
        }
    };
    if sizes.iter().sum::<usize>() != n {
        return Err(c.error(format!("split sizes {sizes:?} do not add up to {n}")));
    }
    let mut start = 0;
    let mut out = Vec::new();
    for s in sizes {
        out.push(Val::Device(x.slice(axis, start..start + s)?.contiguous()?));
        start += s;
    }
    Ok(out)
}

/// Input 0 (`[N, C, H, W]`, checked) and the positive `blocksize` attribute.
fn blocks(c: &Ctx<'_>) -> Result<(Tensor, usize, [usize; 4])> {
    let x = c.tensor(0)?;
    let size = c.int("blocksize", 0)?;
    let &[n, ch, h, w] = x.shape() else {
        return Err(c.error(format!("the input is {:?}; expected rank 4", x.shape())));
    };
    if size < 1 {
        return Err(c.error(format!("blocksize is {size}; expected a positive integer")));
    }
    Ok((x, size as usize, [n, ch, h, w]))
}

/// `DepthToSpace`: channel blocks moved into `blocksize × blocksize` spatial tiles, in
/// `mode` DCR (depth, column, row: the blocks outermost) or CRD (the channels outermost).
fn depth_to_space(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let (x, b, [n, ch, h, w]) = blocks(c)?;
    if ch % (b * b) != 0 {
        return Err(c.error(format!(
            "{ch} channels; expected a multiple of blocksize² = {}",
            b * b
        )));
    }
    let (split, perm) = match c.string("mode", "DCR")?.as_str() {
        "DCR" => ([n, b, b, ch / (b * b), h, w], [0, 3, 4, 1, 5, 2]),
        "CRD" => ([n, ch / (b * b), b, b, h, w], [0, 1, 4, 2, 5, 3]),
        other => return Err(c.error(format!("mode is '{other}'; expected 'DCR' or 'CRD'"))),
    };
    let y = x.reshape(&split)?.permute(&perm)?;
    one(y.reshape(&[n, ch / (b * b), h * b, w * b])?)
}

/// `SpaceToDepth`: `blocksize × blocksize` spatial tiles moved into channels, the inverse
/// of DepthToSpace's DCR mode.
fn space_to_depth(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let (x, b, [n, ch, h, w]) = blocks(c)?;
    if h % b != 0 || w % b != 0 {
        return Err(c.error(format!(
            "the input is {h}x{w}; expected both multiples of blocksize {b}"
        )));
    }
    let y = x
        .reshape(&[n, ch, h / b, b, w / b, b])?
        .permute(&[0, 3, 5, 1, 2, 4])?;
    one(y.reshape(&[n, ch * b * b, h / b, w / b])?)
}
