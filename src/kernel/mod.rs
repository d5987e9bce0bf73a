//! User kernels written in WGSL: validated and reflected at creation, checked at launch.

mod wgsl;

use std::fmt;
use std::sync::Arc;

use crate::buffer::BufferInner;
use crate::{Buffer, DType, Device, Element, Error, Result};

/// How a kernel uses one of its bindings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BindingKind {
    /// `var<storage, read>`
    StorageRead,
    /// `var<storage, read_write>`
    StorageReadWrite,
    /// `var<uniform>`
    Uniform,
}

/// One binding as reflected from the shader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindingInfo {
    /// `@group(..)`
    pub group: u32,
    /// `@binding(..)`
    pub binding: u32,
    /// Variable name in the shader.
    pub name: String,
    /// Storage (read / read-write) or uniform.
    pub kind: BindingKind,
    /// Element type for arrays of f32 / i32 / u32 (or their atomics); `None` for other types.
    pub dtype: Option<DType>,
    /// Smallest buffer the binding accepts, in bytes.
    pub min_bytes: u64,
    /// Whether the binding is a runtime-sized array.
    pub runtime_sized: bool,
}

/// What reflection found in a kernel's entry point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelInfo {
    /// Entry point name.
    pub entry: String,
    /// `@workgroup_size(x, y, z)`
    pub workgroup_size: [u32; 3],
    /// Bindings the entry point uses, sorted by (group, binding).
    pub bindings: Vec<BindingInfo>,
}

/// A buffer (view) bound to one kernel binding at launch.
#[derive(Clone, Copy)]
pub struct Binding<'a> {
    pub(crate) inner: &'a Arc<BufferInner>,
    device: &'a Device,
    dtype: DType,
    pub(crate) byte_offset: u64,
    pub(crate) byte_len: u64,
}

impl<'a, T: Element> From<&'a Buffer<T>> for Binding<'a> {
    fn from(b: &'a Buffer<T>) -> Self {
        Binding { inner: &b.inner, device: &b.device, dtype: T::DTYPE, byte_offset: b.byte_offset(), byte_len: b.byte_len() }
    }
}

impl Binding<'_> {
    pub(crate) fn device(&self) -> &Device {
        self.device
    }
}

/// A compiled user kernel for one device.
pub struct Kernel {
    device: Device,
    info: KernelInfo,
    #[cfg_attr(not(feature = "webgpu"), allow(dead_code))]
    pub(crate) imp: KernelImpl,
}

pub(crate) enum KernelImpl {
    #[cfg(feature = "webgpu")]
    WebGpu(crate::backend::webgpu::UserPipeline),
    #[cfg(not(feature = "webgpu"))]
    #[allow(dead_code)]
    None,
}

impl fmt::Debug for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Kernel({:?}, {:?})", self.info.entry, self.device)
    }
}

impl Kernel {
    /// Compile the WGSL compute entry point `entry` for `device`. Syntax and type errors come
    /// back as [`Error::Shader`] with line:column and the offending line.
    pub fn from_wgsl(device: &Device, source: &str, entry: &str) -> Result<Kernel> {
        let info = wgsl::reflect(source, entry)?;
        let limits = &device.info().limits;
        let [x, y, z] = info.workgroup_size;
        let invocations = u64::from(x) * u64::from(y) * u64::from(z);
        if invocations > u64::from(limits.max_invocations_per_workgroup) {
            return Err(Error::Limit {
                what: format!("workgroup size {x}x{y}x{z} of `{entry}` in invocations"),
                value: invocations,
                limit: "max_invocations_per_workgroup",
                max: limits.max_invocations_per_workgroup.into(),
            });
        }
        for (d, (&n, &max)) in info.workgroup_size.iter().zip(&limits.max_workgroup_size).enumerate() {
            if n > max {
                return Err(Error::Limit { what: format!("workgroup size dimension {d} of `{entry}`"), value: n.into(), limit: "max_workgroup_size", max: max.into() });
            }
        }
        let imp = match &device.shared.backend {
            #[cfg(feature = "webgpu")]
            crate::backend::BackendDevice::WebGpu(d) => KernelImpl::WebGpu(d.create_user_pipeline(source, entry)?),
            _ => {
                return Err(Error::Unsupported {
                    backend: device.backend(),
                    what: format!(
                        "WGSL kernel `{entry}`: WGSL runs on webgpu devices only (this device is {}); the shader itself is valid",
                        device.backend()
                    ),
                })
            }
        };
        Ok(Kernel { device: device.clone(), info, imp })
    }

