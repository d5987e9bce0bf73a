//! Kernels written after constructs that public WGSL kernels use and the other suites did not
//! cover (`tests/suite/corpus/README.md` lists the public kernels they came from and how those
//! ran): compare-exchange loops under contention, zeroed workgroup structs, overrides that size
//! workgroups, `enable subgroups;`, rows of fixed arrays folded in passes. Each runs on every
//! device with seeded inputs and poisoned outputs against `corpus/references.rs` (which the
//! browser suite shares), and each one's CUDA translation is compiled.
//!
//! Beside them, real kernels of published packages (`corpus/packages.tsv`, `corpus/kernels.tsv`):
//! `scripts/corpus.sh` downloads the pinned packages into `.corpus/` and checks their sha256;
//! the tests read each kernel from there (nothing of them is committed), apply only the
//! adaptation the manifest records, and compare every device with a Rust reference.

use crate::common::kernels::{assert_near, launch, poisoned, run};
use crate::common::{devices, name, per_backend, random};

use unicompute::{Binding, Buffer, Device, Kernel};

mod published;
mod radix_sort;
mod vello;
mod wgcore;

include!("corpus/references.rs");

const CAS_FLOAT_ADD: &str = include_str!("corpus/cas_float_add.wgsl");
const ZEROED_WORKGROUP_STRUCT: &str = include_str!("corpus/zeroed_workgroup_struct.wgsl");
const OVERRIDE_TILE: &str = include_str!("corpus/override_tile.wgsl");
const ENABLE_SUBGROUPS: &str = include_str!("corpus/enable_subgroups.wgsl");
const CHUNK_ROWS: &str = include_str!("corpus/chunk_rows.wgsl");

/// Every invocation of 1 to 17 workgroups adds 1.0 to every cell by compare-exchange.
fn compare_exchange_loops_under_contention(d: &Device) {
    for (n, groups) in [(1usize, 1u32), (7, 3), (97, 17)] {
        let cells: Vec<f32> = corpus_words(n as u64, n, 5000)
            .iter()
            .map(|&w| w as f32 - 2500.0)
            .collect();
        let b = Buffer::from_slice(d, bytemuck::cast_slice::<f32, u32>(&cells)).unwrap();
        let got = run(d, CAS_FLOAT_ADD, &[Binding::from(&b)], [groups, 1, 1], &b);
        let want = cas_float_add_reference(&cells, 4 * groups);
        let what = format!("{n} cells, {groups} workgroups on {}", name(d));
        assert_eq!(bytemuck::cast_slice::<u32, f32>(&got), &want[..], "{what}");
    }
}
per_backend!(compare_exchange_loops_under_contention);

/// 1, 5 and 70 workgroups (past 64: `seen` wraps), each with its own zeroed struct.
fn workgroup_structs_with_atomic_arrays_start_zeroed(d: &Device) {
    for groups in [1usize, 5, 70] {
        let keys = corpus_words(groups as u64, 16 * groups, 1000);
        let bk = Buffer::from_slice(d, &keys).unwrap();
        let (seen, counts) = (
            poisoned::<u32>(d, 64 * groups),
            poisoned::<u32>(d, 16 * groups),
        );
        let bindings = [
            Binding::from(&bk),
            Binding::from(&seen),
            Binding::from(&counts),
        ];
        launch(
            d,
            ZEROED_WORKGROUP_STRUCT,
            "main",
            &bindings,
            [groups as u32, 1, 1],
        );
        let (want_seen, want_counts) = zeroed_workgroup_struct_reference(&keys);
        let what = format!("{groups} workgroups on {}", name(d));
        assert_eq!(
            seen.read_blocking().unwrap(),
            want_seen,
            "seen rows, {what}"
        );
        assert_eq!(
            counts.read_blocking().unwrap(),
            want_counts,
            "counts, {what}"
        );
    }
}
per_backend!(workgroup_structs_with_atomic_arrays_start_zeroed);

/// `@workgroup_size(TILE)` and `array<f32, TILE>` with `override TILE: u32 = 16u`; sizes
/// that end inside a tile.
fn an_override_sizes_the_workgroup_and_its_memory(d: &Device) {
    for n in [1usize, 37, 100] {
        let x = random(n as u64, n, -4.0, 4.0);
        let bx = Buffer::from_slice(d, &x).unwrap();
        let out = poisoned::<f32>(d, n);
        let groups = [n.div_ceil(16) as u32, 1, 1];
        let bindings = [Binding::from(&bx), Binding::from(&out)];
        let got = run(d, OVERRIDE_TILE, &bindings, groups, &out);
        let what = format!("override tile n={n} on {}", name(d));
        assert_near(&got, &override_tile_reference(&x), 1e-6, &what);
    }
}
per_backend!(an_override_sizes_the_workgroup_and_its_memory);

/// Rows of `array<u32, 48>` folded pairwise: 1 row (no pass), 5 and 13 (odd halves).
fn rows_of_fixed_arrays_fold_in_passes(d: &Device) {
    for rows in [1u32, 5, 13] {
        let data = corpus_words(u64::from(rows), 48 * rows as usize, u32::MAX);
        let b = Buffer::from_slice(d, &data).unwrap();
        for (stride, groups) in chunk_rows_passes(rows) {
            let p = Buffer::from_slice(d, &[stride, rows]).unwrap();
            let bindings = [Binding::from(&b), Binding::from(&p)];
            launch(d, CHUNK_ROWS, "main", &bindings, [groups, 1, 1]);
        }
        let got = b.read_blocking().unwrap();
        let what = format!("{rows} rows on {}", name(d));
        assert_eq!(&got[..48], &chunk_rows_reference(&data)[..], "{what}");
    }
}
per_backend!(rows_of_fixed_arrays_fold_in_passes);

