//! WGSL front end: parse and validate with naga, turn errors into line:column, resolve the
//! overrides, reflect the bindings and workgroup size of one entry point.

use naga::valid::{Capabilities, ValidationFlags, Validator};
use naga::{AddressSpace, Scalar, ScalarKind, ShaderStage, StorageAccess, TypeInner};

use super::{BindingInfo, BindingKind, KernelInfo, KernelLanguage};
use crate::{DType, Error, Result};

/// What reflection found, with what the kernel needs of its device beyond the basics.
pub(crate) struct Reflected {
    pub info: KernelInfo,
    /// Whether the kernel computes with f16 (`enable f16;` and f16 values).
    pub f16: bool,
}

/// Parse, validate and reflect `source`, for the compute entry point `entry` with its
/// overrides set from `constants` (name or `@id` → value) or their defaults.
pub(crate) fn reflect(source: &str, entry: &str, constants: &[(&str, f64)]) -> Result<Reflected> {
    let (module, info) = parse(source)?;
    compute_entry(&module, entry)?;
    let (module, info) =
        crate::hal::wgsl_overrides::resolve(source, &module, &info, entry, constants)?;
    let index = compute_entry(&module, entry)?;
    let bindings = bindings(source, &module, info.get_entry_point(index))?;
    let workgroup_size = module.entry_points[index].workgroup_size;
    let f16 = module
        .types
        .iter()
        .any(|(_, t)| t.inner.scalar() == Some(Scalar::F16));
    let info = KernelInfo {
        language: KernelLanguage::Wgsl,
        entry: entry.to_string(),
        workgroup_size,
        bindings,
    };
    Ok(Reflected { info, f16 })
}

/// `source` parsed and validated, or its first error at its line:column.
fn parse(source: &str) -> Result<(naga::Module, naga::valid::ModuleInfo)> {
    let module = naga::front::wgsl::parse_str(&crate::hal::wgsl_enables::for_naga(source))
        .map_err(|e| {
            let loc = e.location(source);
            shader_error(
                source,
                loc.map(|l| (l.line_number, l.line_position)),
                e.message().to_string(),
            )
        })?;
    let info = Validator::new(ValidationFlags::all(), Capabilities::all())
        .validate(&module)
        .map_err(|e| {
            let loc = e.location(source);
            let mut message = e.as_inner().to_string();
            let mut src: &dyn std::error::Error = e.as_inner();
            while let Some(next) = src.source() {
                message.push_str(": ");
                message.push_str(&next.to_string());
                src = next;
            }
            shader_error(
                source,
                loc.map(|l| (l.line_number, l.line_position)),
                message,
            )
        })?;
    Ok((module, info))
}

/// The index of `entry` among `module`'s entry points; an error unless it is a compute one.
fn compute_entry(module: &naga::Module, entry: &str) -> Result<usize> {
    let index = crate::hal::wgsl_subset::find_entry(module, entry)?;
    let stage = module.entry_points[index].stage;
    if stage != ShaderStage::Compute {
        return Err(Error::Invalid(format!(
            "entry point `{entry}` is a {stage:?} shader: expected @compute"
        )));
    }
    Ok(index)
}

