//! Sizes from the user never wrap: every product, offset and geometry that would overflow is a
//! clean error, no view reaches past its buffer, and the device keeps working afterwards.

use crate::common::{devices, expect_err, name, per_backend, random, still_works, tensor, webgpu};
use unicompute::ops::Conv2dParams;
use unicompute::{BackendChoice, BackendKind, Binding, Buffer, DType, Device, Kernel, Tensor};

const HUGE: usize = 1 << 32;

fn shapes_whose_products_wrap_are_errors(d: &Device) {
    let empty: &[f32] = &[];
    expect_err(
        Tensor::from_slice(d, empty, &[HUGE, HUGE]),
        "SHAPE",
        &["[4294967296, 4294967296]", "spans more than"],
        d,
    );
    expect_err(
        Tensor::from_slice(d, empty, &[0, usize::MAX, 2]),
        "SHAPE",
        &["spans more than"],
        d,
    );
    expect_err(
        Tensor::zeros(d, &[HUGE, HUGE, HUGE], DType::F32),
        "SHAPE",
        &["spans more than"],
        d,
    );
    let t = tensor(d, &random(1, 6, -1.0, 1.0), &[2, 3]);
    expect_err(
        t.reshape(&[HUGE, HUGE, 0]),
        "SHAPE",
        &["spans more than"],
        d,
    );
    let one = tensor(d, &[2.0], &[1, 1]);
    expect_err(
        one.broadcast_to(&[HUGE, HUGE]),
        "SHAPE",
        &["spans more than"],
        d,
    );
    // Zero-sized views over huge extents would let partial products overflow in kernels.
    let nothing = Tensor::zeros(d, &[0], DType::F32).unwrap();
    expect_err(
        nothing.reshape(&[0, usize::MAX]),
        "SHAPE",
        &["spans more than"],
        d,
    );
    let a = Tensor::zeros(d, &[3, 0], DType::F32).unwrap();
    let b = Tensor::zeros(d, &[0, HUGE * 8], DType::F32).unwrap();
    let e = a.matmul(&b).unwrap_err();
    assert!(matches!(e.code(), "SHAPE" | "LIMIT"), "{e}");
    still_works(d);
}
per_backend!(shapes_whose_products_wrap_are_errors);

fn broadcast_views_of_a_valid_size_still_compute(d: &Device) {
    // 2^20 x 2^4 elements over one value: a legal view, summed exactly.
    let one = tensor(d, &[0.5], &[1, 1]);
    let wide = one.broadcast_to(&[1 << 12, 1 << 8]).unwrap();
    let s = wide.sum(None).unwrap().to_vec_blocking::<f32>().unwrap();
    assert_eq!(s, vec![(1 << 19) as f32], "on {}", name(d));
}
per_backend!(broadcast_views_of_a_valid_size_still_compute);

fn conv_geometry_that_overflows_is_an_error(d: &Device) {
    let x = tensor(d, &random(2, 16, -1.0, 1.0), &[1, 1, 4, 4]);
    let w = tensor(d, &random(3, 4, -1.0, 1.0), &[1, 1, 2, 2]);
    let pad = Conv2dParams {
        padding: [usize::MAX / 2, 0],
        ..Default::default()
    };
    expect_err(
        x.conv2d(&w, pad),
        "SHAPE",
        &["height", "padded input", "overflows"],
        d,
    );
    let dilated = Conv2dParams {
        dilation: [1 << 63, 1],
        ..Default::default()
    };
    expect_err(x.conv2d(&w, dilated), "SHAPE", &["height"], d);
    let both = Conv2dParams {
        padding: [1 << 62, 0],
        dilation: [1 << 62, 1],
        ..Default::default()
    };
    expect_err(
        x.conv2d(&w, both),
        "SHAPE",
        &["conv2d", "spans more than"],
        d,
    );
    // Huge but representable padding: the output shape is refused before any allocation.
    let wide = Conv2dParams {
        padding: [1 << 40, 1 << 40],
        ..Default::default()
    };
    let e = x.conv2d(&w, wide).unwrap_err();
    assert!(matches!(e.code(), "SHAPE" | "LIMIT"), "{e}");
    still_works(d);
}
per_backend!(conv_geometry_that_overflows_is_an_error);

