//! A corpus of WGSL kernels written as a user would, each run on every available device
//! (the CPU backend through its WGSL executor, and webgpu) with seeded inputs, outputs
//! poisoned before the launch, and checked against a reference computed here in f64.

use crate::common::kernels::{assert_near as assert_close, poisoned, run};
use crate::common::{self, devices, name, per_backend, random};

use unicompute::{Binding, Buffer, Device, Kernel};

const SAXPY: &str = r#"
// saxpy with a uniform struct of parameters
struct Params { a: f32, n: u32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x >= p.n) { return; }
    y[id.x] = p.a * x[id.x] + y[id.x];
}
"#;

fn saxpy_with_a_uniform_struct(d: &Device) {
    for n in [1usize, 63, 64, 1000, 4099] {
        let (x, y0) = (random(1, n, -2.0, 2.0), random(2, n, -2.0, 2.0));
        let (bx, by) = (
            Buffer::from_slice(d, &x).unwrap(),
            Buffer::from_slice(d, &y0).unwrap(),
        );
        let p = Buffer::from_slice(d, &[1.5f32.to_bits(), n as u32]).unwrap();
        let got = run(
            d,
            SAXPY,
            &[Binding::from(&bx), Binding::from(&by), Binding::from(&p)],
            [(n as u32).div_ceil(64), 1, 1],
            &by,
        );
        let want: Vec<f64> = x
            .iter()
            .zip(&y0)
            .map(|(&x, &y)| 1.5 * f64::from(x) + f64::from(y))
            .collect();
        assert_close(&got, &want, 1e-6, &format!("saxpy n={n} on {}", name(d)));
    }
}
per_backend!(saxpy_with_a_uniform_struct);

const REDUCE: &str = r#"
// a workgroup tree reduction through workgroup memory and barriers
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> sums: array<f32>;
var<workgroup> part: array<f32, 128>;

@compute @workgroup_size(128)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let i = wid.x * 128u + lid.x;
    var v = 0.0;
    if (i < arrayLength(&x)) { v = x[i]; }
    part[lid.x] = v;
    workgroupBarrier();
    for (var s = 64u; s > 0u; s = s / 2u) {
        if (lid.x < s) { part[lid.x] += part[lid.x + s]; }
        workgroupBarrier();
    }
    if (lid.x == 0u) { sums[wid.x] = part[0]; }
}
"#;

#[test]
fn reduction_in_workgroup_memory() {
    // 1000 elements: one workgroup at a time on the CPU; 40009 (a prime): workgroups in
    // batches, each with its own copy of the workgroup memory, the last batch partial.
    for (d, n) in devices().iter().flat_map(|d| [(d, 1000), (d, 40009)]) {
        let x = random(3, n, -1.0, 1.0);
        let bx = Buffer::from_slice(d, &x).unwrap();
        let groups = n.div_ceil(128);
        let out = poisoned::<f32>(d, groups);
        let got = run(
            d,
            REDUCE,
            &[Binding::from(&bx), Binding::from(&out)],
            [groups as u32, 1, 1],
            &out,
        );
        let want: Vec<f64> = x
            .chunks(128)
            .map(|c| c.iter().map(|&v| f64::from(v)).sum())
            .collect();
        assert_close(
            &got,
            &want,
            1e-5,
            &format!("reduction of {n} on {}", name(d)),
        );
    }
}

const HISTOGRAM: &str = r#"
// a histogram with atomics, in workgroup memory and then in storage
@group(0) @binding(0) var<storage, read> values: array<u32>;
@group(0) @binding(1) var<storage, read_write> bins: array<atomic<u32>, 16>;
var<workgroup> local_bins: array<atomic<u32>, 16>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    if (gid.x < arrayLength(&values)) {
        atomicAdd(&local_bins[values[gid.x] % 16u], 1u);
    }
    workgroupBarrier();
    if (li < 16u) {
        let c = atomicLoad(&local_bins[li]);
        if (c > 0u) { atomicAdd(&bins[li], c); }
    }
}
"#;

fn histogram_with_atomics(d: &Device) {
    let n = 5003;
    let values: Vec<u32> = (0..n)
        .map(|i| (i * 2_654_435_761u64 as usize % 977) as u32)
        .collect();
    let bv = Buffer::from_slice(d, &values).unwrap();
    let bins = Buffer::from_slice(d, &[0u32; 16]).unwrap();
    let got = run(
        d,
        HISTOGRAM,
        &[Binding::from(&bv), Binding::from(&bins)],
        [(n as u32).div_ceil(64), 1, 1],
        &bins,
    );
    let mut want = [0u32; 16];
    for v in &values {
        want[(*v % 16) as usize] += 1;
    }
    assert_eq!(got, want.to_vec(), "histogram on {}", name(d));
}
per_backend!(histogram_with_atomics);

const DIVERGE: &str = r#"
// divergent branches, a switch, a loop with continue and break, and an early return
@group(0) @binding(0) var<storage, read> x: array<i32>;
@group(0) @binding(1) var<storage, read_write> y: array<i32>;

fn collatz_steps(start: i32) -> i32 {
    var v = start;
    var steps = 0;
    loop {
        if (v <= 1 || steps >= 200) { break; }
        steps += 1;
        if ((v & 1) == 0) { v = v / 2; continue; }
        v = 3 * v + 1;
    }
    return steps;
}

@compute @workgroup_size(32)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= arrayLength(&x)) { return; }
    let v = x[i];
    if (v < 0) { y[i] = -1; return; }
    switch (v % 4) {
        case 0: { y[i] = collatz_steps(v); }
        case 1, 2: { y[i] = v * 10; }
        default: { y[i] = select(7, 8, v > 50); }
    }
}
"#;

fn collatz(start: i32) -> i32 {
    let (mut v, mut steps) = (start, 0);
    while v > 1 && steps < 200 {
        steps += 1;
        v = if v % 2 == 0 { v / 2 } else { 3 * v + 1 };
    }
    steps
}

#[test]
fn divergent_branches_switch_loops_and_early_returns() {
    // 300 elements: one workgroup at a time on the CPU; 30011 (a prime): workgroups in
    // batches, the last one partial.
    for (d, n) in devices().iter().flat_map(|d| [(d, 300), (d, 30011)]) {
        let x: Vec<i32> = (0..n).map(|i| (i * 37 % 101) - 20).collect();
        let bx = Buffer::from_slice(d, &x).unwrap();
        let out = poisoned::<i32>(d, x.len());
        let got = run(
            d,
            DIVERGE,
            &[Binding::from(&bx), Binding::from(&out)],
            [(n as u32).div_ceil(32), 1, 1],
            &out,
        );
        let want: Vec<i32> = x
            .iter()
            .map(|&v| match v {
                v if v < 0 => -1,
                v if v % 4 == 0 => collatz(v),
                v if v % 4 == 1 || v % 4 == 2 => v * 10,
                v => {
                    if v > 50 {
                        8
                    } else {
                        7
                    }
                }
            })
            .collect();
        assert_eq!(got, want, "divergence of {n} on {}", name(d));
    }
}

const INTEGERS: &str = r#"
// integer edge cases: division and remainder by zero, the most negative number, shifts past
// the width, wrapping arithmetic, and conversions from float
@group(0) @binding(0) var<storage, read> a: array<i32>;
@group(0) @binding(1) var<storage, read> b: array<i32>;
@group(0) @binding(2) var<storage, read_write> out: array<i32>;

@compute @workgroup_size(8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= arrayLength(&a)) { return; }
    let x = a[i];
    let y = b[i];
    out[i * 6u + 0u] = x / y;
    out[i * 6u + 1u] = x % y;
    out[i * 6u + 2u] = x * y + 2147483647;
    out[i * 6u + 3u] = i32(u32(x) >> u32(y));
    out[i * 6u + 4u] = x << u32(y);
    out[i * 6u + 5u] = i32(f32(x) * 1e9);
}
"#;

fn integer_edge_cases_follow_wgsl(d: &Device) {
    let a = vec![7, -7, i32::MIN, i32::MIN, 5, 123_456, -1, 0];
    let b = vec![0, 2, -1, 0, 33, 3, 31, 40];
    let (ba, bb) = (
        Buffer::from_slice(d, &a).unwrap(),
        Buffer::from_slice(d, &b).unwrap(),
    );
    let out = poisoned::<i32>(d, a.len() * 6);
    let got = run(
        d,
        INTEGERS,
        &[Binding::from(&ba), Binding::from(&bb), Binding::from(&out)],
        [1, 1, 1],
        &out,
    );
    let mut want = Vec::new();
    for (&x, &y) in a.iter().zip(&b) {
        let div = if y == 0 || (x == i32::MIN && y == -1) {
            x
        } else {
            x / y
        };
        let rem = if y == 0 || (x == i32::MIN && y == -1) {
            0
        } else {
            x % y
        };
        // WGSL clamps a float to [-2^31, 2^31 - 128] (the largest f32 below 2^31) first.
        let conv = f64::from((f64::from(x as f32) * 1e9) as f32)
            .clamp(-2_147_483_648.0, 2_147_483_520.0) as i32;
        want.extend([
            div,
            rem,
            x.wrapping_mul(y).wrapping_add(i32::MAX),
            ((x as u32) >> (y as u32 & 31)) as i32,
            x << (y as u32 & 31),
            conv,
        ]);
    }
    assert_eq!(got, want, "integers on {}", name(d));
}
per_backend!(integer_edge_cases_follow_wgsl);

