//! Behaviour of the core objects: devices, buffers, pool, queues, fences, user kernels.

use crate::common::{
    devices, name, open_devices, per_backend, random, still_works, webgpu, COUNT_LOOP,
};
use unicompute::{
    BackendChoice, BackendKind, Binding, BindingKind, Buffer, DType, Device, DeviceOptions, Kernel,
    Tensor,
};

#[test]
fn devices_list_the_cpu_first_and_every_adapter() {
    let list = unicompute::devices();
    assert_eq!(list[0].backend, BackendKind::Cpu);
    for (i, info) in list.iter().enumerate() {
        assert_eq!(info.index, i);
        assert!(
            info.limits.max_buffer_size > 0 && info.limits.max_storage_binding_size > 0,
            "{info:?}"
        );
    }
    if let Some(gpu) = webgpu() {
        // By backend too: CUDA lists the same GPU under the same name.
        let listed = list
            .iter()
            .find(|i| i.name == gpu.info().name && i.backend == BackendKind::WebGpu);
        let listed = listed.expect("the open adapter is listed");
        assert!(listed.limits.max_workgroup_size[0] >= 256);
    }
}

/// wgpu's GL backend returned wrong integer, cast and local-array results as `Ok` on Mesa's
/// llvmpipe: its adapters are listed only when `WGPU_BACKEND` names GL.
#[test]
fn gl_adapters_are_listed_only_when_asked_for() {
    if std::env::var_os("WGPU_BACKEND").is_some() {
        return; // the user's own choice of APIs
    }
    let gl: Vec<_> = unicompute::devices()
        .into_iter()
        .filter(|i| i.api == "Gl")
        .collect();
    assert!(
        gl.is_empty(),
        "GL adapters listed without WGPU_BACKEND: {gl:?}"
    );
}

/// Opened by its backend's name, which lists only the backends up to it, a device keeps the
/// index it has in the whole list.
#[test]
fn a_device_opened_by_kind_keeps_its_index() {
    let listed = unicompute::devices();
    for kind in [BackendKind::Cpu, BackendKind::Cuda, BackendKind::WebGpu] {
        let Ok(d) = Device::open(BackendChoice::Backend(kind)) else {
            assert!(
                listed.iter().all(|i| i.backend != kind),
                "{kind} listed, not opened"
            );
            continue;
        };
        let at = &listed[d.info().index];
        assert_eq!((at.backend, &at.name), (kind, &d.info().name), "{listed:?}");
    }
}

#[test]
fn open_by_index_kind_and_parsed_choice() {
    let cpu = Device::open(BackendChoice::Index(0)).unwrap();
    assert_eq!(cpu.backend(), BackendKind::Cpu);
    assert_eq!(
        "cpu".parse::<BackendChoice>().unwrap(),
        BackendChoice::Backend(BackendKind::Cpu)
    );
    assert_eq!(
        "2".parse::<BackendChoice>().unwrap(),
        BackendChoice::Index(2)
    );
    assert!("tpu".parse::<BackendChoice>().is_err());
    let err = Device::open(BackendChoice::Index(999)).unwrap_err();
    assert!(err.to_string().contains("999"), "{err}");
    match (
        Device::open(BackendChoice::Backend(BackendKind::Cuda)),
        crate::common::cuda(),
    ) {
        (Ok(d), Some(_)) => assert_eq!(d.backend(), BackendKind::Cuda),
        (Err(err), None) => assert!(err.to_string().contains("cuda"), "{err}"),
        (got, cuda) => panic!("opening cuda gave {got:?} where the devices hold {cuda:?}"),
    }
    // auto: a hardware GPU first (CUDA before WebGPU); with only software adapters, the
    // fastest on its probe (env override aside).
    if std::env::var(unicompute::BACKEND_ENV).is_err() {
        let auto = Device::open(BackendChoice::Auto).unwrap();
        let chosen = &auto.decisions()[0];
        assert_eq!(chosen.op, "backend");
        match webgpu() {
            _ if crate::common::cuda().is_some() => {
                assert_eq!(auto.backend(), BackendKind::Cuda, "{chosen:?}")
            }
            Some(gpu) if gpu.info().device_type != unicompute::DeviceType::SoftwareGpu => {
                assert_eq!(auto.backend(), BackendKind::WebGpu, "{chosen:?}")
            }
            Some(_) => {
                assert_eq!(
                    chosen.times_us.len(),
                    2,
                    "cpu and the software adapter are both timed: {chosen:?}"
                );
                let fastest = chosen
                    .times_us
                    .iter()
                    .min_by(|a, b| a.1.total_cmp(b.1))
                    .unwrap()
                    .0;
                assert!(
                    fastest.starts_with(auto.backend().name()),
                    "auto opened {} but {fastest} was faster: {chosen:?}",
                    auto.backend()
                );
                assert!(
                    chosen.reason.contains("no hardware GPU"),
                    "{}",
                    chosen.reason
                );
            }
            None => assert_eq!(auto.backend(), BackendKind::Cpu),
        }
    }
}

