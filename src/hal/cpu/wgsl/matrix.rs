//! f32 matrices: a `matCxR<f32>` is `C` columns, each laid out as a `vecR<f32>` is in
//! memory (a `vec3` column takes 4 words, the last padding), in the lanes as in memory. The
//! componentwise operators (`+`, `-`, a scalar `*`, negation) run on every word through
//! lanes.rs; the products, `transpose` and `determinant` are here.

use naga::{BinaryOperator as B, TypeInner, VectorSize};

use super::lanes::{f, zip, Lanes};

/// Words from one column of a matrix with `rows` rows to the next.
pub(super) fn column_words(rows: VectorSize) -> usize {
    if rows == VectorSize::Bi {
        2
    } else {
        4
    }
}

/// A matrix's columns, rows and words per column.
#[derive(Clone, Copy)]
struct Shape {
    columns: usize,
    rows: usize,
    stride: usize,
}

impl Shape {
    fn of(inner: &TypeInner) -> Option<Shape> {
        match *inner {
            TypeInner::Matrix { columns, rows, .. } => Some(Shape {
                columns: columns as usize,
                rows: rows as usize,
                stride: column_words(rows),
            }),
            _ => None,
        }
    }

    /// A matrix of `columns` columns of `rows` rows.
    fn new(columns: usize, rows: usize) -> Shape {
        Shape {
            columns,
            rows,
            stride: if rows == 2 { 2 } else { 4 },
        }
    }

    fn words(&self) -> usize {
        self.columns * self.stride
    }
}

/// `left op right` where either is a matrix (`None` when neither is): the componentwise
/// operators word by word, and the linear-algebra products.
pub(super) fn binary(
    op: B,
    (lt, l): (&TypeInner, &Lanes),
    (rt, r): (&TypeInner, &Lanes),
) -> Option<Lanes> {
    let (ls, rs) = (Shape::of(lt), Shape::of(rt));
    let vector = |t: &TypeInner| match *t {
        TypeInner::Vector { size, .. } => Some(size as usize),
        _ => None,
    };
    Some(match (op, ls, rs) {
        (_, None, None) => return None,
        (B::Add, ..) => zip(l, r, |x, y| (f(x) + f(y)).to_bits()),
        (B::Subtract, ..) => zip(l, r, |x, y| (f(x) - f(y)).to_bits()),
        (_, Some(a), Some(b)) => product(l, a, r, b),
        (_, Some(a), None) if vector(rt).is_some() => product(l, a, r, Shape::new(1, a.columns)),
        (_, None, Some(b)) if vector(lt).is_some() => {
            // v * m is transpose(m) * v.
            let t = transpose_shape(b);
            product(&transpose(r, b), t, l, Shape::new(1, b.rows))
        }
        // A scalar times a matrix: every word.
        _ => zip(l, r, |x, y| (f(x) * f(y)).to_bits()),
    })
}

/// `a * b` for matrices (a vector being a matrix of one column) of each lane: `a` has
/// `b.rows` columns. The result has `b.columns` columns of `a.rows` rows (one column: a vector,
/// unpadded).
fn product(l: &Lanes, a: Shape, r: &Lanes, b: Shape) -> Lanes {
    let out = if b.columns == 1 {
        Shape {
            columns: 1,
            rows: a.rows,
            stride: a.rows,
        }
    } else {
        Shape::new(b.columns, a.rows)
    };
    let lanes = l.count().max(r.count());
    let mut result = Lanes::zeros(lanes, out.words());
    for lane in 0..lanes {
        let (x, y, o) = (l.lane(lane), r.lane(lane), result.lane_mut(lane));
        for j in 0..out.columns {
            for i in 0..out.rows {
                let sum = (0..a.columns)
                    .map(|k| f(x[k * a.stride + i]) * f(y[j * b.stride + k]))
                    .sum::<f32>();
                o[j * out.stride + i] = sum.to_bits();
            }
        }
    }
    result
}

fn transpose_shape(m: Shape) -> Shape {
    Shape::new(m.rows, m.columns)
}

/// `transpose(m)` of each lane, `m` of shape `s`.
fn transpose(m: &Lanes, s: Shape) -> Lanes {
    let t = transpose_shape(s);
    let mut out = Lanes::zeros(m.count(), t.words());
    for lane in 0..m.count() {
        let (x, o) = (m.lane(lane), out.lane_mut(lane));
        for c in 0..s.columns {
            for r in 0..s.rows {
                o[r * t.stride + c] = x[c * s.stride + r];
            }
        }
    }
    out
}

/// `transpose` (`determinant: false`) or `determinant` of `m`, a matrix of type `inner`.
pub(super) fn function(m: &Lanes, inner: &TypeInner, determinant: bool) -> Option<Lanes> {
    let s = Shape::of(inner)?;
    if !determinant {
        return Some(transpose(m, s));
    }
    let words = m.words.chunks(m.width.max(1)).map(|x| {
        let at = |c: usize, r: usize| f64::from(f(x[c * s.stride + r]));
        (det(s.columns, &at) as f32).to_bits()
    });
    Some(Lanes {
        width: 1,
        words: super::lanes::collect(words),
    })
}

/// The determinant of the `n`×`n` matrix whose element in column `c`, row `r` is `at(c, r)`,
/// by cofactors along the first column.
fn det(n: usize, at: &dyn Fn(usize, usize) -> f64) -> f64 {
    if n == 1 {
        return at(0, 0);
    }
    (0..n)
        .map(|skip| {
            // The minor without column 0 and row `skip`.
            let minor = |c: usize, r: usize| at(c + 1, if r < skip { r } else { r + 1 });
            let sign = if skip % 2 == 0 { 1.0 } else { -1.0 };
            sign * at(0, skip) * det(n - 1, &minor)
        })
        .sum()
}