/// A tiled matmul: 8x8 tiles of A and B staged in workgroup memory between barriers (also
/// timed by `benches/wgsl_cpu.rs`).
const MATMUL: &str = include_str!("wgsl/tiled_matmul.wgsl");

#[test]
fn tiled_matmul_with_workgroup_memory() {
    // 3 x 2 workgroups, and 16 x 13 that the CPU runs in batches (the last partial).
    for (d, (m, k, n)) in devices()
        .iter()
        .flat_map(|d| [(d, (19, 23, 13)), (d, (101, 37, 127))])
    {
        let (a, b) = (random(4, m * k, -1.0, 1.0), random(5, k * n, -1.0, 1.0));
        let (ba, bb) = (
            Buffer::from_slice(d, &a).unwrap(),
            Buffer::from_slice(d, &b).unwrap(),
        );
        let out = poisoned::<f32>(d, m * n);
        let dims = Buffer::from_slice(d, &[m as u32, n as u32, k as u32, 0]).unwrap();
        let groups = [(n as u32).div_ceil(8), (m as u32).div_ceil(8), 1];
        let got = run(
            d,
            MATMUL,
            &[
                Binding::from(&ba),
                Binding::from(&bb),
                Binding::from(&out),
                Binding::from(&dims),
            ],
            groups,
            &out,
        );
        let want = common::matmul_reference(&a, &b, m, k, n);
        assert_close(
            &got,
            &want,
            1e-5,
            &format!("matmul {m}x{k}x{n} on {}", name(d)),
        );
    }
}

const SCAN: &str = r#"
// an inclusive prefix sum of each block of 64 (Hillis-Steele, double-buffered in workgroup memory)
@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;
var<workgroup> buf: array<array<u32, 64>, 2>;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let i = wid.x * 64u + li;
    buf[0][li] = select(0u, x[i], i < arrayLength(&x));
    workgroupBarrier();
    var src = 0u;
    var offset = 1u;
    while (offset < 64u) {
        var v = buf[src][li];
        if (li >= offset) { v += buf[src][li - offset]; }
        buf[1u - src][li] = v;
        workgroupBarrier();
        src = 1u - src;
        offset *= 2u;
    }
    if (i < arrayLength(&y)) { y[i] = buf[src][li]; }
}
"#;

#[test]
fn prefix_scan_per_workgroup() {
    // 300 elements, and 20011 (a prime) that the CPU runs in batches of workgroups.
    for (d, n) in devices().iter().flat_map(|d| [(d, 300), (d, 20011)]) {
        let x: Vec<u32> = (0..n).map(|i| (i * 7 % 13) as u32).collect();
        let bx = Buffer::from_slice(d, &x).unwrap();
        let out = poisoned::<u32>(d, n);
        let got = run(
            d,
            SCAN,
            &[Binding::from(&bx), Binding::from(&out)],
            [(n as u32).div_ceil(64), 1, 1],
            &out,
        );
        let want: Vec<u32> = x
            .chunks(64)
            .flat_map(|c| {
                c.iter()
                    .scan(0, |s, &v| {
                        *s += v;
                        Some(*s)
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(got, want, "scan of {n} on {}", name(d));
    }
}

const VEC4: &str = r#"
// vec4 loads and stores, swizzles, dot, length, clamp and mix
@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> y: array<vec4<f32>>;

fn shade(v: vec4<f32>) -> vec4<f32> {
    let w = v.wzyx * 2.0 - vec4<f32>(1.0);
    let s = dot(v.xyz, vec3<f32>(0.5, -0.25, 1.0)) + length(v.xy);
    return mix(clamp(w, vec4(-1.0), vec4(1.0)), vec4<f32>(s), 0.25);
}

@compute @workgroup_size(16)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < arrayLength(&x)) { y[gid.x] = shade(x[gid.x]); }
}
"#;

fn vec4_loads_swizzles_and_vector_math(d: &Device) {
    let n = 37;
    let x = random(6, n * 4, -1.5, 1.5);
    let bx = Buffer::from_slice(d, &x).unwrap();
    let out = poisoned::<f32>(d, n * 4);
    let got = run(
        d,
        VEC4,
        &[Binding::from(&bx), Binding::from(&out)],
        [(n as u32).div_ceil(16), 1, 1],
        &out,
    );
    let mut want = Vec::new();
    for v in x.chunks(4) {
        let v: Vec<f64> = v.iter().map(|&c| f64::from(c)).collect();
        let s = v[0] * 0.5 - v[1] * 0.25 + v[2] + (v[0] * v[0] + v[1] * v[1]).sqrt();
        for c in [v[3], v[2], v[1], v[0]] {
            let w = (c * 2.0 - 1.0).clamp(-1.0, 1.0);
            want.push(w + (s - w) * 0.25);
        }
    }
    assert_close(&got, &want, 1e-5, &format!("vec4 on {}", name(d)));
}
per_backend!(vec4_loads_swizzles_and_vector_math);

const ATOMICS: &str = r#"
// atomicMax, atomicMin and a compare-exchange loop that adds floats through their bits
@group(0) @binding(0) var<storage, read> x: array<i32>;
@group(0) @binding(1) var<storage, read_write> out: array<atomic<i32>, 2>;
@group(0) @binding(2) var<storage, read_write> total: atomic<u32>;

@compute @workgroup_size(32)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x >= arrayLength(&x)) { return; }
    let v = x[gid.x];
    atomicMax(&out[0], v);
    atomicMin(&out[1], v);
    var old = atomicLoad(&total);
    loop {
        let next = bitcast<u32>(bitcast<f32>(old) + f32(v));
        let r = atomicCompareExchangeWeak(&total, old, next);
        if (r.exchanged) { break; }
        old = r.old_value;
    }
}
"#;

fn atomic_min_max_and_compare_exchange(d: &Device) {
    let x: Vec<i32> = (0..200).map(|i| (i * 7919 % 1009) - 500).collect();
    let bx = Buffer::from_slice(d, &x).unwrap();
    let out = Buffer::from_slice(d, &[i32::MIN, i32::MAX]).unwrap();
    let total = Buffer::from_slice(d, &[0f32.to_bits()]).unwrap();
    let got = run(
        d,
        ATOMICS,
        &[
            Binding::from(&bx),
            Binding::from(&out),
            Binding::from(&total),
        ],
        [7, 1, 1],
        &out,
    );
    assert_eq!(
        got,
        vec![*x.iter().max().unwrap(), *x.iter().min().unwrap()],
        "min and max on {}",
        name(d)
    );
    let sum = f32::from_bits(total.read_blocking().unwrap()[0]);
    let want: i32 = x.iter().sum();
    assert_eq!(
        sum,
        want as f32,
        "the float sum through compare-exchange on {} (small integers add exactly)",
        name(d)
    );
}
per_backend!(atomic_min_max_and_compare_exchange);

const STRUCTS: &str = r#"
// a storage array of structs with a vec3 member (16-byte alignment), private variables, and a
// helper function taking and returning a struct
struct Particle { pos: vec3<f32>, mass: f32 }
struct Moment { m: f32, mx: f32 }
@group(0) @binding(0) var<storage, read> ps: array<Particle>;
@group(0) @binding(1) var<storage, read_write> out: array<vec2<f32>>;
var<private> scale: f32 = 2.0;

fn moment(p: Particle) -> Moment {
    return Moment(p.mass, p.mass * p.pos.x * scale);
}

@compute @workgroup_size(8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x >= arrayLength(&ps)) { return; }
    scale = scale + f32(gid.x % 2u);
    let m = moment(ps[gid.x]);
    out[gid.x] = vec2<f32>(m.m, m.mx + ps[gid.x].pos.z);
}
"#;

fn structs_with_vec3_members_private_variables_and_helpers(d: &Device) {
    let n = 11;
    let raw = random(7, n * 4, -2.0, 2.0);
    let bp = Buffer::from_slice(d, &raw).unwrap();
    let out = poisoned::<f32>(d, n * 2);
    let got = run(
        d,
        STRUCTS,
        &[Binding::from(&bp), Binding::from(&out)],
        [2, 1, 1],
        &out,
    );
    let mut want = Vec::new();
    for (i, p) in raw.chunks(4).enumerate() {
        let scale = 2.0 + (i % 2) as f64;
        let (x, z, mass) = (f64::from(p[0]), f64::from(p[2]), f64::from(p[3]));
        want.extend([mass, mass * x * scale + z]);
    }
    assert_close(&got, &want, 1e-6, &format!("structs on {}", name(d)));
}
per_backend!(structs_with_vec3_members_private_variables_and_helpers);

