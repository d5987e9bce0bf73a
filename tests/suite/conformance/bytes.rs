//! The 1-byte dtypes (bool, u8, i8) on every backend: uploads and reads, strided copies at
//! odd byte offsets and lengths that leave part of a word, concat, gather and `where`, casts
//! between every pair of dtypes, comparisons, logical ops, and wrapping u8 / i8 arithmetic,
//! each against a host reference written here.

use half::{bf16, f16};
use unicompute::{BinaryOp, DType, Device, Tensor};

use crate::common::{name, per_backend};

/// A host value of any dtype: a float (f32, f16, bf16 as f32), or an integer / bool value.
#[derive(Clone, Copy, Debug, PartialEq)]
enum V {
    F(f32),
    I(i64),
}

/// `n` seeded values of `dtype` with many ties (small integers), and specials for floats.
fn values(seed: u64, n: usize, dtype: DType) -> Vec<V> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..n)
        .map(|_| match dtype {
            DType::Bool => V::I(rng.i64(0..2)),
            DType::U8 => V::I(rng.i64(0..256)),
            DType::I8 => V::I(rng.i64(-128..128)),
            DType::I32 => V::I(rng.i64(-300..300)),
            DType::U32 => V::I(rng.i64(0..600)),
            DType::I64 => V::I(rng.i64(-300..300)),
            _ => {
                let specials = [f32::NAN, f32::INFINITY, -f32::INFINITY, -0.0, 0.0, 300.7];
                match rng.u32(0..8) {
                    0 => V::F(specials[rng.usize(0..specials.len())]),
                    1 => V::F(rng.i32(-3..4) as f32),
                    _ => V::F(((rng.f32() - 0.5) * 600.0).round() / 4.0),
                }
            }
        })
        .collect()
}

/// The tensor holding `values` in `dtype`.
fn upload(d: &Device, values: &[V], shape: &[usize], dtype: DType) -> Tensor {
    let f = |v: &V| match *v {
        V::F(f) => f,
        V::I(i) => i as f32,
    };
    let i = |v: &V| match *v {
        V::F(f) => f as i64,
        V::I(i) => i,
    };
    let t = match dtype {
        DType::F32 => Tensor::from_slice(d, &values.iter().map(f).collect::<Vec<_>>(), shape),
        DType::F16 => {
            let h: Vec<f16> = values.iter().map(|v| f16::from_f32(f(v))).collect();
            Tensor::from_slice(d, &h, shape)
        }
        DType::BF16 => {
            let h: Vec<bf16> = values.iter().map(|v| bf16::from_f32(f(v))).collect();
            Tensor::from_slice(d, &h, shape)
        }
        DType::I32 => Tensor::from_slice(
            d,
            &values.iter().map(|v| i(v) as i32).collect::<Vec<_>>(),
            shape,
        ),
        DType::U32 => Tensor::from_slice(
            d,
            &values.iter().map(|v| i(v) as u32).collect::<Vec<_>>(),
            shape,
        ),
        DType::I64 => Tensor::from_slice(d, &values.iter().map(i).collect::<Vec<_>>(), shape),
        DType::U8 => Tensor::from_slice(
            d,
            &values.iter().map(|v| i(v) as u8).collect::<Vec<_>>(),
            shape,
        ),
        DType::I8 => Tensor::from_slice(
            d,
            &values.iter().map(|v| i(v) as i8).collect::<Vec<_>>(),
            shape,
        ),
        DType::Bool => Tensor::from_bools(
            d,
            &values.iter().map(|v| i(v) != 0).collect::<Vec<_>>(),
            shape,
        ),
    };
    t.unwrap()
}

