//! User kernels written in WGSL (any device that runs WGSL) or CUDA C (`cuda` devices):
//! validated and reflected at creation, checked at launch.

mod cuda;
mod wgsl;

use std::fmt;
use std::sync::Arc;

pub use crate::base::dtype::{KernelLanguage, Scalar};
use crate::hal::Block;
use crate::hal::{LoopCheck, UserArg, UserProgram, UserSource};
use crate::profile;
use crate::{Buffer, DType, Device, Element, Error, Queue, Result};

/// How a kernel uses one of its bindings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BindingKind {
    /// `var<storage, read>`
    StorageRead,
    /// `var<storage, read_write>`
    StorageReadWrite,
    /// `var<uniform>`
    Uniform,
    /// A scalar passed by value (a CUDA kernel parameter such as `unsigned n`).
    Scalar,
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
    /// Element type for arrays of f32 / i32 / u32 (or their atomics), or the scalar's type;
    /// `None` for other types.
    pub dtype: Option<DType>,
    /// Smallest buffer the binding accepts, in bytes.
    pub min_bytes: u64,
    /// Whether the binding is a runtime-sized array.
    pub runtime_sized: bool,
}

/// What reflection found in a kernel's entry point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelInfo {
    /// Source language.
    pub language: KernelLanguage,
    /// Entry point name.
    pub entry: String,
    /// `@workgroup_size(x, y, z)` (CUDA: the block size given at creation).
    pub workgroup_size: [u32; 3],
    /// Bindings the entry point uses, sorted by (group, binding).
    pub bindings: Vec<BindingInfo>,
}

/// One kernel argument at launch: a buffer (view) for a storage or uniform binding, or a
/// scalar for a by-value CUDA parameter. Made with `Binding::from(&buffer)` or
/// `Binding::from(3u32)` (also `f32` and `i32`).
#[derive(Clone, Copy)]
pub struct Binding<'a> {
    pub(crate) value: BindingValue<'a>,
}

#[derive(Clone, Copy)]
pub(crate) enum BindingValue<'a> {
    Buffer(BufferBinding<'a>),
    Scalar(Scalar),
}

/// A buffer view bound at launch.
#[derive(Clone, Copy)]
pub(crate) struct BufferBinding<'a> {
    pub inner: &'a Arc<Block>,
    pub device: &'a Device,
    pub dtype: DType,
    pub byte_offset: u64,
    pub byte_len: u64,
}

impl<'a, T: Element> From<&'a Buffer<T>> for Binding<'a> {
    fn from(b: &'a Buffer<T>) -> Self {
        let buffer = BufferBinding {
            inner: &b.inner,
            device: &b.device,
            dtype: T::DTYPE,
            byte_offset: b.byte_offset(),
            byte_len: b.byte_len(),
        };
        Binding {
            value: BindingValue::Buffer(buffer),
        }
    }
}

impl From<Scalar> for Binding<'static> {
    fn from(s: Scalar) -> Self {
        Binding {
            value: BindingValue::Scalar(s),
        }
    }
}

impl From<f32> for Binding<'static> {
    fn from(v: f32) -> Self {
        Scalar::F32(v).into()
    }
}

impl From<i32> for Binding<'static> {
    fn from(v: i32) -> Self {
        Scalar::I32(v).into()
    }
}

impl From<u32> for Binding<'static> {
    fn from(v: u32) -> Self {
        Scalar::U32(v).into()
    }
}

impl<'a> Binding<'a> {
    /// The device of a buffer binding (`None` for a scalar).
    pub(crate) fn device(&self) -> Option<&'a Device> {
        match self.value {
            BindingValue::Buffer(b) => Some(b.device),
            BindingValue::Scalar(_) => None,
        }
    }

    /// The buffer of a buffer binding.
    pub(crate) fn buffer(&self) -> Option<&BufferBinding<'a>> {
        match &self.value {
            BindingValue::Buffer(b) => Some(b),
            BindingValue::Scalar(_) => None,
        }
    }
}

