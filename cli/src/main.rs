//! `unicompute`: list devices (`info`) and measure op throughput against the device's
//! ceilings (`bench`).

/// The benchmark harness behind `unicompute bench` (also compiled by `benches/ops.rs`).
#[cfg(not(target_arch = "wasm32"))]
mod bench;

/// `unicompute run`: an ONNX model on one device.
#[cfg(not(target_arch = "wasm32"))]
mod run;

/// `.npy` files for `unicompute run`'s inputs and outputs.
#[cfg(not(target_arch = "wasm32"))]
mod npy;

/// `unicompute run --profile`: the per-operator summary and the Chrome trace.
#[cfg(not(target_arch = "wasm32"))]
mod trace;

/// The CLI is native only: a wasm build of the workspace compiles it to nothing.
#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    cli::main()
}

/// Everything of the CLI (native only).
#[cfg(not(target_arch = "wasm32"))]
mod cli {

    use std::collections::BTreeMap;
    use std::process::ExitCode;

    use crate::bench::{self, BenchConfig, Report};
    use clap::{Args, Parser, Subcommand};
    use serde::Serialize;
    use unicompute::text::{human_bytes, render_table};
    use unicompute::{
        BackendChoice, BackendKind, DType, Device, DeviceInfo, Features, Limits, Result,
    };

    /// One compute API for WebGPU, CUDA and the CPU.
    #[derive(Parser)]
    #[command(name = "unicompute", version, about)]
    struct Cli {
        #[command(subcommand)]
        command: Command,
    }

    #[derive(Subcommand)]
    enum Command {
        /// List the devices this build can open and the one `auto` (or a policy) picks, and why.
        Info {
            /// Print one JSON document instead of a table.
            #[arg(long)]
            json: bool,
            /// Say which device this policy file (JSON, see `unicompute::Policy`) opens, and why.
            #[arg(long, value_name = "FILE")]
            policy: Option<std::path::PathBuf>,
        },
        /// Measure the device's ceilings, then op throughput as a percentage of them.
        Bench(BenchArgs),
        /// Print the support matrix: the op families of the op tables and the dtypes each
        /// backend takes, as the Markdown README.md holds between its `support-matrix` markers.
        Ops,
        /// Autotune the kernel variants of the ops that have them (`TUNABLE_OPS`) on the
        /// bench's shapes for this device and write the winners to the tune cache.
        Tune(TuneArgs),
        /// Load an ONNX model and run it on `.npy` inputs or seeded random ones: the outputs'
        /// shapes and checksums, the load, first-run and median-run times, or every operator
        /// the runner lacks.
        Run(RunArgs),
        /// Print the CUDA C a WGSL compute kernel becomes on cuda devices, after NVRTC has
        /// compiled it for sm_80 and sm_90 (no GPU needed): a check that the kernel builds for
        /// CUDA. Constructs outside the subset are reported at their line:column.
        WgslToCuda {
            /// The WGSL source file.
            file: std::path::PathBuf,
            /// Its compute entry point.
            #[arg(long, default_value = "main")]
            entry: String,
        },
    }

    #[derive(Args)]
    struct RunArgs {
        /// The `.onnx` file.
        model: std::path::PathBuf,
        /// An input from a `.npy` file (little-endian f4, f8, i4 or i8), as NAME=FILE
        /// (repeatable); inputs not given are seeded random values of the declared shape.
        #[arg(long = "input", value_name = "NAME=FILE")]
        inputs: Vec<String>,
        /// The extent of a named (symbolic) dimension, fixed at load, as NAME=N (repeatable;
        /// others are 1 in the random inputs).
        #[arg(long = "dim", value_name = "NAME=N")]
        dims: Vec<String>,
        /// Turn a graph pass off at load (fold, transpose, batchnorm, gelu, layernorm, rmsnorm,
        /// attention, fuse, chain), or every pass with `all` (repeatable).
        #[arg(long = "no-pass", value_name = "NAME")]
        no_passes: Vec<String>,
        /// Device: auto (honours UNICOMPUTE_BACKEND), cpu, webgpu, cuda, or an index from `info`.
        #[arg(long, default_value = "auto")]
        backend: String,
        /// Timed runs after the first and the warm-ups (the median and 90th percentile are
        /// printed).
        #[arg(long, value_name = "N", default_value_t = 10)]
        runs: usize,
        /// Untimed runs between the first and the timed ones.
        #[arg(long, value_name = "N", default_value_t = 0)]
        warmup: usize,
        /// Run node by node every time, never replaying a captured run.
        #[arg(long)]
        eager: bool,
        /// Hold the large f32 weights in f16 on the device (half their memory and upload).
        #[arg(long)]
        f16_weights: bool,
        /// Seed of the random inputs.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Write each output of the first run to DIR/NAME.npy (f32, i64, i32 or u32).
        #[arg(long, value_name = "DIR")]
        save: Option<std::path::PathBuf>,
        /// Time one more run node by node: print each operator's share and write the nodes
        /// to FILE as a Chrome trace (chrome://tracing, ui.perfetto.dev).
        #[arg(long, value_name = "FILE")]
        profile: Option<std::path::PathBuf>,
        /// Open a webgpu device as if its adapter lacked `shader-int64`, as browsers' do
        /// (`DeviceOptions::use_int64` off).
        #[arg(long)]
        no_int64: bool,
    }

