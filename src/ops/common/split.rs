//! Pieces of work for devices that end long loops early ([`crate::Limits::max_loop_iterations`]:
//! Mesa's llvmpipe ends every loop of an invocation once all of them together have run
//! 65,535 iterations). Each op kernel whose loops grow with the input takes a range of
//! its long dimension per dispatch; these functions choose the ranges from an upper bound
//! on the kernel's loop iterations per invocation, worked out from the shader with every loop
//! counted as run (a loop entered with `n` iterations counts `n + 1`; none assumed unrolled).
//! On devices without the limit there is one piece: the whole range.

use crate::base::layout::MAX_RANK;

/// Loop iterations one invocation may spend: half the driver's limit, a margin for loops the
/// counts here leave out (such as any the compiler adds). `None`: no limit.
pub(crate) fn budget(limit: Option<u64>) -> Option<usize> {
    limit.map(|n| (n / 2) as usize)
}

/// `[begin, end)` ranges of at most `per` (at least 1) covering `0..total`; one empty range
/// when `total` is 0.
pub(crate) fn pieces(total: usize, per: usize) -> Vec<[usize; 2]> {
    let per = per.max(1);
    if total == 0 {
        return vec![[0, 0]];
    }
    (0..total.div_ceil(per))
        .map(|i| [i * per, ((i + 1) * per).min(total)])
        .collect()
}

/// Flags of dispatch `i` of `count` that accumulate across dispatches: bit 0 continues from
/// the stored partial result (every piece but the first), bit 1 finishes (the last piece).
pub(crate) fn flags(i: usize, count: usize) -> u32 {
    u32::from(i > 0) | (u32::from(i + 1 == count) << 1)
}

/// The k ranges of matmul.wgsl for a `tm x tn` tile (16 x 16 invocations, each `tm / 16 x
/// tn / 16` outputs) with vec4 or scalar tile loads: whole steps of TK = 16.
pub(crate) fn matmul_k(
    limit: Option<u64>,
    [tm, tn]: [usize; 2],
    vec4: bool,
    k: usize,
) -> Vec<[usize; 2]> {
    const TK: usize = 16;
    let Some(budget) = budget(limit) else {
        return vec![[0, k]];
    };
    let (rm, rn) = (tm / 16, tn / 16);
    // One pass of a tile-load loop over `t` rows or columns: 16 x t values by 256 invocations.
    let load = |t: usize| {
        if vec4 {
            (4 * t).div_ceil(256) * 5 + 1
        } else {
            (TK * t).div_ceil(256) + 1
        }
    };
    let per_kk = 1 + (rm + 1) + (rn + 1) + (rm + 1) + rm * (rn + 1);
    let per_step = 1 + load(tm) + load(tn) + 1 + TK * per_kk;
    // The batch offsets (two loops over the batch rank) and the epilogue.
    let fixed = 2 * (MAX_RANK + 1) + (rm + 1) + rm * (rn + 1);
    pieces(k, budget.saturating_sub(fixed) / per_step * TK)
}

/// The k ranges of matmul_direct_main (4 k per step; with scalar loads each step also runs
/// the 4-element loops of eight `a_k4` / `b_n4` calls): whole multiples of 16.
pub(crate) fn matmul_direct_k(limit: Option<u64>, vec4: bool, k: usize) -> Vec<[usize; 2]> {
    let Some(budget) = budget(limit) else {
        return vec![[0, k]];
    };
    let per_16 = 4 * (1 + if vec4 { 0 } else { 8 * 5 });
    // The batch offsets (two loops over the batch rank) and the 4 x 4 epilogue.
    let fixed = 2 * (MAX_RANK + 1) + 5 + 4 * 5;
    pieces(k, budget.saturating_sub(fixed) / per_16 * 16)
}

/// Loop iterations of conv.wgsl's tap loops over `nc` channels, `ny` rows and `nx` columns.
fn conv_cost(nc: usize, ny: usize, nx: usize) -> usize {
    (nc + 1) + nc * ((ny + 1) + ny * (nx + 1))
}

