//! A matmul too large for one storage binding per operand, in pieces that fit: boxes of whole
//! products along the batch dimensions, boxes of one product along m, n and k, and the byte
//! range each operand's part of a box spans.

use crate::{Error, Result};

/// Piece boundaries fall on multiples of this along m, n and k: k ranges stay on the direct
/// kernel's steps of 16, and vec4 loads stay inside rows.
pub(super) const STEP: usize = 16;

/// One operand's elements as a box of the product reaches them: element `offset + i * m +
/// j * n + l * k` for the box's `(i, j, l)`, with `strides` ending in `[m, n, k]` (0 along a
/// dimension the operand does not vary with), after the strides along the batch dimensions
/// where the box spans them.
pub(super) struct Reach {
    /// What the operand is, for errors (`"B"`, `"the bias"`).
    pub name: &'static str,
    /// Its first element, in elements from the start of its buffer.
    pub offset: usize,
    /// Its strides along the box's dimensions (the batch dimensions, if any, then m, n and
    /// k), in elements.
    pub strides: Vec<usize>,
    /// Bytes per element.
    pub elem: usize,
}

/// Where one operand's part of a box lies: the binding (bytes `start..start + len` of its
/// buffer) and the box's first element within it.
pub(super) struct Part {
    /// First byte of the binding, a multiple of the alignment.
    pub start: u64,
    /// Bytes bound, whole words.
    pub len: u64,
    /// The box's first element, counted from `start`.
    pub first: usize,
}

impl Reach {
    /// Elements from the box's first to its last, inclusive, for a box of extents `len`.
    fn extent(&self, len: &[usize]) -> usize {
        (len.iter().zip(&self.strides))
            .map(|(l, s)| l.saturating_sub(1) * s)
            .sum::<usize>()
            + 1
    }

    /// The binding of this operand's part of the box at `start` with extents `len`, its start
    /// aligned down to `align` bytes.
    pub(super) fn part(&self, start: &[usize], len: &[usize], align: u64) -> Part {
        let first = self.offset + dot(start, &self.strides);
        let (lo, hi) = (first * self.elem, (first + self.extent(len)) * self.elem);
        let bound = lo as u64 / align * align;
        Part {
            start: bound,
            len: (hi as u64).next_multiple_of(4) - bound,
            first: first - bound as usize / self.elem,
        }
    }

    /// Bytes of this operand's part of a box of extents `len`.
    fn bytes(&self, len: &[usize]) -> u64 {
        (self.extent(len) * self.elem) as u64
    }

    /// This operand within the one product at batch index `batch`: its strides along m, n
    /// and k only.
    pub(super) fn product(&self, batch: &[usize]) -> Reach {
        let (outer, inner) = self.strides.split_at(batch.len());
        Reach {
            name: self.name,
            offset: self.offset + dot(batch, outer),
            strides: inner.to_vec(),
            elem: self.elem,
        }
    }
}

/// The element a multi-index `index` reaches with `strides`, from the first.
fn dot(index: &[usize], strides: &[usize]) -> usize {
    index.iter().zip(strides).map(|(i, s)| i * s).sum()
}

/// The extents `[m, n, k]` of the boxes that split a `dims` product so that every operand's
/// part of a box fits a binding of `max` bytes starting at a multiple of `align`: the operand
/// furthest past it halves the dimension that adds most to its reach, until all fit. An error
/// names the operand that does not fit even in boxes of [`STEP`] along each dimension it
/// varies with.
pub(super) fn box_extents(
    reaches: &[Reach],
    dims: [usize; 3],
    max: u64,
    align: u64,
) -> Result<[usize; 3]> {
    // A part's binding may start up to `align` bytes early and end up to 3 bytes late.
    let slack = align + 3;
    let mut len = dims;
    loop {
        let worst = (reaches.iter().map(|r| (r.bytes(&len), r))).max_by_key(|x| x.0);
        let Some((bytes, worst)) = worst.filter(|w| w.0 + slack > max) else {
            return Ok(len);
        };
        let shrink = (0..3)
            .filter(|&d| len[d] > STEP && worst.strides[d] > 0)
            .max_by_key(|&d| (len[d] - 1) * worst.strides[d]);
        let Some(d) = shrink else {
            return Err(Error::Limit {
                what: format!(
                    "matmul operand {} in a piece of at most {STEP} rows and columns of the \
                    {}x{}x{} (m x n x k) product, in bytes (webgpu binds each operand of a \
                    piece as one storage binding, with up to {slack} bytes of alignment)",
                    worst.name, dims[0], dims[1], dims[2]
                ),
                value: bytes,
                limit: "max_storage_binding_size",
                max,
            });
        };
        len[d] = len[d].div_ceil(2).next_multiple_of(STEP);
    }
}

/// The starts of the pieces of `0..dim` in steps of `len`, with each piece's extent (one
/// empty piece for an empty `dim`: a product over no k still stores its zeros).
pub(super) fn ranges(dim: usize, len: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..dim.max(1))
        .step_by(len.max(1))
        .map(move |s| (s, len.min(dim - s)))
}