    #[derive(Args)]
    struct TuneArgs {
        /// Device: auto (honours UNICOMPUTE_BACKEND), cpu, webgpu, cuda, or an index from `info`.
        #[arg(long, default_value = "auto")]
        backend: String,
        /// Open the device this policy file prefers; its `tune_cache` says where results go.
        #[arg(long, value_name = "FILE")]
        policy: Option<std::path::PathBuf>,
        /// Largest square matmul edge tuned (128, 256, 512 and this one).
        #[arg(long, value_name = "N", default_value_t = 1024)]
        matmul_size: usize,
        /// Elements of the tuned reductions (all elements, and rows of 1,024).
        #[arg(long, value_name = "N", default_value_t = 1 << 24)]
        size: usize,
        /// Print one JSON document on stdout.
        #[arg(long)]
        json: bool,
    }

    #[derive(Args)]
    struct BenchArgs {
        /// Device: auto (honours UNICOMPUTE_BACKEND), cpu, webgpu, cuda, or an index from `info`.
        #[arg(long, default_value = "auto")]
        backend: String,
        /// Op to run (repeatable); default: the catalogue (see `bench::DEFAULT_OPS`).
        /// `matmul@<variant>`, `sum@<variant>`, `sum_last@<variant>` run a named kernel variant;
        /// `@auto` the autotuned one (tuned on first use, then from the tune cache), to compare
        /// with the default in the same run.
        #[arg(long = "op", value_name = "NAME")]
        ops: Vec<String>,
        /// Problem size: elements for elementwise, reduction and softmax ops (default 16777216, 64 MiB of f32);
        /// matrix edge for matmul (default 1024) unless --matmul-size is given.
        #[arg(long, value_name = "N")]
        size: Option<usize>,
        /// Matrix edge for matmul, overriding --size.
        #[arg(long, value_name = "N")]
        matmul_size: Option<usize>,
        /// Timed repetitions per op (the median is reported).
        #[arg(long, value_name = "N")]
        reps: Option<usize>,
        /// Row length of softmax, layer_norm, `<reduction>_last` and `<binary>_bcast` (default
        /// 1024); `--size` stays the element count.
        #[arg(long, value_name = "N")]
        row_len: Option<usize>,
        /// The attention case's batch, heads, sequence length and head dimension (default
        /// 1,8,512,64).
        #[arg(long, value_name = "B,H,S,D", value_delimiter = ',')]
        attention: Option<Vec<usize>>,
        /// Make the attention case causal.
        #[arg(long)]
        causal: bool,
        /// Storage dtype of the attention case's q, k and v: f32 (default), f16 or bf16.
        #[arg(long, value_name = "DTYPE")]
        attention_dtype: Option<String>,
        /// Storage dtype of the matmul case's matrices: f32 (default), f16 or bf16.
        #[arg(long, value_name = "DTYPE")]
        matmul_dtype: Option<String>,
        /// The conv2d case's input [n, c, h, w] and output channels (default 1,32,56,56,32; 3x3
        /// kernel, padding 1).
        #[arg(long, value_name = "N,C,H,W,O", value_delimiter = ',')]
        conv: Option<Vec<usize>>,
        /// Print one JSON document on stdout (progress still goes to stderr).
        #[arg(long)]
        json: bool,
        /// Open the device a policy file (JSON, see `unicompute::Policy`) prefers, with its
        /// precision, pool settings and kernel variants (instead of --backend).
        #[arg(long, value_name = "FILE")]
        policy: Option<std::path::PathBuf>,
        /// Profile every timed launch and write a Chrome trace (Perfetto, chrome://tracing) to
        /// FILE; prints the per-op summary and compares the summed device times with the bench's
        /// own measured total.
        #[arg(long, value_name = "FILE")]
        profile: Option<std::path::PathBuf>,
    }