/// The elements of `t` as host values.
fn download(t: &Tensor) -> Vec<V> {
    let ints = |v: Vec<i64>| v.into_iter().map(V::I).collect();
    match t.dtype() {
        DType::F32 => t
            .to_vec_blocking::<f32>()
            .unwrap()
            .into_iter()
            .map(V::F)
            .collect(),
        DType::F16 => {
            let v = t.to_vec_blocking::<f16>().unwrap();
            v.into_iter().map(|h| V::F(h.to_f32())).collect()
        }
        DType::BF16 => {
            let v = t.to_vec_blocking::<bf16>().unwrap();
            v.into_iter().map(|h| V::F(h.to_f32())).collect()
        }
        DType::I32 => ints(
            t.to_vec_blocking::<i32>()
                .unwrap()
                .into_iter()
                .map(i64::from)
                .collect(),
        ),
        DType::U32 => ints(
            t.to_vec_blocking::<u32>()
                .unwrap()
                .into_iter()
                .map(i64::from)
                .collect(),
        ),
        DType::I64 => ints(t.to_vec_blocking::<i64>().unwrap()),
        DType::U8 => ints(
            t.to_vec_blocking::<u8>()
                .unwrap()
                .into_iter()
                .map(i64::from)
                .collect(),
        ),
        DType::I8 => ints(
            t.to_vec_blocking::<i8>()
                .unwrap()
                .into_iter()
                .map(i64::from)
                .collect(),
        ),
        DType::Bool => ints(
            t.to_bools_blocking()
                .unwrap()
                .into_iter()
                .map(i64::from)
                .collect(),
        ),
    }
}

/// Equal values, NaN meeting NaN.
fn same(a: V, b: V) -> bool {
    match (a, b) {
        (V::F(x), V::F(y)) => x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()),
        _ => a == b,
    }
}

/// `v` (of dtype `from`) cast to `to` by ONNX Cast's rules as the library documents them:
/// floats truncate toward zero and saturate into integers (NaN 0), integers wrap into
/// narrower ones, anything non-zero (NaN too) is true, integers round to the nearest f32.
fn cast_ref(v: V, to: DType) -> V {
    match (v, to) {
        (V::F(f), DType::F32) => V::F(f),
        (V::F(f), DType::F16) => V::F(f16::from_f32(f).to_f32()),
        (V::F(f), DType::BF16) => V::F(bf16::from_f32(f).to_f32()),
        (V::F(f), DType::I32) => V::I((f as i32).into()),
        (V::F(f), DType::U32) => V::I((f as u32).into()),
        (V::F(f), DType::I64) => V::I(f as i64),
        (V::F(f), DType::U8) => V::I((f as u8).into()),
        (V::F(f), DType::I8) => V::I((f as i8).into()),
        (V::F(f), DType::Bool) => V::I((f != 0.0 || f.is_nan()).into()),
        (V::I(i), DType::F32 | DType::F16 | DType::BF16) => cast_ref(V::F(i as f32), to),
        (V::I(i), DType::I32) => V::I((i as i32).into()),
        (V::I(i), DType::U32) => V::I((i as u32).into()),
        (V::I(i), DType::I64) => V::I(i),
        (V::I(i), DType::U8) => V::I((i as u8).into()),
        (V::I(i), DType::I8) => V::I((i as i8).into()),
        (V::I(i), DType::Bool) => V::I((i != 0).into()),
    }
}

fn assert_values(got: &[V], want: &[V], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(same(g, w), "{what}: element {i} is {g:?}, expected {w:?}");
    }
}

/// Odd lengths (1, primes, one past a word, past a workgroup of words) read back whole and
/// from slices that start at every byte of a word.
fn byte_tensors_round_trip(d: &Device) {
    for dtype in [DType::Bool, DType::U8, DType::I8] {
        for (k, &n) in [1usize, 3, 5, 7, 13, 1021, 1029].iter().enumerate() {
            let v = values(k as u64, n, dtype);
            let t = upload(d, &v, &[n], dtype);
            assert_values(&download(&t), &v, &format!("{dtype} x {n} on {}", name(d)));
            for start in 1..4.min(n) {
                let s = t.slice(0, start..n).unwrap();
                let what = format!("{dtype} x {n} from {start} on {}", name(d));
                assert_values(&download(&s), &v[start..], &what);
                // Copied through the cast kernels: the copy starts at a word.
                let c = s.reshape(&[n - start]).unwrap().contiguous().unwrap();
                assert_values(&download(&c), &v[start..], &what);
                let f = s.cast(DType::F32).unwrap();
                let want: Vec<V> = v[start..]
                    .iter()
                    .map(|&x| cast_ref(x, DType::F32))
                    .collect();
                assert_values(&download(&f), &want, &format!("{what} as f32"));
            }
        }
    }
}
per_backend!(byte_tensors_round_trip);