/// A compiled user kernel for one device.
pub struct Kernel {
    device: Device,
    info: KernelInfo,
    pub(crate) program: UserProgram,
}

impl fmt::Debug for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Kernel({:?}, {:?})", self.info.entry, self.device)
    }
}

impl Kernel {
    /// Compile the WGSL compute entry point `entry` for `device`. Syntax and type errors come
    /// back as [`Error::Shader`] with line:column and the offending line.
    ///
    /// It runs on every backend: on webgpu as it is, on the CPU backend through its executor
    /// of the kernel's IR, and on cuda translated to CUDA C. The CPU and cuda take a subset of
    /// WGSL (no textures, no f16 matrices) and refuse what is outside it at its line:column.
    ///
    /// Some drivers end long loops early without an error: on Mesa's llvmpipe (lavapipe) all
    /// the loops of the invocations that run together (a subgroup) stop after 65,535
    /// iterations, and the kernel goes on with wrong values.
    /// `device.info().limits.max_loop_iterations` tells (`Some(65535)` there, `None` where
    /// there is no such limit). There the kernel's loops are counted, and a launch that
    /// reaches the limit makes the next read fail with `INVALID` naming it (such kernels
    /// cannot be captured there); split long work across invocations or launches. The
    /// library ops do so themselves.
    ///
    /// `override` constants take their defaults; [`Kernel::from_wgsl_with`] sets them.
    pub fn from_wgsl(device: &Device, source: &str, entry: &str) -> Result<Kernel> {
        Kernel::from_wgsl_with(device, source, entry, &[])
    }

    /// [`Kernel::from_wgsl`] with values for the shader's `override` constants, by name or
    /// `@id` (as WebGPU's pipeline `constants`): `&[("wg", 128.0)]`. Each value must fit its
    /// override's type; overrides not given take their defaults, and one without a default
    /// must be given. The resolved `@workgroup_size` is checked against the device's limits
    /// and reported by [`Kernel::info`].
    pub fn from_wgsl_with(
        device: &Device,
        source: &str,
        entry: &str,
        constants: &[(&str, f64)],
    ) -> Result<Kernel> {
        let wgsl::Reflected { info, f16 } = wgsl::reflect(source, entry, constants)?;
        if f16 && !device.info().features.f16 {
            return Err(Error::Unsupported {
                backend: device.backend(),
                what: format!(
                    "WGSL kernel `{entry}` computes with f16, which this device ({}) lacks \
                     (its features.f16 is false)",
                    device.info().name
                ),
            });
        }
        check_workgroup_size(device, &info)?;
        let kernel = UserSource {
            language: KernelLanguage::Wgsl,
            source,
            entry,
            constants,
        };
        let program = match device.shared.backend.user_program(&kernel) {
            Some(program) => program?,
            None => {
                return Err(Error::Unsupported {
                    backend: device.backend(),
                    what: format!(
                        "WGSL kernel `{entry}`: this device ({}) runs no WGSL; the shader itself \
                            is valid",
                        device.backend()
                    ),
                })
            }
        };
        Ok(Kernel {
            device: device.clone(),
            info,
            program,
        })
    }

    /// Compile the CUDA C kernel `entry` (declared `extern "C" __global__`) with NVRTC for a
    /// `cuda` device; launches run `block` threads per block. Pointer parameters (`float*`,
    /// `const int*`, `unsigned*`) take buffers, by-value `float` / `int` / `unsigned`
    /// parameters take scalars. Compile errors come back as [`Error::Shader`] with the line
    /// and the NVRTC log (column 0: NVRTC reports none).
    #[cfg_attr(not(cuda_backend), allow(unreachable_code, unused_variables))]
    pub fn from_cuda(
        device: &Device,
        source: &str,
        entry: &str,
        block: [u32; 3],
    ) -> Result<Kernel> {
        let info = cuda::reflect(source, entry, block)?;
        check_workgroup_size(device, &info)?;
        let kernel = UserSource {
            language: KernelLanguage::Cuda,
            source,
            entry,
            constants: &[],
        };
        let program = match device.shared.backend.user_program(&kernel) {
            Some(program) => program?,
            None => {
                return Err(Error::Unsupported {
                    backend: device.backend(),
                    what: format!(
                        "CUDA kernel `{entry}`: CUDA C runs on cuda devices only (this device is \
                            {}); use Kernel::from_wgsl here",
                        device.backend()
                    ),
                })
            }
        };
        Ok(Kernel {
            device: device.clone(),
            info,
            program,
        })
    }

