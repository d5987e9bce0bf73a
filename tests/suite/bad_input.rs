//! Bad input gives descriptive errors, never panics, and leaves the device working.

use crate::common::{devices, expect_err, name, per_backend, random, tensor, webgpu};
use unicompute::{
    BackendChoice, BackendKind, Binding, Buffer, Device, Error, Kernel, ReduceOp, Tensor,
};

fn shape_errors_name_the_shapes(d: &Device) {
    let a = tensor(d, &random(1, 6, -1.0, 1.0), &[2, 3]);
    let b = tensor(d, &random(2, 8, -1.0, 1.0), &[2, 4]);
    expect_err(a.add(&b), "SHAPE", &["[2, 3]", "[2, 4]"], d);
    expect_err(a.matmul(&a), "SHAPE", &["k = 3 vs 2"], d);
    expect_err(
        a.matmul(&tensor(d, &[1.0], &[])),
        "SHAPE",
        &["vectors or matrices"],
        d,
    );
    expect_err(
        a.matmul(&tensor(d, &[1.0; 2], &[2])),
        "SHAPE",
        &["k = 3 vs 2"],
        d,
    );
    expect_err(
        a.reshape(&[4, 2]),
        "SHAPE",
        &["6 elements", "8 elements"],
        d,
    );
    expect_err(a.broadcast_to(&[3, 3]), "SHAPE", &["[2, 3]", "[3, 3]"], d);
    expect_err(a.permute(&[0, 0]), "SHAPE", &["permutation"], d);
    expect_err(a.sum(Some(2)), "OUT_OF_RANGE", &["axis 2"], d);
    expect_err(a.slice(1, 2..5), "OUT_OF_RANGE", &["2..5", "extent 3"], d);
    expect_err(
        Tensor::from_slice(d, &[1.0f32; 5], &[2, 3]),
        "SHAPE",
        &["6 elements", "holds 5"],
        d,
    );
    let empty = Tensor::zeros(d, &[0, 4], unicompute::DType::F32).unwrap();
    expect_err(
        empty.reduce(ReduceOp::Max, Some(0)),
        "SHAPE",
        &["max of an empty axis"],
        d,
    );
    expect_err(
        empty.reduce(ReduceOp::Argmax, None),
        "SHAPE",
        &["argmax of an empty axis"],
        d,
    );
    let ints = Tensor::from_slice(d, &[1i32, 2], &[2]).unwrap();
    expect_err(ints.relu(), "DTYPE", &["expected f32", "got i32"], d);
    expect_err(tensor(d, &[1.0], &[]).softmax(), "SHAPE", &["rank-0"], d);
}
per_backend!(shape_errors_name_the_shapes);

fn buffer_errors_name_the_limit_or_range(d: &Device) {
    let max = d.info().limits.max_buffer_size;
    let too_many = (max / 4 + 1) as usize;
    expect_err(
        Buffer::<f32>::zeros(d, too_many),
        "LIMIT",
        &["max_buffer_size"],
        d,
    );
    let b = Buffer::from_slice(d, &[1u32, 2, 3]).unwrap();
    expect_err(b.slice(2..5), "OUT_OF_RANGE", &["2..5", "3 elements"], d);
    expect_err(b.write(&[1, 2]), "SHAPE", &["2 elements", "3"], d);
    let other = Buffer::from_slice(d, &[1u32, 2]).unwrap();
    expect_err(b.copy_to(&other), "SHAPE", &["3 elements", "2"], d);
    expect_err(
        b.slice(0..2).unwrap().copy_to(&b.slice(1..3).unwrap()),
        "INVALID",
        &["overlapping"],
        d,
    );
    assert_eq!(
        b.read_blocking().unwrap(),
        vec![1, 2, 3],
        "failed calls lose no data on {}",
        name(d)
    );
}
per_backend!(buffer_errors_name_the_limit_or_range);

#[test]
fn tensors_past_one_storage_binding_name_the_limit() {
    let Some(d) = webgpu() else { return };
    let limits = d.info().limits;
    if limits.max_storage_binding_size >= limits.max_buffer_size {
        return; // every buffer fits one binding on this adapter
    }
    let n = (limits.max_storage_binding_size / 4) as usize + 1;
    let big = Tensor::zeros(d, &[n], unicompute::DType::F32).unwrap();
    expect_err(big.relu(), "LIMIT", &["max_storage_binding_size"], d);
}

