//! WGSL kernels over the types beyond 32-bit scalars and vectors, written as a user would:
//! f32 matrices (in storage buffers and structs, with WGSL's column layout), f16 (`enable
//! f16;`, in storage arrays and vectors) and the struct-valued built-ins `modf` and `frexp`.
//! Each runs on every device that has what it needs (one that lacks f16 must refuse the
//! kernel clearly), with seeded inputs and poisoned outputs, against an f64 reference here;
//! each kernel's CUDA translation also compiles (`common::kernels::compiles_for_cuda`, which `run` calls).

use crate::common::kernels::{poisoned, run};
use crate::common::{devices, name, per_backend, random};
use unicompute::Device;

use unicompute::{Binding, Buffer, Kernel};

/// A matrix of f64 as columns of up to 4 rows.
type Mat = Vec<[f64; 4]>;

const MATRICES: &str = r#"
// matrices: products, transpose, determinant; mat3x3 in a struct and in storage arrays
struct Frame { m: mat3x3<f32>, v: vec3<f32>, s: f32 }
@group(0) @binding(0) var<storage, read> frames: array<Frame>;
@group(0) @binding(1) var<storage, read> quads: array<mat4x4<f32>>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<storage, read_write> outm: array<mat3x3<f32>>;

@compute @workgroup_size(8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= arrayLength(&frames)) { return; }
    let f = frames[i];
    let m = f.m;
    let a = mat2x3<f32>(m[0], m[1]);
    let b = mat3x2<f32>(m[0].xy, m[1].yz, vec2<f32>(f.s, m[2][2]));
    let ab = a * b;
    let ba = b * a;
    let sum = (m + transpose(m)) - f.s * m * 0.5;
    let mv = m * f.v;
    let vm = f.v * m;
    let q = quads[i];
    let qv = transpose(q) * q[1];
    let lit = mat2x2<f32>(1.0, 2.0, 3.0, 4.0) * vec2<f32>(f.s, 1.0);
    let zero = mat2x4<f32>();
    let o = i * 24u;
    out[o] = determinant(m);
    out[o + 1u] = determinant(ba);
    out[o + 2u] = determinant(q);
    for (var c = 0u; c < 3u; c++) {
        out[o + 3u + c] = mv[c];
        out[o + 6u + c] = vm[c];
        out[o + 9u + c] = ab[c][c] + ab[2u - c][0];
        out[o + 12u + c] = sum[c].x + sum[c][1] * 2.0 + sum[2u - c].z;
    }
    out[o + 15u] = ba[0][1] - ba[1][0];
    for (var r = 0u; r < 4u; r++) { out[o + 16u + r] = qv[r]; }
    out[o + 20u] = lit.x + zero[1][3];
    out[o + 21u] = lit.y;
    outm[i] = ab;
    outm[i][1][2] = -ab[1][2];
}
"#;

/// Column `c` of the `columns`x`rows` matrix whose words start at `w`, columns `stride` apart.
fn mat(w: &[f32], columns: usize, rows: usize, stride: usize) -> Mat {
    (0..columns)
        .map(|c| {
            std::array::from_fn(|r| {
                if r < rows {
                    f64::from(w[c * stride + r])
                } else {
                    0.0
                }
            })
        })
        .collect()
}

/// `a * b`, `a` of `rows` rows.
fn mul(a: &Mat, b: &Mat, rows: usize) -> Mat {
    b.iter()
        .map(|col| {
            std::array::from_fn(|r| {
                if r < rows {
                    (0..a.len()).map(|k| a[k][r] * col[k]).sum()
                } else {
                    0.0
                }
            })
        })
        .collect()
}

fn transpose(a: &Mat, rows: usize) -> Mat {
    (0..rows)
        .map(|r| std::array::from_fn(|c| if c < a.len() { a[c][r] } else { 0.0 }))
        .collect()
}

/// The determinant of the square `a`, by cofactors.
fn det(a: &Mat) -> f64 {
    let n = a.len();
    if n == 1 {
        return a[0][0];
    }
    (0..n)
        .map(|skip| {
            let minor: Mat = a[1..]
                .iter()
                .map(|col| {
                    std::array::from_fn(|r| {
                        if r + 1 < n {
                            col[if r < skip { r } else { r + 1 }]
                        } else {
                            0.0
                        }
                    })
                })
                .collect();
            let sign = if skip % 2 == 0 { 1.0 } else { -1.0 };
            sign * a[0][skip] * det(&minor)
        })
        .sum()
}