const IDS: &str = r#"
// every compute built-in, in a 3-D workgroup over a 3-D grid; a loop ending in `break if`
@group(0) @binding(0) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(4, 2, 2)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(local_invocation_id) l: vec3<u32>,
        @builtin(workgroup_id) w: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
    let flat = (g.z * nw.y * 2u + g.y) * nw.x * 4u + g.x;
    var digits = 0u;
    var v = flat + 1u;
    loop {
        digits += 1u;
        v /= 10u;
        continuing { break if v == 0u; }
    }
    out[flat * 4u + 0u] = li;
    out[flat * 4u + 1u] = (w.z * nw.y + w.y) * nw.x + w.x;
    out[flat * 4u + 2u] = l.x + 10u * l.y + 100u * l.z;
    out[flat * 4u + 3u] = digits;
}
"#;

#[test]
fn compute_builtins_in_three_dimensions() {
    // A small grid, and one of 555 workgroups that the CPU runs in batches (the last partial).
    for (d, grid) in devices()
        .iter()
        .flat_map(|d| [(d, [3u32, 2, 2]), (d, [37, 5, 3])])
    {
        let total = (grid[0] * 4 * grid[1] * 2 * grid[2] * 2) as usize;
        let out = poisoned::<u32>(d, total * 4);
        let got = run(d, IDS, &[Binding::from(&out)], grid, &out);
        let mut want = vec![0u32; total * 4];
        for gz in 0..grid[2] * 2 {
            for gy in 0..grid[1] * 2 {
                for gx in 0..grid[0] * 4 {
                    let flat = ((gz * grid[1] * 2 + gy) * grid[0] * 4 + gx) as usize;
                    let (l, w) = ([gx % 4, gy % 2, gz % 2], [gx / 4, gy / 2, gz / 2]);
                    want[flat * 4..flat * 4 + 4].copy_from_slice(&[
                        l[0] + 4 * l[1] + 8 * l[2],
                        (w[2] * grid[1] + w[1]) * grid[0] + w[0],
                        l[0] + 10 * l[1] + 100 * l[2],
                        (flat + 1).to_string().len() as u32,
                    ]);
                }
            }
        }
        assert_eq!(got, want, "built-ins over {grid:?} on {}", name(d));
    }
}

const MATH: &str = r#"
// the math built-ins, each applied to one input
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(16)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= arrayLength(&x)) { return; }
    let v = x[i];
    let a = abs(v) + 0.25;
    let r = array<f32, 14>(exp(v), log(a), sin(v), cos(v), tanh(v), pow(a, 1.5), sqrt(a), inverseSqrt(a),
                           floor(v), ceil(v), round(v * 3.0), fract(v), sign(v) * step(0.0, v), atan2(v, a));
    for (var k = 0u; k < 14u; k++) { y[i * 14u + k] = r[k]; }
}
"#;

fn math_builtins_match_f64(d: &Device) {
    let x = random(8, 40, -3.0, 3.0);
    let bx = Buffer::from_slice(d, &x).unwrap();
    let out = poisoned::<f32>(d, x.len() * 14);
    let got = run(
        d,
        MATH,
        &[Binding::from(&bx), Binding::from(&out)],
        [3, 1, 1],
        &out,
    );
    let mut want = Vec::new();
    for &v in &x {
        let v = f64::from(v);
        let a = v.abs() + 0.25;
        let round = {
            let t = (v as f32 * 3.0) as f64;
            let r = t.round();
            if (t - t.trunc()).abs() == 0.5 {
                2.0 * (t / 2.0).round()
            } else {
                r
            }
        };
        let sign = if v > 0.0 {
            1.0
        } else if v < 0.0 {
            -1.0
        } else {
            0.0
        };
        let step = if v >= 0.0 { 1.0 } else { 0.0 };
        want.extend([
            v.exp(),
            a.ln(),
            v.sin(),
            v.cos(),
            v.tanh(),
            a.powf(1.5),
            a.sqrt(),
            1.0 / a.sqrt(),
            v.floor(),
            v.ceil(),
            round,
            v - v.floor(),
            sign * step,
            v.atan2(a),
        ]);
    }
    assert_close(&got, &want, 2e-5, &format!("math on {}", name(d)));
}
per_backend!(math_builtins_match_f64);

const BITS: &str = r#"
// bit operations on u32 and vector bools: counts, reversal, shifts, select, all and any
@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;

@compute @workgroup_size(8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= arrayLength(&x)) { return; }
    let v = x[i];
    let flags = vec4<bool>(v > 100u, (v & 1u) == 1u, v == 0u, v >= 0u);
    y[i * 7u + 0u] = countOneBits(v);
    y[i * 7u + 1u] = reverseBits(v);
    y[i * 7u + 2u] = countLeadingZeros(v);
    y[i * 7u + 3u] = countTrailingZeros(v);
    y[i * 7u + 4u] = (v << 3u) ^ (v >> 5u) | (v & 0xffu);
    y[i * 7u + 5u] = dot(select(vec4<u32>(0u), vec4<u32>(1u, 2u, 4u, 8u), flags), vec4<u32>(1u));
    y[i * 7u + 6u] = u32(all(flags.xw)) * 2u + u32(any(flags.xyz));
}
"#;

fn bit_operations_and_vector_bools(d: &Device) {
    let x: Vec<u32> = vec![
        0,
        1,
        2,
        7,
        100,
        101,
        0x8000_0000,
        0xffff_ffff,
        12_345_678,
        255,
        256,
    ];
    let bx = Buffer::from_slice(d, &x).unwrap();
    let out = poisoned::<u32>(d, x.len() * 7);
    let got = run(
        d,
        BITS,
        &[Binding::from(&bx), Binding::from(&out)],
        [2, 1, 1],
        &out,
    );
    let mut want = Vec::new();
    for &v in &x {
        let flags = [v > 100, v & 1 == 1, v == 0, true];
        let mask: u32 = flags
            .iter()
            .zip([1, 2, 4, 8])
            .map(|(&f, b)| if f { b } else { 0 })
            .sum();
        want.extend([
            v.count_ones(),
            v.reverse_bits(),
            v.leading_zeros(),
            v.trailing_zeros(),
            (v << 3) ^ (v >> 5) | (v & 0xff),
            mask,
            u32::from(flags[0] && flags[3]) * 2 + u32::from(flags[..3].iter().any(|&f| f)),
        ]);
    }
    assert_eq!(got, want, "bits on {}", name(d));
}
per_backend!(bit_operations_and_vector_bools);

const UNIFORM_LOAD: &str = r#"
// workgroupUniformLoad of a value one invocation computed, and an override with a default
override FACTOR: u32 = 3u;
@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;
var<workgroup> biggest: u32;

@compute @workgroup_size(32)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let i = wid.x * 32u + li;
    if (li == 0u) {
        var m = 0u;
        for (var k = 0u; k < 32u; k++) { m = max(m, x[wid.x * 32u + k]); }
        biggest = m;
    }
    let b = workgroupUniformLoad(&biggest);
    y[i] = b * FACTOR - x[i];
}
"#;

#[test]
fn workgroup_uniform_load_and_override_defaults() {
    // 3 workgroups, and 331 that the CPU runs in batches, each with its own `biggest`.
    for (d, groups) in devices().iter().flat_map(|d| [(d, 3), (d, 331)]) {
        let x: Vec<u32> = (0..groups * 32).map(|i| (i * 37 % 53) as u32).collect();
        let bx = Buffer::from_slice(d, &x).unwrap();
        let out = poisoned::<u32>(d, x.len());
        let got = run(
            d,
            UNIFORM_LOAD,
            &[Binding::from(&bx), Binding::from(&out)],
            [groups as u32, 1, 1],
            &out,
        );
        let want: Vec<u32> = x
            .chunks(32)
            .flat_map(|c| {
                let m = *c.iter().max().unwrap();
                c.iter().map(move |&v| m * 3 - v)
            })
            .collect();
        assert_eq!(
            got,
            want,
            "uniform load over {groups} workgroups on {}",
            name(d)
        );
    }
}

const CONTINUING: &str = r#"
// A loop whose continuing block uses a let and a pointer made in its body
@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x >= arrayLength(&x)) { return; }
    var i = 0u;
    var acc = 0u;
    loop {
        let next = i + 1u;
        let slot = &out[gid.x];
        if (x[gid.x] % next == 0u) {
            acc += next;
            continue;
        }
        acc ^= next;
        continuing {
            *slot = acc;
            i = next;
            break if i >= 7u;
        }
    }
}
"#;

