//! `unicompute run`: an ONNX model loaded and run on one device, on `.npy` inputs or seeded
//! random ones made from the declared shapes; prints the outputs' shapes with checksums and
//! the load, first-run and median-run times, or every operator the runner lacks; with
//! `--profile`, each operator's time (trace.rs).

use std::path::{Path, PathBuf};
use std::time::Instant;

use unicompute::onnx::{Dim, ElemType, Model, Passes, Session, SessionOptions};
use unicompute::{DType, Device, Error, Result, Tensor};

/// What `unicompute run` was asked.
pub struct RunConfig {
    /// The `.onnx` file.
    pub model: PathBuf,
    /// `name=file.npy` inputs.
    pub inputs: Vec<String>,
    /// `name=extent` for named (symbolic) dimensions, fixed at load; others are 1 in the
    /// random inputs.
    pub dims: Vec<String>,
    /// Graph passes turned off (`all` for every one).
    pub no_passes: Vec<String>,
    /// Timed runs after the first and the warm-ups.
    pub runs: usize,
    /// Untimed runs between the first and the timed ones.
    pub warmup: usize,
    /// Every run node by node (`SessionOptions::eager`).
    pub eager: bool,
    /// Large f32 weights held in f16 (`SessionOptions::f16_weights`).
    pub f16_weights: bool,
    /// The seed of the random inputs.
    pub seed: u64,
    /// Where to write the first run's outputs as `.npy` files.
    pub save: Option<PathBuf>,
    /// Where to write a profiled run's Chrome trace (its summary is printed).
    pub profile: Option<PathBuf>,
}

/// Runs the model as `config` says on `device`, printing what it measured.
pub fn run(device: &Device, config: &RunConfig) -> Result<()> {
    let start = Instant::now();
    let model = Model::from_path(&config.model)?;
    let unsupported = unicompute::onnx::unsupported(&model);
    if !unsupported.is_empty() {
        println!("operators this runner lacks ({} kinds):", unsupported.len());
        for (op, count) in &unsupported {
            println!("  {count:5} x {op}");
        }
    }
    let options = SessionOptions {
        free_dims: free_dims(&config.dims)?,
        passes: passes(&config.no_passes),
        eager: config.eager,
        f16_weights: config.f16_weights,
        ..SessionOptions::default()
    };
    let nodes = model.graph.nodes.len();
    let session = Session::load(device, model, options)?;
    let load = start.elapsed().as_secs_f64();
    print_passes(&session, nodes);
    let feeds = inputs(device, &session, config)?;
    let named: Vec<(&str, &Tensor)> = feeds.iter().map(|(n, t)| (n.as_str(), t)).collect();
    let first = Instant::now();
    let outputs = session.run(&named)?;
    device.queue().finish()?;
    let first = first.elapsed().as_secs_f64();
    let allocations = device.memory_stats().allocations;
    if let Some(dir) = &config.save {
        save(dir, &outputs)?;
    }
    let times = timed(device, &session, &named, config)?;
    println!(
        "model:  {} on {}",
        config.model.display(),
        device.info().name
    );
    for (name, t) in &outputs {
        let (sum, abs) = checksum(t)?;
        println!(
            "output {name}: {:?} {} sum {sum:.6e} sum|x| {abs:.6e}",
            t.shape(),
            t.dtype()
        );
    }
    println!("load:   {:.3} ms", load * 1e3);
    println!("first:  {:.3} ms", first * 1e3);
    if let Some(median) = times.get(times.len() / 2) {
        println!("median: {:.3} ms of {} runs", median * 1e3, times.len());
        let p90 = times[(times.len() * 9).div_ceil(10) - 1];
        println!("p90:    {:.3} ms", p90 * 1e3);
    }
    print_memory(device, &session, allocations);
    if let Some(path) = &config.profile {
        let nodes = session.run_profiled(&named)?;
        crate::trace::print_summary(&nodes);
        crate::trace::write(path, &nodes)?;
        println!(
            "trace:  {} (chrome://tracing or ui.perfetto.dev)",
            path.display()
        );
    }
    Ok(())
}

/// The device's peak bytes beside the session's memory plan, and the blocks the runs after
/// the first took from the backend (`allocations` is the count after the first run).
fn print_memory(device: &Device, session: &Session, allocations: u64) {
    let stats = device.memory_stats();
    let mb = |b: u64| b as f64 / 1e6;
    println!(
        "memory: {:.3} MB peak in device buffers; {} blocks allocated after the first run",
        mb(stats.peak_bytes_live),
        stats.allocations - allocations
    );
    if let Some(plan) = session.memory_plan() {
        println!(
            "plan:   weights {:.3} MB, intermediates {:.3} MB planned in {} arena(s) \
             (most live at once {:.3} MB; {:.3} MB in {} blocks without reuse)",
            mb(plan.weights_bytes),
            mb(plan.peak_bytes()),
            plan.arenas.len(),
            mb(plan.live_bytes),
            mb(plan.unshared_bytes),
            plan.intermediates
        );
    }
}

