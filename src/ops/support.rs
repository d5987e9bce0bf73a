//! The support matrix: which dtypes each op family of the op tables takes on each backend,
//! generated from the tables (`elementwise/table.rs`, `reduce_ops!`). README.md holds it
//! between `<!-- support-matrix:begin -->` and `<!-- support-matrix:end -->`, which a test
//! compares with [`support_matrix`]; `unicompute ops --markdown` prints it. The rows are
//! public ([`support_rows`]), so that a test can hold each backend to them.

use super::{BinaryOp, ReduceOp, UnaryOp};
use crate::{BackendKind, DType};

/// One row of the support matrix: an op family and the dtypes its ops take.
#[derive(Debug, Clone)]
pub struct SupportRow {
    /// The family's name (`unary`, `matmul`, ...).
    pub name: &'static str,
    /// Its ops' names.
    pub ops: Vec<&'static str>,
    /// The dtypes every backend takes (16-bit floats computed in f32).
    dtypes: &'static [DType],
    /// Whether i64 needs `shader-int64` on webgpu (arithmetic does; moving data does not).
    int64_math: bool,
}

impl SupportRow {
    /// Whether the family's ops take `dtype` on a device of `backend` whose
    /// [`Features::int64`](crate::Features::int64) is `int64`.
    pub fn takes(&self, dtype: DType, backend: BackendKind, int64: bool) -> bool {
        let needs_int64 = dtype == DType::I64 && self.int64_math && backend == BackendKind::WebGpu;
        self.dtypes.contains(&dtype) && (int64 || !needs_int64)
    }
}

/// The float dtypes: f16 and bf16 stored in 16 bits and computed in f32.
const FLOATS: &[DType] = &[DType::F32, DType::F16, DType::BF16];
/// Floats and the integer dtypes.
const NUMBERS: &[DType] = &[
    DType::F32,
    DType::F16,
    DType::BF16,
    DType::I32,
    DType::U32,
    DType::I64,
];
/// Every dtype but bool.
const ALL_BUT_BOOL: &[DType] = &[
    DType::F32,
    DType::F16,
    DType::BF16,
    DType::I32,
    DType::U32,
    DType::I64,
    DType::U8,
    DType::I8,
];
/// Every dtype.
const ALL: &[DType] = &[
    DType::F32,
    DType::F16,
    DType::BF16,
    DType::I32,
    DType::U32,
    DType::I64,
    DType::U8,
    DType::I8,
    DType::Bool,
];

/// The names of the binary ops, the logic ones (bool results) if `logic`.
fn binary_names(logic: bool) -> Vec<&'static str> {
    let ops = BinaryOp::ALL
        .into_iter()
        .filter(|op| op.is_logic() == logic);
    ops.map(BinaryOp::name).collect()
}

/// The names of the unary ops, and the float tests.
fn unary_names() -> Vec<&'static str> {
    let mut names = UnaryOp::ALL.map(UnaryOp::name).to_vec();
    names.extend(["isnan", "isinf"]);
    names
}

/// The names of the comparisons and logical ops.
fn compare_names() -> Vec<&'static str> {
    let mut names = binary_names(true);
    names.push("logical_not");
    names
}

/// The rows of the support matrix: every op family of the op tables.
pub fn support_rows() -> Vec<SupportRow> {
    vec![
        family("unary", unary_names(), FLOATS, true),
        family("binary", binary_names(false), ALL_BUT_BOOL, true),
        family("compare", compare_names(), ALL, false),
        family(
            "reduce",
            ReduceOp::ALL.map(ReduceOp::name).to_vec(),
            ALL,
            true,
        ),
        family("scan", vec!["argmin", "cumsum"], NUMBERS, true),
        family("topk", vec!["topk"], ALL, true),
        family("softmax", vec!["softmax", "log_softmax"], FLOATS, true),
        family("norm", vec!["layer_norm", "rms_norm"], FLOATS, true),
        family("matmul", vec!["matmul", "linear"], FLOATS, true),
        family("attention", vec!["attention"], FLOATS, true),
        family(
            "conv",
            vec!["conv2d", "conv_transpose2d", "max_pool2d", "avg_pool2d"],
            FLOATS,
            true,
        ),
        family(
            "constructors",
            vec!["full", "arange", "random_uniform"],
            ALL,
            false,
        ),
        family(
            "data movement",
            vec!["contiguous", "concat", "flip", "gather", "where"],
            ALL,
            false,
        ),
        family("scatter", vec!["scatter_elements", "scatter_nd"], ALL, true),
        family("cast", vec!["cast"], ALL, false),
        family("chain", vec!["chain"], FLOATS, false),
    ]
}

/// A row of the matrix.
fn family(
    name: &'static str,
    ops: Vec<&'static str>,
    dtypes: &'static [DType],
    int64_math: bool,
) -> SupportRow {
    SupportRow {
        name,
        ops,
        dtypes,
        int64_math,
    }
}

/// The dtypes of `family` on `backend`, as the matrix writes them: i64 on webgpu only where
/// the adapter has `shader-int64` (browsers have not); every dtype as `all`, every one but
/// bool as `all but bool`.
fn cell(family: &SupportRow, backend: BackendKind) -> String {
    let int64 = backend == BackendKind::WebGpu && family.int64_math;
    let mark = if int64 { "¹" } else { "" };
    if family.dtypes == ALL {
        return format!("all{mark}");
    }
    if family.dtypes == ALL_BUT_BOOL {
        return format!("all but bool{mark}");
    }
    let name = |d: &DType| match d {
        DType::I64 if int64 => "i64¹".to_string(),
        _ => d.to_string(),
    };
    family.dtypes.iter().map(name).collect::<Vec<_>>().join(" ")
}

/// The support matrix as a Markdown table (op family × backend × dtype), with its notes:
/// the text README.md holds between its `support-matrix` markers.
pub fn support_matrix() -> String {
    let backends = [BackendKind::Cpu, BackendKind::WebGpu, BackendKind::Cuda];
    let names: Vec<&str> = backends.iter().map(|b| b.name()).collect();
    let mut text = format!(
        "| family | ops | {} |\n|{}\n",
        names.join(" | "),
        " --- |".repeat(5)
    );
    for f in support_rows() {
        let ops: Vec<String> = f.ops.iter().map(|op| format!("`{op}`")).collect();
        let cells: Vec<String> = backends.iter().map(|&b| cell(&f, b)).collect();
        text += &format!(
            "| {} | {} | {} |\n",
            f.name,
            ops.join(" "),
            cells.join(" | ")
        );
    }
    let all: Vec<&str> = ALL.iter().map(|d| d.name()).collect();
    text += &format!("\nall: {}. ", all.join(" "));
    text += "f16 and bf16 are computed in f32, \
             u8 i8 bool (a byte each) in u32 / i32; integer arithmetic wraps, integer means \
             are f32; comparisons give bool. ¹ i64 where the adapter has `shader-int64` \
             (browsers have not).\n";
    text
}
