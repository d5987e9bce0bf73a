//! The layers' import rules, checked on the source: a layer names only itself and the layers
//! below it (see ARCHITECTURE.md). Paths are read from `use crate::…` and `crate::…`
//! references; names the crate root re-exports (`crate::Error`) count as the module they
//! come from.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Each layer (a folder of `src/`) and the top-level modules it may name, from the bottom up.
/// The JavaScript API (`wasm/`) over everything is not listed: it may name any layer.
const RULES: &[(&str, &[&str])] = &[
    ("base", &["base"]),
    ("hal", &["hal", "base"]),
    ("runtime", &["runtime", "hal", "base"]),
    ("dispatch", &["dispatch", "runtime", "hal", "base"]),
    ("ops", &["ops", "dispatch", "runtime", "hal", "base"]),
    ("api", &["api", "ops", "dispatch", "runtime", "hal", "base"]),
    // The model runner: the op API, never a backend.
    (
        "onnx",
        &["onnx", "api", "ops", "dispatch", "runtime", "base"],
    ),
];

/// Every `.rs` file under `dir`.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().map(Result::unwrap) {
        let path = entry.path();
        if path.is_dir() {
            out.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}

/// The crate root's re-exports: name -> the top-level module it comes from (following
/// re-exports of re-exports, such as `pub use kernel::Kernel` after `pub use api::kernel`).
fn root_names(lib: &str) -> BTreeMap<String, String> {
    let mut names = direct_root_names(lib);
    for _ in 0..4 {
        let resolved: BTreeMap<String, String> = names
            .iter()
            .map(|(n, m)| {
                (
                    n.clone(),
                    if m != n {
                        names.get(m).cloned().unwrap_or(m.clone())
                    } else {
                        m.clone()
                    },
                )
            })
            .collect();
        names = resolved;
    }
    names
}

/// The crate root's re-exports, one step: name -> the first segment of its path.
fn direct_root_names(lib: &str) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    // Whole statements, which rustfmt may spread over several lines.
    let code: String = lib
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join(" ");
    for statement in code
        .split(';')
        .map(str::trim)
        .filter(|l| l.starts_with("pub use "))
    {
        let path: String = statement
            .trim_start_matches("pub use ")
            .split_whitespace()
            .collect();
        let path = path.as_str();
        let module = path.split("::").next().unwrap().to_string();
        let tail = path.rsplit("::").next().unwrap();
        for name in tail.trim_matches(|c| c == '{' || c == '}').split(',') {
            names.insert(name.trim().to_string(), module.clone());
        }
        if let Some((head, list)) = path.split_once("::{") {
            for name in list.trim_end_matches('}').split(',') {
                let name = name.trim().rsplit("::").next().unwrap().to_string();
                names.insert(name, head.split("::").next().unwrap().to_string());
            }
        }
    }
    names
}

/// The top-level modules the code of `source` names through `crate::` (comments, where doc
/// links may point anywhere, are skipped).
fn named_modules(source: &str, roots: &BTreeMap<String, String>) -> Vec<String> {
    let code: String = source
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = Vec::new();
    for (i, _) in code.match_indices("crate::") {
        let source = &code;
        let rest = &source[i + "crate::".len()..];
        let first: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if !first.is_empty() {
            out.push(roots.get(&first).cloned().unwrap_or(first));
            continue;
        }
        // `crate::{A, b::C}`: each item.
        let Some(list) = rest
            .strip_prefix('{')
            .and_then(|r| r.split_once('}'))
            .map(|(l, _)| l)
        else {
            continue;
        };
        for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let head = item.split("::").next().unwrap().trim();
            out.push(roots.get(head).cloned().unwrap_or(head.to_string()));
        }
    }
    out
}

#[test]
fn each_layer_names_only_the_layers_below_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let roots = root_names(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
    let mut broken = Vec::new();
    for &(layer, allowed) in RULES {
        let path = src.join(layer);
        let files = if path.is_dir() {
            sources(&path)
        } else {
            vec![path]
        };
        assert!(!files.is_empty(), "no sources under src/{layer}");
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            for module in named_modules(&text, &roots) {
                if !allowed.contains(&module.as_str()) {
                    broken.push(format!(
                        "{} names crate::{module}; {layer} may name only {allowed:?}",
                        file.display()
                    ));
                }
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn the_checker_sees_root_re_exports_and_lists() {
    let roots = root_names("pub use base::error::{Error, Result};\npub use runtime::queue::Queue;\npub use base::{layout, text};\npub use api::kernel;\npub use kernel::{Kernel, Scalar};");
    assert_eq!(roots["Error"], "base");
    assert_eq!(roots["Queue"], "runtime");
    assert_eq!(roots["Kernel"], "api");
    let named = named_modules("use crate::{Error, Queue};\nuse crate::hal::Block;\n/// [`crate::Device`]\nlet x = crate::base::id::next_id();", &roots);
    assert_eq!(named, ["base", "runtime", "hal", "base"]);
}
