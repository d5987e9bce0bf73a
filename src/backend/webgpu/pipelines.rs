//! Built-in kernels: their WGSL files and a cache of compiled pipelines, one per
//! (file, entry point, override constants).

use std::collections::HashMap;
use std::sync::Mutex;

use crate::base::signal::lock;

/// Prelude prepended to every built-in shader file (see `shaders/README.md`).
const COMMON: &str = include_str!("../../../shaders/common.wgsl");
/// Activation functions, prepended to the files that apply one.
const ACTIVATION: &str = include_str!("../../../shaders/activation.wgsl");
/// The workgroup combination step of reduce.wgsl: a tree in workgroup memory, or subgroup
/// operations (where the adapter has them) with the tree for argmax.
const REDUCE_TREE: &str = include_str!("../../../shaders/reduce_tree.wgsl");
pub(crate) const REDUCE_WITH_TREE: [&str; 2] =
    [REDUCE_TREE, "fn workgroup_combine(acc: f32, ai: u32, lid: u32) -> Combined { return tree_combine(acc, ai, lid); }"];
/// Natively naga takes subgroup builtins without an `enable subgroups;` directive (and
/// rejects the directive); browsers require it.
const ENABLE_SUBGROUPS: &str = if cfg!(target_arch = "wasm32") { "enable subgroups;" } else { "" };
pub(crate) const REDUCE_WITH_SUBGROUPS: [&str; 3] = [ENABLE_SUBGROUPS, REDUCE_TREE, include_str!("../../../shaders/reduce_subgroups.wgsl")];

/// Tile loads of matmul.wgsl: one element at a time (any strides), or vec4 loads.
pub(crate) const MATMUL_LOADS_SCALAR: &str = include_str!("../../../shaders/matmul_loads_scalar.wgsl");
pub(crate) const MATMUL_LOADS_VEC4: &str = include_str!("../../../shaders/matmul_loads_vec4.wgsl");

/// Storage dtype of the kernels that read and write `array<STORE>` (elementwise, matmul):
/// f32, or f16 (adapters with `shader-f16`), loaded into f32 and stored rounded to nearest even.
pub(crate) const STORE_F32: &str = "alias STORE = f32;\nfn to_store(v: f32) -> STORE { return v; }";
pub(crate) const STORE_F16: &str = "enable f16;\nalias STORE = f16;\nfn to_store(v: f32) -> STORE { return f16(unpack2x16float(f32_to_f16(v)).x); }";

/// The shader files of the op families.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ShaderFile {
    Elementwise,
    Copy,
    Reduce,
    Softmax,
    Norm,
    Matmul,
    Indexing,
    Scan,
    Attention,
    Conv,
}

impl ShaderFile {
    fn source(self) -> &'static str {
        match self {
            ShaderFile::Elementwise => include_str!("../../../shaders/elementwise.wgsl"),
            ShaderFile::Copy => include_str!("../../../shaders/copy.wgsl"),
            ShaderFile::Reduce => include_str!("../../../shaders/reduce.wgsl"),
            ShaderFile::Softmax => include_str!("../../../shaders/softmax.wgsl"),
            ShaderFile::Norm => include_str!("../../../shaders/norm.wgsl"),
            ShaderFile::Indexing => include_str!("../../../shaders/indexing.wgsl"),
            ShaderFile::Scan => include_str!("../../../shaders/scan.wgsl"),
            ShaderFile::Attention => include_str!("../../../shaders/attention.wgsl"),
            ShaderFile::Conv => include_str!("../../../shaders/conv.wgsl"),
            ShaderFile::Matmul => include_str!("../../../shaders/matmul.wgsl"),
        }
    }

    /// The full WGSL: the variant's declarations (`enable` directives must come first), the
    /// prelude, the shared parts the file needs, then the file.
    fn full_source(self, variant: &[&str]) -> String {
        let activation = if matches!(self, ShaderFile::Elementwise | ShaderFile::Norm | ShaderFile::Matmul | ShaderFile::Conv) { ACTIVATION } else { "" };
        format!("{}\n{COMMON}\n{activation}\n{}", variant.join("\n"), self.source())
    }
}

/// One specialised built-in kernel.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Builtin {
    pub file: ShaderFile,
    pub entry: &'static str,
    /// Override constants (name, value); values are small integers or booleans.
    pub constants: Vec<(&'static str, u32)>,
    /// WGSL declarations prepended to the file: a storage dtype ([`STORE_F32`] /
    /// [`STORE_F16`]), a matmul tile configuration; empty for most kernels.
    pub variant: Vec<&'static str>,
}

#[derive(Default)]
pub(crate) struct PipelineCache {
    modules: Mutex<HashMap<(ShaderFile, Vec<&'static str>), wgpu::ShaderModule>>,
    pipelines: Mutex<HashMap<Builtin, wgpu::ComputePipeline>>,
}

impl PipelineCache {
    pub fn get(&self, device: &wgpu::Device, kernel: Builtin) -> wgpu::ComputePipeline {
        if let Some(p) = lock(&self.pipelines).get(&kernel) {
            return p.clone();
        }
        let module = lock(&self.modules)
            .entry((kernel.file, kernel.variant.clone()))
            .or_insert_with(|| {
                let source = kernel.file.full_source(&kernel.variant);
                device.create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some(kernel.entry),
                    source: wgpu::ShaderSource::Wgsl(source.into()),
                })
            })
            .clone();
        let constants: Vec<(&str, f64)> = kernel.constants.iter().map(|&(k, v)| (k, f64::from(v))).collect();
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(kernel.entry),
            layout: None,
            module: &module,
            entry_point: Some(kernel.entry),
            compilation_options: wgpu::PipelineCompilationOptions { constants: &constants, zero_initialize_workgroup_memory: false },
            cache: None,
        });
        lock(&self.pipelines).insert(kernel, pipeline.clone());
        pipeline
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_shader_validates() {
        let files = [ShaderFile::Copy, ShaderFile::Softmax, ShaderFile::Norm, ShaderFile::Indexing, ShaderFile::Scan, ShaderFile::Attention, ShaderFile::Conv];
        let mut cases: Vec<(ShaderFile, Vec<&str>)> = files.into_iter().map(|f| (f, vec![])).collect();
        cases.push((ShaderFile::Reduce, REDUCE_WITH_TREE.to_vec()));
        cases.push((ShaderFile::Reduce, REDUCE_WITH_SUBGROUPS.to_vec()));
        for store in [STORE_F32, STORE_F16] {
            cases.push((ShaderFile::Elementwise, vec![store]));
            for loads in [MATMUL_LOADS_SCALAR, MATMUL_LOADS_VEC4] {
                cases.extend(super::super::ops::MATMUL_VARIANTS.iter().map(|v| (ShaderFile::Matmul, vec![store, v.constants, loads])));
            }
        }
        for (file, variant) in cases {
            let source = file.full_source(&variant);
            let module = naga::front::wgsl::parse_str(&source).unwrap_or_else(|e| panic!("{file:?}: {}", e.emit_to_string(&source)));
            naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all())
                .validate(&module)
                .unwrap_or_else(|e| panic!("{file:?}: {}", e.emit_to_string(&source)));
        }
    }
}