/// The CUDA translation put the loop body in a block of its own, out of `continuing`'s
/// sight: NVRTC refused `continuing` naming the body's `let`s (`run` compiles each kernel's
/// translation).
#[test]
fn continuing_blocks_use_the_bodys_lets() {
    let x: Vec<u32> = (0..13).map(|i| i * 7 + 1).collect();
    let want: Vec<u32> = x
        .iter()
        .map(|&v| {
            (1..=7u32).fold(0, |acc, next| {
                if v % next == 0 {
                    acc + next
                } else {
                    acc ^ next
                }
            })
        })
        .collect();
    for d in devices() {
        let bx = Buffer::from_slice(d, &x).unwrap();
        let out = poisoned::<u32>(d, x.len());
        let got = run(
            d,
            CONTINUING,
            &[Binding::from(&bx), Binding::from(&out)],
            [2, 1, 1],
            &out,
        );
        assert_eq!(got, want, "loop with continuing on {}", name(d));
    }
}

const UNREACHED: &str = r#"
// An entry point beside a helper with a matrix and an entry point that loads a texture
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@group(0) @binding(1) var tex: texture_2d<f32>;

fn turned(v: vec3<f32>) -> vec3<f32> {
    let m = mat3x3<f32>(0.0, 1.0, 0.0, -1.0, 0.0, 0.0, 0.0, 0.0, 1.0);
    return m * v;
}

@compute @workgroup_size(1)
fn texel() {
    out[0] = u32(textureLoad(tex, vec2<i32>(0, 0), 0).x + turned(vec3<f32>(1.0)).x);
}

@compute @workgroup_size(8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < arrayLength(&out)) { out[gid.x] = gid.x * 3u + 1u; }
}
"#;

/// Code the entry point never reaches (a helper with a matrix, an entry point with a
/// texture) was checked all the same, and refused on cpu and cuda; and the refusal of what
/// it does reach speaks WGSL (`texture_2d<f32>`, not naga's `Image { dim: D2, .. }`).
#[test]
fn code_the_entry_point_never_reaches_is_not_checked() {
    for d in devices() {
        let out = poisoned::<u32>(d, 11);
        let got = run(d, UNREACHED, &[Binding::from(&out)], [2, 1, 1], &out);
        assert_eq!(
            got,
            (0..11).map(|i| i * 3 + 1).collect::<Vec<u32>>(),
            "{}",
            name(d)
        );
    }
    let e = Kernel::from_wgsl(&devices()[0], UNREACHED, "texel").unwrap_err();
    let text = e.to_string();
    assert_eq!(e.code(), "SHADER", "{e}");
    assert!(
        text.contains("texture") || text.contains("mat3x3<f32>"),
        "{e}"
    );
    assert!(
        !text.contains("Image") && !text.contains("Matrix") && !text.contains("Float"),
        "{e}"
    );
}

const LOCAL_ARRAY: &str = r#"
// an array in function memory indexed at run time (a per-invocation insertion sort), nested
// loops with continue, and a switch inside a loop
@group(0) @binding(0) var<storage, read> x: array<i32>;
@group(0) @binding(1) var<storage, read_write> y: array<i32>;

@compute @workgroup_size(4)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let base = gid.x * 8u;
    if (base >= arrayLength(&x)) { return; }
    var v: array<i32, 8>;
    for (var k = 0u; k < 8u; k++) { v[k] = x[base + k]; }
    for (var k = 1u; k < 8u; k++) {
        var j = k;
        loop {
            if (j == 0u || v[j - 1u] <= v[j]) { break; }
            let t = v[j]; v[j] = v[j - 1u]; v[j - 1u] = t;
            j -= 1u;
        }
    }
    var evens = 0;
    for (var k = 0u; k < 8u; k++) {
        switch (v[k] & 1) {
            case 0: { evens += 1; continue; }
            default: {}
        }
        v[k] = v[k] * 10;
    }
    for (var k = 0u; k < 8u; k++) { y[base + k] = v[k]; }
    y[arrayLength(&x) + gid.x] = evens;
}
"#;

fn function_arrays_nested_loops_and_switch_in_loops(d: &Device) {
    let groups = 5;
    let x: Vec<i32> = (0..groups * 8)
        .map(|i| ((i * 7919) % 97) as i32 - 48)
        .collect();
    let bx = Buffer::from_slice(d, &x).unwrap();
    let out = poisoned::<i32>(d, x.len() + groups);
    let got = run(
        d,
        LOCAL_ARRAY,
        &[Binding::from(&bx), Binding::from(&out)],
        [2, 1, 1],
        &out,
    );
    let mut want = Vec::new();
    let mut evens = Vec::new();
    for c in x.chunks(8) {
        let mut v = c.to_vec();
        v.sort();
        evens.push(v.iter().filter(|&&e| e & 1 == 0).count() as i32);
        want.extend(v.iter().map(|&e| if e & 1 == 0 { e } else { e * 10 }));
    }
    want.extend(evens);
    assert_eq!(got, want, "local arrays on {}", name(d));
}
per_backend!(function_arrays_nested_loops_and_switch_in_loops);

const HALVES: &str = r#"
// pack2x16float
@group(0) @binding(0) var<storage, read> x: array<vec2<f32>>;
@group(0) @binding(1) var<storage, read_write> packed: array<u32>;

@compute @workgroup_size(8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x >= arrayLength(&x)) { return; }
    packed[gid.x] = pack2x16float(x[gid.x]);
}
"#;

/// unpack2x16float, in a launch of its own: NVIDIA's Vulkan driver (580.159) folds
/// `unpack2x16float(pack2x16float(v))` in one kernel into `v`, skipping the rounding.
const UNPACK_HALVES: &str = r#"
// unpack2x16float
@group(0) @binding(0) var<storage, read> packed: array<u32>;
@group(0) @binding(1) var<storage, read_write> back: array<vec2<f32>>;

@compute @workgroup_size(8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x >= arrayLength(&packed)) { return; }
    back[gid.x] = unpack2x16float(packed[gid.x]);
}
"#;

#[test]
fn halves_pack_and_unpack_like_f16() {
    use unicompute::f16;
    for d in devices() {
        let x = random(9, 26, -70_000.0, 70_000.0);
        let bx = Buffer::from_slice(d, &x).unwrap();
        let (packed, back) = (poisoned::<u32>(d, 13), poisoned::<f32>(d, 26));
        let got = run(
            d,
            HALVES,
            &[Binding::from(&bx), Binding::from(&packed)],
            [2, 1, 1],
            &packed,
        );
        run(
            d,
            UNPACK_HALVES,
            &[Binding::from(&packed), Binding::from(&back)],
            [2, 1, 1],
            &back,
        );
        // In range, rounding is to nearest even; past f16's range WebGPU leaves the result
        // unspecified, so only the in-range halves are compared.
        for (i, pair) in x.chunks(2).enumerate() {
            for (h, &v) in pair.iter().enumerate() {
                if v.abs() < 65_504.0 {
                    let bits = (got[i] >> (16 * h)) as u16;
                    assert_eq!(
                        bits,
                        f16::from_f32(v).to_bits(),
                        "pack of {v} on {}",
                        name(d)
                    );
                }
            }
        }
        let unpacked = back.read_blocking().unwrap();
        for (i, &v) in x.iter().enumerate() {
            if v.abs() < 65_504.0 {
                assert_eq!(
                    unpacked[i],
                    f16::from_f32(v).to_f32(),
                    "unpack of {v} on {}",
                    name(d)
                );
            }
        }
    }
}

const OUT_OF_BOUNDS: &str = r#"
// out-of-bounds reads and writes: WebGPU clamps them or drops them, never outside the buffer
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<storage, read_write> z: array<f32>;

@compute @workgroup_size(4)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    y[i] = x[i] + x[i + 1000000u] * 0.0;
    y[i + 77777u] = 5.0;
    z[i] = f32(arrayLength(&y));
}
"#;

fn out_of_bounds_accesses_stay_inside_their_buffers(d: &Device) {
    let x = random(10, 8, 1.0, 2.0);
    let bx = Buffer::from_slice(d, &x).unwrap();
    let (y, z) = (poisoned::<f32>(d, 8), poisoned::<f32>(d, 8));
    let got = run(
        d,
        OUT_OF_BOUNDS,
        &[Binding::from(&bx), Binding::from(&y), Binding::from(&z)],
        [2, 1, 1],
        &y,
    );
    // Element 7 may take a clamped write of 5.0; the others hold x.
    assert_eq!(&got[..7], &x[..7], "in-range results on {}", name(d));
    assert!(
        got[7] == x[7] || got[7] == 5.0,
        "the last element on {}: {}",
        name(d),
        got[7]
    );
    assert_eq!(
        z.read_blocking().unwrap(),
        vec![8.0; 8],
        "arrayLength on {}",
        name(d)
    );
}
per_backend!(out_of_bounds_accesses_stay_inside_their_buffers);