#[test]
fn mixing_devices_is_an_error() {
    let cpu = &devices()[0];
    let other = Device::open(BackendChoice::Backend(BackendKind::Cpu)).unwrap();
    let a = tensor(cpu, &[1.0, 2.0], &[2]);
    let b = tensor(&other, &[1.0, 2.0], &[2]);
    expect_err(a.add(&b), "DEVICE_MISMATCH", &["device"], cpu);
}

#[test]
fn invalid_wgsl_reports_line_and_column() {
    let src = "@group(0) @binding(0) var<storage, read_write> y: array<f32>;\n@compute @workgroup_size(64)\nfn main() {\n    y[0] = 1.0 +;\n}\n";
    let e = unicompute::kernel::validate_wgsl(src, "main").unwrap_err();
    match &e {
        Error::Shader {
            line,
            column,
            source_line,
            ..
        } => {
            assert_eq!(*line, 4, "{e}");
            assert!(*column > 1, "{e}");
            assert!(source_line.contains("1.0 +"), "{e}");
        }
        other => panic!("expected a shader error, got {other}"),
    }
    let type_err = "@group(0) @binding(0) var<storage, read_write> y: array<f32>;\n@compute @workgroup_size(64)\nfn main() {\n    let v: u32 = 1.5;\n    y[0] = f32(v);\n}\n";
    let e = unicompute::kernel::validate_wgsl(type_err, "main").unwrap_err();
    assert!(matches!(e, Error::Shader { line: 4, .. }), "{e}");
    let e = unicompute::kernel::validate_wgsl(src.replace("1.0 +", "1.0").as_str(), "missing")
        .unwrap_err();
    assert!(e.to_string().contains("`missing` not found"), "{e}");
    for d in devices() {
        expect_err(Kernel::from_wgsl(d, src, "main"), "SHADER", &["4:"], d);
    }
}

const COPY: &str = r#"
@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read_write> dst: array<f32, 64>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    dst[id.x] = src[id.x];
}
"#;

fn wrong_bindings_and_dispatch_are_caught_before_the_device(d: &Device) {
    wrong_bindings_and_dispatch_on(d);
}
per_backend!(wrong_bindings_and_dispatch_are_caught_before_the_device);

fn wrong_bindings_and_dispatch_on(d: &unicompute::Device) {
    let k = Kernel::from_wgsl(d, COPY, "main").unwrap();
    let q = d.queue();
    let src = Buffer::from_slice(d, &random(1, 64, -1.0, 1.0)).unwrap();
    let dst = Buffer::<f32>::zeros(d, 64).unwrap();
    let ints = Buffer::<u32>::zeros(d, 64).unwrap();
    let short = Buffer::<f32>::zeros(d, 10).unwrap();
    expect_err(
        q.launch(&k, &[Binding::from(&src)], [1, 1, 1]),
        "LAUNCH",
        &["expects 2 bindings", "got 1"],
        d,
    );
    expect_err(
        q.launch(&k, &[Binding::from(&src), Binding::from(&ints)], [1, 1, 1]),
        "LAUNCH",
        &["u32", "expected f32"],
        d,
    );
    expect_err(
        q.launch(&k, &[Binding::from(&src), Binding::from(&short)], [1, 1, 1]),
        "LAUNCH",
        &["40 bytes", "at least 256"],
        d,
    );
    expect_err(
        q.launch(&k, &[Binding::from(&dst), Binding::from(&dst)], [1, 1, 1]),
        "LAUNCH",
        &["same buffer"],
        d,
    );
    let too_many = d.info().limits.max_workgroups[0] + 1;
    expect_err(
        q.launch(
            &k,
            &[Binding::from(&src), Binding::from(&dst)],
            [too_many, 1, 1],
        ),
        "LIMIT",
        &["max_workgroups"],
        d,
    );
    let unaligned = src.slice(1..).unwrap();
    let dst2 = Buffer::<f32>::zeros(d, 64).unwrap();
    if d.info().limits.storage_offset_alignment > 4 {
        expect_err(
            q.launch(
                &k,
                &[Binding::from(&unaligned), Binding::from(&dst2)],
                [1, 1, 1],
            ),
            "LAUNCH",
            &["multiple of"],
            d,
        );
    } else {
        // Any element starts a binding on the CPU; the 64th read is clamped to the last element.
        q.launch(
            &k,
            &[Binding::from(&unaligned), Binding::from(&dst2)],
            [1, 1, 1],
        )
        .unwrap();
        assert_eq!(
            dst2.read_blocking().unwrap()[..63],
            src.read_blocking().unwrap()[1..],
            "an unaligned binding on {}",
            name(d)
        );
    }
    q.launch(&k, &[Binding::from(&src), Binding::from(&dst)], [1, 1, 1])
        .unwrap();
    assert_eq!(
        dst.read_blocking().unwrap(),
        src.read_blocking().unwrap(),
        "valid launch after the bad ones"
    );
    let big = "@group(0) @binding(0) var<storage, read_write> y: array<f32>;\n@compute @workgroup_size(1024, 2)\nfn main() { y[0] = 1.0; }\n";
    expect_err(
        Kernel::from_wgsl(d, big, "main"),
        "LIMIT",
        &["max_invocations_per_workgroup"],
        d,
    );
}

