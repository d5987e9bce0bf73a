//! ONNX's `Einsum` on every device against an f64 reference that sums over every assignment
//! of the letters: the patterns exporters emit, implicit outputs, ellipses of different
//! widths, diagonals, three operands; and malformed equations refused at load.

use std::collections::BTreeMap;

use unicompute::onnx::{Session, SessionOptions};
use unicompute::Device;

use crate::common::{assert_close, name, per_backend, random, read, tensor};
use crate::onnx_recur::{attr, info, model, node, FLOAT};

/// A one-node model `y = Einsum(x0, .., x{n-1})` with `equation`.
fn einsum_model(equation: &str, n: usize) -> Vec<u8> {
    let inputs: Vec<String> = (0..n).map(|i| format!("x{i}")).collect();
    let names: Vec<&str> = inputs.iter().map(String::as_str).collect();
    let mut e = node("Einsum", "contract", &names, &["y"]);
    e.attribute.push(attr("equation", 3, |a| {
        a.s = Some(equation.as_bytes().to_vec().into())
    }));
    let g = unicompute::onnx::proto::GraphProto {
        node: vec![e],
        input: inputs.iter().map(|i| info(i, FLOAT)).collect(),
        output: vec![info("y", FLOAT)],
        ..Default::default()
    };
    model(g, 12)
}

/// `explicit` (letters only, `->` and an output) in f64: the output of each assignment of the
/// letters gains the product of the inputs there.
fn reference(explicit: &str, inputs: &[(Vec<f32>, Vec<usize>)]) -> (Vec<f64>, Vec<usize>) {
    let (lhs, out) = explicit.split_once("->").unwrap();
    let terms: Vec<Vec<char>> = lhs.split(',').map(|t| t.chars().collect()).collect();
    let mut size = BTreeMap::new();
    for (t, (_, shape)) in terms.iter().zip(inputs) {
        for (c, &n) in t.iter().zip(shape) {
            size.insert(*c, n);
        }
    }
    let letters: Vec<char> = size.keys().copied().collect();
    let out: Vec<char> = out.chars().collect();
    let out_shape: Vec<usize> = out.iter().map(|c| size[c]).collect();
    let mut y = vec![0.0; out_shape.iter().product()];
    let total: usize = letters.iter().map(|c| size[c]).product();
    // Row-major offset of the assignment `at` in a term's axes.
    let offset =
        |t: &[char], at: &BTreeMap<char, usize>| t.iter().fold(0, |o, c| o * size[c] + at[c]);
    for flat in 0..total {
        let mut at = BTreeMap::new();
        let mut rest = flat;
        for c in letters.iter().rev() {
            at.insert(*c, rest % size[c]);
            rest /= size[c];
        }
        let product: f64 = (terms.iter().zip(inputs))
            .map(|(t, (x, _))| f64::from(x[offset(t, &at)]))
            .product();
        y[offset(&out, &at)] += product;
    }
    (y, out_shape)
}

fn einsum_matches_the_reference(d: &Device) {
    // (equation, the same with letters for the ellipsis and an explicit output, shapes).
    let cases: &[(&str, &str, &[&[usize]])] = &[
        ("bij,bjk->bik", "bij,bjk->bik", &[&[3, 5, 7], &[3, 7, 2]]),
        (
            "bhqd,bhkd->bhqk",
            "bhqd,bhkd->bhqk",
            &[&[2, 3, 5, 4], &[2, 3, 7, 4]],
        ),
        ("ij->ji", "ij->ji", &[&[5, 3]]),
        ("i,i->", "i,i->", &[&[7], &[7]]),
        ("i,i", "i,i->", &[&[13], &[13]]),
        ("bn,anm->bm", "bn,anm->bm", &[&[3, 5], &[2, 5, 4]]),
        ("...ii->...i", "abii->abi", &[&[2, 3, 4, 4]]),
        ("ii", "ii->", &[&[5, 5]]),
        ("ij, jk", "ij,jk->ik", &[&[3, 4], &[4, 5]]),
        ("ij,jk,kl->il", "ij,jk,kl->il", &[&[2, 3], &[3, 4], &[4, 5]]),
        (
            "...ij,...jk->...ik",
            "abij,bjk->abik",
            &[&[2, 3, 3, 4], &[3, 4, 2]],
        ),
        ("ij->", "ij->", &[&[1, 1]]),
        ("bij,bkj->bi", "bij,bkj->bi", &[&[2, 3, 5], &[2, 4, 5]]),
    ];
    for (c, &(eq, explicit, shapes)) in cases.iter().enumerate() {
        let inputs: Vec<(Vec<f32>, Vec<usize>)> = (shapes.iter().enumerate())
            .map(|(i, s)| {
                let n = s.iter().product();
                (
                    random(300 + 10 * c as u64 + i as u64, n, -1.0, 1.0),
                    s.to_vec(),
                )
            })
            .collect();
        let (want, shape) = reference(explicit, &inputs);
        let s = Session::from_bytes(d, einsum_model(eq, shapes.len()), SessionOptions::default())
            .unwrap();
        let xs: Vec<_> = inputs.iter().map(|(x, s)| tensor(d, x, s)).collect();
        let names: Vec<String> = (0..xs.len()).map(|i| format!("x{i}")).collect();
        let feeds: Vec<(&str, &unicompute::Tensor)> =
            names.iter().map(String::as_str).zip(&xs).collect();
        let y = &s.run(&feeds).unwrap()[0].1;
        let what = format!("einsum '{eq}' {shapes:?} on {}", name(d));
        assert_eq!(y.shape(), shape.as_slice(), "{what}");
        assert_close(&read(y), &want, 1e-5, 1e-5, &what);
    }
}
per_backend!(einsum_matches_the_reference);

fn malformed_equations_are_refused_at_load(d: &Device) {
    for (eq, n, why) in [
        ("ij,jk->ii", 2, "names 'i' twice"),
        ("ij,jk", 1, "2 input terms for 1 inputs"),
        ("ij->k", 1, "names 'k', which no input does"),
        ("i$j", 1, "holds '$'"),
    ] {
        let e = Session::from_bytes(d, einsum_model(eq, n), SessionOptions::default())
            .err()
            .unwrap_or_else(|| panic!("'{eq}' loaded"));
        let msg = e.to_string();
        assert!(
            msg.contains(why) && msg.contains("contract"),
            "'{eq}': {msg}"
        );
    }
}
per_backend!(malformed_equations_are_refused_at_load);