#[test]
fn f16_kernels_run_where_the_device_has_f16_and_are_refused_with_their_line_elsewhere() {
    let source = "enable f16;\n@group(0) @binding(0) var<storage, read_write> y: array<f32>;\n\n@compute @workgroup_size(1)\nfn main() {\n    let h = f16(1.5);\n    y[0] = f32(h * h);\n}\n";
    for d in devices() {
        match Kernel::from_wgsl(d, source, "main") {
            Ok(k) => {
                let y = poisoned::<f32>(d, 1);
                d.queue()
                    .launch(&k, &[Binding::from(&y)], [1, 1, 1])
                    .unwrap();
                assert_eq!(y.read_blocking().unwrap(), vec![2.25], "f16 on {}", name(d));
            }
            Err(e) => {
                assert!(
                    !d.info().features.f16,
                    "{} has f16 but refused the kernel: {e}",
                    name(d)
                );
                if d.backend() == unicompute::BackendKind::Cpu {
                    // The executor names the construct and where it is.
                    // In WGSL's words, not naga's (`F16(1.5)`).
                    let text = e.to_string();
                    assert!(
                        e.code() == "SHADER"
                            && text.contains("at 6:")
                            && text.contains("1.5h")
                            && !text.contains("F16"),
                        "{e}"
                    );
                } else {
                    assert!(
                        matches!(e.code(), "SHADER" | "UNSUPPORTED" | "DEVICE"),
                        "{e}"
                    );
                }
            }
        }
    }
    // The CUDA translation takes it too (computed in f32, stored in 16 bits).
    crate::common::kernels::compiles_for_cuda(source, "main");
}

const SOFTMAX: &str = r#"
// a row softmax: one workgroup per row, maximum and sum reduced through workgroup memory
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> cols: vec4<u32>;
var<workgroup> red: array<f32, 32>;

fn reduce(v: f32, li: u32, is_max: bool) -> f32 {
    red[li] = v;
    workgroupBarrier();
    for (var s = 16u; s > 0u; s >>= 1u) {
        if (li < s) {
            if (is_max) { red[li] = max(red[li], red[li + s]); } else { red[li] = red[li] + red[li + s]; }
        }
        workgroupBarrier();
    }
    let r = red[0];
    workgroupBarrier();
    return r;
}

@compute @workgroup_size(32)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) w: vec3<u32>) {
    let n = cols.x;
    let row = w.x * n;
    var m = -3.4e38;
    for (var j = li; j < n; j += 32u) { m = max(m, x[row + j]); }
    m = reduce(m, li, true);
    var s = 0.0;
    for (var j = li; j < n; j += 32u) { s += exp(x[row + j] - m); }
    s = reduce(s, li, false);
    for (var j = li; j < n; j += 32u) { y[row + j] = exp(x[row + j] - m) / s; }
}
"#;

fn row_softmax_with_helper_reductions(d: &Device) {
    let (rows, cols) = (5, 77);
    let x = random(11, rows * cols, -8.0, 8.0);
    let bx = Buffer::from_slice(d, &x).unwrap();
    let out = poisoned::<f32>(d, rows * cols);
    let c = Buffer::from_slice(d, &[cols as u32, 0, 0, 0]).unwrap();
    let got = run(
        d,
        SOFTMAX,
        &[Binding::from(&bx), Binding::from(&out), Binding::from(&c)],
        [rows as u32, 1, 1],
        &out,
    );
    let mut want = Vec::new();
    for row in x.chunks(cols) {
        let m = row
            .iter()
            .fold(f64::NEG_INFINITY, |m, &v| m.max(f64::from(v)));
        let s: f64 = row.iter().map(|&v| (f64::from(v) - m).exp()).sum();
        want.extend(row.iter().map(|&v| (f64::from(v) - m).exp() / s));
    }
    assert_close(&got, &want, 1e-5, &format!("softmax on {}", name(d)));
}
per_backend!(row_softmax_with_helper_reductions);

const STENCIL: &str = r#"
// a 3x3 box blur of an image with clamped borders, 2-D workgroups over a 2-D grid
struct Size { w: i32, h: i32 }
@group(0) @binding(0) var<storage, read> img: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> size: Size;

@compute @workgroup_size(8, 4)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    let x = i32(g.x);
    let y = i32(g.y);
    if (x >= size.w || y >= size.h) { return; }
    var acc = 0.0;
    for (var dy = -1; dy <= 1; dy++) {
        for (var dx = -1; dx <= 1; dx++) {
            let sx = clamp(x + dx, 0, size.w - 1);
            let sy = clamp(y + dy, 0, size.h - 1);
            acc += img[sy * size.w + sx];
        }
    }
    out[y * size.w + x] = acc / 9.0;
}
"#;

fn stencil_with_clamped_borders_on_a_2d_grid(d: &Device) {
    let (w, h) = (13usize, 7usize);
    let img = random(12, w * h, 0.0, 1.0);
    let bi = Buffer::from_slice(d, &img).unwrap();
    let out = poisoned::<f32>(d, w * h);
    let size = Buffer::from_slice(d, &[w as i32, h as i32]).unwrap();
    let got = run(
        d,
        STENCIL,
        &[
            Binding::from(&bi),
            Binding::from(&out),
            Binding::from(&size),
        ],
        [(w as u32).div_ceil(8), (h as u32).div_ceil(4), 1],
        &out,
    );
    let mut want = Vec::new();
    for y in 0..h as i64 {
        for x in 0..w as i64 {
            let mut acc = 0.0;
            for dy in -1..=1 {
                for dx in -1..=1 {
                    let (sx, sy) = (
                        (x + dx).clamp(0, w as i64 - 1) as usize,
                        (y + dy).clamp(0, h as i64 - 1) as usize,
                    );
                    acc += f64::from(img[sy * w + sx]);
                }
            }
            want.push(acc / 9.0);
        }
    }
    assert_close(&got, &want, 1e-6, &format!("stencil on {}", name(d)));
}
per_backend!(stencil_with_clamped_borders_on_a_2d_grid);

const VEC3_ARRAYS: &str = r#"
// arrays of vec3 (16 bytes apart, 12 used) in a buffer and in function memory
@group(0) @binding(0) var<storage, read> points: array<vec3<f32>>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    let i = g.x;
    if (i >= arrayLength(&out)) { return; }
    var picks = array<vec3<f32>, 3>(points[i], points[i] * 2.0, vec3<f32>(1.0, 2.0, 3.0));
    picks[1].y += 0.5;
    out[i] = dot(picks[i % 3u], vec3<f32>(1.0, 10.0, 100.0)) + f32(arrayLength(&points));
}
"#;

fn arrays_of_vec3_keep_their_16_byte_stride(d: &Device) {
    let n = 131;
    // Each vec3 takes four floats: x, y, z and padding the kernel must skip.
    let words = random(13, 4 * n, -2.0, 2.0);
    let points = Buffer::from_slice(d, &words).unwrap();
    let out = poisoned::<f32>(d, n);
    let got = run(
        d,
        VEC3_ARRAYS,
        &[Binding::from(&points), Binding::from(&out)],
        [(n as u32).div_ceil(64), 1, 1],
        &out,
    );
    let want: Vec<f64> = (0..n)
        .map(|i| {
            let p: Vec<f64> = words[4 * i..4 * i + 3]
                .iter()
                .map(|&v| f64::from(v))
                .collect();
            let pick = match i % 3 {
                0 => p,
                1 => vec![2.0 * p[0], 2.0 * p[1] + 0.5, 2.0 * p[2]],
                _ => vec![1.0, 2.0, 3.0],
            };
            pick[0] + 10.0 * pick[1] + 100.0 * pick[2] + n as f64
        })
        .collect();
    assert_close(&got, &want, 1e-5, &format!("vec3 arrays on {}", name(d)));
}
per_backend!(arrays_of_vec3_keep_their_16_byte_stride);

const SUBGROUPS: &str = r#"
// subgroup reductions, scans, shuffles and ballots, also under divergence
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(subgroup_invocation_id) sid: u32, @builtin(subgroup_size) size: u32) {
    let i = g.x;
    let v = x[i];
    let o = 8u * i;
    out[o] = f32(size);
    out[o + 1u] = f32(sid);
    out[o + 2u] = subgroupAdd(v);
    out[o + 3u] = subgroupInclusiveAdd(v);
    out[o + 4u] = subgroupMax(v);
    out[o + 5u] = subgroupShuffleXor(v, 1u);
    out[o + 7u] = f32(countOneBits(subgroupBallot(v > 0.0).x));
    if (sid % 2u == 0u) {
        out[o + 6u] = subgroupAdd(v);
    } else {
        out[o + 6u] = -1.0;
    }
}
"#;

