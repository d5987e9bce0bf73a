//! Copies on the CPU: as runs of the trailing dimensions that are contiguous in both views
//! (a concat's slices, a transpose's rows), copied as slices in parallel tasks; views with no
//! such runs element by element, in parallel chunks where the output is contiguous.

use crate::base::par::{self, *};

use super::ViewCopy;
use crate::base::layout::Layout;
use crate::hal::cpu::{read_guard, write_guard};
use crate::ops::common::cpu::{offsets_from, out_words, SharedOut, CHUNK};
use crate::{Error, Result};

/// Shortest run worth copying as a slice rather than element by element.
const MIN_RUN: usize = 8;

/// Offset of the first element of run `r` of layout `l`, whose first `outer` dimensions
/// number the runs.
fn run_offset(l: &Layout, outer: usize, mut r: usize) -> usize {
    let mut off = l.offset;
    for d in (0..outer).rev() {
        off += (r % l.shape[d]) * l.strides[d];
        r /= l.shape[d];
    }
    off
}

/// The views as runs: the elements of each run (the trailing dimensions contiguous in both,
/// collapsed) and how many leading dimensions number them.
fn runs(x: &Layout, out: &Layout) -> (usize, usize) {
    let mut len = 1;
    let mut outer = x.shape.len();
    while outer > 0 {
        let d = outer - 1;
        let unit = |l: &Layout| l.shape[d] == 1 || l.strides[d] == len;
        if !unit(x) || !unit(out) {
            break;
        }
        len *= x.shape[d];
        outer = d;
    }
    (len, outer)
}

/// Whether the runs of `out` (of `len` elements, numbered by its first `outer` dimensions)
/// never overlap: each dimension steps past everything the dimensions after it reach.
fn disjoint(out: &Layout, outer: usize, len: usize) -> bool {
    let mut reach = len;
    for d in (0..outer).rev() {
        if out.shape[d] > 1 {
            if out.strides[d] < reach {
                return false;
            }
            reach += out.strides[d] * (out.shape[d] - 1);
        }
    }
    true
}

pub(super) fn copy(op: &ViewCopy<'_>) -> Result<()> {
    let (x, out) = (op.x, op.out);
    if x.buf.id() == out.buf.id() {
        // `copy_into` copies views of one block through a block of their own.
        return Err(Error::Internal(
            "a copy within one block reached the cpu".into(),
        ));
    }
    let xs = read_guard(x.buf)?;
    let mut os = write_guard(out.buf)?;
    let (len, outer) = runs(x.layout, out.layout);
    let inside = x.layout.lies_within(xs.len()) && out.layout.lies_within(os.len());
    if len >= MIN_RUN && inside && disjoint(out.layout, outer, len) {
        copy_runs(&xs, &mut os, [x.layout, out.layout], [len, outer]);
    } else if out.layout.is_contiguous() {
        out_words(&mut os, &out)
            .par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(c, chunk)| {
                for (o, xi) in chunk.iter_mut().zip(offsets_from(x.layout, c * CHUNK)) {
                    *o = xs[xi];
                }
            });
    } else {
        for (xi, o) in x.layout.offsets().zip(out.layout.offsets()) {
            os[o] = xs[xi];
        }
    }
    Ok(())
}

/// Copies the runs of `len` elements (numbered by the first `outer` dimensions) from view
/// `x` of `xs` to view `out` of `os` (each within its words), whose runs do not overlap: in
/// tasks of about `CHUNK` elements, several short runs to a task or a long run split into
/// pieces.
fn copy_runs(xs: &[u32], os: &mut [u32], [x, out]: [&Layout; 2], [len, outer]: [usize; 2]) {
    let count = x.numel() / len;
    let pieces = len.div_ceil(CHUNK);
    let piece = len.div_ceil(pieces);
    let per = (CHUNK / len).max(1);
    let tasks = if pieces > 1 {
        count * pieces
    } else {
        count.div_ceil(per)
    };
    let target = SharedOut(os.as_mut_ptr());
    par::tasks(tasks, |t| {
        let (runs, span) = if pieces > 1 {
            (
                t / pieces..t / pieces + 1,
                t % pieces * piece..((t % pieces + 1) * piece).min(len),
            )
        } else {
            (t * per..((t + 1) * per).min(count), 0..len)
        };
        for r in runs {
            let from = run_offset(x, outer, r) + span.start;
            let to = run_offset(out, outer, r) + span.start;
            let src = &xs[from..from + span.len()];
            // SAFETY: run r of `out` lies within `os` (the caller's), its runs are disjoint
            // (`disjoint`), and each task writes its own runs or pieces of one.
            let dst = unsafe { std::slice::from_raw_parts_mut(target.at(to), src.len()) };
            dst.copy_from_slice(src);
        }
    });
}
