//! Policies: JSON round trips, errors that name the key, devices opened under a policy
//! (selection, precision, pool settings, fallback), and named variants the chooser runs,
//! seen through the profiler.

use crate::common::{self, assert_close, random, read, tensor};
use unicompute::{BackendKind, Device, DeviceType, MatmulPrecision, Policy, Selection, Tensor};

/// A policy from JSON; its tune cache goes to a fresh temporary file.
fn policy(json: &str) -> Policy {
    let mut p = Policy::from_json(json).unwrap();
    if p.tune_cache.is_none() {
        let path = std::env::temp_dir().join(format!(
            "unicompute-policy-test-{}-{}.json",
            std::process::id(),
            fastrand::u64(..)
        ));
        p.tune_cache = Some(path.to_string_lossy().into_owned());
    }
    p
}

fn webgpu_available() -> bool {
    common::webgpu().is_some()
}

#[test]
fn policies_round_trip_through_json_and_files() {
    let default = Policy::default();
    assert_eq!(Policy::from_json(&default.to_json()).unwrap(), default);
    assert_eq!(
        Policy::from_json("{}").unwrap(),
        default,
        "every key has a default"
    );
    assert_eq!(default.selection, Selection::Auto);
    let custom = Policy::from_json(
        r#"{"backends": ["cpu", "webgpu"], "selection": "ranked", "precision": "tf32", "variants": {"matmul": "auto", "reduce": "tree"},
            "fallback": true, "tune_cache": "/tmp/x.json", "pool": {"cache_limit_bytes": 1024}}"#,
    )
    .unwrap();
    assert_eq!(custom.backends, vec![BackendKind::Cpu, BackendKind::WebGpu]);
    assert_eq!(custom.selection, Selection::Ranked);
    assert_eq!(custom.precision, MatmulPrecision::Tf32);
    assert_eq!(custom.pool.cache_limit_bytes, 1024);
    assert_eq!(custom.variant("matmul"), Some("auto"));
    assert_eq!(custom.variant("reduce"), Some("tree"));
    assert!(custom.fallback);
    assert_eq!(custom.tune_cache.as_deref(), Some("/tmp/x.json"));
    let path = std::env::temp_dir().join(format!("unicompute-policy-{}.json", std::process::id()));
    custom.save(&path).unwrap();
    assert_eq!(Policy::load(&path).unwrap(), custom);
    let _ = std::fs::remove_file(&path);
}