    pub fn main() -> ExitCode {
        let cli = match Cli::try_parse() {
            Ok(cli) => cli,
            Err(e) => {
                let _ = e.print();
                return if e.use_stderr() {
                    ExitCode::FAILURE
                } else {
                    ExitCode::SUCCESS
                };
            }
        };
        let outcome = match cli.command {
            Command::Info { json, policy } => info(json, policy.as_deref()),
            Command::Bench(args) => run_bench(&args),
            Command::Ops => {
                print!("{}", unicompute::ops::support_matrix());
                Ok(())
            }
            Command::Tune(args) => tune(&args),
            Command::WgslToCuda { file, entry } => wgsl_to_cuda(&file, &entry),
            Command::Run(args) => run_model(args),
        };
        match outcome {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        }
    }

    /// `unicompute wgsl-to-cuda`
    fn wgsl_to_cuda(file: &std::path::Path, entry: &str) -> Result<()> {
        let source = std::fs::read_to_string(file).map_err(|e| {
            unicompute::Error::Invalid(format!("reading the WGSL file {}: {e}", file.display()))
        })?;
        print!("{}", unicompute::Kernel::cuda_from_wgsl(&source, entry)?);
        Ok(())
    }

    /// `unicompute info`
    fn info(json: bool, policy: Option<&std::path::Path>) -> Result<()> {
        let devices = unicompute::devices();
        let opened = open_device("auto", policy);
        let missing: BTreeMap<BackendKind, String> = [BackendKind::WebGpu, BackendKind::Cuda]
            .into_iter()
            .filter_map(|k| {
                pollster::block_on(unicompute::unavailable_reason(k)).map(|why| (k, why))
            })
            .collect();
        if json {
            let doc = match &opened {
                Ok(d) => InfoJson {
                    devices,
                    missing,
                    auto: Some(d.info().index),
                    decisions: d.decisions(),
                    auto_error: None,
                },
                Err(e) => InfoJson {
                    devices,
                    missing,
                    auto: None,
                    decisions: Vec::new(),
                    auto_error: Some(e.to_string()),
                },
            };
            return print_json(&doc);
        }
        println!("{}", devices_table(&devices));
        for (kind, why) in &missing {
            println!("\nno {kind} device: {why}");
        }
        let who = if policy.is_some() {
            "the policy"
        } else {
            "auto"
        };
        match opened {
            Ok(d) => {
                println!("\n{who} picks device {}{}", d.info().index, env_note());
                for decision in d.decisions() {
                    println!(
                        "  {}: {}: {}",
                        decision.op, decision.choice, decision.reason
                    );
                }
                println!("tune cache: {}", d.tune_cache_location());
            }
            Err(e) => println!("\n{who} cannot open a device: {e}"),
        }
        Ok(())
    }

    /// `unicompute run`
    fn run_model(args: RunArgs) -> Result<()> {
        let device = match args.no_int64 {
            true => {
                let options = unicompute::DeviceOptions {
                    use_int64: false,
                    ..Default::default()
                };
                Device::open_with(args.backend.parse()?, options)?
            }
            false => open_device(&args.backend, None)?,
        };
        let config = crate::run::RunConfig {
            model: args.model,
            inputs: args.inputs,
            dims: args.dims,
            no_passes: args.no_passes,
            runs: args.runs,
            warmup: args.warmup,
            eager: args.eager,
            f16_weights: args.f16_weights,
            seed: args.seed,
            save: args.save,
            profile: args.profile,
        };
        crate::run::run(&device, &config)
    }

    /// The device `--backend` (or `--policy`, not both) asks for.
    fn open_device(backend: &str, policy: Option<&std::path::Path>) -> Result<Device> {
        let choice: BackendChoice = backend.parse()?;
        match policy {
            Some(_) if choice != BackendChoice::Auto => Err(unicompute::Error::Invalid(
                "give either --backend or --policy, not both".into(),
            )),
            Some(path) => Device::open_with_policy(&unicompute::Policy::load(path)?),
            None => Device::open(choice),
        }
    }

