//! Tensors: a buffer plus shape, strides, offset and dtype. Reshape, permute, slice and
//! broadcast are views; `contiguous` copies only when it must.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use crate::base::layout::{checked_numel, Layout};
use crate::hal::Block;
use crate::runtime::device::Init;
use crate::{Buffer, DType, Device, Element, Error, Queue, Result};

/// A tensor operand as a backend sees it: memory plus a strided layout (in elements).
#[derive(Clone, Copy)]
pub(crate) struct Operand<'a> {
    pub buf: &'a Arc<Block>,
    pub layout: &'a Layout,
}

/// A strided view of device memory with a runtime dtype. The methods that record ops live
/// with their op (`src/ops/<op>/mod.rs`).
#[derive(Clone)]
pub struct Tensor {
    pub(crate) inner: Arc<Block>,
    pub(crate) device: Device,
    pub(crate) dtype: DType,
    pub(crate) layout: Layout,
}

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Tensor({}, shape {:?}, strides {:?}, {:?})",
            self.dtype, self.layout.shape, self.layout.strides, self.device
        )
    }
}

impl Tensor {
    /// A tensor of `shape` holding a copy of `data` (row-major).
    pub fn from_slice<T: Element>(device: &Device, data: &[T], shape: &[usize]) -> Result<Tensor> {
        Self::from_buffer(&Buffer::from_slice(device, data)?, shape)
    }

    /// A bool tensor of `shape` holding `data` (row-major), one byte per element.
    pub fn from_bools(device: &Device, data: &[bool], shape: &[usize]) -> Result<Tensor> {
        let bytes: Vec<u8> = data.iter().map(|&b| u8::from(b)).collect();
        Ok(Self::from_slice(device, &bytes, shape)?.retyped(DType::Bool))
    }

    /// The same view of the same bytes as another dtype of the same size (bool as u8).
    pub(crate) fn retyped(&self, dtype: DType) -> Tensor {
        debug_assert_eq!(dtype.size(), self.dtype.size(), "retyped to another size");
        Tensor {
            dtype,
            ..self.clone()
        }
    }

    /// A contiguous view of a whole buffer with `shape` (no copy).
    pub fn from_buffer<T: Element>(buffer: &Buffer<T>, shape: &[usize]) -> Result<Tensor> {
        let numel = checked_numel("tensor", shape)?;
        if numel != buffer.len() {
            return Err(Error::shape(
                "tensor",
                format!(
                    "shape {shape:?} has {numel} elements but the buffer holds {}: expected \
                    equal counts",
                    buffer.len()
                ),
            ));
        }
        let tensor = Tensor {
            inner: buffer.inner.clone(),
            device: buffer.device.clone(),
            dtype: T::DTYPE,
            layout: Layout::contiguous(shape, buffer.offset),
        };
        debug_assert!(
            tensor.lies_in_buffer(),
            "{tensor:?} reaches past its buffer"
        );
        Ok(tensor)
    }

    /// A zero-filled tensor.
    pub fn zeros(device: &Device, shape: &[usize], dtype: DType) -> Result<Tensor> {
        Self::alloc(&device.queue(), shape, dtype, Init::Zeroed)
    }

    /// The browser's `GPUBuffer` holding this contiguous tensor, with the byte offset and
    /// length of its elements in it, once the work recorded on the tensor is submitted (the
    /// page's own submissions then come after it). The buffer is the tensor's memory, pooled:
    /// valid while the tensor lives, and not the page's to destroy.
    #[cfg(target_arch = "wasm32")]
    pub(crate) fn gpu_buffer_js(&self) -> Result<(wasm_bindgen::JsValue, u64, u64)> {
        if !self.is_contiguous() {
            return Err(Error::Invalid(
                "gpuBuffer: the tensor is a strided view, not one range of \
                its buffer: call contiguous() first"
                    .into(),
            ));
        }
        let Some(buffer) = self.inner.memory().gpu_buffer_js() else {
            return Err(Error::Unsupported {
                backend: self.device.backend(),
                what: "GPU buffers: they need a webgpu device".into(),
            });
        };
        self.device.queue().submit_uses_of(&[&self.inner])?;
        let size = self.dtype.size() as u64;
        Ok((
            buffer,
            self.layout.offset as u64 * size,
            self.numel() as u64 * size,
        ))
    }

