//! wgpu_sort 0.1.0's radix sort (a port of Fuchsia's onesweep-style sort): its five entry
//! points dispatched as `GPUSorter::sort` records them, on seeded keys with their indices as
//! payload, against a stable sort.

use super::published::{kernel, Published};
use super::words;
use crate::common::devices;
use crate::common::kernels::compiles_for_cuda;
use crate::common::name;

use unicompute::{Binding, Buffer, Device, Kernel};

/// Keys a scatter workgroup moves (256 invocations, 15 rows).
const BLOCK: usize = 256 * 15;

/// Launch `k` with the buffers of the `@binding`s its entry point uses (all six are declared
/// in group 0; an entry point's launch takes only those it reaches, as a WebGPU pipeline with
/// an automatic layout does).
fn launch_bound(d: &Device, k: &Published, all: &[&Buffer<u32>; 6], groups: u32) {
    compiles_for_cuda(&k.source, &k.entry);
    let what = |e: unicompute::Error| format!("{} on {}: {e}", k.id, name(d));
    let kernel =
        Kernel::from_wgsl(d, &k.source, &k.entry).unwrap_or_else(|e| panic!("{}", what(e)));
    let bindings: Vec<Binding<'_>> = kernel
        .info()
        .bindings
        .iter()
        .map(|b| Binding::from(all[b.binding as usize]))
        .collect();
    d.queue()
        .launch(&kernel, &bindings, [groups, 1, 1])
        .unwrap_or_else(|e| panic!("{}", what(e)));
}

/// Sort `keys` (with their indices as payload) on every device, as `GPUSorter::sort` does:
/// zero_histograms and calculate_histogram over the histogram blocks, prefix_histogram over
/// the 4 passes, then scatter_even, scatter_odd, scatter_even, scatter_odd.
#[test]
fn wgpu_sort_radix_sort() {
    let entries = [
        "zero_histograms",
        "calculate_histogram",
        "prefix_histogram",
        "scatter_even",
    ];
    let ks: Vec<_> = entries
        .iter()
        .chain(&["scatter_odd"])
        .map(|e| kernel(&format!("wgpu_sort_{e}")))
        .collect();
    for d in devices() {
        for n in [1usize, 1000, 3 * BLOCK + 17] {
            let keys: Vec<u32> = words(n as u64, n, u32::MAX - 1);
            let blocks = n.div_ceil(BLOCK);
            let padded = blocks * BLOCK;
            let mut key_words = keys.clone();
            key_words.resize(4 * padded, 0x7fa5_a5a5);
            let infos = Buffer::from_slice(d, &[n as u32, padded as u32, 0, 0]).unwrap();
            let histograms =
                Buffer::from_slice(d, &vec![0x7fa5_a5a5u32; (4 + blocks) * 256]).unwrap();
            let k = Buffer::from_slice(d, &key_words).unwrap();
            let kb = Buffer::from_slice(d, &vec![0u32; 4 * padded]).unwrap();
            // The payload buffers hold the padded count, unlike wgpu_sort's own (`n` words):
            // the scatter also moves the padding keys' payload, past `n`, and WebGPU lets such
            // out-of-bounds writes land anywhere in the buffer (unicompute's cpu backend clamps
            // them to its last element), which corrupts a payload of exactly `n` words.
            let payload: Vec<u32> = (0..padded as u32).collect();
            let p = Buffer::from_slice(d, &payload).unwrap();
            let pb = Buffer::from_slice(d, &vec![0u32; padded]).unwrap();
            let all = [&infos, &histograms, &k, &kb, &p, &pb];
            let g = blocks as u32;
            for (kernel, groups) in ks.iter().zip([g, g, 4, g, g]) {
                launch_bound(d, kernel, &all, groups);
            }
            launch_bound(d, &ks[3], &all, g);
            launch_bound(d, &ks[4], &all, g);
            let mut want: Vec<(u32, u32)> = keys.iter().copied().zip(payload).collect();
            want.sort_by_key(|&(key, _)| key);
            let what = format!("{n} keys on {}", name(d));
            let got_keys = match k.read_blocking() {
                // Workgroups after the first spin on their predecessors' partitions (the
                // look-back's `while true`); where the device ends long loops early, the
                // library must say so rather than return a cut-short sort.
                Err(e) if blocks > 1 && d.info().limits.max_loop_iterations.is_some() => {
                    assert!(e.to_string().contains("max_loop_iterations"), "{what}: {e}");
                    eprintln!("NOT COMPARED, the device ends long loops early: {what}: {e}");
                    continue;
                }
                got => got.unwrap_or_else(|e| panic!("{what}: {e}")),
            };
            let got_payload = p.read_blocking().unwrap();
            let want_keys: Vec<u32> = want.iter().map(|w| w.0).collect();
            let want_payload: Vec<u32> = want.iter().map(|w| w.1).collect();
            assert_eq!(&got_keys[..n], &want_keys[..], "keys, {what}");
            assert_eq!(
                &got_payload[..n],
                &want_payload[..n],
                "payload (stable order), {what}"
            );
        }
    }
}