/// The times of `config.runs` runs after `config.warmup` untimed ones, sorted.
fn timed(
    device: &Device,
    session: &Session,
    feeds: &[(&str, &Tensor)],
    config: &RunConfig,
) -> Result<Vec<f64>> {
    for _ in 0..config.warmup {
        session.run(feeds)?;
        device.queue().finish()?;
    }
    let mut times = Vec::with_capacity(config.runs);
    for _ in 0..config.runs {
        let t = Instant::now();
        session.run(feeds)?;
        device.queue().finish()?;
        times.push(t.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    Ok(times)
}

/// Every input: from its `.npy` file where one is given, else seeded random values of the
/// declared shape (uniform in [-1, 1) for floats, 0 for integers).
fn inputs(device: &Device, s: &Session, config: &RunConfig) -> Result<Vec<(String, Tensor)>> {
    let files = pairs(&config.inputs, "--input")?;
    let mut out = Vec::new();
    for (i, info) in s.inputs().into_iter().enumerate() {
        if let Some((_, file)) = files.iter().find(|(n, _)| *n == info.name) {
            out.push((info.name, crate::npy::read(device, Path::new(file))?));
            continue;
        }
        let shape = shape_of(info.shape.as_deref().unwrap_or(&[]));
        let dtype = match info.elem {
            Some(ElemType::F16) => DType::F16,
            Some(ElemType::BF16) => DType::BF16,
            Some(e) if e.dtype().is_some_and(|d| !d.is_float()) => e.dtype().unwrap_or(DType::I64),
            _ => DType::F32,
        };
        let t = if dtype.is_float() {
            Tensor::random_uniform(device, &shape, [-1.0, 1.0], config.seed + i as u64, dtype)?
        } else {
            Tensor::zeros(device, &shape, dtype)?
        };
        out.push((info.name, t));
    }
    Ok(out)
}

/// Writes each output to `dir/NAME.npy`, characters other than letters, digits, `-`, `_`
/// and `.` in the name replaced by `_`.
fn save(dir: &Path, outputs: &[(String, Tensor)]) -> Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::Invalid(format!("--save {}: {e}", dir.display())))?;
    for (name, t) in outputs {
        let safe = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
        let file: String = name
            .chars()
            .map(|c| if safe(c) { c } else { '_' })
            .collect();
        crate::npy::write(&dir.join(format!("{file}.npy")), t)?;
    }
    Ok(())
}

/// `name=value` arguments split at the first `=`.
fn pairs<'a>(args: &'a [String], flag: &str) -> Result<Vec<(&'a str, &'a str)>> {
    args.iter()
        .map(|a| {
            a.split_once('=')
                .ok_or_else(|| Error::Invalid(format!("{flag} {a}: expected NAME=VALUE")))
        })
        .collect()
}

/// The graph passes left on by `--no-pass NAME` arguments.
fn passes(off: &[String]) -> Passes {
    if off.iter().any(|n| n == "all") {
        return Passes::none();
    }
    off.iter().fold(Passes::all(), |p, n| p.without(n))
}

/// What the graph passes did: the node count before and after, and each pass's rewrites.
fn print_passes(session: &Session, before: usize) {
    let Some(last) = session.optimised().last() else {
        println!("passes: off");
        return;
    };
    let each: Vec<String> = (session.optimised().iter())
        .map(|r| format!("{} {}", r.pass, r.rewrites))
        .collect();
    println!(
        "passes: {before} -> {} nodes ({})",
        last.nodes,
        each.join(", ")
    );
}

/// `--dim NAME=N` arguments as the session's free dimension overrides.
fn free_dims(args: &[String]) -> Result<Vec<(String, usize)>> {
    (pairs(args, "--dim")?.into_iter())
        .map(|(name, v)| match v.parse() {
            Ok(n) => Ok((name.to_string(), n)),
            Err(_) => Err(Error::Invalid(format!(
                "--dim {name}={v}: expected a whole number"
            ))),
        })
        .collect()
}

/// A declared shape, its extents left open (named ones not fixed by `--dim`) taken as 1.
fn shape_of(dims: &[Dim]) -> Vec<usize> {
    (dims.iter())
        .map(|d| if let Dim::Fixed(n) = d { *n } else { 1 })
        .collect()
}

/// The sum and the sum of magnitudes of a tensor's elements, in f64.
fn checksum(t: &Tensor) -> Result<(f64, f64)> {
    let v: Vec<f64> = match t.dtype() {
        DType::I64 => t
            .to_vec_blocking::<i64>()?
            .iter()
            .map(|&x| x as f64)
            .collect(),
        DType::I32 => t
            .to_vec_blocking::<i32>()?
            .iter()
            .map(|&x| x.into())
            .collect(),
        DType::U32 => t
            .to_vec_blocking::<u32>()?
            .iter()
            .map(|&x| x.into())
            .collect(),
        _ => t
            .cast(DType::F32)?
            .to_vec_blocking::<f32>()?
            .iter()
            .map(|&x| x.into())
            .collect(),
    };
    Ok((v.iter().sum(), v.iter().map(|x| x.abs()).sum()))
}
