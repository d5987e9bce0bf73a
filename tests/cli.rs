//! The command-line tool: `info` lists devices, `bench` prints rates next to ceilings.
#![cfg(not(target_arch = "wasm32"))]

use std::process::Command;

fn unicompute(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_unicompute")).args(args).output().expect("the CLI starts");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn info_lists_the_cpu_and_every_adapter() {
    let (ok, stdout, stderr) = unicompute(&["info"]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("cpu"), "{stdout}");
    for d in unicompute::devices() {
        assert!(stdout.contains(&d.name), "`{}` missing from:\n{stdout}", d.name);
    }
}

#[test]
fn bench_reports_rates_and_ceilings_as_json() {
    let (ok, stdout, stderr) = unicompute(&["bench", "--backend", "cpu", "--op", "add", "--size", "65536", "--reps", "3", "--json"]);
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
    let path = std::env::temp_dir().join(format!("unicompute-cli-policy-{}.json", std::process::id()));
    std::fs::write(&path, r#"{"backends": ["cpu"]}"#).unwrap();
    let p = path.to_str().unwrap();
    let (ok, stdout, stderr) = unicompute(&["bench", "--policy", p, "--op", "add", "--size", "4096", "--reps", "2", "--json"]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("\"backend\": \"cpu\""), "{stdout}");
    std::fs::write(&path, r#"{"backends": ["cpu"], "colour": "red"}"#).unwrap();
    let (ok, _, stderr) = unicompute(&["bench", "--policy", p]);
    assert!(!ok && stderr.contains("unknown field `colour`"), "{stderr}");
    let _ = std::fs::remove_file(&path);
}
