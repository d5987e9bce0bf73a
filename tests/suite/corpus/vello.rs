//! vello_shaders 0.11.0's compute kernels (vello's GPU 2D renderer: path tag and draw tag
//! reductions and scans, clip stack reduction, tile backdrops, indirect-dispatch setup), each
//! on its own with seeded inputs against a sequential Rust reference.

use super::published::kernel;
use super::{launch_published, words};
use crate::common::devices;
use crate::common::kernels::poisoned;
use crate::common::name;

use unicompute::{Binding, Buffer, Device};

/// vello's `Config` uniform (22 words, padded to 24) with the listed words set.
fn config(d: &Device, set: &[(usize, u32)]) -> Buffer<u32> {
    let mut c = vec![0u32; 24];
    for &(i, v) in set {
        c[i] = v;
    }
    Buffer::from_slice(d, &c).unwrap()
}
const N_DRAWOBJ: usize = 5;
const N_PATH: usize = 6;
const PATHTAG_BASE: usize = 9;
const DRAWTAG_BASE: usize = 11;

/// A `TagMonoid` or `DrawMonoid`: fields added wrapping.
fn combine<const N: usize>(a: [u32; N], b: [u32; N]) -> [u32; N] {
    std::array::from_fn(|i| a[i].wrapping_add(b[i]))
}

/// The path tag monoid of one word of four tag bytes, from the tag layout vello documents:
/// 2 low bits the segment's point count, bit 2 subpath end, bit 3 f32 coordinates, 0x10 path,
/// 0x20 transform, 0x40 style. Fields: trans_ix, pathseg_ix, pathseg_offset, style_ix,
/// path_ix.
fn reduce_tag(word: u32) -> [u32; 5] {
    let mut m = [0u32; 5];
    for tag in word.to_le_bytes().map(u32::from) {
        let points = tag & 3;
        m[0] += u32::from(tag & 0x20 != 0);
        m[1] += u32::from(points != 0);
        // Segment data in words: its points, one more with the subpath-end bit, of 2 words
        // with f32 coordinates, of 1 word (two i16) otherwise.
        let n_points = points + (tag >> 2 & 1);
        m[2] += if tag & 8 != 0 { 2 * n_points } else { n_points };
        m[3] += 2 * u32::from(tag & 0x40 != 0);
        m[4] += u32::from(tag & 0x10 != 0);
    }
    m
}

/// Monoids as the words of a WGSL array of the struct.
fn flat<const N: usize>(ms: &[[u32; N]]) -> Vec<u32> {
    ms.iter().flatten().copied().collect()
}

/// Seeded monoids with small fields, `n` of them.
fn monoids<const N: usize>(seed: u64, n: usize) -> Vec<[u32; N]> {
    words(seed, N * n, 1000)
        .chunks(N)
        .map(|c| std::array::from_fn(|i| c[i]))
        .collect()
}

/// Each 256-block's exclusive scan seeded by `seed(block)`.
fn block_scan<const N: usize>(xs: &[[u32; N]], seed: impl Fn(usize) -> [u32; N]) -> Vec<[u32; N]> {
    let mut out = Vec::with_capacity(xs.len());
    for (b, block) in xs.chunks(256).enumerate() {
        let mut acc = seed(b);
        for &x in block {
            out.push(acc);
            acc = combine(acc, x);
        }
    }
    out
}

/// The fold of `xs`.
fn total<const N: usize>(xs: &[[u32; N]]) -> [u32; N] {
    xs.iter().fold([0; N], |a, &b| combine(a, b))
}

/// Seeded path tag words: bytes drawn from tags vello encodes, and random bytes.
fn tag_words(seed: u64, n: usize) -> Vec<u32> {
    const TAGS: [u32; 10] = [0x09, 0x0a, 0x0b, 0x0d, 0x01, 0x02, 0x10, 0x20, 0x40, 0x00];
    words(seed, 4 * n, 20)
        .chunks(4)
        .zip(words(seed + 1, n, u32::MAX))
        .map(|(c, r)| {
            let pick = |i: usize| {
                if c[i] < 10 {
                    TAGS[c[i] as usize]
                } else {
                    r >> (8 * i) & 0xff
                }
            };
            (0..4).fold(0, |w, i| w | pick(i) << (8 * i))
        })
        .collect()
}