#[test]
fn cpu_refuses_an_allocation_past_its_share_of_memory() {
    let d = &devices()[0];
    assert_eq!(d.backend(), BackendKind::Cpu);
    let Some(total) = d.info().memory_total else {
        return;
    };
    let max = d.info().limits.max_buffer_size;
    assert_eq!(
        max,
        total / 4 * 3,
        "the cpu's max_buffer_size is 3/4 of physical memory"
    );
    expect_err(
        Buffer::<f32>::zeros(d, (max / 4 + 1) as usize),
        "LIMIT",
        &["max_buffer_size", "physical memory"],
        d,
    );
    expect_err(
        Tensor::zeros(d, &[(max / 4 + 1) as usize], DType::F32),
        "LIMIT",
        &["max_buffer_size"],
        d,
    );
}

#[test]
fn device_mismatch_tells_two_openings_of_one_device_apart() {
    let open = || Device::open(BackendChoice::Backend(BackendKind::Cpu)).unwrap();
    let (d1, d2) = (open(), open());
    let (a, b) = (tensor(&d1, &[1.0], &[1]), tensor(&d2, &[1.0], &[1]));
    let msg = a.add(&b).unwrap_err().to_string();
    let ids: Vec<&str> = msg
        .match_indices("opened as #")
        .map(|(i, _)| &msg[i..])
        .collect();
    assert_eq!(ids.len(), 2, "{msg}");
    assert_ne!(
        ids[0].split(')').next(),
        ids[1].split(')').next(),
        "the two openings get different numbers: {msg}"
    );
    assert!(msg.contains("device 0"), "{msg}");
}

#[test]
fn shader_messages_name_the_construct_and_its_place() {
    let texture = "@group(0) @binding(0) var tex: texture_2d<f32>;\n@group(0) @binding(1) var<storage, read_write> out: array<f32>;\n@compute @workgroup_size(1)\nfn main() { out[0] = textureLoad(tex, vec2<i32>(0, 0), 0).x; }\n";
    let over = "@group(0) @binding(0) var<storage, read_write> out: array<f32>;\noverride SCALE: f32;\n@compute @workgroup_size(1)\nfn main() { out[0] = SCALE; }\n";
    for d in devices() {
        let e = Kernel::from_wgsl(d, texture, "main").unwrap_err();
        assert_eq!(e.code(), "SHADER", "{e}");
        let msg = e.to_string();
        assert!(
            msg.contains("texture or sampler") && msg.contains("1:") && msg.contains("`tex`"),
            "{msg}"
        );
        assert!(!msg.contains("Handle") && !msg.contains("webgpu"), "{msg}");
        let e = Kernel::from_wgsl(d, over, "main").unwrap_err();
        assert_eq!(e.code(), "SHADER", "{e}");
        let msg = e.to_string();
        assert!(
            msg.contains("override `SCALE` has no default") && msg.contains("2:"),
            "{msg}"
        );
    }
}

#[test]
fn broadcast_operands_sum_like_packed_ones_on_cpu() {
    let d = &devices()[0];
    // All ones over k = 2^24 + 3: the exact sum 16777219 rounds to 16777220 in f32, whichever
    // way the operand was made.
    let k = (1 << 24) + 3;
    let packed = Tensor::from_slice(d, &vec![1.0f32; k], &[1, k]).unwrap();
    let broadcast = tensor(d, &[1.0], &[1, 1]).broadcast_to(&[1, k]).unwrap();
    let col = Tensor::from_slice(d, &vec![1.0f32; k], &[k, 1]).unwrap();
    let want = packed
        .matmul(&col)
        .unwrap()
        .to_vec_blocking::<f32>()
        .unwrap();
    let got = broadcast
        .matmul(&col)
        .unwrap()
        .to_vec_blocking::<f32>()
        .unwrap();
    assert_eq!(got, want);
    assert_eq!(want, vec![16777220.0]);
}

#[test]
fn a_view_far_into_a_large_buffer_names_the_binding_limit() {
    let Some(d) = webgpu() else { return };
    let max = d.info().limits.max_storage_binding_size;
    let len = (max / 4 + 64).min(d.info().limits.max_buffer_size / 4) as usize;
    if (len as u64) * 4 <= max {
        return; // this adapter binds any buffer it can allocate
    }
    let big = Buffer::<f32>::zeros(d, len).unwrap();
    let tail = Tensor::from_buffer(&big.slice(len - 4..).unwrap(), &[4]).unwrap();
    expect_err(
        tail.relu(),
        "LIMIT",
        &["max_storage_binding_size", "4-element view"],
        d,
    );
    let k = Kernel::from_wgsl(d, "@group(0) @binding(0) var<storage, read_write> x: array<f32>;\n@compute @workgroup_size(1)\nfn main() { x[0] = 1.0; }\n", "main").unwrap();
    let _ = d
        .queue()
        .launch(&k, &[Binding::from(&big.slice(0..4).unwrap())], [1, 1, 1]);
    still_works(d);
}