fn subgroup_operations_over_each_subgroup_of_active_lanes(d: &Device) {
    if !d.info().features.subgroups {
        eprintln!("SKIPPING subgroups on {}: the adapter has none", name(d));
        return;
    }
    // As written for browsers too, which want the extension enabled (naga 30 refuses the
    // directive and is given the source without it).
    for source in [
        SUBGROUPS.to_string(),
        format!("enable subgroups;{SUBGROUPS}"),
    ] {
        check_subgroups(d, &source);
    }
}
per_backend!(subgroup_operations_over_each_subgroup_of_active_lanes);

/// [`SUBGROUPS`] (or `source`, a variant of it) on `d`, against f64 references.
fn check_subgroups(d: &Device, source: &str) {
    let n = 128;
    let xs = random(14, n, -1.0, 1.0);
    let bx = Buffer::from_slice(d, &xs).unwrap();
    let out = poisoned::<f32>(d, 8 * n);
    let got = run(
        d,
        source,
        &[Binding::from(&bx), Binding::from(&out)],
        [2, 1, 1],
        &out,
    );
    for i in 0..n {
        let (size, sid) = (got[8 * i] as usize, got[8 * i + 1] as usize);
        assert!(
            size.is_power_of_two() && sid < size && size <= 128,
            "subgroup size {size}, id {sid} on {}",
            name(d)
        );
        // The subgroup: consecutive invocations of one workgroup.
        let start = i - sid;
        let members: Vec<usize> = (start..(start + size).min(i / 64 * 64 + 64)).collect();
        let sum: f64 = members.iter().map(|&k| f64::from(xs[k])).sum();
        let prefix: f64 = (start..=i).map(|k| f64::from(xs[k])).sum();
        let max = members
            .iter()
            .map(|&k| f64::from(xs[k]))
            .fold(f64::NEG_INFINITY, f64::max);
        let even: f64 = members
            .iter()
            .filter(|&&k| (k - start) % 2 == 0)
            .map(|&k| f64::from(xs[k]))
            .sum();
        let positive = members.iter().filter(|&&k| xs[k] > 0.0).count() as f64;
        let want = [
            sum,
            prefix,
            max,
            f64::from(xs[start + (sid ^ 1)]),
            if sid % 2 == 0 { even } else { -1.0 },
            positive,
        ];
        let at = [2, 3, 4, 5, 6, 7];
        for (w, &k) in want.iter().zip(&at) {
            assert!(
                (f64::from(got[8 * i + k]) - w).abs() <= 1e-5 * (1.0 + w.abs()),
                "invocation {i} output {k}: {} vs {w} on {}",
                got[8 * i + k],
                name(d)
            );
        }
    }
}

const POINTER_ARGUMENTS: &str = r#"
// helpers that take pointers to the caller's function variables, two calls deep
fn bump(p: ptr<function, f32>, v: f32) {
    *p = *p + v;
}
fn bump_twice(p: ptr<function, f32>, q: ptr<function, u32>, v: f32) {
    bump(p, v);
    bump(p, v);
    *q = *q + 1u;
}
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    let i = g.x;
    if (i >= arrayLength(&out)) { return; }
    var acc = x[i];
    var calls = 0u;
    var other = 2.0;
    bump_twice(&acc, &calls, 0.25);
    bump(&other, acc);
    out[i] = acc * 10.0 + f32(calls) + other * 1000.0;
}
"#;

fn functions_take_pointers_to_their_callers_variables(d: &Device) {
    let n = 100;
    let xs = random(15, n, -1.0, 1.0);
    let bx = Buffer::from_slice(d, &xs).unwrap();
    let out = poisoned::<f32>(d, n);
    let got = run(
        d,
        POINTER_ARGUMENTS,
        &[Binding::from(&bx), Binding::from(&out)],
        [(n as u32).div_ceil(64), 1, 1],
        &out,
    );
    let want: Vec<f64> = xs
        .iter()
        .map(|&v| {
            let acc = f64::from(v) + 0.5;
            acc * 10.0 + 1.0 + (2.0 + acc) * 1000.0
        })
        .collect();
    assert_close(
        &got,
        &want,
        1e-5,
        &format!("pointer arguments on {}", name(d)),
    );
}
per_backend!(functions_take_pointers_to_their_callers_variables);

const SHARED_BINDING: &str = r#"
// one buffer seen as floats by one entry point and as vec4s by another, at one binding
@group(0) @binding(0) var<storage, read> xs: array<f32>;
@group(0) @binding(0) var<storage, read> x4: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    let i = g.x;
    if (i >= arrayLength(&out)) { return; }
    let v = x4[i];
    out[i] = v.x + 10.0 * v.y + 100.0 * v.z + 1000.0 * v.w;
}

@compute @workgroup_size(64)
fn scalar(@builtin(global_invocation_id) g: vec3<u32>) {
    out[g.x] = xs[g.x];
}
"#;

fn variables_sharing_a_binding_bind_the_one_the_entry_point_uses(d: &Device) {
    let n = 70;
    let xs = random(16, 4 * n, -1.0, 1.0);
    let bx = Buffer::from_slice(d, &xs).unwrap();
    let out = poisoned::<f32>(d, n);
    let got = run(
        d,
        SHARED_BINDING,
        &[Binding::from(&bx), Binding::from(&out)],
        [(n as u32).div_ceil(64), 1, 1],
        &out,
    );
    let want: Vec<f64> = xs
        .chunks(4)
        .map(|v| {
            f64::from(v[0])
                + 10.0 * f64::from(v[1])
                + 100.0 * f64::from(v[2])
                + 1000.0 * f64::from(v[3])
        })
        .collect();
    assert_close(
        &got,
        &want,
        1e-5,
        &format!("vec4 view of a shared binding on {}", name(d)),
    );
}
per_backend!(variables_sharing_a_binding_bind_the_one_the_entry_point_uses);

const DYNAMIC_INDICES: &str = r#"
// dynamic indices into a uniform vector, a storage array of vectors and a read-write buffer read back
@group(0) @binding(0) var<storage, read> v: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> sel: vec4<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    let i = g.x;
    if (i >= arrayLength(&out)) { return; }
    out[i] = v[i][sel[i % 4u]] * 2.0;
    out[i] = out[i] + f32(sel[(i + 1u) % 4u]);
}
"#;

/// The loads and stores the CPU executor takes straight from an index (`buffer[i]`) beside
/// the ones it does not (a uniform vector, an array of vectors, a buffer it also writes).
#[test]
fn dynamic_indices_into_vectors_and_arrays() {
    for (d, n) in devices().iter().flat_map(|d| [(d, 61), (d, 20011)]) {
        let v = random(13, n * 4, -4.0, 4.0);
        let sel = [3u32, 0, 2, 1];
        let bv = Buffer::from_slice(d, &v).unwrap();
        let out = poisoned::<f32>(d, n);
        let bs = Buffer::from_slice(d, &sel).unwrap();
        let got = run(
            d,
            DYNAMIC_INDICES,
            &[Binding::from(&bv), Binding::from(&out), Binding::from(&bs)],
            [(n as u32).div_ceil(64), 1, 1],
            &out,
        );
        let want: Vec<f64> = (0..n)
            .map(|i| f64::from(v[i * 4 + sel[i % 4] as usize]) * 2.0 + f64::from(sel[(i + 1) % 4]))
            .collect();
        assert_close(
            &got,
            &want,
            1e-6,
            &format!("dynamic indices over {n} on {}", name(d)),
        );
    }
}

const TRANSPOSE: &str = r#"
// a transpose through a 16x16 tile of workgroup memory, the loads in a helper function, and
// the output scaled in place by a second statement that reads back what the first wrote
struct Dims { rows: u32, cols: u32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> dims: Dims;
var<workgroup> tile: array<array<f32, 17>, 16>;

fn at(r: u32, c: u32) -> f32 {
    if (r >= dims.rows || c >= dims.cols) { return 0.0; }
    return x[r * dims.cols + c];
}

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) w: vec3<u32>, @builtin(local_invocation_id) l: vec3<u32>) {
    tile[l.y][l.x] = at(w.y * 16u + l.y, w.x * 16u + l.x);
    workgroupBarrier();
    let r = w.x * 16u + l.y; // a row of the output: a column of the input
    let c = w.y * 16u + l.x;
    if (r < dims.cols && c < dims.rows) {
        y[r * dims.rows + c] = tile[l.x][l.y];
        y[r * dims.rows + c] = y[r * dims.rows + c] * 2.0 + 1.0;
    }
}
"#;