/// `enable subgroups;` as WGSL (and every browser) requires it: runs where the device has
/// subgroups, against each lane's subgroup (consecutive lanes of one workgroup); refused with
/// an error naming subgroups elsewhere.
fn kernels_that_enable_subgroups_run_where_the_device_has_them(d: &Device) {
    if !d.info().features.subgroups {
        let e = Kernel::from_wgsl(d, ENABLE_SUBGROUPS, "main").unwrap_err();
        assert!(
            e.to_string().contains("subgroup"),
            "{} refused it with: {e}",
            name(d)
        );
        return;
    }
    let n = 192;
    let x = corpus_words(9, n, 1 << 20);
    let bx = Buffer::from_slice(d, &x).unwrap();
    let out = poisoned::<u32>(d, 4 * n);
    let bindings = [Binding::from(&bx), Binding::from(&out)];
    let got = run(d, ENABLE_SUBGROUPS, &bindings, [3, 1, 1], &out);
    for i in 0..n {
        let (sid, size) = (got[4 * i + 2] as usize, got[4 * i + 3] as usize);
        let what = format!("invocation {i} (lane {sid} of {size}) on {}", name(d));
        assert!(size.is_power_of_two() && sid < size && size <= 64, "{what}");
        let start = i - sid;
        let end = (start + size).min(i / 64 * 64 + 64);
        let before = x[start..i].iter().fold(0u32, |s, &v| s.wrapping_add(v));
        assert_eq!(got[4 * i], before, "exclusive sum, {what}");
        assert_eq!(
            got[4 * i + 1],
            *x[start..end].iter().max().unwrap(),
            "max, {what}"
        );
    }
}
per_backend!(kernels_that_enable_subgroups_run_where_the_device_has_them);

/// `n` seeded words below `hi`, for the published kernels' inputs.
fn words(seed: u64, n: usize, hi: u32) -> Vec<u32> {
    corpus_words(seed, n, hi)
}

/// Compile the published kernel `k` on `d` and launch it, panicking with its id, the device
/// and the error; its CUDA translation is compiled first.
fn launch_published(d: &Device, k: &published::Published, b: &[Binding<'_>], groups: [u32; 3]) {
    crate::common::kernels::compiles_for_cuda(&k.source, &k.entry);
    let what = || format!("{} ({}) on {}", k.id, k.entry, name(d));
    let kernel =
        Kernel::from_wgsl(d, &k.source, &k.entry).unwrap_or_else(|e| panic!("{}: {e}", what()));
    d.queue()
        .launch(&kernel, b, groups)
        .unwrap_or_else(|e| panic!("{}: {e}", what()));
}

/// The published kernels that read `var<immediate>` data, which no launch can set:
/// [`kernels_with_immediates_are_refused_everywhere`] runs them instead.
const IMMEDIATES: &[&str] = &["wgpu_core_timestamp_normalization"];

/// Every other kernel of `corpus/kernels.tsv` is in the downloaded packages, compiles on every
/// device and translates to CUDA that NVRTC compiles; at least 20 entry points.
#[test]
fn every_published_kernel_compiles_on_every_device_and_for_cuda() {
    let ids: Vec<String> = published::ids()
        .into_iter()
        .filter(|id| !IMMEDIATES.contains(&id.as_str()))
        .collect();
    assert!(ids.len() >= 20, "{} published kernels", ids.len());
    for id in ids {
        let k = published::kernel(&id);
        crate::common::kernels::compiles_for_cuda(&k.source, &k.entry);
        for d in devices() {
            if let Err(e) = Kernel::from_wgsl(d, &k.source, &k.entry) {
                panic!("{id} ({}) on {}: {e}", k.entry, name(d));
            }
        }
    }
}

/// wgpu-core's timestamp normalization (its overrides set as wgpu-core sets them for a
/// period of 3/2) reads its offset and count from `var<immediate>`, which unicompute gives no
/// way to set: every backend and the CUDA translation must refuse it with an error naming
/// immediates, not run it with zeros nor emit CUDA that does not compile.
#[test]
fn kernels_with_immediates_are_refused_everywhere() {
    let constants = [
        ("TIMESTAMP_PERIOD_MULTIPLY", 3.0),
        ("TIMESTAMP_PERIOD_SHIFT", 1.0),
    ];
    for id in IMMEDIATES {
        let k = published::kernel(id);
        let mut outcomes = Vec::new();
        for d in devices() {
            let r = Kernel::from_wgsl_with(d, &k.source, &k.entry, &constants).map(|_| ());
            outcomes.push((name(d), r));
        }
        let cuda = Kernel::cuda_from_wgsl_with(&k.source, &k.entry, &constants).map(|_| ());
        outcomes.push(("the CUDA translation".to_string(), cuda));
        let wrong: Vec<String> = outcomes
            .iter()
            .filter(|(_, r)| {
                !r.as_ref()
                    .is_err_and(|e| e.to_string().contains("mmediate"))
            })
            .map(|(what, r)| format!("{what}: {r:?}"))
            .collect();
        assert!(
            wrong.is_empty(),
            "{id} not refused as reading immediates: {wrong:#?}"
        );
    }
}