/// Transposes, slices, broadcasts, concat and gather of 1-byte tensors (what ONNX's
/// Transpose, Slice, Expand, Concat and Gather record).
fn byte_views_move(d: &Device) {
    for (k, dtype) in [DType::Bool, DType::U8, DType::I8].into_iter().enumerate() {
        let (r, c) = (7, 13);
        let v = values(10 + k as u64, r * c, dtype);
        let t = upload(d, &v, &[r, c], dtype);
        let what = format!("{dtype} on {}", name(d));
        // Transpose.
        let tt = t.permute(&[1, 0]).unwrap().contiguous().unwrap();
        let want: Vec<V> = (0..r * c).map(|i| v[(i % r) * c + i / r]).collect();
        assert_values(&download(&tt), &want, &format!("{what}: transpose"));
        // A slice of columns starting at an odd byte.
        let s = t.slice(1, 3..10).unwrap().contiguous().unwrap();
        let want: Vec<V> = (0..r * 7).map(|i| v[(i / 7) * c + 3 + i % 7]).collect();
        assert_values(&download(&s), &want, &format!("{what}: slice"));
        // A row broadcast down 5 rows.
        let row = t.slice(0, 2..3).unwrap();
        let e = row.broadcast_to(&[5, c]).unwrap().contiguous().unwrap();
        let want: Vec<V> = (0..5 * c).map(|i| v[2 * c + i % c]).collect();
        assert_values(&download(&e), &want, &format!("{what}: broadcast"));
        // Concat along both axes (parts ending mid-word).
        let part = t.slice(1, 0..5).unwrap();
        let cat = Tensor::concat(&[&t, &part], 1).unwrap();
        let want: Vec<V> = (0..r * (c + 5))
            .map(|i| {
                let (y, x) = (i / (c + 5), i % (c + 5));
                v[y * c + if x < c { x } else { x - c }]
            })
            .collect();
        assert_values(&download(&cat), &want, &format!("{what}: concat axis 1"));
        let cat0 = Tensor::concat(&[&part, &part], 0).unwrap();
        let want: Vec<V> = (0..2 * r * 5).map(|i| v[(i / 5 % r) * c + i % 5]).collect();
        assert_values(&download(&cat0), &want, &format!("{what}: concat axis 0"));
        // Gather of columns.
        let idx = Tensor::from_slice(d, &[12i64, 0, 5, 5, -1], &[5]).unwrap();
        let g = t.gather(1, &idx).unwrap();
        let cols = [12, 0, 5, 5, 12];
        let want: Vec<V> = (0..r * 5).map(|i| v[(i / 5) * c + cols[i % 5]]).collect();
        assert_values(&download(&g), &want, &format!("{what}: gather"));
    }
}
per_backend!(byte_views_move);

/// Every pair of dtypes, on values with NaN, infinities, out-of-range floats and negative
/// integers, through a transposed view (strided reads at odd byte offsets).
fn casts_between_every_pair(d: &Device) {
    for (k, from) in DType::ALL.into_iter().enumerate() {
        let (r, c) = (5, 7);
        let v = values(100 + k as u64, r * c, from);
        let t = upload(d, &v, &[r, c], from);
        // Host values as the source dtype holds them.
        let held: Vec<V> = v.iter().map(|&x| cast_ref(x, from)).collect();
        let view = t.permute(&[1, 0]).unwrap();
        let viewed: Vec<V> = (0..r * c).map(|i| held[(i % r) * c + i / r]).collect();
        for to in DType::ALL {
            let got = download(&view.cast(to).unwrap());
            let want: Vec<V> = viewed.iter().map(|&x| cast_ref(x, to)).collect();
            assert_values(&got, &want, &format!("cast {from} -> {to} on {}", name(d)));
        }
    }
}
per_backend!(casts_between_every_pair);

fn compare_ref(op: BinaryOp, a: V, b: V) -> bool {
    let (x, y) = match (a, b) {
        (V::I(x), V::I(y)) => return int_compare(op, x, y),
        (V::F(x), V::F(y)) => (x, y),
        _ => unreachable!("operands of one dtype"),
    };
    match op {
        BinaryOp::Equal => x == y,
        BinaryOp::Less => x < y,
        BinaryOp::LessEqual => x <= y,
        BinaryOp::Greater => x > y,
        BinaryOp::GreaterEqual => x >= y,
        BinaryOp::And => x != 0.0 && y != 0.0,
        BinaryOp::Or => x != 0.0 || y != 0.0,
        BinaryOp::Xor => (x != 0.0) != (y != 0.0),
        _ => unreachable!("a logic op"),
    }
}