/// Kernels as a new user writes them: 2-D workgroups with workgroup memory, in batches on
/// the CPU (the last partial), loads in a helper, a store read back by the next statement.
#[test]
fn transpose_through_workgroup_memory() {
    for (d, (rows, cols)) in devices().iter().flat_map(|d| [(d, (5, 3)), (d, (131, 97))]) {
        let x = random(17, rows * cols, -2.0, 2.0);
        let bx = Buffer::from_slice(d, &x).unwrap();
        let out = poisoned::<f32>(d, rows * cols);
        let dims = Buffer::from_slice(d, &[rows as u32, cols as u32]).unwrap();
        let groups = [(cols as u32).div_ceil(16), (rows as u32).div_ceil(16), 1];
        let got = run(
            d,
            TRANSPOSE,
            &[
                Binding::from(&bx),
                Binding::from(&out),
                Binding::from(&dims),
            ],
            groups,
            &out,
        );
        let want: Vec<f64> = (0..cols)
            .flat_map(|r| (0..rows).map(move |c| (r, c)))
            .map(|(r, c)| f64::from(x[c * cols + r]) * 2.0 + 1.0)
            .collect();
        assert_close(
            &got,
            &want,
            1e-6,
            &format!("transpose of {rows}x{cols} on {}", name(d)),
        );
    }
}

/// A kernel of `vec4<f32>` and `u32` inputs with float and word outputs (see
/// [`run_floats_and_words`]): its first-line comment, then its body after the bounds check.
macro_rules! floats_and_words_kernel {
    ($comment:literal, $body:literal) => {
        concat!(
            $comment,
            r#"@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> u: array<u32>;
@group(0) @binding(2) var<storage, read_write> fo: array<f32>;
@group(0) @binding(3) var<storage, read_write> uo: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    let i = g.x;
    if (i >= arrayLength(&u)) { return; }
"#,
            $body
        )
    };
}

/// Seeded words over the whole range, with the `edges` among them (every `every`th word).
fn words_with_edges(seed: u64, n: usize, edges: [u32; 4], every: usize) -> Vec<u32> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..n)
        .map(|i| {
            if i % every == 0 {
                edges[i / every % 4]
            } else {
                rng.u32(..)
            }
        })
        .collect()
}

/// Run a kernel of the shape of [`GEOMETRY_AND_BITS`] and [`PACKING`]: a `vec4<f32>` and a
/// `u32` in, `per_float` floats and `per_word` words out per invocation (poisoned first);
/// both outputs.
fn run_floats_and_words(
    d: &Device,
    source: &str,
    x: &[f32],
    u: &[u32],
    per_float: usize,
    per_word: usize,
) -> (Vec<f32>, Vec<u32>) {
    let n = u.len();
    let (bx, bu) = (
        Buffer::from_slice(d, x).unwrap(),
        Buffer::from_slice(d, u).unwrap(),
    );
    let (fo, uo) = (
        poisoned::<f32>(d, n * per_float),
        poisoned::<u32>(d, n * per_word),
    );
    let words = run(
        d,
        source,
        &[
            Binding::from(&bx),
            Binding::from(&bu),
            Binding::from(&fo),
            Binding::from(&uo),
        ],
        [(n as u32).div_ceil(64), 1, 1],
        &uo,
    );
    (fo.read_blocking().unwrap(), words)
}

const GEOMETRY_AND_BITS: &str = floats_and_words_kernel!(
    r#"// geometric built-ins (normalize, distance, cross, smoothstep, reflect, faceForward, ldexp)
// and bit fields (extractBits, insertBits, firstLeadingBit, firstTrailingBit), offsets and
// counts past 32 included
"#,
    r#"    let v = x[i].xyz;
    let w = x[i].wzy + vec3<f32>(0.5, -0.25, 0.125);
    let o = i * 17u;
    let n = normalize(v);
    fo[o] = n.x; fo[o + 1u] = n.y; fo[o + 2u] = n.z;
    fo[o + 3u] = distance(v, w);
    let c = cross(v, w);
    fo[o + 4u] = c.x; fo[o + 5u] = c.y; fo[o + 6u] = c.z;
    fo[o + 7u] = smoothstep(-1.0, 2.0, v.x);
    fo[o + 8u] = smoothstep(vec2<f32>(-1.0), vec2<f32>(2.0), v.xy).y;
    let r = reflect(v, normalize(w));
    fo[o + 9u] = r.x; fo[o + 10u] = r.y; fo[o + 11u] = r.z;
    let f = faceForward(v, w, c + v);
    fo[o + 12u] = f.x; fo[o + 13u] = f.y; fo[o + 14u] = f.z;
    fo[o + 15u] = ldexp(v.x, i32(i % 40u) - 20);
    fo[o + 16u] = select(0.0, 1.0, any(v > w)) + select(0.0, 2.0, all(vec2<i32>(i32(i % 9u), -1) < vec2<i32>(5, 0)));
    let b = u[i];
    let k = i * 6u;
    uo[k] = extractBits(b, i % 37u, (i * 7u) % 37u);
    uo[k + 1u] = bitcast<u32>(extractBits(bitcast<i32>(b), i % 35u, (i * 3u) % 36u));
    uo[k + 2u] = insertBits(b, ~b, i % 33u, (i * 5u) % 34u);
    uo[k + 3u] = firstLeadingBit(b >> (i % 32u));
    uo[k + 4u] = bitcast<u32>(firstLeadingBit(bitcast<i32>(b) >> (i % 32u)));
    uo[k + 5u] = firstTrailingBit(b << (i % 32u));
}
"#
);

/// The reference of [`GEOMETRY_AND_BITS`]'s float outputs for invocation `i`.
fn geometry_reference(x: &[f32], i: usize) -> [f64; 17] {
    let q = |k: usize| f64::from(x[i * 4 + k]);
    let (v, w) = ([q(0), q(1), q(2)], [q(3) + 0.5, q(2) - 0.25, q(1) + 0.125]);
    let dot = |a: [f64; 3], b: [f64; 3]| a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
    let len = |a: [f64; 3]| dot(a, a).sqrt();
    let n = v.map(|c| c / len(v));
    let c = [
        v[1] * w[2] - v[2] * w[1],
        v[2] * w[0] - v[0] * w[2],
        v[0] * w[1] - v[1] * w[0],
    ];
    let smooth = |e: f64| {
        let t = ((e + 1.0) / 3.0).clamp(0.0, 1.0);
        t * t * (3.0 - 2.0 * t)
    };
    let nw = w.map(|e| e / len(w));
    let r: Vec<f64> = (0..3).map(|k| v[k] - 2.0 * dot(nw, v) * nw[k]).collect();
    let cv = [c[0] + v[0], c[1] + v[1], c[2] + v[2]];
    let f = if dot(w, cv) < 0.0 { v } else { v.map(|e| -e) };
    let d = [v[0] - w[0], v[1] - w[1], v[2] - w[2]];
    // The comparisons are of the f32 values the kernel holds.
    let wf = [
        x[i * 4 + 3] + 0.5,
        x[i * 4 + 2] - 0.25,
        x[i * 4 + 1] + 0.125,
    ];
    let compared = f64::from(u8::from((0..3).any(|k| x[i * 4 + k] > wf[k])))
        + if i % 9 < 5 { 2.0 } else { 0.0 };
    [
        n[0],
        n[1],
        n[2],
        len(d),
        c[0],
        c[1],
        c[2],
        smooth(v[0]),
        smooth(v[1]),
        r[0],
        r[1],
        r[2],
        f[0],
        f[1],
        f[2],
        v[0] * 2f64.powi(i as i32 % 40 - 20),
        compared,
    ]
}

/// The reference of [`GEOMETRY_AND_BITS`]'s integer outputs for invocation `i`, from WGSL's
/// definitions with wide integers.
fn bits_reference(b: u32, i: u32) -> [u32; 6] {
    let field = |offset: u32, count: u32| {
        let o = offset.min(32);
        (o, count.min(32 - o))
    };
    let extract = |x: u32, (o, c): (u32, u32), signed: bool| -> u32 {
        if c == 0 {
            return 0;
        }
        let v = (u64::from(x) >> o) & ((1u64 << c) - 1);
        if signed && (v >> (c - 1)) & 1 == 1 {
            (v as i64 - (1i64 << c)) as u32
        } else {
            v as u32
        }
    };
    let (o, c) = field(i % 33, (i * 5) % 34);
    let mask = (((1u64 << c) - 1) << o) as u32;
    let insert = (b & !mask) | (((u64::from(!b) << o) as u32) & mask);
    let leading = |x: u32| {
        if x == 0 {
            u32::MAX
        } else {
            31 - x.leading_zeros()
        }
    };
    let s = (b as i32) >> (i % 32);
    [
        extract(b, field(i % 37, (i * 7) % 37), false),
        extract(b, field(i % 35, (i * 3) % 36), true),
        insert,
        leading(b >> (i % 32)),
        leading(if s < 0 { !(s as u32) } else { s as u32 }),
        {
            let y = b << (i % 32);
            if y == 0 {
                u32::MAX
            } else {
                y.trailing_zeros()
            }
        },
    ]
}

