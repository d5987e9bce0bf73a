// The references of the corpus kernels, shared by the native suite (tests/suite/corpus.rs)
// and the browser suite (tests/wasm.rs), which both `include!` this file.

/// `n` seeded words below `hi` (a 64-bit LCG, the same natively and in wasm).
fn corpus_words(seed: u64, n: usize, hi: u32) -> Vec<u32> {
    let step =
        |s: u64| s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
    let mut s = step(seed);
    (0..n)
        .map(|_| {
            s = step(s);
            ((s >> 33) as u32) % hi
        })
        .collect()
}

/// `cas_float_add.wgsl` over `invocations` invocations: each f32 cell grows by that many.
fn cas_float_add_reference(cells: &[f32], invocations: u32) -> Vec<f32> {
    cells.iter().map(|v| v + invocations as f32).collect()
}

/// `zeroed_workgroup_struct.wgsl` over `keys.len() / 16` workgroups: the rows copied from
/// `tally.seen` (one word set, at the workgroup's index mod 64) and each invocation's count.
fn zeroed_workgroup_struct_reference(keys: &[u32]) -> (Vec<u32>, Vec<u32>) {
    let mut seen = vec![0u32; keys.len() / 16 * 64];
    let mut counts = Vec::with_capacity(keys.len());
    for (w, group) in keys.chunks(16).enumerate() {
        let total = group.iter().fold(0u32, |s, &k| s.wrapping_add(k));
        seen[w * 64 + w % 64] = total;
        for li in 0..16u32 {
            let hits = group.iter().filter(|&&k| k % 4 == li / 4 && (k / 4) % 4 == li % 4);
            counts.push(hits.count() as u32);
        }
    }
    (seen, counts)
}

/// `override_tile.wgsl` with its default `TILE = 16`.
fn override_tile_reference(x: &[f32]) -> Vec<f64> {
    let n = x.len();
    (0..n)
        .map(|i| {
            let (base, li) = (i / 16 * 16, i % 16);
            let from = base + 15 - li;
            let v = if from < n { f64::from(x[from]) * 0.5 } else { 0.0 };
            v + li as f64
        })
        .collect()
}

/// `chunk_rows.wgsl` after its passes: the first row holds every row's sum (wrapping).
fn chunk_rows_reference(rows: &[u32]) -> Vec<u32> {
    (0..48).map(|c| rows.chunks(48).fold(0u32, |s, r| s.wrapping_add(r[c]))).collect()
}

/// The passes of `chunk_rows.wgsl` over `rows` rows: (stride, workgroups) of each.
fn chunk_rows_passes(rows: u32) -> Vec<(u32, u32)> {
    let mut passes = Vec::new();
    let mut stride = 1;
    while stride < rows {
        passes.push((stride, rows.div_ceil(2 * stride)));
        stride *= 2;
    }
    passes
}
