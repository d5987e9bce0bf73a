//! The command-line tool: `info` lists devices, `bench` prints rates next to ceilings.
#![cfg(not(target_arch = "wasm32"))]

use std::process::Command;

fn unicompute(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_unicompute"))
        .args(args)
        .output()
        .expect("the CLI starts");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn info_lists_the_cpu_and_every_adapter() {
    let (ok, stdout, stderr) = unicompute(&["info"]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("cpu"), "{stdout}");
    for d in unicompute::devices() {
        assert!(
            stdout.contains(&d.name),
            "`{}` missing from:\n{stdout}",
            d.name
        );
    }
}

#[test]
fn bench_reports_rates_and_ceilings_as_json() {
    let (ok, stdout, stderr) = unicompute(&[
        "bench",
        "--backend",
        "cpu",
        "--op",
        "add",
        "--size",
        "65536",
        "--reps",
        "3",
        "--json",
    ]);
    assert!(ok, "{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).expect("bench --json prints JSON");
    let text = doc.to_string();
    assert!(text.contains("add") && text.contains("GB/s"), "{text}");
}

#[test]
fn bad_arguments_fail_with_a_message() {
    let (ok, _, stderr) = unicompute(&["bench", "--backend", "tpu"]);
    assert!(!ok);
    assert!(stderr.contains("tpu"), "{stderr}");
}

#[test]
fn bench_opens_the_device_a_policy_prefers() {
    let path =
        std::env::temp_dir().join(format!("unicompute-cli-policy-{}.json", std::process::id()));
    std::fs::write(&path, r#"{"backends": ["cpu"]}"#).unwrap();
    let p = path.to_str().unwrap();
    let (ok, stdout, stderr) = unicompute(&[
        "bench", "--policy", p, "--op", "add", "--size", "4096", "--reps", "2", "--json",
    ]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("\"backend\": \"cpu\""), "{stdout}");
    std::fs::write(&path, r#"{"backends": ["cpu"], "colour": "red"}"#).unwrap();
    let (ok, _, stderr) = unicompute(&["bench", "--policy", p]);
    assert!(!ok && stderr.contains("unknown field `colour`"), "{stderr}");
    let _ = std::fs::remove_file(&path);
}

/// `bench --profile`: a valid Chrome trace with one complete event per timed launch, whose
/// device times add up to the bench's own measured total within 10 %.
#[test]
fn bench_profile_writes_a_chrome_trace_that_adds_up() {
    let mut backends = vec!["cpu"];
    if unicompute::devices()
        .iter()
        .any(|d| d.backend == unicompute::BackendKind::WebGpu)
    {
        backends.push("webgpu");
    }
    for backend in backends {
        let path = std::env::temp_dir().join(format!(
            "unicompute-trace-{backend}-{}.json",
            std::process::id()
        ));
        let p = path.to_str().unwrap();
        let args = [
            "bench",
            "--backend",
            backend,
            "--op",
            "add",
            "--op",
            "matmul",
            "--op",
            "sum_last",
            "--size",
            "1048576",
            "--matmul-size",
            "256",
            "--reps",
            "3",
            "--profile",
            p,
        ];
        let (ok, stdout, stderr) = unicompute(&args);
        assert!(ok, "{stderr}");
        assert!(stdout.contains("profiled device time"), "{stdout}");
        let trace: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
                .expect("the trace is JSON");
        let events: Vec<&serde_json::Value> = trace["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X")
            .collect();
        let other = &trace["otherData"];
        assert_eq!(
            events.len() as u64,
            other["launches"].as_u64().unwrap(),
            "one event per launch ({backend})"
        );
        assert_eq!(other["untimed_launches"], 0);
        for op in ["add", "matmul", "sum"] {
            assert!(
                events.iter().any(|e| e["name"] == op),
                "{op} in the trace ({backend})"
            );
        }
        let sum_s: f64 = events
            .iter()
            .map(|e| e["dur"].as_f64().unwrap())
            .sum::<f64>()
            / 1e6;
        let measured = other["bench_measured_s"].as_f64().unwrap();
        assert!(
            (sum_s - measured).abs() <= 0.1 * measured,
            "{backend}: launches add up to {sum_s} s, the bench measured {measured} s"
        );
        let _ = std::fs::remove_file(&path);
    }
}

/// `tune` writes the cache its policy names and reports every candidate; `info --policy`
/// says which device the policy opens and why.
#[test]
fn tune_and_info_follow_the_policy() {
    let dir = std::env::temp_dir();
    let (policy, cache) = (
        dir.join(format!(
            "unicompute-tune-policy-{}.json",
            std::process::id()
        )),
        dir.join(format!("unicompute-tune-cache-{}.json", std::process::id())),
    );
    std::fs::write(
        &policy,
        format!(
            r#"{{"backends": ["cpu"], "tune_cache": "{}"}}"#,
            cache.display()
        ),
    )
    .unwrap();
    let p = policy.to_str().unwrap();
    let (ok, stdout, stderr) = unicompute(&[
        "tune",
        "--policy",
        p,
        "--matmul-size",
        "128",
        "--size",
        "65536",
        "--json",
    ]);
    assert!(ok, "{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let results = doc["results"].as_array().unwrap();
    assert!(
        results.iter().any(|r| r["op"] == "matmul") && results.iter().any(|r| r["op"] == "reduce"),
        "{doc}"
    );
    assert!(
        results
            .iter()
            .all(|r| r["times_us"].as_object().is_some_and(|t| !t.is_empty())),
        "{doc}"
    );
    let written = std::fs::read_to_string(&cache).expect("tune writes the cache");
    assert!(
        written.contains("matmul f32 batch1 m128 n128 k128"),
        "{written}"
    );
    let (ok, stdout, stderr) = unicompute(&["info", "--policy", p]);
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("the policy picks device 0") && stdout.contains("backend: cpu"),
        "{stdout}"
    );
    let (ok, _, stderr) = unicompute(&["tune", "--policy", p, "--backend", "cpu"]);
    assert!(!ok && stderr.contains("not both"), "{stderr}");
    let _ = std::fs::remove_file(&policy);
    let _ = std::fs::remove_file(&cache);
}

#[test]
fn wgsl_to_cuda_prints_the_translation_or_says_why_not() {
    let (ok, stdout, stderr) = unicompute(&[
        "wgsl-to-cuda",
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/suite/wgsl/tiled_matmul.wgsl"
        ),
    ]);
    if ok {
        assert!(
            stdout.contains("extern \"C\" __global__")
                && stdout.contains("wgsl_entry")
                && stdout.contains("__shared__"),
            "{stdout}"
        );
    } else {
        // Without NVRTC (or the cuda backend) it says so; CI requires NVRTC.
        assert!(
            !std::env::var("UNICOMPUTE_REQUIRE_NVRTC").is_ok_and(|v| v == "1")
                && stderr.contains("unsupported"),
            "{stderr}"
        );
    }
    let (ok, _, stderr) = unicompute(&["wgsl-to-cuda", "no-such-kernel.wgsl"]);
    assert!(!ok && stderr.contains("no-such-kernel.wgsl"), "{stderr}");
    let bad = std::env::temp_dir().join(format!("unicompute-cli-bad-{}.wgsl", std::process::id()));
    std::fs::write(&bad, "enable f16;\n@compute @workgroup_size(1)\nfn main() {\n    let x: mat2x2<f16> = mat2x2<f16>();\n}\n").unwrap();
    let (ok, _, stderr) = unicompute(&["wgsl-to-cuda", bad.to_str().unwrap()]);
    let _ = std::fs::remove_file(&bad);
    assert!(
        !ok && stderr.contains("4:"),
        "a construct outside the subset at its line: {stderr}"
    );
}

/// ONNX's node test `name` (scripts/onnx-data.sh unpacks them; `UNICOMPUTE_ONNX_DIR` moves
/// them).
fn node_test(name: &str) -> std::path::PathBuf {
    let root = std::env::var_os("UNICOMPUTE_ONNX_DIR").map_or_else(
        || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.onnx"),
        std::path::PathBuf::from,
    );
    root.join("node").join(name)
}

/// A `.npy` file (version 1, little-endian f4, C order) of `c`'s elements.
fn write_npy(path: &std::path::Path, c: &unicompute::onnx::Constant) {
    let shape: Vec<String> = c.dims.iter().map(|d| format!("{d},")).collect();
    let mut header = format!(
        "{{'descr': '<f4', 'fortran_order': False, 'shape': ({}), }}",
        shape.join(" ")
    );
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((header.len() as u16).to_le_bytes());
    bytes.extend(header.as_bytes());
    bytes.extend(&c.bytes[..]);
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn run_gives_an_onnx_models_outputs_from_npy_inputs() {
    use unicompute::onnx::Constant;
    let test = node_test("test_conv_with_strides_padding");
    let data = |f: &str| {
        Constant::decode(std::fs::read(test.join("test_data_set_0").join(f)).unwrap()).unwrap()
    };
    let dir = std::env::temp_dir().join(format!("unicompute-run-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (x, w) = (dir.join("x.npy"), dir.join("w.npy"));
    write_npy(&x, &data("input_0.pb"));
    write_npy(&w, &data("input_1.pb"));
    let model = test.join("model.onnx");
    let x_arg = format!("x={}", x.display());
    let w_arg = format!("W={}", w.display());
    let args = [
        "run",
        model.to_str().unwrap(),
        "--backend",
        "cpu",
        "--input",
        &x_arg,
    ];
    let (ok, stdout, stderr) =
        unicompute(&[&args[..], &["--input", &w_arg, "--runs", "3"]].concat());
    assert!(ok, "{stderr}");
    let want = data("output_0.pb");
    let sum: f64 = want
        .bytes
        .chunks_exact(4)
        .map(|b| f64::from(f32::from_le_bytes(b.try_into().unwrap())))
        .sum();
    let line = stdout
        .lines()
        .find(|l| l.starts_with("output y: [1, 1, 4, 3] f32 sum "))
        .unwrap_or_else(|| panic!("{stdout}"));
    let got: f64 = line.split_whitespace().nth(8).unwrap().parse().unwrap();
    assert!(
        (got - sum).abs() <= 1e-4 * sum.abs(),
        "sum {got}, expected {sum}:\n{stdout}"
    );
    assert!(
        stdout.contains("median: ") && stdout.contains("of 3 runs"),
        "{stdout}"
    );
    let phases = stdout.lines().find(|l| l.starts_with("phases: parse "));
    let phases = phases.unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        phases.contains(", compile ") && phases.ends_with("the device compiles no kernels"),
        "{phases}"
    );
    // --save writes each output as a .npy file.
    let out = dir.join("out");
    let save = [
        &args[..],
        &["--input", &w_arg, "--save", out.to_str().unwrap()],
    ]
    .concat();
    let (ok, _, stderr) = unicompute(&save);
    assert!(ok, "{stderr}");
    check_saved(&std::fs::read(out.join("y.npy")).unwrap(), &want);
    // A model with an operator the runner lacks: listed with its count, and an error.
    let det = node_test("test_det_2d").join("model.onnx");
    let (ok, stdout, stderr) = unicompute(&["run", det.to_str().unwrap(), "--backend", "cpu"]);
    assert!(!ok, "{stdout}");
    assert!(stdout.contains("1 x Det"), "{stdout}");
    assert!(
        stderr.contains("node '' (Det) of domain ai.onnx"),
        "{stderr}"
    );
}

/// Asking for the CPU opens no GPU driver: Vulkan's loader and lavapipe's LLVM would add tens
/// of megabytes to a run's memory and its start (the dynamic linker lists what it loads).
#[cfg(target_os = "linux")]
#[test]
fn run_on_the_cpu_loads_no_gpu_driver() {
    let test = node_test("test_relu");
    let model = test.join("model.onnx");
    let out = Command::new(env!("CARGO_BIN_EXE_unicompute"))
        .args(["run", model.to_str().unwrap(), "--backend", "cpu"])
        .env("LD_DEBUG", "libs")
        .output()
        .expect("the CLI starts");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("libc.so"), "no LD_DEBUG report:\n{stderr}");
    for driver in ["libvulkan", "libcuda", "libLLVM", "libEGL"] {
        assert!(!stderr.contains(driver), "{driver} loaded:\n{stderr}");
    }
}

/// `file`, a `.npy` file `run --save` wrote: a version 1.0 header, then `want`'s f32 data.
fn check_saved(file: &[u8], want: &unicompute::onnx::Constant) {
    let header_len = usize::from(u16::from_le_bytes([file[8], file[9]]));
    let header = String::from_utf8_lossy(&file[10..10 + header_len]);
    assert!(file.starts_with(b"\x93NUMPY\x01\x00"), "{header}");
    assert!(header.contains("'descr': '<f4'") && header.contains("'shape': (1, 1, 4, 3, )"));
    assert_eq!((10 + header_len) % 64, 0, "{header}");
    let saved = &file[10 + header_len..];
    assert_eq!(saved.len(), want.bytes.len());
    for (g, w) in saved.chunks_exact(4).zip(want.bytes.chunks_exact(4)) {
        let (g, w) = (
            f32::from_le_bytes(g.try_into().unwrap()),
            f32::from_le_bytes(w.try_into().unwrap()),
        );
        assert!(
            (g - w).abs() <= 1e-5 + 1e-4 * w.abs(),
            "saved {g}, expected {w}"
        );
    }
}

#[test]
fn run_profile_times_each_node_and_writes_a_chrome_trace() {
    let model = node_test("../light/light_squeezenet.onnx");
    let trace = std::env::temp_dir().join(format!("unicompute-trace-{}.json", std::process::id()));
    let args = [
        "run",
        model.to_str().unwrap(),
        "--backend",
        "cpu",
        "--runs",
        "1",
    ];
    let (ok, stdout, stderr) =
        unicompute(&[&args[..], &["--profile", trace.to_str().unwrap()]].concat());
    assert!(ok, "{stderr}");
    let nodes: usize = stdout
        .lines()
        .find_map(|l| l.strip_prefix("profile: ")?.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no profile line:\n{stdout}"));
    // Every Conv of SqueezeNet is followed by a Relu: the graph passes fuse them.
    let conv = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("FusedConv "))
        .unwrap_or_else(|| panic!("{stdout}"));
    let conv_nodes: usize = conv.split_whitespace().nth(1).unwrap().parse().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    let events = json["traceEvents"].as_array().unwrap();
    assert_eq!(events.len(), nodes, "one event per node");
    let convs = events.iter().filter(|e| e["cat"] == "FusedConv").count();
    assert_eq!(convs, conv_nodes, "{stdout}");
    let mut end = 0.0;
    for e in events {
        let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
        assert!(
            e["ph"] == "X" && dur > 0.0 && ts >= end,
            "nodes run one after another: {e}"
        );
        end = ts + dur;
    }
    std::fs::remove_file(trace).ok();
    // --no-pass turns a graph pass off; the passes line says what the others did.
    let (ok, stdout, stderr) = unicompute(&[&args[..], &["--no-pass", "fuse"]].concat());
    assert!(ok, "{stderr}");
    let line = (stdout.lines())
        .find(|l| l.starts_with("passes: "))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(line.contains("(fold ") && !line.contains("fuse"), "{line}");
    let (ok, stdout, _) = unicompute(&[&args[..], &["--no-pass", "all"]].concat());
    assert!(ok && stdout.contains("passes: off\n"), "{stdout}");
}