/// pathtag_reduce: one monoid per 256 tag words, read after `pathtag_base`.
#[test]
fn vello_pathtag_reduce() {
    let k = kernel("vello_pathtag_reduce");
    for d in devices() {
        for groups in [1usize, 3] {
            let base = 7;
            let scene = tag_words(groups as u64, base + 256 * groups);
            let c = config(d, &[(PATHTAG_BASE, base as u32)]);
            let s = Buffer::from_slice(d, &scene).unwrap();
            let out = poisoned::<u32>(d, 5 * groups);
            let b = [Binding::from(&c), Binding::from(&s), Binding::from(&out)];
            launch_published(d, &k, &b, [groups as u32, 1, 1]);
            let tags: Vec<_> = scene[base..].iter().map(|&w| reduce_tag(w)).collect();
            let want: Vec<_> = tags.chunks(256).map(total).collect();
            assert_eq!(
                out.read_blocking().unwrap(),
                flat(&want),
                "{groups} groups, {}",
                name(d)
            );
        }
    }
}

/// pathtag_reduce2: one monoid per 256 monoids.
#[test]
fn vello_pathtag_reduce2() {
    let k = kernel("vello_pathtag_reduce2");
    for d in devices() {
        let xs = monoids::<5>(3, 512);
        let inp = Buffer::from_slice(d, &flat(&xs)).unwrap();
        let out = poisoned::<u32>(d, 10);
        launch_published(
            d,
            &k,
            &[Binding::from(&inp), Binding::from(&out)],
            [2, 1, 1],
        );
        let want: Vec<_> = xs.chunks(256).map(total).collect();
        assert_eq!(out.read_blocking().unwrap(), flat(&want), "{}", name(d));
    }
}

/// pathtag_scan1: each block's exclusive scan after the blocks before it (from `reduced2`).
#[test]
fn vello_pathtag_scan1() {
    let k = kernel("vello_pathtag_scan1");
    for d in devices() {
        let groups = 3;
        let (xs, parents) = (monoids::<5>(4, 256 * groups), monoids::<5>(5, 256));
        let r = Buffer::from_slice(d, &flat(&xs)).unwrap();
        let r2 = Buffer::from_slice(d, &flat(&parents)).unwrap();
        let out = poisoned::<u32>(d, 5 * 256 * groups);
        let b = [Binding::from(&r), Binding::from(&r2), Binding::from(&out)];
        launch_published(d, &k, &b, [groups as u32, 1, 1]);
        let want = block_scan(&xs, |g| total(&parents[..g]));
        assert_eq!(out.read_blocking().unwrap(), flat(&want), "{}", name(d));
    }
}

/// pathtag_scan, both of vello's permutations: `small` seeds block g with the fold of
/// `reduced[..g]`, the other with `reduced[g]`.
#[test]
fn vello_pathtag_scan() {
    for (id, small) in [
        ("vello_pathtag_scan_small", true),
        ("vello_pathtag_scan_large", false),
    ] {
        let k = kernel(id);
        for d in devices() {
            let (groups, base) = (3, 5);
            let scene = tag_words(11, base + 256 * groups);
            let reduced = monoids::<5>(12, 256);
            let c = config(d, &[(PATHTAG_BASE, base as u32)]);
            let s = Buffer::from_slice(d, &scene).unwrap();
            let r = Buffer::from_slice(d, &flat(&reduced)).unwrap();
            let out = poisoned::<u32>(d, 5 * 256 * groups);
            let b = [
                Binding::from(&c),
                Binding::from(&s),
                Binding::from(&r),
                Binding::from(&out),
            ];
            launch_published(d, &k, &b, [groups as u32, 1, 1]);
            let tags: Vec<_> = scene[base..].iter().map(|&w| reduce_tag(w)).collect();
            let seed = |g: usize| {
                if small {
                    total(&reduced[..g])
                } else {
                    reduced[g]
                }
            };
            let want = block_scan(&tags, seed);
            assert_eq!(
                out.read_blocking().unwrap(),
                flat(&want),
                "{id} on {}",
                name(d)
            );
        }
    }
}