#[test]
fn norm_errors_say_what_was_expected() {
    use unicompute::ops::NormParams;
    for d in devices() {
        let x = tensor(d, &random(40, 12, -1.0, 1.0), &[3, 4]);
        let w5 = tensor(d, &[1.0; 5], &[5]);
        expect_err(
            x.layer_norm(NormParams {
                weight: Some(&w5),
                ..Default::default()
            }),
            "SHAPE",
            &["weight", "[5]", "expected [4]"],
            d,
        );
        expect_err(
            x.rms_norm(NormParams {
                bias: Some(&w5),
                ..Default::default()
            }),
            "SHAPE",
            &["bias", "[5]"],
            d,
        );
        expect_err(
            x.layer_norm(NormParams {
                eps: 0.0,
                ..Default::default()
            }),
            "INVALID",
            &["eps", "> 0"],
            d,
        );
        expect_err(
            x.layer_norm(NormParams {
                eps: f32::NAN,
                ..Default::default()
            }),
            "INVALID",
            &["eps"],
            d,
        );
        let scalar = x.sum(None).unwrap();
        expect_err(
            scalar.layer_norm(NormParams::default()),
            "SHAPE",
            &["rank-0"],
            d,
        );
        let ints = Tensor::from_slice(d, &[1i32, 2], &[2]).unwrap();
        expect_err(
            ints.rms_norm(NormParams::default()),
            "DTYPE",
            &["f32", "i32"],
            d,
        );
    }
}

fn linear_errors_say_what_was_expected(d: &Device) {
    let x = tensor(d, &random(41, 12, -1.0, 1.0), &[3, 4]);
    let w = tensor(d, &random(42, 8, -1.0, 1.0), &[4, 2]);
    let b3 = tensor(d, &[0.0; 3], &[3]);
    expect_err(
        x.linear(&w, Some(&b3), None),
        "SHAPE",
        &["bias", "[3]", "expected [2]"],
        d,
    );
    expect_err(
        x.linear(&w.reshape(&[1, 4, 2]).unwrap(), None, None),
        "SHAPE",
        &["weight", "[k, n]"],
        d,
    );
    expect_err(
        x.linear(&w.t().unwrap(), None, None),
        "SHAPE",
        &["k = 4 vs 2"],
        d,
    );
}
per_backend!(linear_errors_say_what_was_expected);

fn concat_errors_say_what_was_expected(d: &Device) {
    let a = tensor(d, &[1.0; 6], &[2, 3]);
    let b = tensor(d, &[1.0; 8], &[2, 4]);
    expect_err(
        Tensor::concat(&[&a, &b], 0),
        "SHAPE",
        &["[2, 4]", "[2, 3]", "except on axis 0"],
        d,
    );
    expect_err(Tensor::concat(&[&a, &b], 2), "OUT_OF_RANGE", &["axis 2"], d);
    expect_err(Tensor::concat(&[], 0), "INVALID", &["no tensors"], d);
    let ints = Tensor::from_slice(d, &[1i32; 6], &[2, 3]).unwrap();
    expect_err(
        Tensor::concat(&[&a, &ints], 0),
        "DTYPE",
        &["i32", "input 1"],
        d,
    );
    assert_eq!(Tensor::concat(&[&a, &b], 1).unwrap().shape(), &[2, 7]);
}
per_backend!(concat_errors_say_what_was_expected);