/// A vector as a one-column matrix.
fn column(v: &[f64]) -> Mat {
    vec![std::array::from_fn(|r| v.get(r).copied().unwrap_or(0.0))]
}

/// The reference for one frame of [`MATRICES`]: `out`'s 22 values and `outm`'s matrix.
fn matrices_reference(frame: &[f32], quad: &[f32]) -> (Vec<f64>, Mat) {
    let m = mat(frame, 3, 3, 4);
    let (v, s) = (&frame[12..15], f64::from(frame[15]));
    let a: Mat = m[..2].to_vec();
    let b = vec![
        [m[0][0], m[0][1], 0.0, 0.0],
        [m[1][1], m[1][2], 0.0, 0.0],
        [s, m[2][2], 0.0, 0.0],
    ];
    let (ab, ba) = (mul(&a, &b, 3), mul(&b, &a, 2));
    let t = transpose(&m, 3);
    let sum: Mat = (0..3)
        .map(|c| std::array::from_fn(|r| m[c][r] + t[c][r] - s * m[c][r] * 0.5))
        .collect();
    let v64: Vec<f64> = v.iter().map(|&x| f64::from(x)).collect();
    let mv = mul(&m, &column(&v64), 3);
    let vm = mul(&t, &column(&v64), 3);
    let q = mat(quad, 4, 4, 4);
    let qv = mul(&transpose(&q, 4), &vec![q[1]], 4);
    let mut out = vec![
        det(&m),
        det(&vec![
            [ba[0][0], ba[0][1], 0.0, 0.0],
            [ba[1][0], ba[1][1], 0.0, 0.0],
        ][..2]
            .to_vec()),
        det(&q),
    ];
    out[1] = ba[0][0] * ba[1][1] - ba[1][0] * ba[0][1];
    out.extend((0..3).map(|c| mv[0][c]));
    out.extend((0..3).map(|c| vm[0][c]));
    out.extend((0..3).map(|c| ab[c][c] + ab[2 - c][0]));
    out.extend((0..3).map(|c| sum[c][0] + sum[c][1] * 2.0 + sum[2 - c][2]));
    out.push(ba[0][1] - ba[1][0]);
    out.extend((0..4).map(|r| qv[0][r]));
    out.push(s + 3.0);
    out.push(2.0 * s + 4.0);
    let mut outm = ab;
    outm[1][2] = -outm[1][2];
    (out, outm)
}

fn matrices_multiply_transpose_and_keep_their_column_layout(d: &Device) {
    for n in [1usize, 8, 13] {
        let frames = random(11 + n as u64, n * 16, -2.0, 2.0);
        let quads = random(12 + n as u64, n * 16, -2.0, 2.0);
        let (bf, bq) = (
            Buffer::from_slice(d, &frames).unwrap(),
            Buffer::from_slice(d, &quads).unwrap(),
        );
        let (out, outm) = (poisoned::<f32>(d, n * 24), poisoned::<f32>(d, n * 12));
        let bindings = [
            Binding::from(&bf),
            Binding::from(&bq),
            Binding::from(&out),
            Binding::from(&outm),
        ];
        let got = run(d, MATRICES, &bindings, [(n as u32).div_ceil(8), 1, 1], &out);
        let got_m = outm.read_blocking().unwrap();
        for i in 0..n {
            let (want, want_m) = matrices_reference(&frames[i * 16..], &quads[i * 16..]);
            let what = format!("matrices n={n} item {i} on {}", name(d));
            close(&got[i * 24..i * 24 + 22], &want, 1e-4, &what);
            // The padding word after each vec3 column is not compared.
            let columns: Vec<f32> = (0..3)
                .flat_map(|c| got_m[i * 12 + c * 4..i * 12 + c * 4 + 3].to_vec())
                .collect();
            let want_columns: Vec<f64> = want_m.iter().flat_map(|c| c[..3].to_vec()).collect();
            close(
                &columns,
                &want_columns,
                1e-4,
                &format!("{what}: the stored mat3x3"),
            );
            assert!(
                got[i * 24 + 22..i * 24 + 24]
                    .iter()
                    .all(|x| x.to_bits() == 0x7fa5_a5a5),
                "{what}: wrote past its values"
            );
        }
    }
}
per_backend!(matrices_multiply_transpose_and_keep_their_column_layout);

/// `|got - want| <= tol (1 + |want|)` elementwise.
fn close(got: &[f32], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(
            (f64::from(g) - w).abs() <= tol * (1.0 + w.abs()),
            "{what}: element {i} is {g}, expected {w}"
        );
    }
}

