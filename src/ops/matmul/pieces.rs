//! A matmul too large for one storage binding per operand, in pieces that fit: boxes of the
//! product along m, n and k, and the byte range each operand's part of a box spans.

use crate::{Error, Result};

/// Piece boundaries fall on multiples of this along m, n and k: k ranges stay on the direct
/// kernel's steps of 16, and vec4 loads stay inside rows.
pub(super) const STEP: usize = 16;

/// One operand's elements as a box of the product reaches them: element `offset + i * m +
/// j * n + l * k` for the box's `(i, j, l)`, with `strides = [m, n, k]` (0 along a dimension
/// the operand does not vary with).
pub(super) struct Reach {
    /// What the operand is, for errors (`"B"`, `"the bias"`).
    pub name: &'static str,
    /// Its first element, in elements from the start of its buffer.
    pub offset: usize,
    /// Its strides along m, n and k, in elements.
    pub strides: [usize; 3],
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
    fn extent(&self, len: [usize; 3]) -> usize {
        (0..3)
            .map(|d| len[d].saturating_sub(1) * self.strides[d])
            .sum::<usize>()
            + 1
    }

    /// The binding of this operand's part of the box at `start` with extents `len`, its start
    /// aligned down to `align` bytes.
    pub(super) fn part(&self, start: [usize; 3], len: [usize; 3], align: u64) -> Part {
        let first: usize = self.offset + (0..3).map(|d| start[d] * self.strides[d]).sum::<usize>();
        let (lo, hi) = (first * self.elem, (first + self.extent(len)) * self.elem);
        let bound = lo as u64 / align * align;
        Part {
            start: bound,
            len: (hi as u64).next_multiple_of(4) - bound,
            first: first - bound as usize / self.elem,
        }
    }

    /// Bytes of this operand's part of a box of extents `len`.
    fn bytes(&self, len: [usize; 3]) -> u64 {
        (self.extent(len) * self.elem) as u64
    }
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
        let worst = (reaches.iter().map(|r| (r.bytes(len), r))).max_by_key(|x| x.0);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// An f32 operand at the start of its buffer with `strides` along m, n and k.
    fn reach(name: &'static str, strides: [usize; 3]) -> Reach {
        Reach {
            name,
            offset: 0,
            strides,
            elem: 4,
        }
    }

    /// A [4096, 25088] weight read as B = W^T (VGG-19's first fully connected layer) splits
    /// along n into pieces that fit 128 MiB; a row-major B splits along k.
    #[test]
    fn a_large_weight_splits_along_the_dimension_it_spans() {
        let (m, n, k) = (1, 4096, 25088);
        let (a, c) = (reach("A", [k, 0, 1]), reach("C", [n, 1, 0]));
        let max = 128 << 20;
        let transposed = [a, reach("B", [0, k, 1]), c];
        assert_eq!(
            box_extents(&transposed, [m, n, k], max, 256).unwrap(),
            [1, 1024, k]
        );
        let [a, _, c] = transposed;
        let rows = [a, reach("B", [0, 1, n]), c];
        assert_eq!(
            box_extents(&rows, [m, n, k], max, 256).unwrap(),
            [1, n, 6272]
        );
        let part = rows[1].part([0, 0, 6272], [1, n, 6272], 256);
        let bytes = 6272 * 4096 * 4;
        assert_eq!((part.start, part.len, part.first), (bytes, bytes, 0));
    }

    /// A row longer than the limit cannot be split: the error gives its size and the limit.
    #[test]
    fn an_operand_past_the_limit_in_the_smallest_pieces_is_an_error() {
        let a = reach("A", [1 << 20, 0, 1]);
        let e = box_extents(&[a], [4, 4, 1 << 20], 1000, 256)
            .unwrap_err()
            .to_string();
        assert!(e.contains("matmul operand A") && e.contains("1000"), "{e}");
    }
}