/// bbox_clear: the first `n_path` boxes become empty (i32 extremes), the rest stay as they were.
#[test]
fn vello_bbox_clear() {
    let k = kernel("vello_bbox_clear");
    for d in devices() {
        let n_path = 300;
        let c = config(d, &[(N_PATH, n_path as u32)]);
        let boxes = poisoned::<u32>(d, 6 * 512);
        launch_published(
            d,
            &k,
            &[Binding::from(&c), Binding::from(&boxes)],
            [2, 1, 1],
        );
        let mut want = vec![0x7fa5_a5a5u32; 6 * 512];
        for b in want.chunks_mut(6).take(n_path) {
            b[..4].copy_from_slice(&[0x7fff_ffff, 0x7fff_ffff, 0x8000_0000, 0x8000_0000]);
        }
        assert_eq!(boxes.read_blocking().unwrap(), want, "{}", name(d));
    }
}

/// The draw monoid of a draw tag: path_ix, clip_ix, scene_offset, info_offset.
fn map_draw_tag(t: u32) -> [u32; 4] {
    [u32::from(t != 0), t & 1, t >> 2 & 7, t >> 6 & 0xf]
}

/// draw_reduce: workgroup g folds its share of the 256-tag blocks (the first `remainder`
/// workgroups one block more), tags past `n_drawobj` read as no-ops.
#[test]
fn vello_draw_reduce() {
    const TAGS: [u32; 7] = [0, 0x44, 0x114, 0x29c, 0x28c, 0x49, 0x21];
    let k = kernel("vello_draw_reduce");
    for d in devices() {
        for (n, groups) in [(1000usize, 4usize), (70_001, 256)] {
            let base = 3;
            let scene: Vec<u32> = words(n as u64, base + n, 7)
                .iter()
                .map(|&i| TAGS[i as usize])
                .collect();
            let c = config(d, &[(N_DRAWOBJ, n as u32), (DRAWTAG_BASE, base as u32)]);
            let s = Buffer::from_slice(d, &scene).unwrap();
            let out = poisoned::<u32>(d, 4 * groups);
            let b = [Binding::from(&c), Binding::from(&s), Binding::from(&out)];
            launch_published(d, &k, &b, [groups as u32, 1, 1]);
            let blocks = n.div_ceil(256);
            let (per, extra) = (blocks / 256, blocks % 256);
            let want: Vec<[u32; 4]> = (0..groups)
                .map(|g| {
                    let first = per * g + g.min(extra);
                    let count = per + usize::from(g < extra);
                    (first * 256..(first + count) * 256)
                        .map(|ix| map_draw_tag(if ix < n { scene[base + ix] } else { 0 }))
                        .fold([0; 4], combine)
                })
                .collect();
            let what = format!("{n} tags, {groups} groups on {}", name(d));
            assert_eq!(out.read_blocking().unwrap(), flat(&want), "{what}");
        }
    }
}

/// vello's `Bic` (unmatched pops, unmatched pushes) and its combination.
fn bic_combine(x: [u32; 2], y: [u32; 2]) -> [u32; 2] {
    let m = x[1].min(y[0]);
    [x[0] + y[0] - m, x[1] + y[1] - m]
}

