//! Shapes and strides: how a tensor's elements sit in its buffer.

use crate::base::error::{Error, Result};

/// Largest rank a tensor may have (kernels carry shapes in fixed-size metadata).
pub const MAX_RANK: usize = 8;

/// Most elements one shape may span, extents of 0 counted as 1 (see [`checked_numel`]): every
/// product of extents, every element offset and every byte count of up to 8-byte elements
/// then fits in `isize` on every target, wasm32 included.
pub const MAX_ELEMENTS: usize = isize::MAX as usize / 8;

/// Shape, strides (in elements) and offset (in elements) of a strided view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Extent of each dimension.
    pub shape: Vec<usize>,
    /// Step in elements between neighbours along each dimension (0 for a broadcast dimension).
    pub strides: Vec<usize>,
    /// Element offset of the first element within the buffer.
    pub offset: usize,
}

impl Layout {
    /// Row-major contiguous layout of `shape`, starting at `offset`.
    pub fn contiguous(shape: &[usize], offset: usize) -> Self {
        Layout {
            shape: shape.to_vec(),
            strides: contiguous_strides(shape),
            offset,
        }
    }

    /// Number of elements (saturating at `usize::MAX` for a shape no tensor can have).
    pub fn numel(&self) -> usize {
        if self.shape.contains(&0) {
            return 0;
        }
        self.shape
            .iter()
            .fold(1usize, |acc, &n| acc.saturating_mul(n))
    }

    /// Whether elements are packed row-major with no gaps (dimensions of extent 1 ignored).
    pub fn is_contiguous(&self) -> bool {
        let mut expected = 1;
        for (&n, &s) in self.shape.iter().zip(&self.strides).rev() {
            if n != 1 && s != expected {
                return false;
            }
            expected *= n;
        }
        true
    }

    /// One past the largest element index this view touches (`offset` for an empty view).
    /// Saturates at `usize::MAX` rather than wrapping, so an impossible view never looks small.
    pub fn end(&self) -> usize {
        self.checked_end().unwrap_or(usize::MAX)
    }

    /// [`end`](Layout::end), or `None` if it does not fit in `usize`.
    pub fn checked_end(&self) -> Option<usize> {
        if self.shape.contains(&0) {
            return Some(self.offset);
        }
        let mut last = self.offset;
        for (&n, &s) in self.shape.iter().zip(&self.strides) {
            last = last.checked_add((n - 1).checked_mul(s)?)?;
        }
        last.checked_add(1)
    }

    /// Whether every element of the view lies inside a block of `elements` elements, and its
    /// shape passes [`checked_numel`]. Every tensor's layout satisfies this for its buffer:
    /// the constructors in `tensor.rs` check it, and the backends' unsafe code relies on it.
    pub fn lies_within(&self, elements: usize) -> bool {
        self.shape.len() == self.strides.len()
            && checked_numel("layout", &self.shape).is_ok()
            && self.checked_end().is_some_and(|end| end <= elements)
    }

    /// How a kernel can address this view's elements in row-major order (see [`Access`]).
    pub(crate) fn access(&self) -> Access {
        if self.is_contiguous() {
            return Access::Contiguous;
        }
        let lead = self
            .shape
            .iter()
            .zip(&self.strides)
            .take_while(|&(&n, &s)| s == 0 || n == 1)
            .count();
        let block = Layout {
            shape: self.shape[lead..].to_vec(),
            strides: self.strides[lead..].to_vec(),
            offset: 0,
        };
        if block.is_contiguous() {
            return Access::Repeated {
                period: block.numel().max(1),
            };
        }
        Access::Strided
    }

    /// Element offsets of every element, in row-major order of the view.
    pub fn offsets(&self) -> impl Iterator<Item = usize> + '_ {
        self.offsets_from(0)
    }

    /// Element offsets from row-major element `start` on (for work split into chunks).
    pub fn offsets_from(&self, start: usize) -> impl Iterator<Item = usize> + '_ {
        let numel = self.numel();
        let mut index = vec![0usize; self.shape.len()];
        let mut rem = start.min(numel);
        for d in (0..index.len()).rev() {
            index[d] = rem % self.shape[d].max(1);
            rem /= self.shape[d].max(1);
        }
        let mut current = self.offset
            + index
                .iter()
                .zip(&self.strides)
                .map(|(&i, &s)| i * s)
                .sum::<usize>();
        (start.min(numel)..numel).map(move |i| {
            if i > start {
                for d in (0..index.len()).rev() {
                    index[d] += 1;
                    current += self.strides[d];
                    if index[d] < self.shape[d] {
                        break;
                    }
                    current -= self.strides[d] * index[d];
                    index[d] = 0;
                }
            }
            current
        })
    }
}

/// How a kernel addresses a view: the cheaper patterns avoid per-element index division.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Element `i` is at `offset + i`.
    Contiguous,
    /// A contiguous block repeated over leading broadcast dimensions (a broadcast row):
    /// element `i` is at `offset + i % period`.
    Repeated { period: usize },
    /// General strided indexing.
    Strided,
}