fn buffers_write_read_slice_and_copy(d: &Device) {
    let data: Vec<u32> = (0..1000).map(|i| i * 7 + 1).collect();
    let buf = Buffer::from_slice(d, &data).unwrap();
    assert_eq!(
        buf.read_blocking().unwrap(),
        data,
        "round trip on {}",
        name(d)
    );
    let view = buf.slice(100..164).unwrap();
    assert_eq!(view.len(), 64);
    assert_eq!(
        view.read_blocking().unwrap(),
        data[100..164],
        "slice view on {}",
        name(d)
    );
    let dst = Buffer::<u32>::zeros(d, 64).unwrap();
    view.copy_to(&dst).unwrap();
    assert_eq!(
        dst.read_blocking().unwrap(),
        data[100..164],
        "device copy on {}",
        name(d)
    );
    // write into a view changes only that range of the block
    view.slice(0..4).unwrap().write(&[9, 9, 9, 9]).unwrap();
    let all = buf.read_blocking().unwrap();
    assert_eq!(&all[100..104], &[9, 9, 9, 9]);
    assert_eq!(all[99], data[99]);
    assert_eq!(all[104], data[104]);
    // copy within one block, between disjoint views
    buf.slice(0..10)
        .unwrap()
        .copy_to(&buf.slice(500..510).unwrap())
        .unwrap();
    assert_eq!(
        buf.read_blocking().unwrap()[500..510],
        data[0..10],
        "in-block copy on {}",
        name(d)
    );
    let f = Buffer::from_slice(d, &[1.5f32, -2.0]).unwrap();
    assert_eq!(f.read_blocking().unwrap(), vec![1.5, -2.0]);
    assert_eq!(f.dtype(), DType::F32);
}
per_backend!(buffers_write_read_slice_and_copy);

#[test]
fn pool_reuses_memory_and_never_leaks_old_contents() {
    for d in &open_devices() {
        let before = d.memory_stats();
        {
            let b = Buffer::from_slice(d, &random(5, 4096, 1.0, 2.0)).unwrap();
            d.queue().finish().unwrap();
            assert!(d.memory_stats().bytes_live >= before.bytes_live + 4096 * 4);
            drop(b);
        }
        d.queue().finish().unwrap();
        let after_free = d.memory_stats();
        assert!(
            after_free.bytes_cached >= 4096 * 4,
            "freed block is cached on {}: {after_free:?}",
            name(d)
        );
        let z = Buffer::<f32>::zeros(d, 4096).unwrap();
        let stats = d.memory_stats();
        assert!(
            stats.pool_hits > after_free.pool_hits,
            "second allocation is a pool hit on {}: {stats:?}",
            name(d)
        );
        assert!(
            z.read_blocking().unwrap().iter().all(|&v| v == 0.0),
            "reused memory is zeroed on {}",
            name(d)
        );
        assert!(stats.peak_bytes_live >= stats.bytes_live);
    }
}