const HALVES: &str = r#"
enable f16;
// f16: storage arrays of f16 and of f16 vectors, arithmetic, conversions and built-ins
@group(0) @binding(0) var<storage, read> x: array<f16>;
@group(0) @binding(1) var<storage, read> v4: array<vec4<f16>>;
@group(0) @binding(2) var<storage, read_write> y: array<f16>;
@group(0) @binding(3) var<storage, read_write> v2: array<vec2<f16>>;
@group(0) @binding(4) var<storage, read_write> f: array<f32>;

@compute @workgroup_size(16)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= arrayLength(&v4)) { return; }
    let h = x[i];
    let q = v4[i];
    y[i] = h * q.x + q.y / 2.0h - f16(i32(q.z * 4.0h));
    v2[i] = vec2<f16>(max(q.z, q.w), sqrt(abs(h)));
    v2[i].y = v2[i].y + 1.0h;
    f[i * 4u] = f32(h) * 3.0;
    f[i * 4u + 1u] = f32(dot(q, vec4<f16>(1.0h)));
    f[i * 4u + 2u] = f32(u32(abs(h) * 100.0h));
    f[i * 4u + 3u] = f32(f16(f32(i) * 0.1));
}
"#;

/// `v` rounded to f16.
fn h(v: f64) -> f64 {
    f64::from(half::f16::from_f64(v))
}

fn f16_storage_arithmetic_and_conversions_round_like_a_gpu(d: &Device) {
    if !d.info().features.f16 {
        // A device without f16 refuses the kernel, naming it.
        let e = Kernel::from_wgsl(d, HALVES, "main")
            .err()
            .unwrap_or_else(|| panic!("{} ran f16 without the feature", name(d)));
        assert!(
            e.to_string().contains("f16"),
            "{} refused f16 unclearly: {e}",
            name(d)
        );
        return;
    }
    for n in [16usize, 64, 250] {
        let xs: Vec<half::f16> = random(21 + n as u64, n, -4.0, 4.0)
            .into_iter()
            .map(half::f16::from_f32)
            .collect();
        let qs: Vec<half::f16> = random(22 + n as u64, n * 4, -4.0, 4.0)
            .into_iter()
            .map(half::f16::from_f32)
            .collect();
        let (bx, bq) = (
            Buffer::from_slice(d, &xs).unwrap(),
            Buffer::from_slice(d, &qs).unwrap(),
        );
        // `y` has a word more than it needs: it must stay poisoned.
        let (y, v2, f) = (
            poisoned::<u32>(d, n / 2 + 1),
            poisoned::<u32>(d, n),
            poisoned::<f32>(d, n * 4),
        );
        let bindings = [
            Binding::from(&bx),
            Binding::from(&bq),
            Binding::from(&y),
            Binding::from(&v2),
            Binding::from(&f),
        ];
        let got_f = run(d, HALVES, &bindings, [(n as u32).div_ceil(16), 1, 1], &f);
        let (got_y, got_v2) = (y.read_blocking().unwrap(), v2.read_blocking().unwrap());
        let what = format!("f16 n={n} on {}", name(d));
        assert_eq!(got_y[n / 2], 0x7fa5_a5a5, "{what}: wrote past the end of y");
        let half_of = |w: &[u32], k: usize| {
            f64::from(half::f16::from_bits((w[k / 2] >> (k % 2 * 16)) as u16))
        };
        let tol = 2.0f64.powi(-9);
        for i in 0..n {
            let (x, q) = (
                f64::from(xs[i]),
                [0, 1, 2, 3].map(|c| f64::from(qs[i * 4 + c])),
            );
            let want_y = h(h(h(x * q[0]) + h(q[1] / 2.0)) - (h(q[2] * 4.0).trunc()));
            let want_v2 = [q[2].max(q[3]), h(h(x.abs().sqrt()) + 1.0)];
            let dot = q.iter().sum::<f64>();
            let want_f = [
                x * 3.0,
                h(dot),
                h(x.abs() * 100.0).trunc(),
                h(i as f64 * 0.1),
            ];
            let at = format!("{what}, element {i}");
            assert!(
                (half_of(&got_y, i) - want_y).abs() <= tol * (1.0 + want_y.abs()) * 4.0,
                "{at}: y is {}, expected {want_y}",
                half_of(&got_y, i)
            );
            for (c, want) in want_v2.iter().enumerate().take(2) {
                let g = half_of(&got_v2, i * 2 + c);
                assert!(
                    (g - want).abs() <= tol * (1.0 + want.abs()),
                    "{at}: v2[{c}] is {g}, expected {want}"
                );
            }
            close(&got_f[i * 4..i * 4 + 2], &want_f[..2], 4.0 * tol, &at);
            assert!(
                (f64::from(got_f[i * 4 + 2]) - want_f[2]).abs() <= 1.0,
                "{at}: u32 of f16 is {}, expected {}",
                got_f[i * 4 + 2],
                want_f[2]
            );
            close(&got_f[i * 4 + 3..i * 4 + 4], &want_f[3..], tol, &at);
        }
    }
}
per_backend!(f16_storage_arithmetic_and_conversions_round_like_a_gpu);