/// The buffers the entry point (whose globals `used` tells) binds, sorted by (group, binding).
fn bindings(
    source: &str,
    module: &naga::Module,
    used: &naga::valid::FunctionInfo,
) -> Result<Vec<BindingInfo>> {
    let mut layouter = naga::proc::Layouter::default();
    layouter
        .update(module.to_ctx())
        .map_err(|e| Error::Invalid(format!("cannot lay out the shader's types: {e}")))?;
    let mut bindings = Vec::new();
    for (handle, var) in module.global_variables.iter() {
        if var.space == AddressSpace::Immediate && !used[handle].is_empty() {
            let name = var.name.as_deref().unwrap_or("?");
            let message = format!(
                "`{name}` is immediate data (`var<immediate>`), which launches cannot set: \
                 kernels bind storage and uniform buffers; pass such values in a uniform buffer"
            );
            return Err(shader_error(
                source,
                module.global_variables.get_span(handle).location(source),
                message,
            ));
        }
        let Some(rb) = &var.binding else { continue };
        if used[handle].is_empty() {
            continue; // not used by this entry point: not part of its layout
        }
        let kind = match var.space {
            AddressSpace::Storage { access } if access.contains(StorageAccess::STORE) => {
                BindingKind::StorageReadWrite
            }
            AddressSpace::Storage { .. } => BindingKind::StorageRead,
            AddressSpace::Uniform => BindingKind::Uniform,
            other => {
                let what = match other {
                    AddressSpace::Handle => "a texture or sampler",
                    _ => "not a buffer",
                };
                let name = var.name.as_deref().unwrap_or("?");
                let message = format!(
                    "binding @group({}) @binding({}) `{name}` is {what}: kernels bind storage and \
                        uniform buffers only",
                    rb.group, rb.binding
                );
                return Err(shader_error(
                    source,
                    module.global_variables.get_span(handle).location(source),
                    message,
                ));
            }
        };
        let (dtype, min_bytes, runtime_sized) = element_of(module, var.ty, &layouter);
        let name = var.name.clone().unwrap_or_default();
        bindings.push(BindingInfo {
            group: rb.group,
            binding: rb.binding,
            name,
            kind,
            dtype,
            min_bytes,
            runtime_sized,
        });
    }
    bindings.sort_by_key(|b| (b.group, b.binding));
    Ok(bindings)
}

/// The element dtype of an array binding (if it is an array of a 4-byte scalar or atomic),
/// the minimum binding size in bytes, and whether the array is runtime-sized.
fn element_of(
    module: &naga::Module,
    ty: naga::Handle<naga::Type>,
    layouter: &naga::proc::Layouter,
) -> (Option<DType>, u64, bool) {
    let size = u64::from(layouter[ty].size);
    match &module.types[ty].inner {
        TypeInner::Array {
            base,
            size: arr,
            stride,
        } => {
            let runtime = matches!(arr, naga::ArraySize::Dynamic);
            let min = if runtime { u64::from(*stride) } else { size };
            (scalar_dtype(&module.types[*base].inner), min, runtime)
        }
        TypeInner::Struct { members, span } => {
            // A struct ending in a runtime-sized array: its fixed part plus one element.
            if let Some(last) = members.last() {
                if let TypeInner::Array {
                    base,
                    size: naga::ArraySize::Dynamic,
                    stride,
                } = &module.types[last.ty].inner
                {
                    return (
                        scalar_dtype(&module.types[*base].inner),
                        u64::from(last.offset) + u64::from(*stride),
                        true,
                    );
                }
            }
            (None, u64::from(*span), false)
        }
        other => (scalar_dtype(other), size, false),
    }
}

fn scalar_dtype(inner: &TypeInner) -> Option<DType> {
    let scalar = match inner {
        TypeInner::Scalar(s) | TypeInner::Atomic(s) => *s,
        _ => return None,
    };
    match scalar {
        Scalar {
            kind: ScalarKind::Float,
            width: 4,
        } => Some(DType::F32),
        Scalar {
            kind: ScalarKind::Sint,
            width: 4,
        } => Some(DType::I32),
        Scalar {
            kind: ScalarKind::Uint,
            width: 4,
        } => Some(DType::U32),
        _ => None,
    }
}

/// Where a span starts, as (line, column); `None` for an unknown span.
struct At(Option<(u32, u32)>);

impl From<naga::SourceLocation> for At {
    fn from(l: naga::SourceLocation) -> Self {
        At((l.line_number > 0).then_some((l.line_number, l.line_position)))
    }
}

impl From<Option<(u32, u32)>> for At {
    fn from(l: Option<(u32, u32)>) -> Self {
        At(l)
    }
}

fn shader_error(source: &str, loc: impl Into<At>, message: String) -> Error {
    let loc = loc.into().0;
    let (line, column) = loc.unwrap_or((1, 1));
    let source_line = source
        .lines()
        .nth(line.saturating_sub(1) as usize)
        .unwrap_or("")
        .trim_end()
        .to_string();
    Error::Shader {
        line,
        column,
        message,
        source_line,
    }
}