/// A pool at its cache limit keeps the block freed last and frees the oldest: a loop of ops
/// that outgrows what earlier work cached still reuses its own outputs (on the H200, every
/// 256 MiB output was allocated afresh while smaller blocks filled the 1 GiB cache).
#[test]
fn a_full_pool_keeps_the_newest_block_and_frees_the_oldest() {
    for kind in [BackendKind::Cpu, BackendKind::WebGpu, BackendKind::Cuda] {
        let options = DeviceOptions {
            pool_cache_limit: 64 << 10,
            ..DeviceOptions::default()
        };
        let Ok(d) = Device::open_with(BackendChoice::Backend(kind), options) else {
            continue;
        };
        // Four 16 KiB blocks fill the cache.
        let small: Vec<_> = (0..4)
            .map(|_| Buffer::<f32>::zeros(&d, 4096).unwrap())
            .collect();
        drop(small);
        d.queue().finish().unwrap();
        assert_eq!(d.memory_stats().bytes_cached, 64 << 10, "on {}", name(&d));
        // A 32 KiB block freed now evicts the two oldest small ones, and is reused.
        drop(Buffer::<f32>::zeros(&d, 8192).unwrap());
        d.queue().finish().unwrap();
        let before = d.memory_stats();
        assert_eq!(before.bytes_cached, 64 << 10, "on {}: {before:?}", name(&d));
        let big = Buffer::<f32>::zeros(&d, 8192).unwrap();
        let after = d.memory_stats();
        assert_eq!(
            after.allocations,
            before.allocations,
            "on {}: {after:?}",
            name(&d)
        );
        assert_eq!(after.pool_hits, before.pool_hits + 1, "on {}", name(&d));
        // Two small blocks are left; a third small one is allocated afresh.
        let _small: Vec<_> = (0..3)
            .map(|_| Buffer::<f32>::zeros(&d, 4096).unwrap())
            .collect();
        let last = d.memory_stats();
        assert_eq!(
            last.allocations,
            after.allocations + 1,
            "on {}: {last:?}",
            name(&d)
        );
        assert!(big.read_blocking().unwrap().iter().all(|&v| v == 0.0));
    }
}

/// A tensor dropped while a recorded launch still reads it goes back to the pool at once;
/// until the launch has run, only its queue's later work may have the block, so an upload of
/// NaNs through the default queue gets a new one and the launch reads the input intact.
#[test]
fn memory_freed_while_queued_goes_only_to_its_queue() {
    let n = 1usize << 16;
    for d in &open_devices() {
        let q = d.new_queue();
        let data = random(8, n, -1.0, 1.0);
        let x = Tensor::from_slice(d, &data, &[n]).unwrap();
        q.wait_for(&d.queue().submit().unwrap()).unwrap(); // the upload went through the default queue
        let y = unicompute::ops::elementwise::unary(&q, unicompute::UnaryOp::Exp, &x).unwrap();
        let before = d.memory_stats();
        drop(x);
        let freed = d.memory_stats();
        let bytes = (n * 4) as u64;
        assert_eq!(
            freed.bytes_live + bytes,
            before.bytes_live,
            "on {}",
            name(d)
        );
        assert_eq!(
            freed.bytes_cached,
            before.bytes_cached + bytes,
            "on {}",
            name(d)
        );
        let nans = Tensor::from_slice(d, &vec![f32::NAN; n], &[n]).unwrap();
        // The CPU has run the launch already: there the block is free for anyone.
        let fresh = u64::from(d.backend() != BackendKind::Cpu);
        let allocated = d.memory_stats().allocations - freed.allocations;
        assert_eq!(
            allocated,
            fresh,
            "blocks allocated for the NaNs on {}",
            name(d)
        );
        q.finish().unwrap();
        let want: Vec<f64> = data.iter().map(|&v| f64::from(v).exp()).collect();
        let what = format!("exp on {}", name(d));
        crate::common::assert_close(
            &y.to_vec_blocking::<f32>().unwrap(),
            &want,
            1e-6,
            0.0,
            &what,
        );
        assert!(nans
            .to_vec_blocking::<f32>()
            .unwrap()
            .iter()
            .all(|v| v.is_nan()));
    }
}