const SPLITS: &str = r#"
// modf and frexp of scalars and vectors
@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> parts: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> exps: array<vec4<i32>>;
@group(0) @binding(3) var<storage, read_write> scalars: array<f32>;

@compute @workgroup_size(4)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= arrayLength(&x)) { return; }
    let v = x[i];
    let m = modf(v);
    parts[i * 3u] = m.fract;
    parts[i * 3u + 1u] = m.whole;
    let e = frexp(v);
    parts[i * 3u + 2u] = e.fract;
    exps[i] = e.exp;
    let s = modf(v.y);
    let t = frexp(v.z);
    let m3 = modf(v.xyz);
    let e2 = frexp(v.zw);
    scalars[i * 6u] = s.fract;
    scalars[i * 6u + 1u] = s.whole;
    scalars[i * 6u + 2u] = t.fract;
    scalars[i * 6u + 3u] = f32(t.exp);
    scalars[i * 6u + 4u] = m3.fract.z + m3.whole.x;
    scalars[i * 6u + 5u] = e2.fract.y * f32(e2.exp.y);
}
"#;

/// `frexp` in f64: a fraction in [0.5, 1) (signed) and an exponent; zero gives both 0.
fn frexp(x: f64) -> (f64, i32) {
    if x == 0.0 {
        return (0.0, 0);
    }
    let e = x.abs().log2().floor() as i32 + 1;
    let m = x / 2f64.powi(e);
    // log2 may land a step off at exact powers of two.
    if m.abs() >= 1.0 {
        (m / 2.0, e + 1)
    } else if m.abs() < 0.5 {
        (m * 2.0, e - 1)
    } else {
        (m, e)
    }
}

/// Whether `got` is `frexp(x)`; GPUs differ on a subnormal `x` (flushed to zero, or read as
/// if normal), so only the cpu (`exact`) is held to it there.
fn frexp_matches(x: f64, got: (f32, i32), exact: bool) -> bool {
    let (m, e) = frexp(x);
    let subnormal = x != 0.0 && x.abs() < f64::from(f32::MIN_POSITIVE);
    (subnormal && !exact) || ((f64::from(got.0) - m).abs() <= 1e-7 && got.1 == e)
}

#[test]
fn modf_and_frexp_split_scalars_and_vectors() {
    let n = 24;
    let mut xs = random(31, n * 4, -100.0, 100.0);
    let specials = [
        0.0, -0.0, -1.5, 2.0, -0.25, 1e30, -3e38, 1.5e-38, -2.5e-38, 1e-40, 7.0, -7.75, 0.5, -1.0,
        123456.78, 1e-3,
    ];
    xs[..specials.len()].copy_from_slice(&specials);
    for d in devices() {
        let bx = Buffer::from_slice(d, &xs).unwrap();
        let (parts, exps, scalars) = (
            poisoned::<f32>(d, n * 12),
            poisoned::<i32>(d, n * 4),
            poisoned::<f32>(d, n * 6),
        );
        let bindings = [
            Binding::from(&bx),
            Binding::from(&parts),
            Binding::from(&exps),
            Binding::from(&scalars),
        ];
        let got_s = run(
            d,
            SPLITS,
            &bindings,
            [(n as u32).div_ceil(4), 1, 1],
            &scalars,
        );
        let (got_p, got_e) = (
            parts.read_blocking().unwrap(),
            exps.read_blocking().unwrap(),
        );
        for i in 0..n {
            let v: Vec<f64> = xs[i * 4..i * 4 + 4].iter().map(|&x| f64::from(x)).collect();
            let at = format!("modf/frexp of {:?} on {}", &xs[i * 4..i * 4 + 4], name(d));
            let fract: Vec<f64> = v.iter().map(|x| x - x.trunc()).collect();
            let whole: Vec<f64> = v.iter().map(|x| x.trunc()).collect();
            close(
                &got_p[i * 12..i * 12 + 4],
                &fract,
                1e-6,
                &format!("{at}: fract"),
            );
            close(
                &got_p[i * 12 + 4..i * 12 + 8],
                &whole,
                1e-7,
                &format!("{at}: whole"),
            );
            for c in 0..4 {
                let got = (got_p[i * 12 + 8 + c], got_e[i * 4 + c]);
                assert!(
                    frexp_matches(v[c], got, d.backend() == unicompute::BackendKind::Cpu),
                    "{at}: frexp of component {c} is {got:?}, expected {:?}",
                    frexp(v[c])
                );
            }
            let (t, e2) = (frexp(v[2]), frexp(v[3]));
            let want = [
                fract[1],
                whole[1],
                t.0,
                f64::from(t.1),
                fract[2] + whole[0],
                e2.0 * f64::from(e2.1),
            ];
            let subnormal = v[2..]
                .iter()
                .any(|x| x.abs() < f64::from(f32::MIN_POSITIVE) && *x != 0.0);
            let checked = if subnormal && d.backend() != unicompute::BackendKind::Cpu {
                2
            } else {
                6
            };
            close(
                &got_s[i * 6..i * 6 + checked],
                &want[..checked],
                1e-6,
                &format!("{at}: scalars"),
            );
        }
    }
}

