//! Typed device buffers and zero-copy views of them.

use std::fmt;
use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use crate::hal::{Block, Recorder};
use crate::runtime::device::Init;
use crate::runtime::queue::QueueShared;
use crate::{DType, Device, Element, Error, Queue, Result};

/// Note that `queue` records a use of `block` now. Returns the other queue that recorded the
/// previous use, if it is another one and still exists: the caller must order its work after
/// that queue's.
pub(crate) fn note_use(block: &Block, queue: &Arc<QueueShared>) -> Option<Arc<dyn Recorder>> {
    let handle = || {
        let recorder: Arc<dyn Recorder> = queue.clone();
        Arc::downgrade(&recorder)
    };
    let (_, other) = block.swap_user(queue.id, handle)?;
    other.upgrade()
}

/// A typed array in device memory: `len` elements of `T` starting at an element offset.
///
/// Cloning or [`slice`](Buffer::slice)-ing gives another view of the same memory. The memory
/// returns to the device's pool when the last view is dropped and every queued use has
/// finished.
pub struct Buffer<T: Element> {
    pub(crate) inner: Arc<Block>,
    pub(crate) device: Device,
    pub(crate) offset: usize,
    pub(crate) len: usize,
    _elem: PhantomData<T>,
}

impl<T: Element> Clone for Buffer<T> {
    fn clone(&self) -> Self {
        Buffer {
            inner: self.inner.clone(),
            device: self.device.clone(),
            offset: self.offset,
            len: self.len,
            _elem: PhantomData,
        }
    }
}

impl<T: Element> fmt::Debug for Buffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Buffer<{}>(len {}, offset {}, {:?})",
            T::DTYPE,
            self.len,
            self.offset,
            self.device
        )
    }
}

impl<T: Element> Buffer<T> {
    pub(crate) fn from_inner(inner: Arc<Block>, device: Device, offset: usize, len: usize) -> Self {
        Buffer {
            inner,
            device,
            offset,
            len,
            _elem: PhantomData,
        }
    }

    /// A zero-filled buffer of `len` elements. The zeroing is done on the device before any
    /// queue can use the buffer.
    pub fn zeros(device: &Device, len: usize) -> Result<Self> {
        let inner = device.alloc(byte_len::<T>(len)?, Init::Zeroed, None)?;
        Ok(Self::from_inner(inner, device.clone(), 0, len))
    }

    /// A buffer holding a copy of `data` (written through the device's default queue).
    pub fn from_slice(device: &Device, data: &[T]) -> Result<Self> {
        Self::from_slice_on(&device.queue(), data)
    }

    /// A buffer holding a copy of `data`, written through `queue`.
    pub fn from_slice_on(queue: &Queue, data: &[T]) -> Result<Self> {
        let device = queue.device();
        let inner = device.alloc(byte_len::<T>(data.len())?, Init::Overwritten, Some(queue))?;
        let buf = Self::from_inner(inner, device.clone(), 0, data.len());
        queue.write(&buf, data)?;
        Ok(buf)
    }

    /// Number of elements in this view.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the view has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Element offset of this view within its memory block.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Size of this view in bytes.
    pub fn byte_len(&self) -> u64 {
        (self.len * std::mem::size_of::<T>()) as u64
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        T::DTYPE
    }

    /// The device that owns the memory.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// A zero-copy view of `range` (in elements, relative to this view).
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<Self> {
        let start = match range.start_bound() {
            Bound::Included(&s) => s,
            Bound::Excluded(&s) => s.saturating_add(1),
            Bound::Unbounded => 0,
        };
        let end = match range.end_bound() {
            Bound::Included(&e) => e.saturating_add(1),
            Bound::Excluded(&e) => e,
            Bound::Unbounded => self.len,
        };
        if start > end || end > self.len {
            return Err(Error::OutOfRange(format!(
                "slice {start}..{end} of a buffer of {} elements: expected start <= end <= {}",
                self.len, self.len
            )));
        }
        Ok(Self::from_inner(
            self.inner.clone(),
            self.device.clone(),
            self.offset + start,
            end - start,
        ))
    }

    /// Overwrite the whole view with `data` (recorded on the default queue).
    pub fn write(&self, data: &[T]) -> Result<()> {
        self.device.queue().write(self, data)
    }

    /// Copy this view into `dst` (same length; recorded on the default queue).
    pub fn copy_to(&self, dst: &Buffer<T>) -> Result<()> {
        self.device.queue().copy(self, dst)
    }

    /// Read the contents back to the host, after all work queued on the default queue.
    pub async fn read(&self) -> Result<Vec<T>> {
        self.device.queue().read(self).await
    }

    /// The contents as a new JS `ArrayBuffer` (one copy), after the default queue's work.
    #[cfg(target_arch = "wasm32")]
    pub(crate) async fn read_array_buffer(&self) -> Result<js_sys::ArrayBuffer> {
        let queue = self.device.queue();
        let read = queue
            .read_js(&self.inner, self.byte_offset(), self.byte_len(), None)
            .await?;
        read.ok_or_else(|| Error::Internal("a read into a new array returned none".into()))
    }

    /// Blocking twin of [`read`](Buffer::read) (not available in browsers).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn read_blocking(&self) -> Result<Vec<T>> {
        pollster::block_on(self.read())
    }

    /// Byte offset of the view within its block.
    pub(crate) fn byte_offset(&self) -> u64 {
        (self.offset * std::mem::size_of::<T>()) as u64
    }
}

/// Bytes needed for `len` elements of `T`, or an error if that overflows.
pub(crate) fn byte_len<T: Element>(len: usize) -> Result<u64> {
    (len as u64)
        .checked_mul(std::mem::size_of::<T>() as u64)
        .ok_or_else(|| {
            Error::Invalid(format!(
                "{len} elements of {} overflow the address space",
                T::DTYPE
            ))
        })
}