    /// `unicompute tune`
    fn tune(args: &TuneArgs) -> Result<()> {
        let device = open_device(&args.backend, args.policy.as_deref())?;
        let info = device.info().clone();
        let mut results = Vec::new();
        for problem in unicompute::choice::catalogue(args.matmul_size, args.size) {
            eprintln!("[tune] {}", problem.class());
            results.push(device.tune_blocking(problem)?);
        }
        if args.json {
            return print_json(
                &serde_json::json!({ "device": info, "cache": device.tune_cache_location(), "results": results }),
            );
        }
        println!(
            "device: #{} {} ({}, {}, {})\n",
            info.index, info.name, info.backend, info.api, info.device_type
        );
        let header = [
            "shape class",
            "timed",
            "candidates (median device time)",
            "winner",
            "default",
            "winner vs default",
        ]
        .map(String::from);
        let rows: Vec<Vec<String>> = results
            .iter()
            .map(|r| {
                let times: Vec<String> = r
                    .times_us
                    .iter()
                    .map(|(v, us)| format!("{v} {}", bench::human_seconds(us / 1e6)))
                    .collect();
                vec![
                    r.class.clone(),
                    r.problem.clone(),
                    times.join(", "),
                    r.choice.clone(),
                    r.default.clone(),
                    format!("{:.2}x", r.speedup()),
                ]
            })
            .collect();
        println!(
            "{}\n\nwritten to {}",
            render_table(&header, &rows),
            device.tune_cache_location()
        );
        Ok(())
    }

    /// ` (from UNICOMPUTE_BACKEND=...)` when the variable is set.
    fn env_note() -> String {
        std::env::var(unicompute::BACKEND_ENV).map_or(String::new(), |v| {
            format!(" (from {}={v})", unicompute::BACKEND_ENV)
        })
    }

    fn devices_table(devices: &[DeviceInfo]) -> String {
        let header = [
            "#",
            "backend",
            "type",
            "name",
            "api",
            "driver",
            "max buffer",
            "max storage binding",
            "workgroup",
            "features",
            "memory",
        ];
        let rows: Vec<Vec<String>> = devices.iter().map(device_cells).collect();
        render_table(&header.map(String::from), &rows)
    }

    /// `unicompute bench`
    fn run_bench(args: &BenchArgs) -> Result<()> {
        let config = bench_config(args)?;
        let device = open_device(&args.backend, args.policy.as_deref())?;
        let info = device.info().clone();
        if !args.json {
            println!(
                "device: #{} {} ({}, {}, {}){}",
                info.index,
                info.name,
                info.backend,
                info.api,
                info.device_type,
                env_note()
            );
            for decision in device.decisions() {
                println!("  {}: {}", decision.op, decision.reason);
            }
        }
        let report = bench::run(&device, &config, &mut |line| eprintln!("[bench] {line}"))?;
        let profile_note = match (&args.profile, &report.profile) {
            (Some(path), Some(profile)) => {
                let trace = profile.chrome_trace_with(
                    serde_json::json!({ "bench_measured_s": report.measured_s }),
                );
                std::fs::write(path, trace).map_err(|e| {
                    unicompute::Error::Invalid(format!("writing the trace {}: {e}", path.display()))
                })?;
                let (sum, measured) = (profile.device_seconds(), report.measured_s);
                eprintln!(
                    "[bench] trace of {} launches written to {}",
                    profile.launches.len(),
                    path.display()
                );
                Some(format!(
                "{}\n\nprofiled device time {} vs the bench's measured total {} ({:+.1} %); trace: {}",
                profile.table(),
                bench::human_seconds(sum),
                bench::human_seconds(measured),
                100.0 * (sum - measured) / measured,
                path.display()
            ))
            }
            _ => None,
        };
        if args.json {
            return print_json(&BenchJson {
                device: info,
                report,
            });
        }
        println!(
            "{}\ntimer:          {} clock, medians after warm-up\n\n{}",
            report.ceilings,
            report.timer,
            report.table()
        );
        for (op, ratio) in report.autotune_vs_default() {
            println!("{op}@auto runs at {ratio:.2}x the rate of the default {op}");
        }
        if let Some(note) = profile_note {
            println!("\n{note}");
        }
        Ok(())
    }

    /// The float dtype named by `flag`'s value, if it was given.
    fn float_dtype(flag: &str, name: Option<&str>) -> Result<Option<DType>> {
        let Some(name) = name else { return Ok(None) };
        [DType::F32, DType::F16, DType::BF16]
            .into_iter()
            .find(|d| d.name() == name)
            .map(Some)
            .ok_or_else(|| {
                unicompute::Error::Invalid(format!("{flag} {name}: expected f32, f16 or bf16"))
            })
    }

