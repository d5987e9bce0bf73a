//! Op kernels: the WGSL sources the ops declare and a cache of compiled pipelines,
//! one per (file, generated code, entry point, override constants).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::base::signal::lock;

/// A WGSL file of op kernels.
pub(crate) type WgslSource = crate::hal::ProgramSource;

/// One specialised op kernel.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Specialisation {
    pub source: &'static WgslSource,
    pub entry: &'static str,
    /// Override constants (name, value); values are small integers or booleans.
    pub constants: Vec<(&'static str, u32)>,
    /// WGSL declarations prepended to the file: a storage dtype ([`STORE_F32`] /
    /// `STORE_F16` of the ops' common WGSL), a matmul tile configuration; empty for most kernels.
    pub prelude: Vec<&'static str>,
    /// WGSL generated at run time for this launch (a chain's straight-line code), placed
    /// between the file's preludes and the file; the caches key on its text.
    pub generated: Option<Arc<str>>,
}

impl Specialisation {
    /// The full WGSL: the launch's prelude (`enable` directives must come first), the file's
    /// preludes, the generated code, then the file.
    pub(crate) fn full_source(&self) -> String {
        format!(
            "{}\n{}\n{}\n{}",
            self.prelude.join("\n"),
            self.source.preludes.join("\n"),
            self.generated.as_deref().unwrap_or(""),
            self.source.text
        )
    }
}

/// What makes a shader module: its file, the launch's prelude and the generated code.
type ModuleKey = (&'static WgslSource, Vec<&'static str>, Option<Arc<str>>);

#[derive(Default)]
pub(crate) struct PipelineCache {
    modules: Mutex<HashMap<ModuleKey, wgpu::ShaderModule>>,
    pipelines: Mutex<HashMap<Specialisation, wgpu::ComputePipeline>>,
}

impl PipelineCache {
    pub fn get(&self, device: &wgpu::Device, kernel: Specialisation) -> wgpu::ComputePipeline {
        if let Some(p) = lock(&self.pipelines).get(&kernel) {
            return p.clone();
        }
        let module = lock(&self.modules)
            .entry((
                kernel.source,
                kernel.prelude.clone(),
                kernel.generated.clone(),
            ))
            .or_insert_with(|| {
                let source = kernel.full_source();
                device.create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some(kernel.entry),
                    source: wgpu::ShaderSource::Wgsl(source.into()),
                })
            })
            .clone();
        let constants: Vec<(&str, f64)> = kernel
            .constants
            .iter()
            .map(|&(k, v)| (k, f64::from(v)))
            .collect();
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(kernel.entry),
            layout: None,
            module: &module,
            entry_point: Some(kernel.entry),
            compilation_options: wgpu::PipelineCompilationOptions {
                constants: &constants,
                zero_initialize_workgroup_memory: false,
            },
            cache: None,
        });
        lock(&self.pipelines).insert(kernel, pipeline.clone());
        pipeline
    }

    /// How many pipelines the cache holds: each was made once, at its first use.
    pub fn made(&self) -> usize {
        lock(&self.pipelines).len()
    }
}