fn queues_and_fences_order_work(d: &Device) {
    let q1 = d.new_queue();
    let q2 = d.new_queue();
    let buf = Buffer::<f32>::zeros(d, 513).unwrap();
    q1.write(&buf, &vec![3.0; 513]).unwrap();
    let fence = q1.submit().unwrap();
    q2.wait_for(&fence).unwrap();
    let t = Tensor::from_buffer(&buf, &[513]).unwrap();
    let doubled =
        unicompute::ops::elementwise::binary(&q2, unicompute::BinaryOp::Add, &t, &t).unwrap();
    let f2 = q2.submit().unwrap();
    f2.wait_blocking().unwrap();
    assert!(
        f2.is_signalled() && fence.is_signalled(),
        "fences signalled on {}",
        name(d)
    );
    assert_eq!(
        q2.read_blocking(&doubled.to_buffer::<f32>().unwrap())
            .unwrap(),
        vec![6.0; 513]
    );
    pollster::block_on(fence.wait()).unwrap();
}
per_backend!(queues_and_fences_order_work);

fn many_launches_batch_into_few_submissions(d: &Device) {
    let q = d.queue();
    let mut t = Tensor::from_slice(d, &[1.0f32; 1024], &[1024]).unwrap();
    let one = Tensor::from_slice(d, &[1.0f32], &[1]).unwrap();
    for _ in 0..300 {
        t = unicompute::ops::elementwise::binary(&q, unicompute::BinaryOp::Add, &t, &one).unwrap();
    }
    assert_eq!(
        t.to_vec_blocking::<f32>().unwrap(),
        vec![301.0; 1024],
        "chain of 300 adds on {}",
        name(d)
    );
}
per_backend!(many_launches_batch_into_few_submissions);

const SAXPY: &str = r#"
struct Params { a: f32, n: u32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(64)
fn saxpy(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x < p.n) {
        y[id.x] = p.a * x[id.x] + y[id.x];
    }
}
"#;

#[test]
fn user_wgsl_kernels_are_reflected_and_run() {
    let info = unicompute::kernel::validate_wgsl(SAXPY, "saxpy").unwrap();
    assert_eq!(info.workgroup_size, [64, 1, 1]);
    assert_eq!(info.bindings.len(), 3);
    assert_eq!(info.bindings[0].kind, BindingKind::StorageRead);
    assert_eq!(info.bindings[0].dtype, Some(DType::F32));
    assert_eq!(info.bindings[1].kind, BindingKind::StorageReadWrite);
    assert_eq!(info.bindings[2].kind, BindingKind::Uniform);
    assert_eq!(info.bindings[2].min_bytes, 8);
    let Some(d) = webgpu() else { return };
    let k = Kernel::from_wgsl(d, SAXPY, "saxpy").unwrap();
    let n = 1000;
    let x = random(11, n, -1.0, 1.0);
    let y0 = random(12, n, -1.0, 1.0);
    let (bx, by) = (
        Buffer::from_slice(d, &x).unwrap(),
        Buffer::from_slice(d, &y0).unwrap(),
    );
    let params = Buffer::from_slice(d, &[2.5f32.to_bits(), n as u32]).unwrap();
    let q = d.queue();
    q.launch(
        &k,
        &[
            Binding::from(&bx),
            Binding::from(&by),
            Binding::from(&params),
        ],
        [(n as u32).div_ceil(64), 1, 1],
    )
    .unwrap();
    let got = by.read_blocking().unwrap();
    for i in 0..n {
        let want = 2.5 * f64::from(x[i]) + f64::from(y0[i]);
        assert!(
            (f64::from(got[i]) - want).abs() < 1e-5,
            "saxpy element {i}: {} vs {want}",
            got[i]
        );
    }
}