#[test]
fn invalid_policies_name_the_key() {
    let err = |json: &str| {
        let e = Policy::from_json(json).unwrap_err();
        assert_eq!(e.code(), "INVALID", "{e}");
        e.to_string()
    };
    assert!(err(r#"{"backend": ["cpu"]}"#).contains("unknown field `backend`"));
    assert!(err(r#"{"pool": {"cache_limit": 1}}"#).contains("unknown field `cache_limit`"));
    let e = err(r#"{"precision": "f8"}"#);
    assert!(
        e.contains("`precision`") && e.contains("f8") && e.contains("tf32"),
        "{e}"
    );
    assert!(err(r#"{"pool": {"cache_limit_bytes": -1}}"#).contains("`pool`"));
    assert!(err(r#"{"backends": "cpu"}"#).contains("`backends`"));
    let e = err(r#"{"selection": "fastest"}"#);
    assert!(
        e.contains("`selection`") && e.contains("fastest") && e.contains("ranked"),
        "{e}"
    );
    assert!(err(r#"{"backends": ["quantum"]}"#).contains("quantum"));
    assert!(err(r#"{"backends": []}"#).contains("`backends` is empty"));
    assert!(err(r#"{"backends": ["cpu", "cpu"]}"#).contains("twice"));
    assert!(err(r#"{"variants": {"conv": "x"}}"#).contains("`variants.conv`"));
    assert!(err(r#"{"variants": {"matmul": " "}}"#).contains("`variants.matmul` is empty"));
    assert!(err(r#"{"tune_cache": ""}"#).contains("`tune_cache`"));
    assert!(err(r#"{"fallback": "yes"}"#).contains("boolean"));
    assert!(err("{").contains("EOF"));
    assert!(Policy::load("/nonexistent/policy.json")
        .unwrap_err()
        .to_string()
        .contains("/nonexistent/policy.json"));
}

#[test]
fn devices_follow_the_policy() {
    let cpu_first = policy(
        r#"{"backends": ["cpu", "webgpu"], "selection": "order", "pool": {"cache_limit_bytes": 0}}"#,
    );
    let d = Device::open_with_policy(&cpu_first).unwrap();
    assert_eq!(d.backend(), BackendKind::Cpu);
    assert_eq!(d.policy(), &cpu_first);
    assert!(
        d.decisions()[0].reason.contains("order"),
        "{:?}",
        d.decisions()
    );
    // A zero cache limit keeps nothing for reuse.
    drop(Tensor::from_slice(&d, &[1.0f32; 1000], &[1000]).unwrap());
    assert_eq!(d.memory_stats().bytes_cached, 0);

    // A variant the backend does not have is an error naming the key and the choices...
    let wrong = policy(r#"{"backends": ["cpu"], "variants": {"matmul": "tile64"}}"#);
    let e = Device::open_with_policy(&wrong).unwrap_err();
    assert!(
        e.to_string().contains("`variants.matmul`") && e.to_string().contains("sgemm"),
        "{e}"
    );
    // ...and so is a precision it cannot compute in.
    let e = Device::open_with_policy(&policy(r#"{"backends": ["cpu"], "precision": "bf16"}"#))
        .unwrap_err();
    assert_eq!(e.code(), "UNSUPPORTED", "{e}");
    assert!(
        e.to_string().contains("`precision`") && e.to_string().contains("fallback"),
        "{e}"
    );

    // With fallback allowed, both run the default instead, and say so.
    let lenient = policy(
        r#"{"backends": ["cpu"], "precision": "bf16", "variants": {"matmul": "tile64"}, "fallback": true}"#,
    );
    let d = Device::open_with_policy(&lenient).unwrap();
    let decisions = d.decisions();
    assert!(
        decisions
            .iter()
            .any(|x| x.op == "precision" && x.choice == "f32"),
        "{decisions:?}"
    );
    assert!(
        decisions
            .iter()
            .any(|x| x.op == "variants.matmul" && x.reason.contains("fallback")),
        "{decisions:?}"
    );
    d.profiler().enable();
    let (m, k, n) = (7, 13, 5);
    let (a, b) = (random(11, m * k, -1.0, 1.0), random(12, k * n, -1.0, 1.0));
    let out = read(
        &tensor(&d, &a, &[m, k])
            .matmul(&tensor(&d, &b, &[k, n]))
            .unwrap(),
    );
    let want = common::matmul_reference(&a, &b, m, k, n);
    assert_close(&out, &want, 1e-5, 1e-6, "fallback matmul, seeds 11/12");
    let profile = d.take_profile_blocking();
    let launch = profile.launches.iter().find(|l| l.op == "matmul").unwrap();
    assert_eq!(launch.variant.as_deref(), Some("sgemm"));
    assert!(
        launch.reason.as_deref().unwrap().contains("tile64"),
        "{launch:?}"
    );
    assert!(
        profile.decisions.iter().any(|x| x.op == "precision"),
        "the profile keeps the device's decisions"
    );
}

#[test]
fn selection_ranks_software_adapters_below_the_cpu() {
    let Some(gpu) = common::webgpu() else { return };
    let ranked = Device::open_with_policy(&policy(
        r#"{"backends": ["webgpu", "cpu"], "selection": "ranked"}"#,
    ))
    .unwrap();
    let order = Device::open_with_policy(&policy(
        r#"{"backends": ["webgpu", "cpu"], "selection": "order"}"#,
    ))
    .unwrap();
    assert_eq!(order.backend(), BackendKind::WebGpu);
    if gpu.info().device_type == DeviceType::SoftwareGpu {
        assert_eq!(
            ranked.backend(),
            BackendKind::Cpu,
            "{:?}",
            ranked.decisions()
        );
        assert!(
            ranked.decisions()[0].reason.contains("software"),
            "{:?}",
            ranked.decisions()
        );
    } else {
        assert_eq!(ranked.backend(), BackendKind::WebGpu);
    }
    // A policy with one backend opens it whatever it is.
    assert_eq!(
        Device::open_with_policy(&policy(r#"{"backends": ["webgpu"]}"#))
            .unwrap()
            .backend(),
        BackendKind::WebGpu
    );
}

#[test]
fn auto_selection_measures_and_caches_the_choice() {
    if !webgpu_available()
        || common::webgpu().unwrap().info().device_type != DeviceType::SoftwareGpu
    {
        return;
    }
    let p = policy(r#"{"backends": ["webgpu", "cpu"], "selection": "auto"}"#);
    let first = Device::open_with_policy(&p).unwrap();
    let chosen = first.decisions()[0].clone();
    assert_eq!(
        chosen.times_us.len(),
        2,
        "both candidates timed: {chosen:?}"
    );
    assert!(chosen.times_us.values().all(|&t| t > 0.0), "{chosen:?}");
    let fastest = chosen
        .times_us
        .iter()
        .min_by(|a, b| a.1.total_cmp(b.1))
        .unwrap()
        .0;
    assert!(
        fastest.starts_with(first.backend().name()),
        "opened {} but {fastest} was faster: {chosen:?}",
        first.backend()
    );
    assert!(chosen.reason.contains("measured now"), "{}", chosen.reason);
    let cache = std::fs::read_to_string(p.tune_cache.as_ref().unwrap())
        .expect("the selection is written to the tune cache");
    assert!(cache.contains("select |"), "{cache}");
    // The same policy on the same machine: the same choice, from the cache.
    let again = Device::open_with_policy(&p).unwrap();
    assert_eq!(again.backend(), first.backend());
    let cached = &again.decisions()[0].times_us;
    assert!(
        cached.len() == 2
            && cached
                .iter()
                .all(|(k, v)| (v - chosen.times_us[k]).abs() <= 1e-6 * v),
        "{cached:?} vs {chosen:?}"
    );
    assert!(
        again.decisions()[0].reason.contains("from the tune cache"),
        "{:?}",
        again.decisions()
    );
    let _ = std::fs::remove_file(p.tune_cache.as_ref().unwrap());
}

#[test]
fn named_variants_run_and_show_in_the_profile() {
    if !webgpu_available() {
        return;
    }
    // Every matmul variant, beside the tree reduction or, every other one, the subgroup one.
    let webgpu = common::webgpu().unwrap();
    let subgroups = webgpu.info().features.subgroups;
    for (i, mm) in webgpu.variants("matmul").into_iter().enumerate() {
        let red = if subgroups && i % 2 == 1 {
            "subgroup"
        } else {
            "tree"
        };
        let json = format!(
            r#"{{"backends": ["webgpu"], "variants": {{"matmul": "{mm}", "reduce": "{red}"}}}}"#
        );
        let gpu = Device::open_with_policy(&policy(&json)).unwrap();
        gpu.profiler().enable();
        let (m, k, n) = (67, 129, 33);
        let (a, b) = (random(21, m * k, -1.0, 1.0), random(22, k * n, -1.0, 1.0));
        let prod = tensor(&gpu, &a, &[m, k])
            .matmul(&tensor(&gpu, &b, &[k, n]))
            .unwrap();
        let sums = prod.sum(Some(1)).unwrap();
        let want = common::matmul_reference(&a, &b, m, k, n);
        assert_close(
            &read(&prod),
            &want,
            1e-4,
            1e-5,
            &format!("matmul {mm}, seeds 21/22"),
        );
        let want_sums: Vec<f64> = want.chunks(n).map(|r| r.iter().sum()).collect();
        assert_close(&read(&sums), &want_sums, 1e-4, 1e-4, &format!("sum {red}"));
        let profile = gpu.take_profile_blocking();
        let matmul = profile.launches.iter().find(|l| l.op == "matmul").unwrap();
        assert_eq!(matmul.variant.as_deref(), Some(mm));
        assert_eq!(matmul.reason.as_deref(), Some("named by the policy"));
        let sum = profile.launches.iter().find(|l| l.op == "sum").unwrap();
        assert_eq!(sum.variant.as_deref(), Some(red));
    }
}
