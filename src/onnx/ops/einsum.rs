//! `Einsum`, composed from the op API: the equation is parsed at load (malformed ones are
//! refused there), and each run takes diagonals (a letter repeated within one operand) with a
//! gather, sums the letters no other operand and not the output names, then contracts the
//! operands from left to right as one batched matmul each (`[batch, left, k] x [batch, k,
//! right]`), and permutes the result into the output's order.

use super::{one, op, Ctx, OpDef};
use crate::base::error::Result;
use crate::onnx::graph::Node;
use crate::onnx::value::Val;
use crate::ops::gather::{gather_with, IndexMode};
use crate::ops::matmul::matmul;
use crate::ops::reduce::{reduce_axes, ReduceOp};
use crate::Tensor;

/// The einsum operator.
pub(super) const OPS: &[OpDef] = &[op("Einsum", einsum).refusing(refusal)];

/// The label of the ellipsis' axis `i` (counted from its first, once the operands' ellipses
/// are aligned at their ends): past every letter's.
const ELLIPSIS: u32 = 1 << 16;

/// One term of an equation: its letters, and where its ellipsis stands among them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Term {
    /// The letters, in order.
    pub letters: Vec<char>,
    /// How many letters come before the ellipsis, if the term has one.
    pub ellipsis: Option<usize>,
}

/// A parsed equation: the inputs' terms and the output's (`None`: implicit, the ellipsis'
/// axes then the letters used once, sorted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Equation {
    /// One term per input.
    pub inputs: Vec<Term>,
    /// The explicit output, if the equation has `->`.
    pub output: Option<Term>,
}

/// One term (spaces already removed): letters and at most one `...`.
fn term(text: &str) -> std::result::Result<Term, String> {
    let (mut letters, mut ellipsis) = (Vec::new(), None);
    let mut rest = text;
    while let Some(ch) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("...") {
            if ellipsis.replace(letters.len()).is_some() {
                return Err(format!(
                    "the term '{text}' has two ellipses: expected one at most"
                ));
            }
            rest = after;
        } else if ch.is_ascii_alphabetic() {
            letters.push(ch);
            rest = &rest[1..];
        } else {
            return Err(format!(
                "the term '{text}' holds '{ch}': expected letters and at most one '...'"
            ));
        }
    }
    Ok(Term { letters, ellipsis })
}

/// Parses `equation` for `operands` inputs, or says what is wrong with it.
pub(crate) fn parse(equation: &str, operands: usize) -> std::result::Result<Equation, String> {
    let text: String = equation.chars().filter(|c| !c.is_whitespace()).collect();
    let (lhs, rhs) = match text.split_once("->") {
        Some((l, r)) => (l, Some(r)),
        None => (text.as_str(), None),
    };
    let inputs = lhs
        .split(',')
        .map(term)
        .collect::<std::result::Result<Vec<_>, _>>()?;
    if inputs.len() != operands {
        return Err(format!(
            "the equation '{equation}' has {} input terms for {operands} inputs",
            inputs.len()
        ));
    }
    let output = rhs.map(term).transpose()?;
    if let Some(out) = &output {
        let mut seen = Vec::new();
        for &l in &out.letters {
            if seen.contains(&l) {
                return Err(format!("the output of '{equation}' names '{l}' twice"));
            }
            if !inputs.iter().any(|t| t.letters.contains(&l)) {
                return Err(format!(
                    "the output of '{equation}' names '{l}', which no input does"
                ));
            }
            seen.push(l);
        }
        if out.ellipsis.is_some() && inputs.iter().all(|t| t.ellipsis.is_none()) {
            return Err(format!(
                "the output of '{equation}' has '...', which no input has"
            ));
        }
    }
    Ok(Equation { inputs, output })
}

/// Why an einsum node cannot run: a missing or malformed equation.
fn refusal(node: &Node) -> Option<String> {
    match node.attrs.string("equation") {
        Ok(Some(eq)) => parse(eq, node.inputs.len()).err(),
        Ok(None) => Some("the attribute 'equation' is missing".into()),
        Err(e) => Some(e.to_string()),
    }
}

impl Term {
    /// The labels of an operand of `rank` axes: its letters, with the ellipsis' axes (the
    /// rank's remainder) labelled as the last of `width` aligned ellipsis axes.
    fn labels(&self, rank: usize, width: usize) -> std::result::Result<Vec<u32>, String> {
        let n = self.letters.len();
        let dots = rank
            .checked_sub(n)
            .filter(|&d| d == 0 || self.ellipsis.is_some());
        let dots = dots.ok_or_else(|| {
            format!("the term of {n} letters does not fit an input of rank {rank}")
        })?;
        let at = self.ellipsis.unwrap_or(n);
        let letter = |c: &char| u32::from(*c);
        Ok((self.letters[..at].iter().map(letter))
            .chain((width - dots..width).map(|i| ELLIPSIS + i as u32))
            .chain(self.letters[at..].iter().map(letter))
            .collect())
    }