/// clip_reduce, workgroup by workgroup: the Bic of each workgroup, and for the pushes left
/// unmatched in it, in order, their index and their path's box as f32.
fn clip_reduce_reference(inp: &[i32], boxes: &[i32]) -> (Vec<u32>, Vec<u32>) {
    let (mut reduced, mut out) = (Vec::new(), vec![0x7fa5_a5a5u32; 8 * inp.len()]);
    for (g, wg) in inp.chunks(256).enumerate() {
        let bic = |p: i32| [u32::from(p < 0), u32::from(p >= 0)];
        let mut suffix = vec![[0u32; 2]; 257];
        for l in (0..256).rev() {
            suffix[l] = bic_combine(bic(wg[l]), suffix[l + 1]);
        }
        reduced.extend(suffix[0]);
        let size = suffix[0][1] as usize;
        let mut slots = vec![(0usize, 0usize); size];
        for l in 0..256 {
            if wg[l] >= 0 && suffix[l + 1][0] == 0 {
                slots[size - suffix[l + 1][1] as usize - 1] = (l, wg[l] as usize);
            }
        }
        for (s, &(l, p)) in slots.iter().enumerate() {
            let o = 8 * (256 * g + s);
            out[o] = (256 * g + l) as u32;
            out[o + 1..o + 4].fill(u32::MAX); // padding: not compared
            for c in 0..4 {
                out[o + 4 + c] = (boxes[6 * p + c] as f32).to_bits();
            }
        }
    }
    (reduced, out)
}

/// clip_reduce over 2 workgroups of seeded pushes (path indices) and pops (-1).
#[test]
fn vello_clip_reduce() {
    let k = kernel("vello_clip_reduce");
    for d in devices() {
        let paths = 40;
        let inp: Vec<i32> = words(21, 512, 2 * paths)
            .iter()
            .map(|&w| if w < paths { w as i32 } else { -1 })
            .collect();
        let boxes: Vec<i32> = words(22, 6 * paths as usize, 4000)
            .iter()
            .map(|&w| w as i32 - 2000)
            .collect();
        let clip_inp: Vec<u32> = inp
            .iter()
            .enumerate()
            .flat_map(|(i, &p)| [i as u32, p as u32])
            .collect();
        let ci = Buffer::from_slice(d, &clip_inp).unwrap();
        let pb = Buffer::from_slice(d, bytemuck::cast_slice::<i32, u32>(&boxes)).unwrap();
        let (reduced, out) = (poisoned::<u32>(d, 4), poisoned::<u32>(d, 8 * 512));
        let b = [
            Binding::from(&ci),
            Binding::from(&pb),
            Binding::from(&reduced),
            Binding::from(&out),
        ];
        launch_published(d, &k, &b, [2, 1, 1]);
        let (want_reduced, want_out) = clip_reduce_reference(&inp, &boxes);
        assert_eq!(
            reduced.read_blocking().unwrap(),
            want_reduced,
            "Bic on {}",
            name(d)
        );
        let got = out.read_blocking().unwrap();
        for (i, (g, w)) in got.iter().zip(&want_out).enumerate() {
            if *w != u32::MAX {
                assert_eq!(g, w, "clip_out word {i} (element {}) on {}", i / 8, name(d));
            }
        }
    }
}

/// backdrop: each row of `width_in_tiles` tiles (one workgroup a row) becomes its inclusive
/// prefix sum of backdrops; segment words stay.
#[test]
fn vello_backdrop() {
    let k = kernel("vello_backdrop");
    for d in devices() {
        for (width, rows) in [(1usize, 1usize), (37, 5), (64, 3)] {
            let mut tiles = words(width as u64, 2 * width * rows, 200);
            tiles
                .iter_mut()
                .step_by(2)
                .for_each(|b| *b = (*b as i32 - 100) as u32);
            let c = config(d, &[(0, width as u32)]);
            let t = Buffer::from_slice(d, &tiles).unwrap();
            launch_published(
                d,
                &k,
                &[Binding::from(&c), Binding::from(&t)],
                [rows as u32, 1, 1],
            );
            let mut want = tiles.clone();
            for row in want.chunks_mut(2 * width) {
                let mut sum = 0i32;
                for tile in row.chunks_mut(2) {
                    sum += tile[0] as i32;
                    tile[0] = sum as u32;
                }
            }
            let what = format!("{width}x{rows} tiles on {}", name(d));
            assert_eq!(t.read_blocking().unwrap(), want, "{what}");
        }
    }
}

