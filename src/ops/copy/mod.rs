//! Bit-exact copies of 4-byte elements (8-byte ones as pairs of them) from a strided view into a
//! view of the same shape: contiguous, or a non-overlapping strided view such as a slice of a
//! larger tensor (what [`Tensor::contiguous`] and [`concat`](super::concat::concat) record).

backend_modules!();

use super::cast::Cast;
use super::cost::OpCost;
use super::{backends, launch, OpRequest, Operand};
use crate::Buffer;
use crate::Element;
use crate::Error;
use crate::{DType, Queue, Result, Tensor};

/// `out = x` for 4-byte elements of any dtype, `out` contiguous or a non-overlapping view.
pub(crate) struct ViewCopy<'a> {
    pub x: Operand<'a>,
    pub out: Operand<'a>,
}

impl OpRequest for ViewCopy<'_> {
    fn cost(&self) -> OpCost {
        OpCost::simple("copy", &[&self.x, &self.out], 0)
    }

    fn operands(&self) -> Vec<&Operand<'_>> {
        vec![&self.x, &self.out]
    }

    backends!(copy);
}

/// Record `out = x` (same shape and dtype; `out` fresh, or a view no other operand overlaps):
/// 4-byte elements by the copy kernels, 8-byte ones as pairs of words by the same kernels,
/// 16- and 8-bit ones (two and four to a word) by the cast kernels, `out` starting at a word.
/// Views of one memory block (a Concat's input lying elsewhere in its output) go through a
/// copy of their own, since a webgpu dispatch may not read and write one buffer.
pub(crate) fn copy_into(queue: &Queue, x: &Tensor, out: &Tensor) -> Result<()> {
    if out.numel() == 0 {
        return Ok(());
    }
    if x.memory_block().0 == out.memory_block().0 {
        let own = Tensor::uninit(queue, x.shape(), x.dtype())?;
        copy_into(queue, x, &own)?;
        return copy_into(queue, &own, out);
    }
    if x.dtype().size() < 4 {
        return launch(
            queue,
            &Cast {
                x: x.operand(),
                from: x.dtype(),
                to: x.dtype(),
                out: out.operand(),
            },
            None,
        );
    }
    let words = super::common::words::as_words("copy", &[x, out])?;
    launch(
        queue,
        &ViewCopy {
            x: words[0].operand(),
            out: words[1].operand(),
        },
        None,
    )
}

/// Reading a tensor and making it contiguous: a copy where the view is strided.
impl Tensor {
    /// This tensor if it is contiguous, else a contiguous copy (on the default queue).
    pub fn contiguous(&self) -> Result<Tensor> {
        self.contiguous_on(&self.device().queue())
    }

    /// The same elements with another shape: a view when the tensor is contiguous, else a
    /// copy (on the default queue).
    pub fn reshape(&self, shape: &[usize]) -> Result<Tensor> {
        // The count first, so that a wrong shape costs no copy.
        self.check_reshape(shape)?;
        self.contiguous()?.contiguous_view(shape)
    }

    /// [`contiguous`](Tensor::contiguous), recording any copy on `queue`.
    pub fn contiguous_on(&self, queue: &Queue) -> Result<Tensor> {
        self.device().check_same(queue.device(), "tensor")?;
        if self.is_contiguous() {
            return Ok(self.clone());
        }
        let out = Tensor::uninit(queue, self.shape(), self.dtype())?;
        copy_into(queue, self, &out)?;
        Ok(out)
    }

    /// The elements as a contiguous typed buffer (a view when already contiguous).
    pub fn to_buffer<T: Element>(&self) -> Result<Buffer<T>> {
        if self.dtype() != T::DTYPE {
            return Err(Error::DType {
                op: "to_buffer",
                expected: self.dtype().to_string(),
                got: T::DTYPE.to_string(),
            });
        }
        let c = self.contiguous()?;
        Ok(Buffer::from_inner(
            c.inner.clone(),
            c.device.clone(),
            c.layout.offset,
            c.numel(),
        ))
    }

    /// The elements (row-major) in a new JS `ArrayBuffer`, after the default queue's work,
    /// with one copy (any dtype: the bytes as stored).
    #[cfg(target_arch = "wasm32")]
    pub(crate) async fn read_array_buffer(&self) -> Result<js_sys::ArrayBuffer> {
        let c = self.contiguous()?;
        let size = c.dtype.size() as u64;
        let read = c
            .device
            .queue()
            .read_js(
                &c.inner,
                c.layout.offset as u64 * size,
                c.numel() as u64 * size,
                None,
            )
            .await?;
        read.ok_or_else(|| Error::Internal("a read into a new array returned none".into()))
    }

    /// The elements (row-major) into `dst`, a JS view of exactly their bytes, after the
    /// default queue's work, with one copy.
    #[cfg(target_arch = "wasm32")]
    pub(crate) async fn read_into_js(&self, dst: &js_sys::Uint8Array) -> Result<()> {
        let c = self.contiguous()?;
        let size = c.dtype.size() as u64;
        c.device
            .queue()
            .read_js(
                &c.inner,
                c.layout.offset as u64 * size,
                c.numel() as u64 * size,
                Some(dst),
            )
            .await
            .map(drop)
    }

    /// Read the elements (row-major) back to the host, after the default queue's work.
    pub async fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        self.to_buffer::<T>()?.read().await
    }

    /// Blocking twin of [`to_vec`](Tensor::to_vec) (not available in browsers).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn to_vec_blocking<T: Element>(&self) -> Result<Vec<T>> {
        pollster::block_on(self.to_vec())
    }

    /// Read a bool tensor's elements (row-major) back to the host, after the default
    /// queue's work (the twin of [`Tensor::from_bools`]).
    pub async fn to_bools(&self) -> Result<Vec<bool>> {
        if self.dtype() != DType::Bool {
            return Err(Error::DType {
                op: "to_bools",
                expected: "bool".into(),
                got: self.dtype().to_string(),
            });
        }
        let bytes = self.retyped(DType::U8).to_vec::<u8>().await?;
        Ok(bytes.into_iter().map(|b| b != 0).collect())
    }

    /// Blocking twin of [`to_bools`](Tensor::to_bools) (not available in browsers).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn to_bools_blocking(&self) -> Result<Vec<bool>> {
        pollster::block_on(self.to_bools())
    }
}