    /// A contiguous tensor of `shape` and `dtype` over `buffer` (a page's `GPUBuffer` of this
    /// webgpu device) from `byte_offset`: it aliases the buffer, no copy. The page keeps
    /// owning the buffer and must not destroy it while the tensor or a result pending on it
    /// lives.
    #[cfg(target_arch = "wasm32")]
    pub(crate) fn from_gpu_buffer_js(
        device: &Device,
        buffer: &wasm_bindgen::JsValue,
        shape: &[usize],
        dtype: DType,
        byte_offset: u64,
    ) -> Result<Tensor> {
        let numel = checked_numel("tensorFromGPUBuffer", shape)?;
        let size = dtype.size() as u64;
        if byte_offset % size != 0 {
            return Err(Error::Invalid(format!(
                "tensorFromGPUBuffer: byteOffset {byte_offset}: \
                expected a multiple of {size} (the size of a {dtype} element)"
            )));
        }
        let inner = device.adopt_gpu_buffer_js(buffer)?;
        let need = byte_offset.saturating_add(numel as u64 * size);
        if need > inner.bytes() {
            return Err(Error::shape(
                "tensorFromGPUBuffer",
                format!(
                    "the buffer holds {} bytes: expected at least {need} ({numel} {dtype} \
                    elements from byte {byte_offset})",
                    inner.bytes()
                ),
            ));
        }
        let layout = Layout::contiguous(shape, (byte_offset / size) as usize);
        Ok(Tensor {
            inner,
            device: device.clone(),
            dtype,
            layout,
        })
    }

    /// A contiguous tensor whose contents the caller will overwrite completely (op outputs).
    pub(crate) fn uninit(queue: &Queue, shape: &[usize], dtype: DType) -> Result<Tensor> {
        Self::alloc(queue, shape, dtype, Init::Overwritten)
    }

    fn alloc(queue: &Queue, shape: &[usize], dtype: DType, init: Init) -> Result<Tensor> {
        let numel = checked_numel("tensor", shape)?;
        // At most MAX_ELEMENTS (isize::MAX / 8) elements of at most 8 bytes: no overflow.
        let bytes = numel as u64 * dtype.size() as u64;
        let inner = queue.device().alloc(bytes, init, Some(queue))?;
        Ok(Tensor {
            inner,
            device: queue.device().clone(),
            dtype,
            layout: Layout::contiguous(shape, 0),
        })
    }

    /// Extent of each dimension.
    pub fn shape(&self) -> &[usize] {
        &self.layout.shape
    }

    /// Step in elements between neighbours along each dimension.
    pub fn strides(&self) -> &[usize] {
        &self.layout.strides
    }

    /// Element offset of the first element within the memory block.
    pub fn offset(&self) -> usize {
        self.layout.offset
    }

    /// Number of dimensions.
    pub fn rank(&self) -> usize {
        self.layout.shape.len()
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.layout.numel()
    }

    /// Element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The device holding the memory.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Whether the elements are packed row-major.
    pub fn is_contiguous(&self) -> bool {
        self.layout.is_contiguous()
    }