/// Boxes `[channels, ky, kx]` (each a `[begin, end)` range) covering the taps of conv.wgsl
/// (`cg` channels of a group, a `kh x kw` kernel; pool2d_main with `cg` = 1): whole
/// channels where one channel fits the budget, else whole rows of one channel, else pieces
/// of one row.
pub(crate) fn conv_taps(
    limit: Option<u64>,
    cg: usize,
    kh: usize,
    kw: usize,
) -> Vec<[[usize; 2]; 3]> {
    let Some(budget) = budget(limit) else {
        return vec![[[0, cg], [0, kh], [0, kw]]];
    };
    let nx = kw.min(budget / 2 - 3);
    let ny = kh.min(((budget - 3) / (nx + 2)).max(1));
    let nc = cg.min((budget - 1) / (2 + ny * (nx + 2)).max(1)).max(1);
    debug_assert!(conv_cost(nc, ny, nx) <= budget);
    let mut boxes = Vec::new();
    for c in pieces(cg, nc) {
        for y in pieces(kh, ny) {
            for x in pieces(kw, nx) {
                boxes.push([c, y, x]);
            }
        }
    }
    boxes
}

/// The key ranges of attention.wgsl with query and key head dimension `d` (the value head
/// dimension, at most 256, only changes how many of the four output columns are live):
/// whole tiles of 64 keys.
pub(crate) fn attention_keys(limit: Option<u64>, lk: usize, d: usize) -> Vec<[usize; 2]> {
    let Some(budget) = budget(limit) else {
        return vec![[0, lk]];
    };
    // Per tile of 64 keys: the tile loop, the dot product over d, two 6-step tree loops, and
    // four output columns of up to 64 keys each.
    let per_tile = 1 + (d + 1) + 2 * 7 + 5 + 4 * 65;
    // Loading the query row, and reading and storing the running state.
    let fixed = d.div_ceil(64) + 1 + 3 * 5;
    pieces(lk, budget.saturating_sub(fixed) / per_tile * 64)
}

/// The key ranges of attention_serial_main (one invocation per query row, one key at a
/// time: the dot product over `d`, the output row of `dv`).
pub(crate) fn attention_serial_keys(
    limit: Option<u64>,
    lk: usize,
    d: usize,
    dv: usize,
) -> Vec<[usize; 2]> {
    let Some(budget) = budget(limit) else {
        return vec![[0, lk]];
    };
    let per_key = 1 + (d + 1) + (dv + 1);
    // Loading the query row, the running state in or the zeroed output, the state or output out.
    let fixed = (d + 1) + 2 * (dv + 1) + 5;
    pieces(lk, (budget.saturating_sub(fixed) / per_key).max(1))
}

/// The row ranges of topk.wgsl: one invocation per element counts the elements of a range of
/// its row that rank before it, one iteration each (and a few outside the loop).
pub(crate) fn topk_range(limit: Option<u64>, len: usize) -> Vec<[usize; 2]> {
    let Some(budget) = budget(limit) else {
        return vec![[0, len]];
    };
    pieces(len, budget.saturating_sub(16))
}

/// Columns per chunk of a row pass of softmax.wgsl, norm.wgsl and scan.wgsl (one workgroup
/// of 256 per (row, chunk), each invocation walking the chunk twice), or `None` to take
/// rows of `cols` whole. 2,048 iterations are left for the fixed loops and for merging the
/// chunks of a row (at most 2^32 / chunk of them).
pub(crate) fn row_chunk(limit: Option<u64>, cols: usize) -> Option<usize> {
    let chunk = 256 * (budget(limit)?.saturating_sub(2048) / 2);
    (cols > chunk).then_some(chunk)
}