#[test]
fn geometry_and_bit_field_builtins_follow_wgsl() {
    for (d, n) in devices().iter().flat_map(|d| [(d, 61), (d, 4099)]) {
        let x = random(19, n * 4, -3.0, 3.0);
        let u = words_with_edges(23, n, [0, u32::MAX, 1 << 31, 1], 13);
        let (got_f, got_u) = run_floats_and_words(d, GEOMETRY_AND_BITS, &x, &u, 17, 6);
        let want_f: Vec<f64> = (0..n).flat_map(|i| geometry_reference(&x, i)).collect();
        assert_close(
            &got_f,
            &want_f,
            2e-5,
            &format!("geometry over {n} on {}", name(d)),
        );
        let want_u: Vec<u32> = (0..n)
            .flat_map(|i| bits_reference(u[i], i as u32))
            .collect();
        for (k, (g, w)) in got_u.iter().zip(&want_u).enumerate() {
            assert_eq!(
                g,
                w,
                "bit fields over {n} on {}: output {} of invocation {} (input {:#x})",
                name(d),
                k % 6,
                k / 6,
                u[k / 6]
            );
        }
    }
}

const PACKING: &str = floats_and_words_kernel!(
    r#"// packing built-ins (normalized floats and small integers into a word and back),
// quantizeToF16 and refract (total internal reflection included)
"#,
    r#"    let v = x[i];
    let b = u[i];
    let k = i * 8u;
    uo[k] = pack4x8snorm(v);
    uo[k + 1u] = pack4x8unorm(v);
    uo[k + 2u] = pack2x16snorm(v.xy);
    uo[k + 3u] = pack2x16unorm(v.zw);
    let iv = vec4<i32>(bitcast<i32>(b) >> 20u, i32(b & 0x1ffu) - 256, -1, 300);
    uo[k + 4u] = pack4xI8(iv);
    uo[k + 5u] = pack4xI8Clamp(iv);
    uo[k + 6u] = pack4xU8(vec4<u32>(b, b >> 8u, 7u, 1000u));
    uo[k + 7u] = pack4xU8Clamp(vec4<u32>(b >> 24u, b, 255u, 256u));
    let o = i * 27u;
    let s8 = unpack4x8snorm(b);
    let u8 = unpack4x8unorm(b);
    let s16 = unpack2x16snorm(b);
    let u16 = unpack2x16unorm(b);
    let i8 = unpack4xI8(b);
    let w8 = unpack4xU8(b);
    for (var c = 0u; c < 4u; c++) {
        fo[o + c] = s8[c];
        fo[o + 4u + c] = u8[c];
        fo[o + 8u + c] = f32(i8[c]);
        fo[o + 12u + c] = f32(w8[c]);
    }
    fo[o + 16u] = s16.x; fo[o + 17u] = s16.y; fo[o + 18u] = u16.x; fo[o + 19u] = u16.y;
    let r = refract(normalize(v.xyz), normalize(vec3<f32>(0.0, 1.0, 0.2)), 0.3 + f32(i % 2u) * 0.4);
    fo[o + 20u] = r.x; fo[o + 21u] = r.y; fo[o + 22u] = r.z;
    // eta 3 at a right angle: k = 1 - 9 < 0, the zero vector
    fo[o + 23u] = length(refract(normalize(vec3<f32>(1.0, 0.0, f32(i % 3u) * 0.01)), vec3<f32>(0.0, 1.0, 0.0), 3.0));
    fo[o + 24u] = quantizeToF16(v.x);
    fo[o + 25u] = quantizeToF16(v.w * 1000.0);
    fo[o + 26u] = 0.0;
}
"#
);

/// The reference of [`PACKING`]'s word outputs for invocation `i`, from WGSL's definitions.
fn packing_words(v: [f32; 4], b: u32) -> [u32; 8] {
    let norm = |x: f32, lo: f64, scale: f64, bits: u32| {
        ((0.5 + scale * f64::from(x).clamp(lo, 1.0)).floor() as i64 as u32)
            & (u32::MAX >> (32 - bits))
    };
    let join = |parts: &[u32], bits: u32| {
        parts
            .iter()
            .zip(0..)
            .fold(0u32, |w, (&p, i)| w | (p << (i * bits)))
    };
    let iv = [(b as i32) >> 20, (b & 0x1ff) as i32 - 256, -1, 300];
    let uv = [b, b >> 8, 7, 1000];
    let uc = [b >> 24, b, 255, 256];
    [
        join(&v.map(|x| norm(x, -1.0, 127.0, 8)), 8),
        join(&v.map(|x| norm(x, 0.0, 255.0, 8)), 8),
        join(
            &[norm(v[0], -1.0, 32767.0, 16), norm(v[1], -1.0, 32767.0, 16)],
            16,
        ),
        join(
            &[norm(v[2], 0.0, 65535.0, 16), norm(v[3], 0.0, 65535.0, 16)],
            16,
        ),
        join(&iv.map(|x| x as u32 & 0xff), 8),
        join(&iv.map(|x| x.clamp(-128, 127) as u32 & 0xff), 8),
        join(&uv.map(|x| x & 0xff), 8),
        join(&uc.map(|x| x.min(255)), 8),
    ]
}

/// The reference of [`PACKING`]'s float outputs for invocation `i`.
fn packing_floats(v: [f32; 4], b: u32, i: usize) -> Vec<f64> {
    let byte = |c: u32| (b >> (8 * c)) & 0xff;
    let half = |c: u32| (b >> (16 * c)) & 0xffff;
    let mut out: Vec<f64> = (0..4)
        .map(|c| (f64::from(byte(c) as u8 as i8) / 127.0).max(-1.0))
        .collect();
    out.extend((0..4).map(|c| f64::from(byte(c)) / 255.0));
    out.extend((0..4).map(|c| f64::from(byte(c) as u8 as i8)));
    out.extend((0..4).map(|c| f64::from(byte(c))));
    out.extend((0..2).map(|c| (f64::from(half(c) as u16 as i16) / 32767.0).max(-1.0)));
    out.extend((0..2).map(|c| f64::from(half(c)) / 65535.0));
    let unit = |a: [f64; 3]| {
        let l = (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]).sqrt();
        a.map(|c| c / l)
    };
    let (e, n, eta) = (
        unit([v[0], v[1], v[2]].map(f64::from)),
        unit([0.0, 1.0, 0.2]),
        0.3 + (i % 2) as f64 * 0.4,
    );
    let d = e[0] * n[0] + e[1] * n[1] + e[2] * n[2];
    let k = 1.0 - eta * eta * (1.0 - d * d);
    out.extend((0..3).map(|c| eta * e[c] - (eta * d + k.sqrt()) * n[c]));
    out.push(0.0);
    out.extend([v[0], v[3] * 1000.0].map(|x| f64::from(half::f16::from_f32(x).to_f32())));
    out.push(0.0);
    out
}

#[test]
fn packing_builtins_follow_wgsl() {
    for (d, n) in devices().iter().flat_map(|d| [(d, 61), (d, 4099)]) {
        // Inputs away from the rounding boundaries of packing (x · scale ending in .5), where
        // f32, f64 and a fused multiply-add may round apart.
        let near_half = |x: f32| {
            [127.0, 255.0, 32767.0, 65535.0]
                .iter()
                .any(|s| ((f64::from(x.clamp(-1.0, 1.0)) * s).rem_euclid(1.0) - 0.5).abs() < 0.01)
        };
        let x: Vec<f32> = random(29, n * 4, -1.5, 1.5)
            .into_iter()
            .map(|mut v| {
                while near_half(v) {
                    v += 1e-4;
                }
                v
            })
            .collect();
        let u = words_with_edges(31, n, [0, u32::MAX, 0x8080_8080, 0x7f01_80ff], 11);
        let (got_f, got_u) = run_floats_and_words(d, PACKING, &x, &u, 27, 8);
        let v = |i: usize| [x[i * 4], x[i * 4 + 1], x[i * 4 + 2], x[i * 4 + 3]];
        let want_f: Vec<f64> = (0..n).flat_map(|i| packing_floats(v(i), u[i], i)).collect();
        assert_close(
            &got_f,
            &want_f,
            1e-5,
            &format!(
                "unpacking, refract and quantizeToF16 over {n} on {}",
                name(d)
            ),
        );
        let want_u: Vec<u32> = (0..n).flat_map(|i| packing_words(v(i), u[i])).collect();
        for (k, (g, w)) in got_u.iter().zip(&want_u).enumerate() {
            assert_eq!(
                g,
                w,
                "packing over {n} on {}: output {} of invocation {} (input {:?}, {:#x})",
                name(d),
                k % 8,
                k / 8,
                v(k / 8),
                u[k / 8]
            );
        }
    }
}
