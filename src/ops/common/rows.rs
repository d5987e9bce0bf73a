//! Where the rows of a row op (softmax, norms) lie in its operands, so that kernels read
//! strided views in place: the axes other than the row's, merged where they nest, give each
//! row's start; the row's own axis (or axes, merged) its step.

/// Where the rows lie in one operand: row `r` is `(a, b) = (r / nb, r % nb)` for the launch's
/// `nb`, and starts `a * self.a + b * self.b` elements past the view's offset; its element
/// `j` a further `j * col` on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Steps {
    pub a: usize,
    pub b: usize,
    pub col: usize,
}

/// The rows along `axis` of a view with `shape` and `strides` and of a contiguous output of
/// that shape: `nb` and each one's [`Steps`]. The axes other than `axis` are merged where
/// both operands nest them; more than two groups left (`None`) means the input must be
/// copied first.
pub(crate) fn row_steps(
    shape: &[usize],
    strides: &[usize],
    axis: usize,
) -> Option<(usize, Steps, Steps)> {
    let contiguous = crate::base::layout::contiguous_strides(shape);
    let mut groups: Vec<(usize, usize, usize)> = Vec::new();
    for d in (0..shape.len()).filter(|&d| d != axis && shape[d] > 1) {
        let (n, xs, os) = (shape[d], strides[d], contiguous[d]);
        match groups.last_mut() {
            Some(g) if g.1 == xs * n && g.2 == os * n => *g = (g.0 * n, xs, os),
            _ => groups.push((n, xs, os)),
        }
    }
    let (x_col, out_col) = (strides[axis], contiguous[axis]);
    match groups[..] {
        [] => Some((
            1,
            Steps {
                col: x_col,
                ..Steps::default()
            },
            Steps {
                col: out_col,
                ..Steps::default()
            },
        )),
        [(n, xs, os)] => Some((
            n,
            Steps {
                a: 0,
                b: xs,
                col: x_col,
            },
            Steps {
                a: 0,
                b: os,
                col: out_col,
            },
        )),
        [(_, xa, oa), (n, xb, ob)] => Some((
            n,
            Steps {
                a: xa,
                b: xb,
                col: x_col,
            },
            Steps {
                a: oa,
                b: ob,
                col: out_col,
            },
        )),
        _ => None,
    }
}

/// The one stride that walks `shape` (with `strides`) in row-major order, if there is one
/// (0 when no extent passes 1).
pub(crate) fn merged(shape: &[usize], strides: &[usize]) -> Option<usize> {
    let dims: Vec<(usize, usize)> = shape
        .iter()
        .copied()
        .zip(strides.iter().copied())
        .filter(|&(n, _)| n > 1)
        .collect();
    let nested = dims.windows(2).all(|w| w[0].1 == w[1].1 * w[1].0);
    nested.then(|| dims.last().map_or(0, |&(_, s)| s))
}