/// Columns per chunk of the software adapters' row kernels (softmax_serial_main,
/// norm_serial_main: one invocation per (row, chunk), walking its chunk up to three times),
/// or `None` to take rows whole: rows are split until there are about 1,024 invocations
/// (CPU threads need several workgroups of 64 each), into chunks of at least 256 columns and
/// at most 64 per row, and further where the device ends long loops early.
pub(crate) fn serial_row_chunk(limit: Option<u64>, rows: usize, cols: usize) -> Option<usize> {
    const INVOCATIONS: usize = 1024;
    let chunks = INVOCATIONS
        .div_ceil(rows.max(1))
        .min(cols.div_ceil(256))
        .clamp(1, 64);
    let mut chunk = cols.div_ceil(chunks).max(1);
    if let Some(b) = budget(limit) {
        chunk = chunk.min(b.saturating_sub(2048) / 3);
    }
    (chunk < cols).then_some(chunk)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAVAPIPE: Option<u64> = Some(65_535);

    #[test]
    fn no_limit_is_one_piece() {
        assert_eq!(matmul_k(None, [64, 64], false, 1 << 30), vec![[0, 1 << 30]]);
        assert_eq!(
            conv_taps(None, 9, 300, 300),
            vec![[[0, 9], [0, 300], [0, 300]]]
        );
        assert_eq!(attention_keys(None, 1 << 20, 64), vec![[0, 1 << 20]]);
        assert_eq!(row_chunk(None, 1 << 30), None);
    }

    #[test]
    fn pieces_cover_the_range_in_order() {
        assert_eq!(pieces(10, 4), vec![[0, 4], [4, 8], [8, 10]]);
        assert_eq!(pieces(0, 4), vec![[0, 0]]);
        assert_eq!(flags(0, 1), 2);
        assert_eq!((flags(0, 3), flags(1, 3), flags(2, 3)), (0, 1, 3));
    }

    #[test]
    fn matmul_steps_are_whole_and_within_budget() {
        for (tile, rm, rn) in [([32, 32], 2, 2), ([64, 64], 4, 4), ([128, 64], 8, 4)] {
            let p = matmul_k(LAVAPIPE, tile, false, 100_003);
            let per = p[0][1];
            assert_eq!(per % 16, 0);
            // Per k step of the shader: the k0 loop, both scalar tile loads (and their exits),
            // 16 kk steps of the ar, br, i and j loops (and their exits).
            let step = 1
                + (16 * tile[0] / 256 + 1)
                + (16 * tile[1] / 256 + 1)
                + 16 * ((rm + 1) + (rn + 1) + (rm + 1) + rm * (rn + 1));
            assert!(per / 16 * step < 32_767, "{tile:?}: {per}");
            assert_eq!(p.last().unwrap()[1], 100_003);
        }
    }

    #[test]
    fn conv_boxes_cover_every_tap_within_budget() {
        for (cg, kh, kw) in [
            (7_800, 3, 3),
            (1, 1, 70_000),
            (3, 400, 300),
            (100_000, 1, 1),
            (2, 2, 2),
        ] {
            let boxes = conv_taps(LAVAPIPE, cg, kh, kw);
            let taps: usize = boxes
                .iter()
                .map(|b| b.iter().map(|r| r[1] - r[0]).product::<usize>())
                .sum();
            assert_eq!(taps, cg * kh * kw, "{cg} {kh} {kw}");
            for b in &boxes {
                assert!(
                    conv_cost(b[0][1] - b[0][0], b[1][1] - b[1][0], b[2][1] - b[2][0]) <= 32_767,
                    "{b:?}"
                );
            }
        }
        assert_eq!(conv_taps(LAVAPIPE, 2, 2, 2).len(), 1);
    }

    #[test]
    fn topk_ranges_cover_the_row_within_budget() {
        assert_eq!(topk_range(None, 1 << 30), vec![[0, 1 << 30]]);
        assert_eq!(topk_range(LAVAPIPE, 32_000), vec![[0, 32_000]]);
        let p = topk_range(LAVAPIPE, 100_003);
        assert_eq!((p.len(), p[0], p[3][1]), (4, [0, 32_751], 100_003));
    }

    #[test]
    fn rows_split_only_past_the_chunk() {
        let chunk = row_chunk(LAVAPIPE, 9_000_000).unwrap();
        assert_eq!(chunk, 256 * 15_359);
        assert_eq!(row_chunk(LAVAPIPE, chunk), None);
        assert!((u32::MAX as usize).div_ceil(chunk) < 2048);
        assert_eq!(attention_keys(LAVAPIPE, 65_537, 4).len(), 9);
    }

    #[test]
    fn serial_rows_split_for_invocations_and_the_budget() {
        assert_eq!(serial_row_chunk(None, 1024, 1024), None);
        assert_eq!(serial_row_chunk(None, 256, 1024), Some(256));
        assert_eq!(serial_row_chunk(None, 1, 100), None);
        assert_eq!(serial_row_chunk(None, 1, 1 << 20), Some(1 << 14));
        let chunk = serial_row_chunk(LAVAPIPE, 4096, 1 << 20).unwrap();
        assert!(
            3 * chunk + 2048 <= 32_767 && (1usize << 20).div_ceil(chunk) < 2048,
            "{chunk}"
        );
    }
}
