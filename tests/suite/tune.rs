//! Autotuning: `"auto"` variants are timed once per device and shape class, written to the
//! tune cache, reloaded by the next device and honoured (also when the cache says otherwise
//! than a fresh timing would).

use crate::common::{self, assert_close, random, read, tensor};
use serde_json::Value;
use unicompute::choice::Problem;
use unicompute::{BackendKind, DType, Device, Policy};

fn cache_path(tag: &str) -> String {
    std::env::temp_dir()
        .join(format!("unicompute-tune-{tag}-{}.json", std::process::id()))
        .to_string_lossy()
        .into_owned()
}

fn policy(backend: &str, cache: &str) -> Policy {
    Policy::from_json(&format!(r#"{{"backends": ["{backend}"], "variants": {{"matmul": "auto", "reduce": "auto"}}, "tune_cache": "{cache}"}}"#)).unwrap()
}

/// `a [m, k] @ b [k, n]` on `d`, checked against f64, and the profile's matmul launch.
fn checked_matmul(
    d: &Device,
    m: usize,
    k: usize,
    n: usize,
    seed: u64,
) -> unicompute::profile::LaunchRecord {
    let (a, b) = (
        random(seed, m * k, -1.0, 1.0),
        random(seed + 1, k * n, -1.0, 1.0),
    );
    d.profiler().enable();
    let out = read(
        &tensor(d, &a, &[m, k])
            .matmul(&tensor(d, &b, &[k, n]))
            .unwrap(),
    );
    let want = common::matmul_reference(&a, &b, m, k, n);
    assert_close(
        &out,
        &want,
        1e-4,
        1e-5,
        &format!("matmul {m}x{k}x{n}, seed {seed}"),
    );
    let profile = d.take_profile_blocking();
    profile
        .launches
        .into_iter()
        .find(|l| l.op == "matmul")
        .expect("a matmul launch")
}

#[test]
fn the_cache_is_written_reloaded_and_honoured() {
    if common::webgpu().is_none() {
        return;
    }
    let path = cache_path("webgpu");
    let _ = std::fs::remove_file(&path);
    let p = policy("webgpu", &path);
    let first = Device::open_with_policy(&p).unwrap();
    let candidates = first.variants("matmul");
    assert!(candidates.len() > 1);
    let launch = checked_matmul(&first, 70, 90, 50, 31);
    let reason = launch.reason.clone().unwrap();
    assert!(reason.contains("autotuned now"), "{reason}");
    let tuned = launch.variant.clone().unwrap();

    // Written: one entry for the class, with a time for every candidate.
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("the cache file exists"))
            .unwrap();
    let (key, entry) = file["entries"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(k, _)| k.contains("matmul f32 batch1 m128 n64 k128"))
        .expect("the class's entry");
    assert_eq!(entry["choice"], Value::from(tuned.clone()));
    for c in &candidates {
        assert!(
            entry["times_us"][*c].as_f64().is_some_and(|t| t > 0.0),
            "{c} timed: {entry}"
        );
    }
    let fastest = entry["times_us"]
        .as_object()
        .unwrap()
        .iter()
        .min_by(|a, b| a.1.as_f64().unwrap().total_cmp(&b.1.as_f64().unwrap()))
        .unwrap()
        .0;
    assert_eq!(fastest, &tuned, "the winner is the fastest candidate");

    // Reloaded: a new device under the same policy reuses the entry for any shape of the class.
    let second = Device::open_with_policy(&p).unwrap();
    let launch = checked_matmul(&second, 97, 101, 61, 41);
    assert_eq!(launch.variant.as_deref(), Some(tuned.as_str()));
    assert!(
        launch
            .reason
            .as_deref()
            .unwrap()
            .contains("from the tune cache"),
        "{launch:?}"
    );

    // Honoured: edit the cache to name another candidate; the next device runs that one.
    let other = candidates.iter().find(|c| **c != tuned).unwrap();
    let mut edited = file.clone();
    edited["entries"][key]["choice"] = Value::from(*other);
    std::fs::write(&path, edited.to_string()).unwrap();
    let third = Device::open_with_policy(&p).unwrap();
    let launch = checked_matmul(&third, 70, 90, 50, 51);
    assert_eq!(launch.variant.as_deref(), Some(*other), "{launch:?}");
    let _ = std::fs::remove_file(&path);
}

#[test]
fn reductions_tune_too_and_tune_reports_every_candidate() {
    let Some(gpu) = common::webgpu() else { return };
    if !gpu.info().features.subgroups {
        return;
    }
    let path = cache_path("reduce");
    let d = Device::open_with_policy(&policy("webgpu", &path)).unwrap();
    let result = d
        .tune_blocking(Problem::Reduce {
            outer: 5,
            len: 3001,
            inner: 1,
        })
        .unwrap();
    assert_eq!(result.op, "reduce");
    assert_eq!(
        result.times_us.len(),
        d.variants("reduce").len(),
        "{result:?}"
    );
    assert!(
        result.times_us[&result.choice] <= result.times_us[&result.default],
        "{result:?}"
    );
    assert!(result.speedup() >= 1.0);
    // The op now runs the winner, with the right numbers.
    let x = random(61, 5 * 3001, -1.0, 1.0);
    d.profiler().enable();
    let sums = read(&tensor(&d, &x, &[5, 3001]).sum(Some(1)).unwrap());
    let want: Vec<f64> = x
        .chunks(3001)
        .map(|r| r.iter().map(|v| f64::from(*v)).sum())
        .collect();
    assert_close(&sums, &want, 1e-5, 1e-4, "tuned sum, seed 61");
    let launch = d
        .take_profile_blocking()
        .launches
        .into_iter()
        .find(|l| l.op == "sum")
        .unwrap();
    assert_eq!(launch.variant, Some(result.choice.clone()));
    assert!(d.tune_cache_json().contains("reduce last rows8 len4096"));
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_backend_with_one_variant_has_nothing_to_tune() {
    let path = cache_path("cpu");
    let d = Device::open_with_policy(&policy("cpu", &path)).unwrap();
    assert_eq!(d.backend(), BackendKind::Cpu);
    let launch = checked_matmul(&d, 9, 5, 3, 71);
    assert_eq!(launch.variant.as_deref(), Some("sgemm"));
    assert!(launch.reason.unwrap().contains("nothing to tune"));
    // Tuning it explicitly still times the one candidate and writes the cache.
    let r = d
        .tune_blocking(Problem::Matmul {
            batch: 2,
            m: 16,
            n: 16,
            k: 16,
            dtype: DType::F32,
        })
        .unwrap();
    assert_eq!((r.choice.as_str(), r.times_us.len()), ("sgemm", 1));
    assert!(std::fs::read_to_string(&path)
        .unwrap()
        .contains("matmul f32 batch2 m16 n16 k16"));
    let e = d
        .tune_blocking(Problem::Reduce {
            outer: 1,
            len: 0,
            inner: 1,
        })
        .unwrap_err();
    assert!(e.to_string().contains("zero size"), "{e}");
    // A damaged cache file is ignored, not fatal.
    std::fs::write(&path, "{ not json").unwrap();
    let d = Device::open_with_policy(&policy("cpu", &path)).unwrap();
    checked_matmul(&d, 4, 4, 4, 81);
    assert!(d.import_tune_cache("[]").is_err());
    let _ = std::fs::remove_file(&path);
}
