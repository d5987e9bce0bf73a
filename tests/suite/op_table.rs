//! What the op tables (`src/ops/elementwise/table.rs`, `reduce_ops!`) do not generate is held
//! to them here: the TypeScript method declarations, the tunable ops of the TypeScript
//! `Policy`, and README.md's support matrix.

use unicompute::{BinaryOp, ReduceOp, UnaryOp, TUNABLE_OPS};

/// The text of `path` below the crate root.
fn source(path: &str) -> String {
    let full = format!("{}/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("reading {full}: {e}"))
}

/// Every op of the tables has its `Tensor` method declared for TypeScript: in
/// `npm/index.d.ts`, or by wasm-bindgen from a method of `src/wasm/tensor.rs`.
#[test]
fn typescript_declares_every_op_method() {
    let (dts, wasm) = (source("npm/index.d.ts"), source("src/wasm/tensor.rs"));
    let declared = |method: &str, rust: &str| {
        let in_dts = |open: char| dts.contains(&format!("\n    {method}{open}"));
        in_dts('(') || in_dts('<') || wasm.contains(&format!("pub fn {rust}(&self"))
    };
    let unary = UnaryOp::ALL.map(|op| (op.js_name(), op.name()));
    let binary = BinaryOp::ALL.map(|op| (op.name(), op.name()));
    let reduce = ReduceOp::ALL.map(|op| (op.name(), op.name()));
    for (method, rust) in unary.into_iter().chain(binary).chain(reduce) {
        assert!(
            declared(method, rust),
            "npm/index.d.ts declares no `{method}(` in `interface Tensor`: add it beside the \
             other ops of its family"
        );
    }
}

/// The TypeScript `Policy` names the tunable ops' variants, and only those.
#[test]
fn typescript_policy_names_the_tunable_ops() {
    let types = source("src/wasm/types.rs");
    let line = types
        .lines()
        .find(|l| l.trim_start().starts_with("variants?:"))
        .expect("src/wasm/types.rs declares Policy's `variants`");
    let want: Vec<String> = TUNABLE_OPS
        .iter()
        .map(|op| format!("{op}?: string"))
        .collect();
    assert_eq!(
        line.trim(),
        format!("variants?: {{ {} }};", want.join("; ")),
        "Policy's `variants` in src/wasm/types.rs must name TUNABLE_OPS"
    );
}

/// README.md's support matrix is the one the op tables give.
#[test]
fn readme_support_matrix_is_generated() {
    let readme = source("README.md");
    let (begin, end) = (
        "<!-- support-matrix:begin -->\n",
        "<!-- support-matrix:end -->",
    );
    let start = readme
        .find(begin)
        .expect("README.md has <!-- support-matrix:begin -->")
        + begin.len();
    let stop = readme[start..]
        .find(end)
        .expect("README.md has <!-- support-matrix:end -->");
    assert_eq!(
        &readme[start..start + stop],
        unicompute::ops::support_matrix(),
        "README.md's support matrix differs from the op tables: replace the lines between its \
         support-matrix markers with the output of `cargo run --release -- ops`"
    );
}
