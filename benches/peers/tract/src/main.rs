//! `tract-peer MODEL RUNS WARMUP NAME=FILE.npy...`: loads an ONNX model with tract, fixes its
//! inputs' shapes and types from the `.npy` files, optimises it, and prints one JSON line with
//! the session-create time, the first run and the median and 90th percentile of `RUNS` runs
//! after `WARMUP` warm-ups, in milliseconds (scripts/bench-models.sh reads it).

use std::time::Instant;

use tract_onnx::prelude::tract_data::internal::bail;
use tract_onnx::prelude::*;

/// One input read from a `.npy` file (f32, i64 or i32).
fn read_npy(path: &str) -> TractResult<Tensor> {
    let bytes = std::fs::read(path)?;
    let npy = npyz::NpyFile::new(&bytes[..])?;
    let shape: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
    let kind = npy.dtype().descr().trim_matches('\'').to_string();
    Ok(match kind.as_str() {
        "<f4" => Tensor::from_shape(&shape, &npy.into_vec::<f32>()?)?,
        "<i8" => Tensor::from_shape(&shape, &npy.into_vec::<i64>()?)?,
        "<i4" => Tensor::from_shape(&shape, &npy.into_vec::<i32>()?)?,
        other => bail!("{path}: element type {other}; expected <f4, <i8 or <i4"),
    })
}

/// A model ready to run, and its inputs in the model's order.
type Loaded = (Arc<TypedRunnableModel>, Vec<Tensor>);

/// The model at `path` with its inputs fixed to the given tensors' types and shapes.
fn load(path: &str, feeds: &[(String, Tensor)]) -> TractResult<Loaded> {
    let mut model = tract_onnx::onnx().model_for_path(path)?;
    let names: Vec<String> = model
        .input_outlets()?
        .iter()
        .map(|o| model.node(o.node).name.clone())
        .collect();
    let mut ordered = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let Some((_, t)) = feeds.iter().find(|(n, _)| n == name) else {
            bail!("no .npy file for the model's input '{name}'");
        };
        let fact = InferenceFact::dt_shape(t.datum_type(), t.shape());
        model.set_input_fact(i, fact)?;
        ordered.push(t.clone());
    }
    Ok((model.into_optimized()?.into_runnable()?, ordered))
}

fn main() -> TractResult<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        bail!("usage: tract-peer MODEL RUNS WARMUP NAME=FILE.npy...");
    }
    let (runs, warmup): (usize, usize) = (args[1].parse()?, args[2].parse()?);
    let mut feeds = Vec::new();
    for pair in &args[3..] {
        let Some((name, file)) = pair.split_once('=') else {
            bail!("input '{pair}': expected NAME=FILE.npy");
        };
        feeds.push((name.to_string(), read_npy(file)?));
    }
    let start = Instant::now();
    let (plan, ordered) = load(&args[0], &feeds)?;
    let create = start.elapsed().as_secs_f64() * 1e3;
    let inputs = || -> TVec<TValue> { ordered.iter().map(|t| t.clone().into_tvalue()).collect() };
    let t = Instant::now();
    plan.run(inputs())?;
    let first = t.elapsed().as_secs_f64() * 1e3;
    for _ in 0..warmup {
        plan.run(inputs())?;
    }
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let feeds = inputs();
        let t = Instant::now();
        plan.run(feeds)?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    // The median as `unicompute run` takes it, and the smallest time of 90 % of the runs.
    let median = times.get(times.len() / 2).copied().unwrap_or(f64::NAN);
    let p90 = times
        .get((times.len() * 9).div_ceil(10).saturating_sub(1))
        .copied();
    println!(
        "{{\"create_ms\": {create:.3}, \"first_ms\": {first:.3}, \"median_ms\": {:.3}, \
         \"p90_ms\": {:.3}}}",
        median,
        p90.unwrap_or(f64::NAN)
    );
    Ok(())
}