/// The boxes of whole products of `dims` (m, n, k) that split a batched product of batch shape
/// `shape` so that every operand's part of a box (`reaches`: strides along the batch
/// dimensions, then m, n and k) fits a binding of `max` bytes starting at a multiple of
/// `align`: `(axis, count)` for boxes that take one batch index along each dimension before
/// `axis`, up to `count` along it and all of each dimension after it. The outermost axis where
/// a box fits gives the largest boxes; `None` when one product alone does not fit.
pub(super) fn batch_boxes(
    reaches: &[Reach],
    shape: &[usize],
    dims: [usize; 3],
    max: u64,
    align: u64,
) -> Option<(usize, usize)> {
    let slack = align + 3;
    (0..shape.len()).find_map(|axis| {
        let one: Vec<usize> = (shape.iter().enumerate())
            .map(|(d, &e)| if d > axis { e } else { 1 })
            .chain(dims)
            .collect();
        let mut count = shape[axis];
        for r in reaches {
            // Each index along `axis` adds its stride to the part (nothing where it repeats).
            let room = max.checked_sub(r.bytes(&one) + slack)?;
            let step = (r.strides[axis] * r.elem) as u64;
            if let Some(more) = room.checked_div(step) {
                count = count.min(1 + more as usize);
            }
        }
        Some((axis, count))
    })
}

/// The boxes of [`batch_boxes`]' `(axis, count)` over the batch shape `shape`, in order: each
/// one's first batch index and its extents.
pub(super) fn batch_ranges(
    shape: &[usize],
    axis: usize,
    count: usize,
) -> impl Iterator<Item = (Vec<usize>, Vec<usize>)> + '_ {
    let outer: usize = shape[..axis].iter().product();
    (0..outer).flat_map(move |i| {
        ranges(shape[axis], count).map(move |(start, len)| {
            let mut at = index(i, &shape[..axis]);
            at.push(start);
            at.resize(shape.len(), 0);
            let extents = (shape.iter().enumerate())
                .map(|(d, &e)| match d.cmp(&axis) {
                    std::cmp::Ordering::Less => 1,
                    std::cmp::Ordering::Equal => len,
                    std::cmp::Ordering::Greater => e,
                })
                .collect();
            (at, extents)
        })
    })
}

/// The multi-index of the `flat`-th element of `shape`, row-major.
pub(super) fn index(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut at = vec![0; shape.len()];
    for (i, &e) in at.iter_mut().zip(shape).rev() {
        (*i, flat) = (flat % e.max(1), flat / e.max(1));
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An f32 operand at the start of its buffer with `strides` along m, n and k.
    fn reach(name: &'static str, strides: &[usize]) -> Reach {
        Reach {
            name,
            offset: 0,
            strides: strides.to_vec(),
            elem: 4,
        }
    }

    /// A [4096, 25088] weight read as B = W^T (VGG-19's first fully connected layer) splits
    /// along n into pieces that fit 128 MiB; a row-major B splits along k.
    #[test]
    fn a_large_weight_splits_along_the_dimension_it_spans() {
        let (m, n, k) = (1, 4096, 25088);
        let (a, c) = (reach("A", &[k, 0, 1]), reach("C", &[n, 1, 0]));
        let max = 128 << 20;
        let transposed = [a, reach("B", &[0, k, 1]), c];
        assert_eq!(
            box_extents(&transposed, [m, n, k], max, 256).unwrap(),
            [1, 1024, k]
        );
        let [a, _, c] = transposed;
        let rows = [a, reach("B", &[0, 1, n]), c];
        assert_eq!(
            box_extents(&rows, [m, n, k], max, 256).unwrap(),
            [1, n, 6272]
        );
        let part = rows[1].part(&[0, 0, 6272], &[1, n, 6272], 256);
        let bytes = 6272 * 4096 * 4;
        assert_eq!((part.start, part.len, part.first), (bytes, bytes, 0));
    }

    /// A [7, 1, 13, 29] @ [5, 29, 31] product (each operand broadcast along one batch
    /// dimension) in 16 KiB bindings: five matrices of B pass the limit, so boxes take one
    /// index along the first batch dimension and four (B's 3,596 bytes a matrix) along the
    /// second; the boxes cover the batch in order, the last of each row shorter.
    #[test]
    fn a_batch_splits_at_the_outermost_axis_where_a_box_fits() {
        let a = reach("A", &[377, 0, 29, 0, 1]);
        let b = reach("B", &[0, 899, 0, 1, 31]);
        let c = reach("C", &[5 * 403, 403, 31, 1, 0]);
        let all = [a, b, c];
        let boxes = batch_boxes(&all, &[7, 5], [13, 31, 29], 16 << 10, 256);
        assert_eq!(boxes, Some((1, 4)));
        let covered: Vec<(Vec<usize>, Vec<usize>)> = batch_ranges(&[7, 5], 1, 4).collect();
        assert_eq!(covered.len(), 14);
        assert_eq!(covered[0], (vec![0, 0], vec![1, 4]));
        assert_eq!(covered[13], (vec![6, 4], vec![1, 1]));
        let [a, b, c] = all;
        assert_eq!(
            batch_boxes(&[a, c], &[7, 5], [13, 31, 29], 16 << 10, 256),
            Some((0, 2))
        );
        let one = b.product(&[3, 2]);
        assert_eq!((one.offset, one.strides), (2 * 899, vec![0, 1, 31]));
        let big = [reach("B", &[0, 899, 0, 1, 31])];
        assert_eq!(batch_boxes(&big, &[7, 5], [13, 31, 29], 3000, 256), None);
        assert_eq!(index(23, &[7, 5]), vec![4, 3]);
    }

    /// A row longer than the limit cannot be split: the error gives its size and the limit.
    #[test]
    fn an_operand_past_the_limit_in_the_smallest_pieces_is_an_error() {
        let a = reach("A", &[1 << 20, 0, 1]);
        let e = box_extents(&[a], [4, 4, 1 << 20], 1000, 256)
            .unwrap_err()
            .to_string();
        assert!(e.contains("matmul operand A") && e.contains("1000"), "{e}");
    }
}