    fn bench_config(args: &BenchArgs) -> Result<BenchConfig> {
        let defaults = BenchConfig::default();
        let attention_dtype = float_dtype("--attention-dtype", args.attention_dtype.as_deref())?
            .unwrap_or(defaults.attention_dtype);
        let matmul_dtype = float_dtype("--matmul-dtype", args.matmul_dtype.as_deref())?
            .unwrap_or(defaults.matmul_dtype);
        Ok(BenchConfig {
            ops: args.ops.clone(),
            elements: args.size.unwrap_or(defaults.elements),
            matmul_edge: args
                .matmul_size
                .or(args.size)
                .unwrap_or(defaults.matmul_edge),
            row_len: args.row_len.unwrap_or(defaults.row_len),
            attention: extents("--attention", args.attention.as_deref())?
                .unwrap_or(defaults.attention),
            causal: args.causal,
            attention_dtype,
            matmul_dtype,
            conv: extents("--conv", args.conv.as_deref())?.unwrap_or(defaults.conv),
            reps: args.reps.unwrap_or(defaults.reps),
            profile: args.profile.is_some(),
            ..defaults
        })
    }

    /// `N` comma-separated extents given to `flag`, if it was given.
    fn extents<const N: usize>(flag: &str, values: Option<&[usize]>) -> Result<Option<[usize; N]>> {
        values
            .map(|v| {
                v.try_into().map_err(|_| {
                    unicompute::Error::Invalid(format!(
                        "{flag} has {} values: expected {N}, separated by commas",
                        v.len()
                    ))
                })
            })
            .transpose()
    }

    fn print_json<T: Serialize>(value: &T) -> Result<()> {
        let text = serde_json::to_string_pretty(value)
            .map_err(|e| unicompute::Error::Invalid(format!("encoding JSON: {e}")))?;
        println!("{text}");
        Ok(())
    }

    /// `unicompute info --json`
    #[derive(Serialize)]
    struct InfoJson {
        devices: Vec<DeviceInfo>,
        /// Backends with no device, and why.
        missing: BTreeMap<BackendKind, String>,
        /// Index of the device `auto` (or the policy) opens.
        auto: Option<usize>,
        /// How it was chosen, and policy fallbacks.
        decisions: Vec<unicompute::Decision>,
        /// Why `auto` could not open a device.
        auto_error: Option<String>,
    }

    /// `unicompute bench --json`
    #[derive(Serialize)]
    struct BenchJson {
        device: DeviceInfo,
        report: Report,
    }

    /// One row of the `info` table.
    fn device_cells(d: &DeviceInfo) -> Vec<String> {
        vec![
            d.index.to_string(),
            d.backend.to_string(),
            d.device_type.to_string(),
            d.name.clone(),
            d.api.clone(),
            d.driver.clone(),
            human_bytes(d.limits.max_buffer_size),
            human_bytes(d.limits.max_storage_binding_size),
            workgroup(&d.limits),
            features(&d.features),
            d.memory_total.map_or("-".into(), human_bytes),
        ]
    }

    /// `256x256x64, 256 inv, grid 65535x65535x65535`, then `, loops <= 65535 per subgroup`
    /// where the driver has a loop-iteration limit, or `unlimited` for the CPU.
    fn workgroup(l: &Limits) -> String {
        if l.max_invocations_per_workgroup == u32::MAX {
            return "unlimited".into();
        }
        let [x, y, z] = l.max_workgroup_size;
        let [gx, gy, gz] = l.max_workgroups;
        let loops = l
            .max_loop_iterations
            .map_or(String::new(), |n| format!(", loops <= {n} per subgroup"));
        format!(
            "{x}x{y}x{z}, {} inv, grid {gx}x{gy}x{gz}{loops}",
            l.max_invocations_per_workgroup
        )
    }

    /// `f16 timestamps subgroups int64`, the ones present, or `-`.
    fn features(f: &Features) -> String {
        let present: Vec<&str> = [
            (f.f16, "f16"),
            (f.timestamps, "timestamps"),
            (f.subgroups, "subgroups"),
            (f.int64, "int64"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
        if present.is_empty() {
            "-".into()
        } else {
            present.join(" ")
        }
    }
}
