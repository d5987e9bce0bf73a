//! Policies: JSON round trips, errors that name the key, and devices opened under a policy
//! (backend order, precision, pool settings, kernel variants).
#![cfg(not(target_arch = "wasm32"))]

use unicompute::{BackendKind, Device, MatmulPrecision, Policy, Tensor};

#[test]
fn policies_round_trip_through_json_and_files() {
    let default = Policy::default();
    assert_eq!(Policy::from_json(&default.to_json()).unwrap(), default);
    assert_eq!(Policy::from_json("{}").unwrap(), default, "every key has a default");
    let custom = Policy::from_json(r#"{"backends": ["cpu", "webgpu"], "precision": "tf32", "variants": {"matmul": "auto"}, "pool": {"cache_limit_bytes": 1024}}"#).unwrap();
    assert_eq!(custom.backends, vec![BackendKind::Cpu, BackendKind::WebGpu]);
    assert_eq!(custom.precision, MatmulPrecision::Tf32);
    assert_eq!(custom.pool.cache_limit_bytes, 1024);
    assert_eq!(custom.variant("matmul"), None, "auto names no variant");
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
    assert!(e.contains("f8") && e.contains("tf32"), "{e}");
    assert!(err(r#"{"backends": ["quantum"]}"#).contains("quantum"));
    assert!(err(r#"{"backends": []}"#).contains("`backends` is empty"));
    assert!(err(r#"{"backends": ["cpu", "cpu"]}"#).contains("twice"));
    assert!(err(r#"{"variants": {"conv": "x"}}"#).contains("`variants.conv`"));
    assert!(err("{").contains("EOF"));
    assert!(Policy::load("/nonexistent/policy.json").unwrap_err().to_string().contains("/nonexistent/policy.json"));
}

#[test]
fn devices_follow_the_policy() {
    let cpu_first = Policy::from_json(r#"{"backends": ["cpu", "webgpu"], "pool": {"cache_limit_bytes": 0}}"#).unwrap();
    let d = Device::open_with_policy(&cpu_first).unwrap();
    assert_eq!(d.backend(), BackendKind::Cpu);
    assert_eq!(d.policy(), &cpu_first);
    // A zero cache limit keeps nothing for reuse.
    drop(Tensor::from_slice(&d, &[1.0f32; 1000], &[1000]).unwrap());
    assert_eq!(d.memory_stats().bytes_cached, 0);

    // A variant the backend does not have is an error naming the key and the choices.
    let wrong = Policy::from_json(r#"{"backends": ["cpu"], "variants": {"matmul": "tile64"}}"#).unwrap();
    let e = Device::open_with_policy(&wrong).unwrap_err();
    assert!(e.to_string().contains("`variants.matmul`") && e.to_string().contains("sgemm"), "{e}");

    // On webgpu, a named variant runs (and gives the same numbers).
    if let Ok(gpu) = Device::open_with_policy(&Policy::from_json(r#"{"backends": ["webgpu"], "variants": {"matmul": "tile32"}}"#).unwrap()) {
        assert_eq!(gpu.backend(), BackendKind::WebGpu);
        let a = Tensor::from_slice(&gpu, &[1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
        assert_eq!(a.matmul(&a).unwrap().to_vec_blocking::<f32>().unwrap(), vec![7.0, 10.0, 15.0, 22.0]);
    }
}
