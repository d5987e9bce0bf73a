//! WGSL `override` constants resolved as WebGPU resolves them when a pipeline is made: each
//! takes the value given for its name (or its `@id`), else its default. A kernel gets its
//! values when it is made ([`crate::Kernel::from_wgsl_with`]); from then on every backend
//! sees a module whose overrides, `@workgroup_size` and override-sized arrays are constants.

use naga::back::pipeline_constants::{process_overrides, PipelineConstantError};
use naga::valid::ModuleInfo;
use naga::{ArraySize, Module, Scalar, ScalarKind, ShaderStage};

use super::wgsl_subset::{located, wgsl_type};
use crate::{Error, Result};

/// `module` (valid) reduced to the compute entry point `entry`, with every override
/// replaced by its value from `constants` (name or `@id` → value) or its default.
pub(crate) fn resolve(
    source: &str,
    module: &Module,
    info: &ModuleInfo,
    entry: &str,
    constants: &[(&str, f64)],
) -> Result<(Module, ModuleInfo)> {
    let mut given = naga::back::PipelineConstants::default();
    for &(key, value) in constants {
        check_value(module, key, value)?;
        given.insert(key.to_string(), value);
    }
    let stage = Some((ShaderStage::Compute, entry));
    match process_overrides(module, info, stage, &given) {
        Ok((module, info)) => Ok((module.into_owned(), info.into_owned())),
        Err(e) => Err(explain(source, module, constants, e)),
    }
}

/// The number of elements of an array of `size` in `module` once its overrides are
/// resolved (`None` for a runtime-sized array).
pub(crate) fn array_length(module: &Module, size: ArraySize) -> Option<u32> {
    match size {
        ArraySize::Constant(n) => Some(n.get()),
        ArraySize::Pending(_) => match size.resolve(module.to_ctx()) {
            Ok(naga::proc::IndexableLength::Known(n)) => Some(n),
            _ => None,
        },
        ArraySize::Dynamic => None,
    }
}

/// The override that `key` names: by `@id` where it has one, else by name.
fn find<'m>(module: &'m Module, key: &str) -> Option<&'m naga::Override> {
    let id = key.parse::<u16>().ok();
    module
        .overrides
        .iter()
        .map(|(_, o)| o)
        .find(|o| match o.id {
            Some(_) => o.id == id,
            None => o.name.as_deref() == Some(key),
        })
}

/// Error unless `key` names an override of `module` whose type holds `value`.
fn check_value(module: &Module, key: &str, value: f64) -> Result<()> {
    let Some(o) = find(module, key) else {
        let names: Vec<String> = module.overrides.iter().map(|(_, o)| describe(o)).collect();
        let has = if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        };
        return Err(Error::Invalid(format!(
            "kernel constant `{key}`: the shader has no override of that name or @id \
             (its overrides: {has})"
        )));
    };
    let ty = &module.types[o.ty].inner;
    let t = value.trunc();
    let fits = match ty.scalar() {
        Some(Scalar {
            kind: ScalarKind::Bool,
            ..
        }) => true,
        _ if !value.is_finite() => false,
        Some(Scalar::I32) => t >= f64::from(i32::MIN) && t <= f64::from(i32::MAX),
        Some(Scalar::U32) => t >= 0.0 && t <= f64::from(u32::MAX),
        Some(Scalar::F32) => value.abs() <= f64::from(f32::MAX),
        Some(Scalar::F16) => value.abs() <= 65504.0,
        _ => true,
    };
    if fits {
        Ok(())
    } else {
        let ty = wgsl_type(module, ty);
        Err(Error::Invalid(format!(
            "kernel constant `{key}` = {value}: override `{}` is {ty}, which cannot hold it",
            describe(o)
        )))
    }
}

/// An override as the source names it, with its `@id` if it has one.
fn describe(o: &naga::Override) -> String {
    let name = o.name.as_deref().unwrap_or("?");
    match o.id {
        Some(id) => format!("`{name}` @id({id})"),
        None => format!("`{name}`"),
    }
}

/// naga's failure to resolve the overrides, as the user can act on it.
fn explain(
    source: &str,
    module: &Module,
    constants: &[(&str, f64)],
    e: PipelineConstantError,
) -> Error {
    let given: Vec<String> = constants
        .iter()
        .map(|(k, v)| format!("{k} = {v}"))
        .collect();
    let with = if given.is_empty() {
        "their defaults".to_string()
    } else {
        given.join(", ")
    };
    match e {
        PipelineConstantError::MissingValue(key) => {
            let found = module.overrides.iter().find(|(_, o)| {
                o.name.as_deref() == Some(key.as_str())
                    || o.id.map(|i| i.to_string()) == Some(key.clone())
            });
            let span = found.map_or(naga::Span::default(), |(h, _)| module.overrides.get_span(h));
            let what = format!(
                "override `{key}` has no default value and the kernel was given none: pass one \
                 (`Kernel::from_wgsl_with(.., &[(\"{key}\", 64.0)])`, in JS `{{ constants: \
                 {{ {key}: 64 }} }}`) or give it a default (`override {key}: u32 = 64u;`)"
            );
            located(source, what, span)
        }
        PipelineConstantError::NegativeWorkgroupSize => Error::Invalid(format!(
            "the shader's @workgroup_size with {with} is not positive in every dimension"
        )),
        other => Error::Invalid(format!(
            "resolving the shader's overrides with {with}: {other}"
        )),
    }
}