/// Seeded vello `Path`s (bbox, first tile; 8 words each) over consecutive tile rectangles, some
/// empty, and the tile count.
fn paths(seed: u64, n: usize) -> (Vec<u32>, usize) {
    let (mut out, mut tiles) = (Vec::new(), 0);
    for c in words(seed, 4 * n, 7).chunks(4) {
        let (x0, y0, w, h) = (c[0], c[1], c[2] % 5, c[3] % 4);
        out.extend([x0, y0, x0 + w, y0 + h, tiles as u32, 0, 0, 0]);
        tiles += (w * h) as usize;
    }
    (out, tiles)
}

/// backdrop_dyn: every row of every path's tiles becomes its inclusive prefix sum, unless the
/// bump allocators' `failed` is set; rows spread over the workgroup by binary search.
#[test]
fn vello_backdrop_dyn() {
    let k = kernel("vello_backdrop_dyn");
    for d in devices() {
        for (n, failed) in [(300usize, 0u32), (5, 0), (40, 4)] {
            let (ps, count) = paths(n as u64, n);
            let mut tiles = words(n as u64 + 1, 2 * count + 2, 100);
            tiles
                .iter_mut()
                .step_by(2)
                .for_each(|b| *b = (*b as i32 - 50) as u32);
            let c = config(d, &[(N_DRAWOBJ, n as u32)]);
            let bump = Buffer::from_slice(d, &[failed, 0, 0, 0, 0, 0, 0, 0]).unwrap();
            let (p, t) = (
                Buffer::from_slice(d, &ps).unwrap(),
                Buffer::from_slice(d, &tiles).unwrap(),
            );
            let b = [
                Binding::from(&c),
                Binding::from(&bump),
                Binding::from(&p),
                Binding::from(&t),
            ];
            launch_published(d, &k, &b, [n.div_ceil(256) as u32, 1, 1]);
            let mut want = tiles.clone();
            for path in ps.chunks(8).filter(|_| failed == 0) {
                let (width, first) = ((path[2] - path[0]) as usize, path[4] as usize);
                for row in 0..(path[3] - path[1]) as usize {
                    let mut sum = 0i32;
                    for x in 0..width {
                        let ix = 2 * (first + row * width + x);
                        sum += want[ix] as i32;
                        want[ix] = sum as u32;
                    }
                }
            }
            let what = format!("{n} paths, failed {failed} on {}", name(d));
            assert_eq!(t.read_blocking().unwrap(), want, "{what}");
        }
    }
}

/// path_count_setup and path_tiling_setup: indirect counts of 256-wide workgroups for the
/// bump allocators' `lines` (word 7) or `seg_counts` (word 4); none, and for path_tiling a
/// poisoned `ptcl[0]`, after a failure.
#[test]
fn vello_indirect_setups() {
    for (id, counter) in [
        ("vello_path_count_setup", 7usize),
        ("vello_path_tiling_setup", 4),
    ] {
        let k = kernel(id);
        for d in devices() {
            for (failed, count) in [(0u32, 0u32), (0, 1), (0, 257), (0, 70_000), (2, 900)] {
                let mut bump = [failed, 0, 0, 0, 0, 0, 0, 0];
                bump[counter] = count;
                let bump = Buffer::from_slice(d, &bump).unwrap();
                let (indirect, ptcl) = (poisoned::<u32>(d, 3), poisoned::<u32>(d, 4));
                let mut b = vec![Binding::from(&bump), Binding::from(&indirect)];
                if id == "vello_path_tiling_setup" {
                    b.push(Binding::from(&ptcl));
                }
                launch_published(d, &k, &b, [1, 1, 1]);
                let x = if failed == 0 { count.div_ceil(256) } else { 0 };
                let what = format!("{id}, failed {failed}, count {count} on {}", name(d));
                assert_eq!(indirect.read_blocking().unwrap(), [x, 1, 1], "{what}");
                let mut want_ptcl = vec![0x7fa5_a5a5; 4];
                if failed != 0 && id == "vello_path_tiling_setup" {
                    want_ptcl[0] = u32::MAX;
                }
                assert_eq!(ptcl.read_blocking().unwrap(), want_ptcl, "ptcl, {what}");
            }
        }
    }
}
