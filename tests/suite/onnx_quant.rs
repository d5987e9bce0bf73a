//! `MatMulNBits` (`com.microsoft`, block-quantised weights) on every device: one-node models
//! built here with seeded weights of odd sizes (K not a multiple of the block), 4 and 8 bits,
//! each kind of zero point, checked against a dequantise-and-multiply reference in f64.

use prost::Message;
use unicompute::onnx::proto::{self, GraphProto, ModelProto, NodeProto, TensorProto};
use unicompute::onnx::{Session, SessionOptions};
use unicompute::Device;

use crate::common::{assert_close, name, per_backend, random, read, tensor};
use crate::conformance::qmatmul::Zero;
use crate::onnx_recur::{floats, info, int_attr, node, stored, FLOAT};

const UINT8: i32 = 2;

/// One `MatMulNBits` case: A is `[rows, k]`, the weights `[n, k]`.
#[derive(Clone, Copy, Debug)]
struct Case {
    rows: usize,
    k: usize,
    n: usize,
    bits: usize,
    block: usize,
    zero: Zero,
    bias: bool,
}

/// The case's quantised inputs: B's bytes, the scales and the zero points.
struct Quantised {
    b: Vec<u8>,
    scales: Vec<f32>,
    zero_bytes: Vec<u8>,
    zero_floats: Vec<f32>,
}

impl Case {
    fn blocks(&self) -> usize {
        self.k.div_ceil(self.block)
    }

    fn blob(&self) -> usize {
        self.block * self.bits / 8
    }

    /// Zero-point bytes per row of B.
    fn zero_row(&self) -> usize {
        (self.blocks() * self.bits).div_ceil(8)
    }

    fn quantised(&self, seed: u64) -> Quantised {
        let bytes = |seed, n| {
            random(seed, n, 0.0, 256.0)
                .iter()
                .map(|&v| v as u8)
                .collect()
        };
        let per_block = self.n * self.blocks();
        Quantised {
            b: bytes(seed, self.n * self.blocks() * self.blob()),
            scales: random(seed + 1, per_block, 0.01, 0.1),
            zero_bytes: bytes(seed + 2, self.n * self.zero_row()),
            zero_floats: random(seed + 3, per_block, 0.0, 15.0),
        }
    }

    /// The `bits`-bit value `i` of `bytes` (low nibble first).
    fn value(&self, bytes: &[u8], i: usize) -> f64 {
        let per = 8 / self.bits;
        let byte = bytes[i / per];
        f64::from(if per == 1 {
            byte
        } else {
            (byte >> (4 * (i % 2))) & 15
        })
    }

    /// The dequantised weight `(n, k)`.
    fn weight(&self, q: &Quantised, n: usize, k: usize) -> f64 {
        let (block, within) = (k / self.block, k % self.block);
        let row = &q.b[(n * self.blocks() + block) * self.blob()..];
        let zero = match self.zero {
            Zero::Default => f64::from(1u32 << (self.bits - 1)),
            Zero::Packed => self.value(&q.zero_bytes[n * self.zero_row()..], block),
            Zero::Float => f64::from(q.zero_floats[n * self.blocks() + block]),
        };
        let scale = f64::from(q.scales[n * self.blocks() + block]);
        (self.value(row, within) - zero) * scale
    }

    /// `A · Wᵀ (+ bias)` in f64.
    fn reference(&self, a: &[f32], q: &Quantised, bias: &[f32]) -> Vec<f64> {
        let mut y = Vec::with_capacity(self.rows * self.n);
        for row in a.chunks(self.k) {
            for n in 0..self.n {
                let dot: f64 = (row.iter().enumerate())
                    .map(|(k, &x)| f64::from(x) * self.weight(q, n, k))
                    .sum();
                y.push(dot + bias.get(n).map_or(0.0, |&b| f64::from(b)));
            }
        }
        y
    }

    /// The one-node model and its initializers.
    fn model(&self, q: &Quantised, bias: &[f32]) -> Vec<u8> {
        let mut inputs = vec!["A", "B", "scales", ""];
        let mut inits = vec![
            stored(
                "B",
                UINT8,
                &[self.n, self.blocks(), self.blob()],
                q.b.clone(),
            ),
            floats("scales", &[self.n * self.blocks()], &q.scales),
        ];
        match self.zero {
            Zero::Default => {}
            Zero::Packed => {
                let dims = [self.n * self.zero_row()];
                inits.push(stored("zp", UINT8, &dims, q.zero_bytes.clone()));
            }
            Zero::Float => inits.push(floats("zp", &[q.zero_floats.len()], &q.zero_floats)),
        }
        if !matches!(self.zero, Zero::Default) {
            inputs[3] = "zp";
        }
        if self.bias {
            inputs.extend(["", "bias"]);
            inits.push(floats("bias", &[self.n], bias));
        }
        let mut n = node("MatMulNBits", "q", &inputs, &["Y"]);
        n.attribute.extend([
            int_attr("K", self.k as i64),
            int_attr("N", self.n as i64),
            int_attr("bits", self.bits as i64),
            int_attr("block_size", self.block as i64),
        ]);
        contrib_model(n, inits)
    }
}