impl Access {
    /// The code kernels switch on (`A_MODE` / `B_MODE`): 0 strided, 1 contiguous, 2 repeated.
    pub(crate) fn code(self) -> u32 {
        match self {
            Access::Strided => 0,
            Access::Contiguous => 1,
            Access::Repeated { .. } => 2,
        }
    }

    /// The period of [`Access::Repeated`], else 0.
    pub(crate) fn period(self) -> usize {
        match self {
            Access::Repeated { period } => period,
            _ => 0,
        }
    }
}

/// Row-major strides of a contiguous tensor of `shape`.
pub fn contiguous_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![0; shape.len()];
    let mut acc = 1;
    for (s, &n) in strides.iter_mut().zip(shape).rev() {
        *s = acc;
        acc *= n;
    }
    strides
}

/// The numpy broadcast of two shapes, or an error naming both.
pub fn broadcast_shapes(op: &'static str, a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let rank = a.len().max(b.len());
    let mut out = vec![0; rank];
    for i in 0..rank {
        let da = if i + a.len() >= rank {
            a[i + a.len() - rank]
        } else {
            1
        };
        let db = if i + b.len() >= rank {
            b[i + b.len() - rank]
        } else {
            1
        };
        out[i] = match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => {
                return Err(Error::shape(
                    op,
                    format!(
                        "cannot broadcast {a:?} with {b:?}: dimension {i} is {da} vs {db}, \
                            expected equal sizes or 1"
                    ),
                ))
            }
        };
    }
    Ok(out)
}

/// The number of elements of `shape`, or a `SHAPE` error when it has more than [`MAX_RANK`]
/// dimensions or its extents (zeros counted as 1) multiply past [`MAX_ELEMENTS`]. Counting
/// zeros as 1 keeps every partial product in range too, so kernels may multiply any subset of
/// the extents without overflow.
pub fn checked_numel(op: &'static str, shape: &[usize]) -> Result<usize> {
    check_rank(op, shape)?;
    let mut span = 1usize;
    for &n in shape {
        span = span
            .checked_mul(n.max(1))
            .filter(|&s| s <= MAX_ELEMENTS)
            .ok_or_else(|| {
                Error::shape(
                    op,
                    format!(
                        "shape {shape:?} spans more than {MAX_ELEMENTS} elements: \
                expected extents whose product is at most that"
                    ),
                )
            })?;
    }
    Ok(if shape.contains(&0) { 0 } else { span })
}

/// Check that a shape has at most [`MAX_RANK`] dimensions.
pub fn check_rank(op: &'static str, shape: &[usize]) -> Result<()> {
    if shape.len() > MAX_RANK {
        return Err(Error::shape(
            op,
            format!(
                "rank {} of {shape:?} exceeds the maximum rank {MAX_RANK}",
                shape.len()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_walk_a_permuted_view() {
        let l = Layout {
            shape: vec![2, 3],
            strides: vec![1, 2],
            offset: 1,
        };
        assert_eq!(l.offsets().collect::<Vec<_>>(), vec![1, 3, 5, 2, 4, 6]);
        assert!(!l.is_contiguous());
        assert_eq!(l.end(), 7);
        for start in 0..=6 {
            assert_eq!(
                l.offsets_from(start).collect::<Vec<_>>(),
                l.offsets().skip(start).collect::<Vec<_>>(),
                "from {start}"
            );
        }
    }

    #[test]
    fn element_counts_never_wrap() {
        assert_eq!(checked_numel("t", &[3, 0, 5]).unwrap(), 0);
        assert_eq!(checked_numel("t", &[]).unwrap(), 1);
        let half = 1usize << (usize::BITS / 2);
        for shape in [
            vec![half, half],
            vec![usize::MAX, 2],
            vec![0, usize::MAX, 2],
            vec![MAX_ELEMENTS + 1],
        ] {
            let err = checked_numel("t", &shape).unwrap_err();
            assert_eq!(err.code(), "SHAPE", "{shape:?}: {err}");
        }
        assert_eq!(checked_numel("t", &[MAX_ELEMENTS]).unwrap(), MAX_ELEMENTS);
        let huge = Layout {
            shape: vec![usize::MAX / 2, 3],
            strides: vec![4, 1],
            offset: 7,
        };
        assert_eq!(huge.checked_end(), None);
        assert_eq!(huge.end(), usize::MAX);
        assert!(!huge.lies_within(usize::MAX));
        assert!(Layout::contiguous(&[2, 3], 4).lies_within(10));
        assert!(!Layout::contiguous(&[2, 3], 5).lies_within(10));
    }

    #[test]
    fn broadcasting_follows_numpy() {
        assert_eq!(
            broadcast_shapes("t", &[3, 1, 5], &[4, 1]).unwrap(),
            vec![3, 4, 5]
        );
        assert!(broadcast_shapes("t", &[3], &[4]).is_err());
    }
}
