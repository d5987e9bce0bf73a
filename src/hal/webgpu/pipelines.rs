//! Op kernels: the WGSL sources the ops declare and a cache of compiled pipelines,
//! one per (file, entry point, override constants).

use std::collections::HashMap;
use std::sync::Mutex;

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
}

impl Specialisation {
    /// The full WGSL: the launch's prelude (`enable` directives must come first), the file's
    /// preludes, then the file.
    pub(crate) fn full_source(&self) -> String {
        format!(
            "{}\n{}\n{}",
            self.prelude.join("\n"),
            self.source.preludes.join("\n"),
            self.source.text
        )
    }
}

#[derive(Default)]
pub(crate) struct PipelineCache {
    modules: Mutex<HashMap<(&'static WgslSource, Vec<&'static str>), wgpu::ShaderModule>>,
    pipelines: Mutex<HashMap<Specialisation, wgpu::ComputePipeline>>,
}

impl PipelineCache {
    pub fn get(&self, device: &wgpu::Device, kernel: Specialisation) -> wgpu::ComputePipeline {
        if let Some(p) = lock(&self.pipelines).get(&kernel) {
            return p.clone();
        }
        let module = lock(&self.modules)
            .entry((kernel.source, kernel.prelude.clone()))
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
}