    /// The tensor as a backend sees it. This is the seam every op input and output passes:
    /// the view lies inside its buffer (checked when the view was made), which the backends'
    /// unsafe code relies on.
    pub(crate) fn operand(&self) -> Operand<'_> {
        debug_assert!(self.lies_in_buffer(), "{self:?} reaches past its buffer");
        Operand {
            buf: &self.inner,
            layout: &self.layout,
        }
    }

    /// Whether `other` is this very view: the same elements of the same memory block, read
    /// as the same dtype.
    pub(crate) fn is_view(&self, other: &Tensor) -> bool {
        let same = self.inner.id() == other.inner.id() && self.dtype == other.dtype;
        same && self.layout == other.layout
    }

    /// The id and bytes of the memory block the view lies in: views of one block share them.
    pub(crate) fn memory_block(&self) -> (u64, u64) {
        (self.inner.id(), self.inner.bytes())
    }

    /// Whether every element of the view lies inside the memory block (the invariant of
    /// every tensor: [`Layout::lies_within`]).
    pub(crate) fn lies_in_buffer(&self) -> bool {
        let elements =
            usize::try_from(self.inner.bytes() / self.dtype.size() as u64).unwrap_or(usize::MAX);
        self.layout.lies_within(elements)
    }

    /// Another view of the same memory; `layout` comes from this tensor's by a rule that
    /// keeps it inside the buffer (a sub-range, a permutation or stride-0 broadcast).
    fn view(&self, layout: Layout) -> Tensor {
        let view = Tensor {
            inner: self.inner.clone(),
            device: self.device.clone(),
            dtype: self.dtype,
            layout,
        };
        debug_assert!(view.lies_in_buffer(), "{view:?} reaches past its buffer");
        view
    }

    /// An error unless `shape` holds as many elements as this tensor (the rule of a reshape).
    pub(crate) fn check_reshape(&self, shape: &[usize]) -> Result<()> {
        let numel = checked_numel("reshape", shape)?;
        if numel != self.numel() {
            return Err(Error::shape(
                "reshape",
                format!(
                    "cannot reshape {:?} ({} elements) to {shape:?} ({numel} elements): \
                    expected equal counts",
                    self.shape(),
                    self.numel()
                ),
            ));
        }
        Ok(())
    }

    /// This contiguous tensor's elements with `shape` (a view; the count checked by
    /// [`check_reshape`](Tensor::check_reshape)). A strided tensor is copied first, by the
    /// ops' `Tensor::reshape`.
    pub(crate) fn contiguous_view(&self, shape: &[usize]) -> Result<Tensor> {
        self.check_reshape(shape)?;
        if !self.is_contiguous() {
            return Err(Error::Internal(format!(
                "a contiguous view of a strided {:?} tensor: expected a contiguous one",
                self.shape()
            )));
        }
        Ok(self.view(Layout::contiguous(shape, self.layout.offset)))
    }

    /// Reorder the dimensions: result dimension `i` is input dimension `dims[i]` (a view).
    pub fn permute(&self, dims: &[usize]) -> Result<Tensor> {
        let rank = self.rank();
        let mut seen = vec![false; rank];
        if dims.len() != rank
            || dims
                .iter()
                .any(|&d| d >= rank || std::mem::replace(&mut seen[d], true))
        {
            return Err(Error::shape(
                "permute",
                format!(
                    "{dims:?} is not a permutation of 0..{rank} for shape {:?}",
                    self.shape()
                ),
            ));
        }
        let shape = dims.iter().map(|&d| self.layout.shape[d]).collect();
        let strides = dims.iter().map(|&d| self.layout.strides[d]).collect();
        Ok(self.view(Layout {
            shape,
            strides,
            offset: self.layout.offset,
        }))
    }

    /// Swap the last two dimensions (a view).
    pub fn t(&self) -> Result<Tensor> {
        let r = self.rank();
        if r < 2 {
            return Err(Error::shape(
                "t",
                format!("shape {:?}: expected rank >= 2", self.shape()),
            ));
        }
        let mut dims: Vec<usize> = (0..r).collect();
        dims.swap(r - 2, r - 1);
        self.permute(&dims)
    }

    /// Keep `range` of dimension `axis` (a view).
    pub fn slice(&self, axis: usize, range: Range<usize>) -> Result<Tensor> {
        let Some(&n) = self.layout.shape.get(axis) else {
            return Err(Error::OutOfRange(format!(
                "slice axis {axis} of a rank-{} tensor: expected an axis below {}",
                self.rank(),
                self.rank()
            )));
        };
        if range.start > range.end || range.end > n {
            return Err(Error::OutOfRange(format!(
                "slice {}..{} of axis {axis} with extent {n}: expected start <= end <= {n}",
                range.start, range.end
            )));
        }
        let mut layout = self.layout.clone();
        layout.offset += range.start * layout.strides[axis];
        layout.shape[axis] = range.end - range.start;
        Ok(self.view(layout))
    }

    /// Broadcast to `shape` by numpy rules (a view with stride 0 on the broadcast dimensions).
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Tensor> {
        checked_numel("broadcast_to", shape)?;
        let (rank, own) = (shape.len(), self.rank());
        if own > rank {
            return Err(Error::shape(
                "broadcast_to",
                format!(
                    "cannot broadcast {:?} to the lower-rank {shape:?}",
                    self.shape()
                ),
            ));
        }
        let mut strides = vec![0; rank];
        for i in 0..own {
            let (d, target) = (self.layout.shape[i], shape[rank - own + i]);
            strides[rank - own + i] = if d == target {
                self.layout.strides[i]
            } else if d == 1 {
                0
            } else {
                return Err(Error::shape(
                    "broadcast_to",
                    format!(
                        "cannot broadcast {:?} to {shape:?}: dimension {i} is {d}, expected \
                        {target} or 1",
                        self.shape()
                    ),
                ));
            };
        }
        Ok(self.view(Layout {
            shape: shape.to_vec(),
            strides,
            offset: self.layout.offset,
        }))
    }
}