    /// Axes its ellipsis stands for in an operand of `rank` axes.
    fn dots(&self, rank: usize) -> usize {
        rank.saturating_sub(self.letters.len())
    }
}

impl Equation {
    /// The output's labels, with `width` ellipsis axes.
    fn output(&self, width: usize) -> Vec<u32> {
        let dots = (0..width).map(|i| ELLIPSIS + i as u32);
        match &self.output {
            // Without `...` the ellipsis' axes are summed.
            Some(t) => {
                let dots = if t.ellipsis.is_some() { width } else { 0 };
                t.labels(t.letters.len() + dots, width).unwrap_or_default()
            }
            None => {
                let all: Vec<char> = self.inputs.iter().flat_map(|t| t.letters.clone()).collect();
                let mut once: Vec<char> = (all.iter().copied())
                    .filter(|c| all.iter().filter(|d| *d == c).count() == 1)
                    .collect();
                once.sort_unstable();
                dots.chain(once.iter().map(|&c| u32::from(c))).collect()
            }
        }
    }
}

/// An operand on its way: a tensor and the label of each axis.
#[derive(Clone)]
struct Operand {
    t: Tensor,
    labels: Vec<u32>,
}

fn einsum(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let eq = parse(&c.string("equation", "")?, c.node.inputs.len()).map_err(|e| c.error(e))?;
    let tensors = (0..eq.inputs.len())
        .map(|i| c.tensor(i))
        .collect::<Result<Vec<_>>>()?;
    let width = (eq.inputs.iter().zip(&tensors))
        .map(|(t, x)| t.dots(x.rank()))
        .max()
        .unwrap_or(0);
    let mut operands = Vec::new();
    for (term, t) in eq.inputs.iter().zip(tensors) {
        let labels = term.labels(t.rank(), width).map_err(|e| c.error(e))?;
        operands.push(diagonals(c, Operand { t, labels })?);
    }
    let out = eq.output(width);
    let mut rest = operands.into_iter();
    let first = rest
        .next()
        .ok_or_else(|| c.error("Einsum has no inputs".into()))?;
    let later: Vec<Operand> = rest.collect();
    let mut acc = first;
    for (i, next) in later.iter().enumerate() {
        let keep =
            |l: u32| out.contains(&l) || later[i + 1..].iter().any(|o| o.labels.contains(&l));
        acc = contract(c, acc, next, &keep)?;
    }
    let acc = sum_unkept(c, acc, &|l| out.contains(&l))?;
    let order = (out.iter())
        .map(|l| acc.labels.iter().position(|m| m == l))
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(|| c.error(format!("the output's labels {out:?} are not all at hand")))?;
    one(acc.t.permute(&order)?.contiguous_on(c.queue)?)
}

/// The operand with each letter repeated within it taken once, along the diagonal of the
/// axes it labels: those two axes moved last, flattened, and every `n + 1`-th element gathered.
fn diagonals(c: &Ctx<'_>, mut x: Operand) -> Result<Operand> {
    while let Some((p, q)) = repeat(&x.labels) {
        let shape = x.t.shape().to_vec();
        let n = shape[p];
        if shape[q] != n {
            return Err(c.error(format!(
                "axes {p} and {q} share a letter but have extents {n} and {}",
                shape[q]
            )));
        }
        let mut order: Vec<usize> = (0..shape.len()).filter(|&a| a != p && a != q).collect();
        let mut flat: Vec<usize> = order.iter().map(|&a| shape[a]).collect();
        let label = x.labels[p];
        let mut labels: Vec<u32> = order.iter().map(|&a| x.labels[a]).collect();
        order.extend([p, q]);
        flat.push(n * n);
        labels.push(label);
        let moved =
            x.t.permute(&order)?
                .contiguous_on(c.queue)?
                .reshape(&flat)?;
        let picks: Vec<i32> = (0..n).map(|i| (i * (n + 1)) as i32).collect();
        let picks = Tensor::from_slice(c.device, &picks, &[n])?;
        let t = gather_with(c.queue, &moved, flat.len() - 1, &picks, IndexMode::Clip)?;
        x = Operand { t, labels };
    }
    Ok(x)
}

/// The first two axes sharing a label, if any.
fn repeat(labels: &[u32]) -> Option<(usize, usize)> {
    (0..labels.len()).find_map(|p| {
        let q = labels[p + 1..].iter().position(|l| *l == labels[p])?;
        Some((p, p + 1 + q))
    })
}

/// The operand with the axes whose labels `keep` refuses summed away.
fn sum_unkept(c: &Ctx<'_>, x: Operand, keep: &dyn Fn(u32) -> bool) -> Result<Operand> {
    let axes: Vec<usize> = (0..x.labels.len())
        .filter(|&a| !keep(x.labels[a]))
        .collect();
    if axes.is_empty() {
        return Ok(x);
    }
    let t = reduce_axes(c.queue, ReduceOp::Sum, &x.t, &axes, false)?;
    let labels = (x.labels.iter().copied()).filter(|&l| keep(l)).collect();
    Ok(Operand { t, labels })
}