    /// Reflected entry point, workgroup size and bindings.
    pub fn info(&self) -> &KernelInfo {
        &self.info
    }

    /// The device the kernel was compiled for.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Check a launch against the reflection and the device limits.
    pub(crate) fn check_launch(&self, bindings: &[Binding<'_>], workgroups: [u32; 3]) -> Result<()> {
        let expected = &self.info.bindings;
        let entry = &self.info.entry;
        if bindings.len() != expected.len() {
            let list: Vec<String> = expected.iter().map(describe).collect();
            return Err(Error::Launch(format!(
                "`{entry}` expects {} bindings ({}), got {}",
                expected.len(),
                list.join(", "),
                bindings.len()
            )));
        }
        let limits = &self.device.info().limits;
        for (i, (b, info)) in bindings.iter().zip(expected).enumerate() {
            let what = format!("binding {i} ({})", describe(info));
            if info.kind != BindingKind::Uniform {
                if let Some(dt) = info.dtype {
                    if dt != b.dtype {
                        return Err(Error::Launch(format!("{what} got a buffer of {}: expected {dt}", b.dtype)));
                    }
                }
            }
            if b.byte_len < info.min_bytes {
                return Err(Error::Launch(format!("{what} got {} bytes: expected at least {}", b.byte_len, info.min_bytes)));
            }
            let (max, limit) = match info.kind {
                BindingKind::Uniform => (limits.max_uniform_binding_size, "max_uniform_binding_size"),
                _ => (limits.max_storage_binding_size, "max_storage_binding_size"),
            };
            if b.byte_len > max {
                return Err(Error::Limit { what: format!("{what} size in bytes"), value: b.byte_len, limit, max });
            }
            let align = u64::from(limits.storage_offset_alignment);
            if b.byte_offset % align != 0 {
                return Err(Error::Launch(format!(
                    "{what} starts at byte {} of its buffer: expected a multiple of {align} (storage_offset_alignment); slice at an aligned element",
                    b.byte_offset
                )));
            }
            if info.kind == BindingKind::StorageReadWrite {
                if let Some(j) = bindings.iter().enumerate().position(|(j, o)| j != i && o.inner.id() == b.inner.id()) {
                    return Err(Error::Launch(format!("{what} is read-write but binding {j} views the same buffer: expected distinct buffers")));
                }
            }
        }
        for (d, &n) in workgroups.iter().enumerate() {
            if n > limits.max_workgroups_per_dimension {
                return Err(Error::Limit {
                    what: format!("workgroup count in dimension {d}"),
                    value: n.into(),
                    limit: "max_workgroups_per_dimension",
                    max: limits.max_workgroups_per_dimension.into(),
                });
            }
        }
        Ok(())
    }
}

fn describe(b: &BindingInfo) -> String {
    let kind = match b.kind {
        BindingKind::StorageRead => "storage read",
        BindingKind::StorageReadWrite => "storage read_write",
        BindingKind::Uniform => "uniform",
    };
    let dt = b.dtype.map_or(String::new(), |d| format!(" {d}"));
    format!("@group({}) @binding({}) `{}`: {kind}{dt}", b.group, b.binding, b.name)
}

/// Validate WGSL without a device: the reflection of `entry`, or a located error.
pub fn validate_wgsl(source: &str, entry: &str) -> Result<KernelInfo> {
    wgsl::reflect(source, entry)
}