fn int_compare(op: BinaryOp, x: i64, y: i64) -> bool {
    match op {
        BinaryOp::Equal => x == y,
        BinaryOp::Less => x < y,
        BinaryOp::LessEqual => x <= y,
        BinaryOp::Greater => x > y,
        BinaryOp::GreaterEqual => x >= y,
        BinaryOp::And => x != 0 && y != 0,
        BinaryOp::Or => x != 0 || y != 0,
        BinaryOp::Xor => (x != 0) != (y != 0),
        _ => unreachable!("a logic op"),
    }
}

/// Every comparison and logical op on every dtype, broadcasting, gives bool.
fn comparisons_and_logic_on_every_dtype(d: &Device) {
    let cases: &[(&[usize], &[usize], &[usize])] = &[
        (&[1], &[13], &[13]),
        (&[257], &[257], &[257]),
        (&[5, 1, 7], &[1, 3, 1], &[5, 3, 7]),
        (&[2, 3, 5], &[5], &[2, 3, 5]),
    ];
    let ops = BinaryOp::ALL.into_iter().filter(|op| op.is_logic());
    for (k, op) in ops.enumerate() {
        for (j, dtype) in DType::ALL.into_iter().enumerate() {
            for (c, &(sa, sb, so)) in cases.iter().enumerate() {
                let seed = (k * 100 + j * 10 + c) as u64;
                let na: usize = sa.iter().product();
                let nb: usize = sb.iter().product();
                let (va, vb) = (values(seed, na, dtype), values(seed + 7, nb, dtype));
                let (ta, tb) = (upload(d, &va, sa, dtype), upload(d, &vb, sb, dtype));
                let out = ta.binary(op, &tb).unwrap();
                assert_eq!(out.dtype(), DType::Bool);
                let (ha, hb): (Vec<V>, Vec<V>) = (
                    va.iter().map(|&x| cast_ref(x, dtype)).collect(),
                    vb.iter().map(|&x| cast_ref(x, dtype)).collect(),
                );
                let ea = ta.broadcast_to(so).unwrap();
                let eb = tb.broadcast_to(so).unwrap();
                let at = |v: &[V], t: &Tensor, i: usize| {
                    let mut rem = i;
                    let mut off = 0;
                    for (n, s) in so.iter().zip(t.strides()).rev() {
                        off += rem % n * s;
                        rem /= n;
                    }
                    v[off]
                };
                let want: Vec<V> = (0..out.numel())
                    .map(|i| V::I(compare_ref(op, at(&ha, &ea, i), at(&hb, &eb, i)).into()))
                    .collect();
                let what = format!("{} of {dtype} {sa:?} {sb:?} on {}", op.name(), name(d));
                assert_values(&download(&out), &want, &what);
            }
        }
    }
}
per_backend!(comparisons_and_logic_on_every_dtype);

/// `logical_not`, `where` on a bool condition, and `isnan` / `isinf`.
fn not_where_and_specials(d: &Device) {
    let n = 1031;
    let cond = values(5, n, DType::Bool);
    let tc = upload(d, &cond, &[n], DType::Bool);
    let not = download(&tc.logical_not().unwrap());
    let want: Vec<V> = cond.iter().map(|v| V::I((*v == V::I(0)).into())).collect();
    assert_values(&not, &want, &format!("not on {}", name(d)));
    for dtype in [DType::U8, DType::I8, DType::Bool, DType::F32] {
        let (a, b) = (values(6, n, dtype), values(7, 1, dtype));
        let (ta, tb) = (upload(d, &a, &[n], dtype), upload(d, &b, &[1], dtype));
        let got = download(&tc.select(&ta, &tb).unwrap());
        let want: Vec<V> = (0..n)
            .map(|i| cast_ref(if cond[i] == V::I(1) { a[i] } else { b[0] }, dtype))
            .collect();
        assert_values(&got, &want, &format!("where of {dtype} on {}", name(d)));
    }
    let x = [
        0.0,
        f32::NAN,
        -f32::NAN,
        f32::INFINITY,
        -f32::INFINITY,
        1e38,
        -3.0,
    ];
    for dtype in [DType::F32, DType::F16] {
        let t = Tensor::from_slice(d, &x, &[7])
            .unwrap()
            .cast(dtype)
            .unwrap();
        let nan = t.isnan().unwrap().to_bools_blocking().unwrap();
        assert_eq!(
            nan,
            [false, true, true, false, false, false, false],
            "{dtype}"
        );
        let inf = t.isinf(true, true).unwrap().to_bools_blocking().unwrap();
        // 1e38 overflows f16 to inf.
        let big = dtype == DType::F16;
        assert_eq!(
            inf,
            [false, false, false, true, true, big, false],
            "{dtype}"
        );
        let pos = t.isinf(true, false).unwrap().to_bools_blocking().unwrap();
        assert_eq!(
            pos,
            [false, false, false, true, false, big, false],
            "{dtype}"
        );
    }
}
per_backend!(not_where_and_specials);