/// `a` and `b` contracted: letters of one alone that nothing later keeps summed first; shared
/// letters that are kept become batch axes, the others are summed by one matmul of `[batch,
/// left, k]` by `[batch, k, right]`.
fn contract(c: &Ctx<'_>, a: Operand, b: &Operand, keep: &dyn Fn(u32) -> bool) -> Result<Operand> {
    let a = sum_unkept(c, a, &|l| keep(l) || b.labels.contains(&l))?;
    let b = sum_unkept(c, b.clone(), &|l| keep(l) || a.labels.contains(&l))?;
    let shared = |l: &u32| b.labels.contains(l);
    let batch: Vec<u32> = a
        .labels
        .iter()
        .copied()
        .filter(|l| shared(l) && keep(*l))
        .collect();
    let k: Vec<u32> = a
        .labels
        .iter()
        .copied()
        .filter(|l| shared(l) && !keep(*l))
        .collect();
    let left: Vec<u32> = a.labels.iter().copied().filter(|l| !shared(l)).collect();
    let right: Vec<u32> = (b.labels.iter().copied())
        .filter(|l| !a.labels.contains(l))
        .collect();
    let lhs = arrange(c, &a, &[&batch, &left, &k])?;
    let rhs = arrange(c, &b, &[&batch, &k, &right])?;
    let y = matmul(c.queue, &lhs, &rhs)?;
    let extents = |x: &Operand, ls: &[u32]| -> Vec<usize> {
        ls.iter()
            .filter_map(|l| x.labels.iter().position(|m| m == l))
            .map(|p| x.t.shape()[p])
            .collect()
    };
    let nb = batch.len();
    let mut shape = y.shape()[..nb].to_vec();
    shape.extend(extents(&a, &left));
    shape.extend(extents(&b, &right));
    let labels = [batch, left, right].concat();
    Ok(Operand {
        t: y.reshape(&shape)?,
        labels,
    })
}

/// `x` permuted to the label groups `groups` (batch axes as they are, then each further
/// group flattened into one axis), as matmul takes it.
fn arrange(c: &Ctx<'_>, x: &Operand, groups: &[&[u32]; 3]) -> Result<Tensor> {
    let mut order = Vec::new();
    let mut shape = Vec::new();
    for (g, labels) in groups.iter().enumerate() {
        let axes: Vec<usize> = (labels.iter())
            .filter_map(|l| x.labels.iter().position(|m| m == l))
            .collect();
        let extents = axes.iter().map(|&a| x.t.shape()[a]);
        if g == 0 {
            shape.extend(extents);
        } else {
            shape.push(extents.product());
        }
        order.extend(axes);
    }
    x.t.permute(&order)?.contiguous_on(c.queue)?.reshape(&shape)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equations_parse_with_spaces_ellipses_and_implicit_outputs() {
        let eq = parse("bij, bjk -> bik", 2).unwrap();
        assert_eq!(eq.inputs[0].letters, ['b', 'i', 'j']);
        assert_eq!(eq.output.as_ref().unwrap().letters, ['b', 'i', 'k']);
        let eq = parse("...ii ->...i", 1).unwrap();
        assert_eq!(eq.inputs[0].ellipsis, Some(0));
        assert_eq!(
            eq.inputs[0].labels(4, 2).unwrap(),
            [ELLIPSIS, ELLIPSIS + 1, u32::from('i'), u32::from('i')]
        );
        assert_eq!(eq.output(2), [ELLIPSIS, ELLIPSIS + 1, u32::from('i')]);
        // Implicit: the letters used once, sorted (capitals first, as in ASCII).
        assert_eq!(parse("i,i", 2).unwrap().output(0), Vec::<u32>::new());
        let eq = parse("ba,cBb", 2).unwrap();
        assert_eq!(
            eq.output(0),
            [u32::from('B'), u32::from('a'), u32::from('c')]
        );
        let eq = parse("a...b", 1).unwrap();
        assert_eq!(
            eq.inputs[0].labels(4, 3).unwrap()[1..3],
            [ELLIPSIS + 1, ELLIPSIS + 2]
        );
        assert_eq!(parse("->", 1).unwrap().output(0), Vec::<u32>::new());
    }

    #[test]
    fn malformed_equations_are_refused_with_a_reason() {
        for (eq, n, why) in [
            ("ij,jk", 1, "2 input terms for 1 inputs"),
            ("i.j->i", 1, "holds '.'"),
            ("i1->i", 1, "holds '1'"),
            ("......->", 1, "two ellipses"),
            ("ij->ii", 1, "names 'i' twice"),
            ("ij->k", 1, "names 'k', which no input does"),
            ("ij->...i", 1, "'...', which no input has"),
            ("ij->i->j", 1, "holds '-'"),
        ] {
            let got = parse(eq, n).unwrap_err();
            assert!(got.contains(why), "{eq}: {got}");
        }
        let t = parse("ij", 1).unwrap().inputs[0].clone();
        assert!(t.labels(3, 0).unwrap_err().contains("rank 3"));
        assert!(t.labels(1, 0).is_err());
    }
}
