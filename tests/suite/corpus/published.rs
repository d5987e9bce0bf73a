//! The published kernels of the corpus: read at test time from the packages that
//! `scripts/corpus.sh` downloads into `.corpus/` (never committed), as `kernels.tsv` lists
//! them, with only the adaptation that file records applied.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Overrides the folder the packages were unpacked into (`.corpus/` at the repository root).
pub const CORPUS_DIR_ENV: &str = "UNICOMPUTE_CORPUS_DIR";

const PACKAGES: &str = include_str!("packages.tsv");
const KERNELS: &str = include_str!("kernels.tsv");

/// The rows of a tab-separated manifest, comments and blank lines left out.
fn rows(manifest: &str) -> impl Iterator<Item = Vec<&str>> {
    manifest
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split('\t').collect())
}

/// Every kernel id of `kernels.tsv`, in order.
pub fn ids() -> Vec<String> {
    rows(KERNELS).map(|r| r[0].to_string()).collect()
}

/// One published kernel, ready to compile.
pub struct Published {
    /// The id in `kernels.tsv`.
    pub id: String,
    /// The WGSL after the recorded adaptation.
    pub source: String,
    /// The entry point.
    pub entry: String,
}

/// The unpacked and checked folder of `name@version`; panics, saying how to get it, when
/// `scripts/corpus.sh` has not run (or ran for other pins).
fn package_dir(package: &str) -> PathBuf {
    let (name, version) = package.split_once('@').expect("package as name@version");
    let row = rows(PACKAGES)
        .find(|r| r[1] == name && r[2] == version)
        .unwrap_or_else(|| panic!("{package} is not in tests/suite/corpus/packages.tsv"));
    let root = std::env::var_os(CORPUS_DIR_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".corpus"));
    let dir = root.join(format!("{name}-{version}"));
    let stamp = std::fs::read_to_string(dir.join(".verified")).unwrap_or_default();
    assert_eq!(
        stamp.trim(),
        row[3],
        "{package} is not downloaded and checked in {}: run scripts/corpus.sh first \
         (scripts/test.sh does)",
        root.display()
    );
    dir
}

/// The kernel `id` of `kernels.tsv`, read from its package and adapted as recorded.
pub fn kernel(id: &str) -> Published {
    let row = rows(KERNELS)
        .find(|r| r[0] == id)
        .unwrap_or_else(|| panic!("{id} is not in tests/suite/corpus/kernels.tsv"));
    let dir = package_dir(row[1]);
    let file = dir.join(row[2]);
    let text = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("{id}: reading {}: {e}", file.display()));
    let source = match row[4] {
        "none" => text,
        "wgpu_sort" => wgpu_sort_constants(&text),
        "wgpu_core_common" => {
            let common = file.with_file_name("common.wgsl");
            let common = std::fs::read_to_string(&common)
                .unwrap_or_else(|e| panic!("{id}: reading {}: {e}", common.display()));
            format!("{common}\n{text}")
        }
        vello if vello.starts_with("vello") => {
            let defines = vello
                .split(':')
                .skip(1)
                .flat_map(|d| d.split(','))
                .collect();
            vello_preprocess(&text, &dir.join("shader/shared"), &defines)
        }
        other => panic!("{id}: unknown adaptation {other}"),
    };
    Published {
        id: id.to_string(),
        source,
        entry: row[3].to_string(),
    }
}

/// vello_shaders' preprocessing as its build applies it: `#import NAME` pastes
/// `shared/NAME.wgsl` (itself preprocessed), `#ifdef`, `#ifndef`, `#else` and `#endif` keep or
/// drop lines by `defines`. Every other line is kept as it is.
fn vello_preprocess(text: &str, shared: &Path, defines: &HashSet<&str>) -> String {
    let mut out = String::new();
    let mut active: Vec<bool> = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        let on = active.iter().all(|&a| a);
        if let Some(def) = t.strip_prefix("#ifdef") {
            active.push(defines.contains(def.trim()));
        } else if let Some(def) = t.strip_prefix("#ifndef") {
            active.push(!defines.contains(def.trim()));
        } else if t.starts_with("#else") {
            let last = active.last_mut().expect("#else without #ifdef");
            *last = !*last;
        } else if t.starts_with("#endif") {
            active.pop().expect("#endif without #ifdef");
        } else if let Some(name) = t.strip_prefix("#import") {
            if on {
                let path = shared.join(format!("{}.wgsl", name.trim()));
                let import = std::fs::read_to_string(&path)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                out.push_str(&vello_preprocess(&import, shared, defines));
            }
        } else if on {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// wgpu_sort's one subgroup-size parameter: 1, the first size its own `utils` try and the only
/// one that assumes no lockstep between invocations (its "match" reads neighbours' workgroup
/// slots without a barrier).
pub const WGPU_SORT_SG_SIZE: u32 = 1;

/// The constant declarations `GPUSorter::new` of wgpu_sort 0.1.0 prepends (histogram and
/// scatter workgroups of 256, prefix of 128, 8-bit digits of 32-bit keys, 15 rows a block), and
/// its placeholders replaced, as that function does.
fn wgpu_sort_constants(text: &str) -> String {
    let (radix, rows, scatter_wg) = (256u32, 15u32, 256u32);
    let sweep0 = radix / WGPU_SORT_SG_SIZE;
    let sweep1 = sweep0 / WGPU_SORT_SG_SIZE;
    let header = format!(
        "const histogram_sg_size: u32 = {WGPU_SORT_SG_SIZE}u;\n\
         const histogram_wg_size: u32 = 256u;\n\
         const rs_radix_log2: u32 = 8u;\n\
         const rs_radix_size: u32 = {radix}u;\n\
         const rs_keyval_size: u32 = 4u;\n\
         const rs_histogram_block_rows: u32 = {rows}u;\n\
         const rs_scatter_block_rows: u32 = {rows}u;\n\
         const rs_mem_dwords: u32 = {}u;\n\
         const rs_mem_sweep_0_offset: u32 = 0u;\n\
         const rs_mem_sweep_1_offset: u32 = {sweep0}u;\n\
         const rs_mem_sweep_2_offset: u32 = {}u;\n",
        radix + rows * scatter_wg,
        sweep0 + sweep1,
    );
    (header + text)
        .replace("{histogram_wg_size}", "256")
        .replace("{prefix_wg_size}", "128")
        .replace("{scatter_wg_size}", "256")
}
