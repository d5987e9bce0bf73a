//! Long loops in user kernels never come back cut short as `Ok`: on devices that end loops
//! early (`limits.max_loop_iterations`, Mesa's llvmpipe) an invocation that reaches the limit
//! makes the next read fail, naming the limit; elsewhere the loops run to their end.

use crate::common::{devices, name, per_backend};

use unicompute::{Binding, Buffer, Device, Kernel};

/// Each invocation counts to its `n`: in a `for` loop, a `while` loop in a helper, and
/// nested `loop`s with `continuing` (comments with braces between a loop and its body).
const COUNT: &str = r#"
@group(0) @binding(0) var<storage, read> n: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;

fn by_while(n: u32) -> u32 {
    var c = 0u;
    while c < n /* { */ { c += 1u; }
    return c;
}

@compute @workgroup_size(1)
fn main(@builtin(global_invocation_id) g: vec3u) {
    let want = n[g.x];
    var a = 0u;
    for (var i = 0u; i < want / 3u; i++) { a += 1u; }
    let b = by_while(want / 3u);
    var c = 0u;
    var outer = 0u;
    loop { // {
        if (c >= want - want / 3u * 2u) { break; }
        var inner = 0u;
        loop {
            c += 1u;
            continuing { inner += 1u; break if inner >= 1u; }
        }
        continuing { outer += 1u; }
    }
    out[g.x] = a + b + c;
}
"#;

/// `counts` counted by one invocation each on `d`: the values, or the read's error.
fn count(d: &Device, kernel: &Kernel, counts: &[u32]) -> unicompute::Result<Vec<u32>> {
    let n = Buffer::from_slice(d, counts).unwrap();
    let out = Buffer::from_slice(d, &vec![0x7fa5_a5a5u32; counts.len()]).unwrap();
    d.queue()
        .launch(
            kernel,
            &[Binding::from(&n), Binding::from(&out)],
            [counts.len() as u32, 1, 1],
        )
        .unwrap();
    out.read_blocking()
}

fn loops_that_reach_the_device_limit_fail_the_next_read(d: &Device) {
    let k = Kernel::from_wgsl(d, COUNT, "main").unwrap();
    // Each count takes about `n` loop iterations in all (nested loops count twice).
    let short = [1u32, 3, 997, 20_000];
    assert_eq!(count(d, &k, &short).unwrap(), short, "on {}", name(d));
    let long = [5u32, 100_000, 7];
    match d.info().limits.max_loop_iterations {
        None => assert_eq!(count(d, &k, &long).unwrap(), long, "on {}", name(d)),
        Some(limit) => {
            let e = count(d, &k, &long).unwrap_err();
            assert_eq!(e.code(), "INVALID", "{e}");
            let msg = e.to_string();
            assert!(
                msg.contains("max_loop_iterations") && msg.contains(&limit.to_string()),
                "{msg}"
            );
            // The device goes on: the next launch within the limit reads fine.
            assert_eq!(
                count(d, &k, &short).unwrap(),
                short,
                "after the error on {}",
                name(d)
            );
        }
    }
}
per_backend!(loops_that_reach_the_device_limit_fail_the_next_read);

/// One `for` loop of exactly `n` iterations around the limit: never a wrong value read as
/// `Ok`.
#[test]
fn loops_at_the_edge_of_the_limit_are_right_or_refused() {
    let source = "@group(0) @binding(0) var<storage, read> n: array<u32>;\n\
                  @group(0) @binding(1) var<storage, read_write> out: array<u32>;\n\
                  @compute @workgroup_size(1)\n\
                  fn main(@builtin(global_invocation_id) g: vec3u) {\n\
                  var c = 0u;\n\
                  for (var i = 0u; i < n[g.x]; i++) { c += 1u; }\n\
                  out[g.x] = c;\n}\n";
    for d in devices() {
        let k = Kernel::from_wgsl(d, source, "main").unwrap();
        for n in [65_533u32, 65_534, 65_535, 65_536, 65_537] {
            match count(d, &k, &[n]) {
                Ok(got) => assert_eq!(got, [n], "n = {n} on {}", name(d)),
                Err(e) => {
                    assert!(
                        d.info().limits.max_loop_iterations.is_some(),
                        "n = {n} on {}: {e}",
                        name(d)
                    );
                    assert!(n >= 65_534, "n = {n} refused on {}: {e}", name(d));
                }
            }
        }
    }
}

/// Where loops are counted, a captured kernel counts them at each replay: the read after a
/// replay whose loops reached the limit fails naming it, and the next replay within the limit
/// reads its counts.
#[test]
fn replays_count_their_loops_where_loops_are_counted() {
    for d in devices()
        .iter()
        .filter(|d| d.info().limits.max_loop_iterations.is_some())
    {
        let k = Kernel::from_wgsl(d, COUNT, "main").unwrap();
        let n = Buffer::from_slice(d, &[0u32; 2]).unwrap();
        let out = Buffer::from_slice(d, &[0x7fa5_a5a5u32; 2]).unwrap();
        let bindings = [Binding::from(&n), Binding::from(&out)];
        let (graph, ()) = d
            .queue()
            .capture(|q| q.launch(&k, &bindings, [2, 1, 1]))
            .unwrap();
        for (counts, cut) in [
            ([3, 20_000], false),
            ([5, 100_000], true),
            ([997, 1], false),
        ] {
            n.write(&counts).unwrap();
            graph.replay().unwrap();
            match (out.read_blocking(), cut) {
                (Ok(got), false) => assert_eq!(got, counts, "on {}", name(d)),
                (Err(e), true) => {
                    assert_eq!(e.code(), "INVALID", "{e}");
                    assert!(e.to_string().contains("max_loop_iterations"), "{e}");
                }
                (got, _) => panic!("{counts:?} on {}: {got:?}", name(d)),
            }
        }
    }
}

/// Two invocations of one subgroup take turns in an inner loop of 40,000 iterations: each
/// counts under the limit, but llvmpipe ends the loops of the lanes that run together after
/// 65,535 of theirs, so there the read must fail rather than return a cut-short count.
const TAKING_TURNS: &str = r#"
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(2)
fn main(@builtin(local_invocation_index) li: u32) {
    var c = 0u;
    for (var round = 0u; round < 2u; round++) {
        let n = select(0u, 40000u, round == li);
        for (var i = 0u; i < n; i++) { c += 1u; }
    }
    out[li] = c;
}
"#;

fn loops_count_as_the_lanes_that_run_together(d: &Device) {
    let k = Kernel::from_wgsl(d, TAKING_TURNS, "main").unwrap();
    let out = Buffer::from_slice(d, &[0x7fa5_a5a5u32; 2]).unwrap();
    d.queue()
        .launch(&k, &[Binding::from(&out)], [1, 1, 1])
        .unwrap();
    match (out.read_blocking(), d.info().limits.max_loop_iterations) {
        (Ok(got), None) => assert_eq!(got, [40_000, 40_000], "on {}", name(d)),
        (Err(e), Some(_)) => assert!(e.to_string().contains("max_loop_iterations"), "{e}"),
        (got, limit) => panic!("{}: {got:?} with loop limit {limit:?}", name(d)),
    }
}
per_backend!(loops_count_as_the_lanes_that_run_together);