    /// The CUDA C that the WGSL kernel `entry` becomes on cuda devices, compiled by NVRTC for
    /// sm_80 and sm_90 to check it, with no GPU needed: a way to know on any machine with
    /// NVRTC that a kernel will build for CUDA. Constructs outside the subset are
    /// [`Error::Shader`] at their line:column; a build without the cuda backend, or a machine
    /// without NVRTC, gives `Unsupported`.
    ///
    /// `override` constants take their defaults; [`Kernel::cuda_from_wgsl_with`] sets them.
    pub fn cuda_from_wgsl(source: &str, entry: &str) -> Result<String> {
        Kernel::cuda_from_wgsl_with(source, entry, &[])
    }

    /// [`Kernel::cuda_from_wgsl`] with values for the shader's `override` constants, as
    /// [`Kernel::from_wgsl_with`] takes them.
    #[cfg_attr(not(cuda_backend), allow(unused_variables))]
    pub fn cuda_from_wgsl_with(
        source: &str,
        entry: &str,
        constants: &[(&str, f64)],
    ) -> Result<String> {
        #[cfg(cuda_backend)]
        return crate::hal::cuda::wgsl::check(source, entry, constants);
        #[cfg(not(cuda_backend))]
        Err(Error::Unsupported {
            backend: crate::BackendKind::Cuda,
            what: format!(
                "{}: translating WGSL to CUDA",
                crate::hal::missing_reason(crate::BackendKind::Cuda)
            ),
        })
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
    pub(crate) fn check_launch(
        &self,
        bindings: &[Binding<'_>],
        workgroups: [u32; 3],
    ) -> Result<()> {
        let expected = &self.info.bindings;
        let entry = &self.info.entry;
        if bindings.len() != expected.len() {
            let list: Vec<String> = expected
                .iter()
                .map(|b| describe(self.info.language, b))
                .collect();
            return Err(Error::Launch(format!(
                "`{entry}` expects {} bindings ({}), got {}",
                expected.len(),
                list.join(", "),
                bindings.len()
            )));
        }
        let limits = &self.device.info().limits;
        for (i, (binding, info)) in bindings.iter().zip(expected).enumerate() {
            self.check_binding(bindings, i, binding, info)?;
        }
        for (d, (&n, &max)) in workgroups.iter().zip(&limits.max_workgroups).enumerate() {
            if n > max {
                return Err(Error::Limit {
                    what: format!("workgroup count in dimension {d}"),
                    value: n.into(),
                    limit: "max_workgroups",
                    max: max.into(),
                });
            }
        }
        Ok(())
    }

    /// Check binding `i` of a launch (`binding`, reflected as `info`) against its
    /// reflection, the device limits and the other `bindings`.
    fn check_binding(
        &self,
        bindings: &[Binding<'_>],
        i: usize,
        binding: &Binding<'_>,
        info: &BindingInfo,
    ) -> Result<()> {
        let limits = &self.device.info().limits;
        let what = format!("binding {i} ({})", describe(self.info.language, info));
        let Some(b) = bound_buffer(binding, info, &what)? else {
            return Ok(());
        };
        if b.byte_len < info.min_bytes {
            return Err(Error::Launch(format!(
                "{what} got {} bytes: expected at least {}",
                b.byte_len, info.min_bytes
            )));
        }
        let (max, limit) = match info.kind {
            BindingKind::Uniform => (limits.max_uniform_binding_size, "max_uniform_binding_size"),
            _ => (limits.max_storage_binding_size, "max_storage_binding_size"),
        };
        if b.byte_len > max {
            return Err(Error::Limit {
                what: format!("{what} size in bytes"),
                value: b.byte_len,
                limit,
                max,
            });
        }
        let align = u64::from(limits.storage_offset_alignment);
        if b.byte_offset % align != 0 {
            return Err(Error::Launch(format!(
                "{what} starts at byte {} of its buffer: expected a multiple of {align} \
                 (storage_offset_alignment); slice at an aligned element",
                b.byte_offset
            )));
        }
        if info.kind == BindingKind::StorageReadWrite {
            if let Some(j) = bindings.iter().enumerate().position(|(j, o)| {
                j != i && o.buffer().is_some_and(|o| o.inner.id() == b.inner.id())
            }) {
                return Err(Error::Launch(format!(
                    "{what} is read-write but binding {j} views the same buffer: expected \
                     distinct buffers"
                )));
            }
        }
        Ok(())
    }
}

/// The buffer `binding` (described as `what`) binds, `None` for a scalar; an error unless
/// its kind (and, but for a uniform, its dtype) is the one `info` reflects.
fn bound_buffer<'b, 'a>(
    binding: &'b Binding<'a>,
    info: &BindingInfo,
    what: &str,
) -> Result<Option<&'b BufferBinding<'a>>> {
    let b = match (&binding.value, info.kind) {
        (BindingValue::Scalar(s), BindingKind::Scalar) => {
            if info.dtype.is_some_and(|dt| dt != s.dtype()) {
                return Err(Error::Launch(format!(
                    "{what} got a {} scalar: expected {}",
                    s.dtype(),
                    info.dtype.map_or("?".into(), |d| d.to_string())
                )));
            }
            return Ok(None);
        }
        (BindingValue::Scalar(s), _) => {
            return Err(Error::Launch(format!(
                "{what} got a {} scalar: expected a buffer",
                s.dtype()
            )))
        }
        (BindingValue::Buffer(b), BindingKind::Scalar) => {
            return Err(Error::Launch(format!(
                "{what} got a buffer of {}: expected a scalar value",
                b.dtype
            )))
        }
        (BindingValue::Buffer(b), _) => b,
    };
    if info.kind != BindingKind::Uniform {
        if let Some(dt) = info.dtype {
            if dt != b.dtype {
                return Err(Error::Launch(format!(
                    "{what} got a buffer of {}: expected {dt}",
                    b.dtype
                )));
            }
        }
    }
    Ok(Some(b))
}

/// Error unless the kernel's workgroup size fits the device.
fn check_workgroup_size(device: &Device, info: &KernelInfo) -> Result<()> {
    let limits = &device.info().limits;
    let entry = &info.entry;
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
    for (d, (&n, &max)) in info
        .workgroup_size
        .iter()
        .zip(&limits.max_workgroup_size)
        .enumerate()
    {
        if n > max {
            return Err(Error::Limit {
                what: format!("workgroup size dimension {d} of `{entry}`"),
                value: n.into(),
                limit: "max_workgroup_size",
                max: max.into(),
            });
        }
    }
    Ok(())
}

fn describe(language: KernelLanguage, b: &BindingInfo) -> String {
    let kind = match b.kind {
        BindingKind::StorageRead if language == KernelLanguage::Cuda => "const pointer",
        BindingKind::StorageReadWrite if language == KernelLanguage::Cuda => "pointer",
        BindingKind::StorageRead => "storage read",
        BindingKind::StorageReadWrite => "storage read_write",
        BindingKind::Uniform => "uniform",
        BindingKind::Scalar => "scalar",
    };
    let dt = b.dtype.map_or(String::new(), |d| format!(" {d}"));
    match language {
        KernelLanguage::Wgsl => format!(
            "@group({}) @binding({}) `{}`: {kind}{dt}",
            b.group, b.binding, b.name
        ),
        KernelLanguage::Cuda => format!("parameter {} `{}`: {kind}{dt}", b.binding, b.name),
    }
}

/// Validate WGSL without a device: the reflection of `entry`, or a located error.
pub fn validate_wgsl(source: &str, entry: &str) -> Result<KernelInfo> {
    wgsl::reflect(source, entry, &[]).map(|r| r.info)
}

/// Launching user kernels.
impl Queue {
    /// Record a launch of a user kernel over `workgroups` workgroups, with one binding per
    /// reflected binding, in (group, binding) order. Everything is checked against the kernel's
    /// reflection and the device limits before anything reaches the device.
    pub fn launch(
        &self,
        kernel: &Kernel,
        bindings: &[Binding<'_>],
        workgroups: [u32; 3],
    ) -> Result<()> {
        self.device.check_same(kernel.device(), "kernel")?;
        for device in bindings.iter().filter_map(Binding::device) {
            self.device.check_same(device, "binding")?;
        }
        kernel.check_launch(bindings, workgroups)?;
        let status = self.loop_status(kernel)?;
        let mut blocks: Vec<_> = bindings
            .iter()
            .filter_map(|b| b.buffer().map(|b| b.inner))
            .collect();
        let mut args: Vec<UserArg<'_>> = bindings
            .iter()
            .zip(&kernel.info().bindings)
            .map(|(b, info)| user_arg(b, info))
            .collect();
        if let Some((check, word)) = &status {
            blocks.push(&word.inner);
            let (group, binding) = (check.group, check.binding);
            let byte_offset = 4 * word.offset() as u64;
            args.push(UserArg::Buffer {
                block: &word.inner,
                group,
                binding,
                byte_offset,
                byte_len: 4,
            });
        }
        let block = kernel.info().workgroup_size;
        let run = || {
            self.shared
                .imp
                .launch(self.backend(), &kernel.program, &args, workgroups, block)
        };
        let describe = |clock, host_start| {
            let shapes = bindings
                .iter()
                .filter_map(Binding::buffer)
                .map(|b| vec![b.byte_len as usize / b.dtype.size()])
                .collect();
            let bytes = bindings
                .iter()
                .filter_map(Binding::buffer)
                .map(|b| b.byte_len)
                .sum();
            let mut record = profile::record(
                kernel.info().entry.clone(),
                shapes,
                DType::F32,
                bytes,
                0,
                self.id(),
                clock,
                host_start,
            );
            record.variant = Some(format!("user {:?} kernel", kernel.info().language));
            record
        };
        self.record_launch(&blocks, &mut { run }, &describe)
    }
}

impl Queue {
    /// On a device that ends long loops early, the status word that counts `kernel`'s loops
    /// (`hal/webgpu/loop_check.rs`); the next read reports an invocation that reached the
    /// limit (in a capture, the next read after a replay).
    fn loop_status(&self, kernel: &Kernel) -> Result<Option<(LoopCheck, crate::Tensor)>> {
        let Some(check) = kernel.program.loop_check() else {
            return Ok(None);
        };
        let entry = kernel.info().entry.clone();
        let device = self.device.info().name.clone();
        let limit = check.limit;
        let key = format!("loops of `{entry}` on {device}, ended after {limit}");
        let describe = std::sync::Arc::new(move |count: u32| {
            format!(
                "kernel `{entry}`: an invocation's loops went round {count} times, and this \
                 device ({device}) ends loops after {limit} without an error \
                 (limits.max_loop_iterations): its results may be cut short; split the work \
                 across more invocations or launches"
            )
        });
        Ok(Some((check, self.check_word(key, describe)?)))
    }
}

/// A checked binding as the backend takes it, at its reflected (group, binding).
fn user_arg<'a>(b: &Binding<'a>, info: &BindingInfo) -> UserArg<'a> {
    match b.value {
        BindingValue::Buffer(buf) => UserArg::Buffer {
            block: buf.inner,
            group: info.group,
            binding: info.binding,
            byte_offset: buf.byte_offset,
            byte_len: buf.byte_len,
        },
        BindingValue::Scalar(value) => UserArg::Scalar {
            binding: info.binding,
            value,
        },
    }
}