/// A model of the `com.microsoft` node `n` with float input `A` and output `Y`.
fn contrib_model(mut n: NodeProto, inits: Vec<TensorProto>) -> Vec<u8> {
    n.domain = Some("com.microsoft".into());
    let g = GraphProto {
        node: vec![n],
        initializer: inits,
        input: vec![info("A", FLOAT)],
        output: vec![info("Y", FLOAT)],
        ..Default::default()
    };
    let import = |domain: Option<&str>, v| proto::OperatorSetIdProto {
        domain: domain.map(Into::into),
        version: Some(v),
    };
    ModelProto {
        ir_version: Some(8),
        opset_import: vec![import(None, 17), import(Some("com.microsoft"), 1)],
        graph: Some(g),
        ..Default::default()
    }
    .encode_to_vec()
}

const CASES: [Case; 4] = [
    Case {
        rows: 10,
        k: 37,
        n: 11,
        bits: 4,
        block: 16,
        zero: Zero::Default,
        bias: false,
    },
    Case {
        rows: 3,
        k: 64,
        n: 7,
        bits: 4,
        block: 32,
        zero: Zero::Packed,
        bias: true,
    },
    Case {
        rows: 1,
        k: 113,
        n: 5,
        bits: 4,
        block: 16,
        zero: Zero::Float,
        bias: false,
    },
    Case {
        rows: 6,
        k: 40,
        n: 13,
        bits: 8,
        block: 16,
        zero: Zero::Packed,
        bias: true,
    },
];

fn matmul_nbits(d: &Device) {
    for (i, case) in CASES.iter().enumerate() {
        let seed = 10 * i as u64;
        let q = case.quantised(seed);
        let a = random(seed + 4, case.rows * case.k, -1.0, 1.0);
        let bias = random(seed + 5, case.n, -0.5, 0.5);
        let session = Session::from_bytes(d, case.model(&q, &bias), SessionOptions::default())
            .unwrap_or_else(|e| panic!("{}: {case:?}: {e}", name(d)));
        let x = tensor(d, &a, &[case.rows, case.k]);
        let out = session
            .run(&[("A", &x)])
            .unwrap_or_else(|e| panic!("{case:?}: {e}"));
        let used_bias = if case.bias { &bias[..] } else { &[] };
        let want = case.reference(&a, &q, used_bias);
        let what = format!("{} {case:?}", name(d));
        assert_close(&read(&out[0].1), &want, 1e-4, 1e-5, &what);
    }
}
per_backend!(matmul_nbits);

/// Widths other than 4 and 8 bits, and act-order `g_idx`, are refused at load.
#[test]
fn matmul_nbits_refusals_name_the_reason() {
    let d = &crate::common::devices()[0];
    let case = CASES[0];
    let q = case.quantised(1);
    let refused = |mut n: NodeProto, why: &str| {
        n.domain = Some("com.microsoft".into());
        let bytes = {
            let inits = vec![stored("B", UINT8, &[case.n, 3, 8], q.b.clone())];
            contrib_model(n, inits)
        };
        let e = Session::from_bytes(d, bytes, SessionOptions::default())
            .err()
            .unwrap_or_else(|| panic!("{why}: expected a refusal"));
        assert!(e.to_string().contains(why), "{e}");
    };
    let mut three = node("MatMulNBits", "q", &["A", "B", "B"], &["Y"]);
    three.attribute.push(int_attr("bits", 3));
    refused(three, "bits = 3");
    let g_idx = node("MatMulNBits", "q", &["A", "B", "B", "", "B"], &["Y"]);
    refused(g_idx, "g_idx");
}

/// Weights of the wrong shape are an error that gives the shape expected, and the session
/// stays usable.
fn matmul_nbits_checks_the_weights(d: &Device) {
    let case = CASES[0];
    let q = case.quantised(2);
    // Case 0's weights, [11, 3, 8], declared with K = 50: four blocks of 16 per row.
    let mut n = node("MatMulNBits", "q", &["A", "B", "scales"], &["Y"]);
    n.attribute.extend([
        int_attr("K", 50),
        int_attr("N", 11),
        int_attr("block_size", 16),
    ]);
    let inits = vec![
        stored("B", UINT8, &[11, 3, 8], q.b),
        floats("scales", &[44], &random(3, 44, 0.01, 0.1)),
    ];
    let session = Session::from_bytes(d, contrib_model(n, inits), SessionOptions::default())
        .unwrap_or_else(|e| panic!("{}: {e}", name(d)));
    let x = tensor(d, &random(1, 2 * 50, -1.0, 1.0), &[2, 50]);
    let e = session.run(&[("A", &x)]).expect_err("a shape error");
    assert!(e.to_string().contains("expected u8 [11, 4, 8]"), "{e}");
    crate::common::still_works(d);
}
per_backend!(matmul_nbits_checks_the_weights);