/// u8 and i8 arithmetic wraps as numpy's (division truncates, `x / 0 = x` as for the other
/// integers).
fn byte_arithmetic_wraps(d: &Device) {
    let n = 1029;
    for dtype in [DType::U8, DType::I8] {
        let (a, b) = (values(8, n, dtype), values(9, n, dtype));
        let (ta, tb) = (upload(d, &a, &[n], dtype), upload(d, &b, &[n], dtype));
        let ops = [
            BinaryOp::Add,
            BinaryOp::Sub,
            BinaryOp::Mul,
            BinaryOp::Div,
            BinaryOp::Min,
            BinaryOp::Max,
        ];
        for op in ops {
            let out = ta.binary(op, &tb).unwrap();
            assert_eq!(out.dtype(), dtype);
            let want: Vec<V> = a
                .iter()
                .zip(&b)
                .map(|(&x, &y)| {
                    let (V::I(x), V::I(y)) = (x, y) else {
                        unreachable!()
                    };
                    let r = match op {
                        BinaryOp::Add => x + y,
                        BinaryOp::Sub => x - y,
                        BinaryOp::Mul => x * y,
                        BinaryOp::Div if y == 0 => x,
                        BinaryOp::Div => x / y,
                        BinaryOp::Min => x.min(y),
                        _ => x.max(y),
                    };
                    cast_ref(V::I(r), dtype)
                })
                .collect();
            let what = format!("{} of {dtype} on {}", op.name(), name(d));
            assert_values(&download(&out), &want, &what);
        }
        let neg = download(&(-&ta).unwrap());
        let want: Vec<V> = a
            .iter()
            .map(|&x| {
                let V::I(x) = x else { unreachable!() };
                cast_ref(V::I(-x), dtype)
            })
            .collect();
        assert_values(&neg, &want, &format!("neg of {dtype} on {}", name(d)));
    }
}
per_backend!(byte_arithmetic_wraps);

/// Reductions, argmax and flip of 1-byte tensors along an axis of odd length.
fn byte_reductions_and_flip(d: &Device) {
    use unicompute::ReduceOp;
    let (r, c) = (6, 37);
    for (k, dtype) in [DType::Bool, DType::U8, DType::I8].into_iter().enumerate() {
        let v = values(40 + k as u64, r * c, dtype);
        let t = upload(d, &v, &[r, c], dtype);
        let ints: Vec<i64> = v
            .iter()
            .map(|&x| match cast_ref(x, dtype) {
                V::I(i) => i,
                V::F(_) => unreachable!("integer values"),
            })
            .collect();
        let rows: Vec<&[i64]> = ints.chunks(c).collect();
        let what = format!("{dtype} on {}", name(d));
        for op in [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min] {
            let out = t.reduce(op, Some(1)).unwrap();
            assert_eq!(out.dtype(), dtype, "{what}");
            let want: Vec<V> = rows
                .iter()
                .map(|row| {
                    let r = match op {
                        ReduceOp::Sum => row.iter().sum(),
                        ReduceOp::Max => *row.iter().max().unwrap(),
                        _ => *row.iter().min().unwrap(),
                    };
                    cast_ref(V::I(r), dtype)
                })
                .collect();
            assert_values(&download(&out), &want, &format!("{} of {what}", op.name()));
        }
        let arg = t.reduce(ReduceOp::Argmax, Some(1)).unwrap();
        let want: Vec<V> = rows
            .iter()
            .map(|row| {
                let m = *row.iter().max().unwrap();
                V::I(row.iter().position(|&x| x == m).unwrap() as i64)
            })
            .collect();
        assert_values(&download(&arg), &want, &format!("argmax of {what}"));
        let f = t.flip(1).unwrap();
        let want: Vec<V> = (0..r * c).map(|i| v[i / c * c + c - 1 - i % c]).collect();
        assert_values(&download(&f), &want, &format!("flip of {what}"));
    }
}
per_backend!(byte_reductions_and_flip);
