//! wgcore 0.2.2's example kernels, which its examples run as they are.

use super::launch_published;
use super::published::kernel;
use super::words;
use crate::common::devices;
use crate::common::kernels::poisoned;
use crate::common::name;

use unicompute::{Binding, Buffer};

/// encase.wgsl: `a[i].value += b[i]` and `a[i].value2 += vec4(b[i])` on a runtime array of
/// a struct whose vec4 member aligns to 16 (8 words an element, 3 of them padding, left as
/// they were); 77 elements, two workgroups of 64.
#[test]
fn wgcore_encase() {
    let k = kernel("wgcore_encase");
    for d in devices() {
        let n = 77;
        let a: Vec<f32> = words(1, 8 * n, 1000)
            .iter()
            .map(|&w| w as f32 / 8.0 - 60.0)
            .collect();
        let b: Vec<f32> = words(2, n, 1000)
            .iter()
            .map(|&w| w as f32 / 4.0 - 100.0)
            .collect();
        let ba = Buffer::from_slice(d, &a).unwrap();
        let bb = Buffer::from_slice(d, &b).unwrap();
        launch_published(d, &k, &[Binding::from(&ba), Binding::from(&bb)], [2, 1, 1]);
        let mut want = a.clone();
        for (e, &x) in want.chunks_mut(8).zip(&b) {
            e[0] += x;
            e[4..].iter_mut().for_each(|v| *v += x);
        }
        let got = ba.read_blocking().unwrap();
        assert_eq!(got, want, "{}", name(d));
    }
}

/// The number of Collatz steps from `n` to 1, `u32::MAX` where `3n + 1` would overflow.
fn collatz(mut n: u32) -> u32 {
    let mut i = 0;
    while n > 1 {
        if n % 2 == 0 {
            n /= 2;
        } else if n >= 1_431_655_765 {
            return u32::MAX;
        } else {
            n = 3 * n + 1;
        }
        i += 1;
    }
    i
}

/// timestamp_queries.wgsl: 10000 rounds of `a = collatz(a * 7919)` per element (the example's
/// long-running kernel), over 3 elements of a 64-wide workgroup.
///
/// About 10^6 loop iterations per invocation: past llvmpipe's limit, where the read must fail
/// naming `max_loop_iterations`. (This corpus found it returning [117, 117, 100] for
/// [177, 75, 100] with no error while the check counted each invocation's own loop bodies:
/// llvmpipe ends the loops of the lanes that run together, so it now counts the subgroup's.)
#[test]
fn wgcore_timestamp_queries() {
    let k = kernel("wgcore_timestamp_queries");
    for d in devices() {
        let a = [27u32, 1, 123_456];
        let ba = Buffer::from_slice(d, &a).unwrap();
        launch_published(d, &k, &[Binding::from(&ba)], [1, 1, 1]);
        let want: Vec<u32> = a
            .iter()
            .map(|&v| (0..10_000).fold(v, |x, _| collatz(x.wrapping_mul(7919))))
            .collect();
        match (ba.read_blocking(), d.info().limits.max_loop_iterations) {
            (Ok(got), None) => assert_eq!(got, want, "{}", name(d)),
            (Err(e), Some(_)) => assert!(e.to_string().contains("max_loop_iterations"), "{e}"),
            (got, limit) => panic!("{}: {got:?} with loop limit {limit:?}", name(d)),
        }
    }
}

/// hot_reloading.wgsl: one invocation stores 1 into a scalar binding.
#[test]
fn wgcore_hot_reloading() {
    let k = kernel("wgcore_hot_reloading");
    for d in devices() {
        let a = poisoned::<u32>(d, 1);
        launch_published(d, &k, &[Binding::from(&a)], [1, 1, 1]);
        assert_eq!(a.read_blocking().unwrap(), [1], "{}", name(d));
    }
}