#[test]
fn loop_iteration_limit_is_reported_where_the_driver_has_one() {
    assert_eq!(
        devices()[0].info().limits.max_loop_iterations,
        None,
        "the cpu has no loop limit"
    );
    let Some(d) = webgpu() else { return };
    let info = d.info();
    let lavapipe = format!("{} {}", info.name, info.driver)
        .to_lowercase()
        .contains("llvmpipe");
    assert_eq!(
        info.limits.max_loop_iterations,
        lavapipe.then_some(65_535),
        "{info:?}"
    );
    // A user kernel's loop of 100,000 steps: where the driver ends it at the limit, the read
    // says so instead of returning the cut-short count (tests/suite/wgsl_loops.rs has more).
    let k = Kernel::from_wgsl(d, COUNT_LOOP, "count").unwrap();
    let (p, y) = (
        Buffer::from_slice(d, &[100_000u32]).unwrap(),
        Buffer::from_slice(d, &[0u32]).unwrap(),
    );
    d.queue()
        .launch(&k, &[Binding::from(&p), Binding::from(&y)], [1, 1, 1])
        .unwrap();
    match info.limits.max_loop_iterations {
        None => assert_eq!(
            y.read_blocking().unwrap(),
            [100_000],
            "a loop of 100,000 on {}",
            name(d)
        ),
        Some(n) => {
            let e = y.read_blocking().unwrap_err();
            assert!(
                e.code() == "INVALID" && e.to_string().contains(&format!("after {n}")),
                "{e}"
            );
        }
    }
}

#[test]
fn wgsl_the_cpu_does_not_run_is_refused_at_its_line_and_column() {
    let cpu = &devices()[0];
    // Matrices of f16 are outside the subset (those of f32 are in).
    let source = "enable f16;\n@group(0) @binding(0) var<storage, read_write> y: array<f32>;\n\n@compute @workgroup_size(1)\nfn main() {\n    let m = mat2x2<f16>(1.0h, 2.0h, 3.0h, 4.0h);\n    y[0] = f32(m[1][0]);\n}\n";
    let err = Kernel::from_wgsl(cpu, source, "main").unwrap_err();
    assert_eq!(err.code(), "SHADER", "{err}");
    assert!(
        err.to_string().contains("mat2x2<f16>") && err.to_string().contains("6:"),
        "{err}"
    );
    still_works(cpu);
}

#[test]
fn buffers_of_16_bit_elements_round_trip() {
    use unicompute::f16;
    for d in devices() {
        // An odd number of elements: the last word is half padding.
        let data: Vec<f16> = (0..7)
            .map(|i| f16::from_f32(i as f32 * 0.5 - 1.0))
            .collect();
        let buf = Buffer::from_slice(d, &data).unwrap();
        assert_eq!(buf.read_blocking().unwrap(), data, "on {}", d.info().name);
        // Reads of views that start inside a word work everywhere.
        assert_eq!(
            buf.slice(1..4).unwrap().read_blocking().unwrap(),
            data[1..4].to_vec()
        );
        // Writes: whole words always; a view that starts inside a word only off webgpu.
        buf.slice(2..6).unwrap().write(&data[..4]).unwrap();
        let odd = buf.slice(1..3).unwrap().write(&data[..2]);
        if d.backend() == BackendKind::WebGpu {
            let e = odd.unwrap_err();
            assert_eq!(e.code(), "INVALID", "{e}");
            assert!(e.to_string().contains("even element"), "{e}");
        } else {
            odd.unwrap();
        }
    }
}

#[test]
fn empty_reads_give_empty_arrays_and_leave_the_queue_working() {
    for d in open_devices() {
        let q = d.queue();
        let b = Buffer::<f32>::from_slice(&d, &[1.5, -2.0, 3.25]).unwrap();
        let empty = Buffer::<f32>::zeros(&d, 0).unwrap();
        assert!(
            q.read_blocking(&empty).unwrap().is_empty(),
            "empty buffer on {}",
            name(&d)
        );
        assert!(
            q.read_blocking(&b.slice(2..2).unwrap()).unwrap().is_empty(),
            "empty view on {}",
            name(&d)
        );
        assert_eq!(
            q.read_blocking(&b).unwrap(),
            vec![1.5, -2.0, 3.25],
            "a read after them on {}",
            name(&d)
        );
    }
}