#[test]
fn f16_matrices_are_refused_in_wgsl_words() {
    let source = "enable f16;\n@group(0) @binding(0) var<storage, read_write> y: array<f32>;\n\n@compute @workgroup_size(1)\nfn main() {\n    let m = mat2x2<f16>(1.0h, 2.0h, 3.0h, 4.0h);\n    y[0] = f32(m[1][0]);\n}\n";
    compiles_for_cuda_refused(source);
    for d in devices()
        .iter()
        .filter(|d| d.backend() == unicompute::BackendKind::Cpu)
    {
        let e = Kernel::from_wgsl(d, source, "main").expect_err("the cpu refuses f16 matrices");
        let text = e.to_string();
        assert!(
            e.code() == "SHADER"
                && text.contains("mat2x2<f16>")
                && text.contains("at 6:")
                && !text.contains("Matrix"),
            "{e}"
        );
    }
}

/// The CUDA translation of `source` is refused, in WGSL's words (where the cuda backend is
/// built).
fn compiles_for_cuda_refused(source: &str) {
    let e = Kernel::cuda_from_wgsl(source, "main").expect_err("the CUDA translation refuses it");
    assert!(
        e.code() == "UNSUPPORTED"
            || (e.code() == "SHADER" && e.to_string().contains("mat2x2<f16>")),
        "{e}"
    );
}

/// `arrayLength` of an `array<f16>` counts halves (two to a word), as the guard of a
/// kernel over every element needs: 76 halves over two workgroups of 64.
const HALF_LENGTH: &str = r#"
enable f16;
@group(0) @binding(0) var<storage, read> x: array<f16>;
@group(0) @binding(1) var<storage, read_write> y: array<f16>;
@group(0) @binding(2) var<storage, read_write> n: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3u) {
    if (g.x == 0u) { n[0] = arrayLength(&x); n[1] = arrayLength(&y); }
    if (g.x < arrayLength(&y)) { y[g.x] = x[g.x] * 2.0h + 1.0h; }
}
"#;

#[test]
fn f16_array_lengths_count_halves() {
    // 38 words: 76 halves, of which the kernel sees all (a buffer of halves is whole words).
    let halves: Vec<half::f16> = (0..76)
        .map(|i| half::f16::from_f32(i as f32 * 0.5 - 9.0))
        .collect();
    let words: Vec<u32> = bytemuck::cast_slice(&halves).to_vec();
    for d in devices().iter().filter(|d| d.info().features.f16) {
        let x = Buffer::from_slice(d, &words).unwrap();
        let y = poisoned::<u32>(d, words.len());
        let n = poisoned::<u32>(d, 2);
        let bindings = [Binding::from(&x), Binding::from(&y), Binding::from(&n)];
        let got = run(d, HALF_LENGTH, &bindings, [2, 1, 1], &y);
        assert_eq!(
            n.read_blocking().unwrap(),
            [76, 76],
            "arrayLength on {}",
            name(d)
        );
        let got: &[half::f16] = bytemuck::cast_slice(&got);
        let want: Vec<f32> = halves.iter().map(|h| h.to_f32() * 2.0 + 1.0).collect();
        let got: Vec<f32> = got.iter().map(|h| h.to_f32()).collect();
        assert_eq!(got, want, "on {}", name(d));
    }
}