fn indexing_errors_say_what_was_expected(d: &Device) {
    let x = tensor(d, &random(43, 6, -1.0, 1.0), &[2, 3]);
    let fidx = tensor(d, &[0.0, 1.0], &[2]);
    let idx = Tensor::from_slice(d, &[0u32, 1], &[2]).unwrap();
    expect_err(x.gather(0, &fidx), "DTYPE", &["i32, u32 or i64", "f32"], d);
    expect_err(x.gather(2, &idx), "OUT_OF_RANGE", &["axis 2"], d);
    // An index outside [-2, 2): the read after the gather fails, naming its position.
    let far = Tensor::from_slice(d, &[1i32, -2, 2, 0], &[2, 2]).unwrap();
    expect_err(
        x.gather(0, &far).unwrap().to_vec_blocking::<f32>(),
        "INVALID",
        &["[1, 0]", "[-2, 2)", "axis 0"],
        d,
    );
    expect_err(x.cumsum(5), "OUT_OF_RANGE", &["axis 5"], d);
    let ints = Tensor::from_slice(d, &[1i32; 6], &[2, 3]).unwrap();
    expect_err(ints.softmax(), "DTYPE", &["f32", "i32"], d);
    assert_eq!(
        ints.cumsum(0).unwrap().to_vec_blocking::<i32>().unwrap(),
        [1, 1, 1, 2, 2, 2],
        "integer cumsum (once refused) on {}",
        name(d)
    );
    expect_err(idx.select(&x, &ints), "DTYPE", &["i32"], d);
    let cond = Tensor::from_slice(d, &[0u32, 1, 1], &[3]).unwrap();
    expect_err(
        cond.select(&x, &tensor(d, &[1.0; 4], &[4])),
        "SHAPE",
        &["[4]"],
        d,
    );
}
per_backend!(indexing_errors_say_what_was_expected);

#[test]
fn attention_errors_say_what_was_expected() {
    use unicompute::ops::AttentionParams;
    for d in devices() {
        let t = |shape: &[usize]| tensor(d, &vec![0.5; shape.iter().product()], shape);
        let (q, k, v) = (t(&[1, 2, 3, 4]), t(&[1, 2, 5, 4]), t(&[1, 2, 5, 6]));
        let p = AttentionParams::default();
        expect_err(t(&[2, 3, 4]).attention(&k, &v, p), "SHAPE", &["rank-4"], d);
        expect_err(
            q.attention(&t(&[1, 3, 5, 4]), &v, p),
            "SHAPE",
            &["batch and heads differ"],
            d,
        );
        expect_err(
            q.attention(&t(&[1, 2, 5, 7]), &v, p),
            "SHAPE",
            &["head dimension 4", "7"],
            d,
        );
        expect_err(
            q.attention(&k, &t(&[1, 2, 6, 6]), p),
            "SHAPE",
            &["5 keys", "6"],
            d,
        );
        let big = t(&[1, 1, 1, 300]);
        expect_err(
            big.attention(&big, &big, p),
            "LIMIT",
            &["head dimension", "256"],
            d,
        );
        let bad_mask = t(&[3, 4]);
        expect_err(
            q.attention(
                &k,
                &v,
                AttentionParams {
                    mask: Some(&bad_mask),
                    ..p
                },
            ),
            "SHAPE",
            &["mask", "[1, 2, 3, 5]"],
            d,
        );
        expect_err(
            q.attention(
                &k,
                &v,
                AttentionParams {
                    scale: Some(f32::NAN),
                    ..p
                },
            ),
            "INVALID",
            &["scale"],
            d,
        );
        assert_eq!(q.attention(&k, &v, p).unwrap().shape(), &[1, 2, 3, 6]);
    }
}

