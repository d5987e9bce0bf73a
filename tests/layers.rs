//! The layers' import rules, checked on the source: a layer names only itself and the layers
//! below it (see ARCHITECTURE.md). Paths are read from `use crate::…` and `crate::…`
//! references; names the crate root re-exports (`crate::Error`) count as the module they
//! come from. Calls count too: a layer may not call an inherent method of the public types
//! (`Tensor`, `Device`, …) that a layer above it defines, since Rust lets those methods live
//! in any module.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Each layer (a folder of `src/`) and the top-level modules it may name, from the bottom up.
/// The JavaScript API (`wasm/`) over everything is not listed: it may name any layer.
const RULES: &[(&str, &[&str])] = &[
    ("base", &["base"]),
    ("hal", &["hal", "base"]),
    ("runtime", &["runtime", "hal", "base"]),
    ("choice", &["choice", "runtime", "hal", "base"]),
    ("ops", &["ops", "choice", "runtime", "hal", "base"]),
    ("api", &["api", "ops", "choice", "runtime", "hal", "base"]),
    // The model runner: the op API, never a backend.
    ("onnx", &["onnx", "api", "ops", "choice", "runtime", "base"]),
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

/// The public types whose inherent methods lie in several layers (`Tensor`'s ops in `ops/`,
/// `Device::open` in `api/`), so that a call can reach up a layer without naming it.
const SPREAD_TYPES: &[&str] = &["Tensor", "Device", "Queue", "Buffer", "Graph", "Fence"];

/// Method names that the standard library's and dependencies' types have too: a `.len()` call
/// cannot be told from `Buffer::len` without types, so these are not checked by name.
const SHARED_NAMES: &[&str] = &[
    "len", "is_empty", "to_vec", "sum", "cast", "concat", "finish", "slice",
];

/// `source` without comments, string and character literals, and `#[cfg(test)]` modules
/// (tests inside the crate may use any layer).
fn code_only(source: &str) -> String {
    let mut out = Vec::new();
    let mut skip_until: Option<String> = None;
    let mut lines = source.lines().peekable();
    while let Some(line) = lines.next() {
        if let Some(end) = &skip_until {
            if line == end {
                skip_until = None;
            }
            continue;
        }
        let trimmed = line.trim_start();
        if trimmed.starts_with("//") {
            continue;
        }
        let is_test_cfg = trimmed.starts_with("#[cfg(") && trimmed.contains("test");
        if is_test_cfg
            && lines
                .peek()
                .is_some_and(|n| n.trim_start().starts_with("mod "))
        {
            let indent = &line[..line.len() - trimmed.len()];
            if !lines.next().unwrap().trim_end().ends_with(';') {
                skip_until = Some(format!("{indent}}}"));
            }
            continue;
        }
        out.push(without_literals(line));
    }
    out.join("\n")
}

/// `line` with its string and character literals emptied.
fn without_literals(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let (mut out, mut i) = (String::new(), 0);
    while i < chars.len() {
        let c = chars[i];
        out.push(c);
        i += 1;
        let close = match c {
            '"' => '"',
            // A character literal ('x', '\n'), not a lifetime ('a).
            '\'' if chars.get(i) == Some(&'\\') || chars.get(i + 1) == Some(&'\'') => '\'',
            _ => continue,
        };
        while i < chars.len() {
            let d = chars[i];
            i += if d == '\\' { 2 } else { 1 };
            if d == close {
                out.push(d);
                break;
            }
        }
    }
    out
}

/// The inherent methods of [`SPREAD_TYPES`] that `code` defines: (type, method) pairs, read
/// from `impl Type {` blocks that end with a `}` in the first column.
fn spread_methods(code: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in code.lines() {
        if line.starts_with('}') {
            current = None;
        } else if let Some(rest) = line.strip_prefix("impl") {
            let rest = rest.trim_start_matches(|c: char| c != ' ').trim();
            let ty: String = rest.chars().take_while(|c| c.is_alphanumeric()).collect();
            let inherent = !line.contains(" for ") && SPREAD_TYPES.contains(&ty.as_str());
            current = inherent.then_some(ty);
        } else if let (Some(ty), Some(name)) = (&current, fn_name(line, "    ")) {
            out.push((ty.clone(), name));
        }
    }
    out
}

/// The name of the function `line` declares at `indent`, if it declares one.
fn fn_name(line: &str, indent: &str) -> Option<String> {
    let rest = line.strip_prefix(indent)?;
    if rest.starts_with(' ') {
        return None;
    }
    let at = rest.find("fn ")?;
    let before = &rest[..at];
    let words_ok = before
        .split_whitespace()
        .all(|w| w.starts_with("pub") || ["async", "const", "unsafe"].contains(&w));
    let name: String = rest[at + 3..]
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (words_ok && !name.is_empty()).then_some(name)
}

/// The names of the functions of `code` that take `self` (methods of any type).
fn self_methods(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in code.match_indices("fn ") {
        let rest = &code[i + 3..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let Some(open) = rest.find('(') else { continue };
        let first = rest[open + 1..].trim_start().trim_start_matches(['&', ' ']);
        let first = first.trim_start_matches("mut ").trim_start();
        let first = if first.starts_with('\'') {
            first
                .split_once(' ')
                .map_or("", |(_, r)| r)
                .trim_start_matches("mut ")
        } else {
            first
        };
        if first.starts_with("self") && !name.is_empty() {
            out.push(name);
        }
    }
    out
}

/// The calls in `code` of a method defined only above: `Type::name(` where a layer outside
/// `allowed` defines `name` on `Type`, and `.name(` where only such layers define a method
/// named `name` (of a [`SPREAD_TYPES`] type, with no method of that name in `allowed`).
fn calls_up(
    code: &str,
    allowed: &[&str],
    defined: &[(String, String, String)],
    methods: &BTreeMap<String, Vec<String>>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in code.match_indices('(') {
        let head = &code[..i];
        let name: String = head
            .chars()
            .rev()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        let before = &head[..head.len() - name.len()];
        let ty = before.strip_suffix("::").map(|b| {
            let t: String = b
                .chars()
                .rev()
                .take_while(|c| c.is_alphanumeric())
                .collect();
            t.chars().rev().collect::<String>()
        });
        if name.is_empty() || (ty.is_none() && !before.ends_with('.')) {
            continue;
        }
        let above: Vec<&(String, String, String)> = defined
            .iter()
            .filter(|(t, n, layer)| {
                *n == name
                    && !allowed.contains(&layer.as_str())
                    && ty.as_ref().is_none_or(|ty| ty == t)
            })
            .collect();
        let here = methods
            .get(&name)
            .is_some_and(|layers| layers.iter().any(|l| allowed.contains(&l.as_str())));
        let unknown_receiver = ty.is_none() && (here || SHARED_NAMES.contains(&name.as_str()));
        if let Some((t, n, layer)) = above.first().filter(|_| !unknown_receiver) {
            out.push(format!("calls {t}::{n}, which {layer} defines"));
        }
    }
    out
}

/// Every layer's files with their code (see [`code_only`]).
fn layer_code(src: &Path) -> Vec<(&'static str, &'static [&'static str], PathBuf, String)> {
    let mut out = Vec::new();
    for &(layer, allowed) in RULES {
        let path = src.join(layer);
        for file in sources(&path) {
            let code = code_only(&std::fs::read_to_string(&file).unwrap());
            out.push((layer, allowed, file, code));
        }
    }
    out
}

#[test]
fn no_layer_calls_a_method_defined_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = layer_code(&src);
    let mut defined = Vec::new();
    let mut methods: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (layer, _, _, code) in &files {
        // The model runner's own types (`onnx::Graph`) share names with the runtime's.
        let own_types = *layer == "onnx";
        for (ty, name) in spread_methods(code).into_iter().filter(|_| !own_types) {
            defined.push((ty, name, layer.to_string()));
        }
        for name in self_methods(code) {
            methods.entry(name).or_default().push(layer.to_string());
        }
    }
    let mut broken = Vec::new();
    for (layer, allowed, file, code) in &files {
        for call in calls_up(code, allowed, &defined, &methods) {
            broken.push(format!(
                "{} {call}; {layer} may call only {allowed:?}",
                file.display()
            ));
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn the_checker_sees_calls_of_methods_defined_above() {
    let runtime = "impl Tensor {\n    pub fn reshape(&self) -> Tensor {\n        self.contiguous()\n    }\n}\n";
    let ops = "impl Tensor {\n    pub fn contiguous(&self) -> Tensor {\n        todo()\n    }\n}\n";
    let mut defined = Vec::new();
    let mut methods: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (layer, code) in [("runtime", runtime), ("ops", ops)] {
        for (ty, name) in spread_methods(&code_only(code)) {
            defined.push((ty, name, layer.to_string()));
        }
        for name in self_methods(code) {
            methods.entry(name).or_default().push(layer.to_string());
        }
    }
    let allowed = ["runtime", "hal", "base"];
    let up = calls_up(&code_only(runtime), &allowed, &defined, &methods);
    assert_eq!(up, ["calls Tensor::contiguous, which ops defines"]);
    // Not in a string, a comment or a test module, nor through another type's path.
    let quiet = "// x.contiguous()\nlet s = \"x.contiguous()\";\nLayout::contiguous(a);\n#[cfg(test)]\nmod t {\n    x.contiguous();\n}\n";
    assert!(calls_up(&code_only(quiet), &allowed, &defined, &methods).is_empty());
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