#[test]
fn conv_transpose_errors_name_the_geometry() {
    use unicompute::ops::ConvTranspose2dParams;
    for d in devices() {
        let t = |shape: &[usize]| tensor(d, &vec![0.5; shape.iter().product()], shape);
        let x = t(&[1, 4, 5, 5]);
        let p = ConvTranspose2dParams::default();
        expect_err(
            t(&[4, 5, 5]).conv_transpose2d(&t(&[4, 2, 3, 3]), p),
            "SHAPE",
            &["[n, c, h, w]", "[c, o / groups, kh, kw]"],
            d,
        );
        expect_err(
            x.conv_transpose2d(&t(&[3, 2, 3, 3]), p),
            "SHAPE",
            &["3 input channels", "expected 4"],
            d,
        );
        let three = ConvTranspose2dParams { groups: 3, ..p };
        expect_err(
            x.conv_transpose2d(&t(&[4, 2, 3, 3]), three),
            "INVALID",
            &["3 groups", "4 input channels"],
            d,
        );
        let crop = ConvTranspose2dParams {
            padding: [4, 0, 4, 0],
            ..p
        };
        expect_err(
            x.conv_transpose2d(&t(&[4, 2, 3, 3]), crop),
            "SHAPE",
            &["height", "padding 4 + 4", "full output of 7"],
            d,
        );
        let stride = ConvTranspose2dParams {
            stride: [1, 0],
            ..p
        };
        expect_err(
            x.conv_transpose2d(&t(&[4, 2, 3, 3]), stride),
            "SHAPE",
            &["width", "stride 0"],
            d,
        );
        let huge = ConvTranspose2dParams {
            stride: [usize::MAX / 2, 1],
            ..p
        };
        expect_err(
            x.conv_transpose2d(&t(&[4, 2, 3, 3]), huge),
            "SHAPE",
            &["height", "overflows"],
            d,
        );
        let bias = t(&[4]);
        let biased = ConvTranspose2dParams {
            bias: Some(&bias),
            groups: 2,
            ..p
        };
        expect_err(
            x.conv_transpose2d(&t(&[4, 3, 3, 3]), biased),
            "SHAPE",
            &["bias", "expected [6]"],
            d,
        );
        let ints = Tensor::from_slice(d, &[1i32; 100], &[1, 4, 5, 5]).unwrap();
        expect_err(
            ints.conv_transpose2d(&t(&[4, 2, 3, 3]), p),
            "DTYPE",
            &["f32", "i32"],
            d,
        );
    }
}

#[test]
fn conv_errors_name_the_geometry() {
    use unicompute::ops::{Conv2dParams, Pool2dParams, PoolKind};
    for d in devices() {
        let t = |shape: &[usize]| tensor(d, &vec![0.5; shape.iter().product()], shape);
        let x = t(&[1, 4, 5, 5]);
        let p = Conv2dParams::default();
        expect_err(
            t(&[4, 5, 5]).conv2d(&t(&[2, 4, 3, 3]), p),
            "SHAPE",
            &["[n, c, h, w]"],
            d,
        );
        expect_err(
            x.conv2d(&t(&[2, 3, 3, 3]), p),
            "SHAPE",
            &["3 input channels per group", "expected 4"],
            d,
        );
        expect_err(
            x.conv2d(&t(&[2, 4, 7, 3]), p),
            "SHAPE",
            &["height", "spans 7", "padded input is 5"],
            d,
        );
        expect_err(
            x.conv2d(&t(&[3, 2, 3, 3]), Conv2dParams { groups: 2, ..p }),
            "INVALID",
            &["2 groups", "3 output"],
            d,
        );
        expect_err(
            x.conv2d(
                &t(&[2, 4, 3, 3]),
                Conv2dParams {
                    stride: [0, 1],
                    ..p
                },
            ),
            "INVALID",
            &["stride 0"],
            d,
        );
        expect_err(
            x.conv2d(
                &t(&[2, 4, 3, 3]),
                Conv2dParams {
                    bias: Some(&t(&[3])),
                    ..p
                },
            ),
            "SHAPE",
            &["bias", "expected [2]"],
            d,
        );
        expect_err(
            x.pool2d(
                PoolKind::Max,
                Pool2dParams {
                    kernel: [2, 2],
                    stride: None,
                    padding: [2, 0],
                },
            ),
            "INVALID",
            &["padding 2", "half"],
            d,
        );
        expect_err(
            x.pool2d(
                PoolKind::Avg,
                Pool2dParams {
                    kernel: [6, 2],
                    stride: None,
                    padding: [0, 0],
                },
            ),
            "SHAPE",
            &["spans 6"],
            d,
        );
        let ints = Tensor::from_slice(d, &[1i32; 100], &[1, 4, 5, 5]).unwrap();
        expect_err(
            ints.conv2d(&t(&[2, 4, 3, 3]), p),
            "DTYPE",
            &["f32", "i32"],
            d,
        );
    }
}

fn unknown_matmul_variants_list_the_known_ones(d: &Device) {
    let a = tensor(d, &[1.0; 4], &[2, 2]);
    let known = unicompute::ops::matmul::variants(d);
    expect_err(
        unicompute::ops::matmul::matmul_variant(&d.queue(), &a, &a, "tile999"),
        "INVALID",
        &["tile999", known[0]],
        d,
    );
}
per_backend!(unknown_matmul_variants_list_the_known_ones);
