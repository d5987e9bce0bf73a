//! Matmul through cuBLAS: f32 SGEMM (strided-batched), with TF32 / bf16 / f16 tensor-core
//! compute when [`MatmulPrecision`] allows it. Layouts cuBLAS cannot express (a non-unit
//! stride on both axes of a matrix, batch strides that are not one flat stride) go to
//! the op's `matmul.cu` instead.

use std::sync::{Arc, OnceLock};

use cudarc::cublas::{result, sys, CudaBlas};

use super::memory::DeviceMemory;
use super::queue::{address, CudaBatch};
use super::CudaDevice;
use crate::base::layout::Layout;
use crate::base::signal::lock;
use crate::hal::Block;
use crate::{DType, Error, MatmulPrecision, Result};

/// cuBLAS's workspace per handle: what it recommends for Hopper (32 MiB; 4 MiB elsewhere).
/// Given up front, cuBLAS allocates none itself, not even inside a stream capture.
const WORKSPACE_BYTES: u64 = 32 << 20;

/// A queue's cuBLAS handle, bound to its stream, with the workspace it owns (dropped after
/// the handle: fields drop in order).
pub(crate) struct BlasHandle {
    handle: CudaBlas,
    _workspace: DeviceMemory,
}

impl BlasHandle {
    /// A handle on `stream` with its own workspace; `None` where cuBLAS cannot make one.
    fn new(dev: &CudaDevice, stream: Arc<cudarc::driver::CudaStream>) -> Option<BlasHandle> {
        let handle = CudaBlas::new(stream).ok()?;
        let workspace = DeviceMemory::new(&dev.ctx, WORKSPACE_BYTES).ok()?;
        // SAFETY: the workspace lives as long as the handle (dropped after it).
        let status = unsafe {
            sys::cublasSetWorkspace_v2(
                *handle.handle(),
                workspace.ptr as *mut std::ffi::c_void,
                WORKSPACE_BYTES as usize,
            )
        };
        (status == sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS).then_some(BlasHandle {
            handle,
            _workspace: workspace,
        })
    }
}

/// Make `q`'s cuBLAS handle if it has none (a queue about to capture makes it first, so that
/// creating it happens outside the capture); whether it has one now.
pub(crate) fn prepare(q: &CudaBatch, dev: &CudaDevice) -> Result<bool> {
    if !available() {
        return Ok(false);
    }
    let stream = q.stream(dev)?;
    // cuBLAS works on the thread's current context.
    dev.ctx
        .bind_to_thread()
        .map_err(|e| dev.fail("binding the CUDA context", e))?;
    let mut slot = lock(&q.blas);
    if slot.is_none() {
        *slot = BlasHandle::new(dev, stream);
    }
    Ok(slot.is_some())
}

/// Whether libcublas can be loaded.
pub(crate) fn available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    // SAFETY: only checks whether the library can be loaded.
    *AVAILABLE.get_or_init(|| {
        std::panic::catch_unwind(|| unsafe { sys::is_culib_present() }).unwrap_or(false)
    })
}

/// How a row-major `rows x cols` matrix with the given element strides reaches cuBLAS, which
/// sees it transposed (column-major `cols x rows`): `(operation, leading dimension)`.
fn operand(
    rows: usize,
    cols: usize,
    row_stride: usize,
    col_stride: usize,
) -> Option<(sys::cublasOperation_t, usize)> {
    // Unit stride along the columns: column-major `cols x rows` with ld = row stride.
    if col_stride == 1 || cols == 1 {
        let ld = if rows == 1 { cols } else { row_stride };
        if ld >= cols.max(1) {
            return Some((sys::cublasOperation_t::CUBLAS_OP_N, ld));
        }
    }
    // Unit stride along the rows: the transpose of a column-major `rows x cols`.
    if row_stride == 1 || rows == 1 {
        let ld = if cols == 1 { rows } else { col_stride };
        if ld >= rows.max(1) {
            return Some((sys::cublasOperation_t::CUBLAS_OP_T, ld));
        }
    }
    None
}

/// One element stride that walks the flattened batch dimensions, if there is one.
fn flat_batch_stride(shape: &[usize], strides: &[usize]) -> Option<usize> {
    let dims: Vec<(usize, usize)> = shape
        .iter()
        .zip(strides)
        .filter(|(&n, _)| n > 1)
        .map(|(&n, &s)| (n, s))
        .collect();
    let Some(&(_, unit)) = dims.last() else {
        return Some(0);
    };
    let mut expected = unit;
    for &(n, s) in dims.iter().rev() {
        if s != expected {
            return None;
        }
        expected = s * n;
    }
    Some(unit)
}

/// The element and compute types of a GEMM.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Types {
    /// f32 matrices, with the compute the precision allows.
    F32(MatmulPrecision),
    /// f16 or bf16 matrices (a 16-bit [`DType`]), accumulated in f32.
    Half(DType),
}

impl Types {
    /// Bytes of one element.
    fn element_bytes(self) -> usize {
        match self {
            Types::F32(_) => 4,
            Types::Half(_) => 2,
        }
    }

    /// cuBLAS's element type and compute type.
    fn cublas(self) -> Result<(sys::cudaDataType_t, sys::cublasComputeType_t)> {
        use sys::cudaDataType_t as T;
        let compute32 = sys::cublasComputeType_t::CUBLAS_COMPUTE_32F;
        match self {
            Types::F32(precision) => Ok((T::CUDA_R_32F, compute_type(precision))),
            Types::Half(DType::F16) => Ok((T::CUDA_R_16F, compute32)),
            Types::Half(DType::BF16) => Ok((T::CUDA_R_16BF, compute32)),
            Types::Half(other) => Err(Error::Internal(format!("a cuBLAS GEMM on {other}"))),
        }
    }
}

fn compute_type(precision: MatmulPrecision) -> sys::cublasComputeType_t {
    match precision {
        MatmulPrecision::F32 => sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
        MatmulPrecision::Tf32 => sys::cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32,
        MatmulPrecision::Bf16 => sys::cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_16BF,
        MatmulPrecision::F16 => sys::cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_16F,
    }
}

/// A GEMM as cuBLAS takes it: C' = B' A' with C' (n x m) the column-major view of the
/// row-major C, each operand with its operation, leading dimension and batch stride.
struct Gemm {
    op_a: sys::cublasOperation_t,
    op_b: sys::cublasOperation_t,
    /// m, n, k.
    sizes: [i32; 3],
    lda: i32,
    ldb: i32,
    stride_a: i64,
    stride_b: i64,
    batches: i32,
}

impl Gemm {
    /// The GEMM of `out = a @ b` for these layouts, if cuBLAS can express it.
    fn of([a, b, out]: [&Layout; 3], [m, n, k]: [usize; 3]) -> Option<Gemm> {
        let r = out.shape.len();
        let batch_shape = &out.shape[..r - 2];
        let stride_a = flat_batch_stride(batch_shape, &a.strides[..r - 2])?;
        let stride_b = flat_batch_stride(batch_shape, &b.strides[..r - 2])?;
        let (op_b, ldb) = operand(k, n, b.strides[r - 2], b.strides[r - 1])?;
        let (op_a, lda) = operand(m, k, a.strides[r - 2], a.strides[r - 1])?;
        let int = |v: usize| i32::try_from(v).ok();
        Some(Gemm {
            op_a,
            op_b,
            sizes: [int(m)?, int(n)?, int(k)?],
            lda: int(lda)?,
            ldb: int(ldb)?,
            stride_a: i64::try_from(stride_a).ok()?,
            stride_b: i64::try_from(stride_b).ok()?,
            batches: int(batch_shape.iter().product())?,
        })
    }
}

/// `out = a @ b` on cuBLAS; `Ok(false)` if cuBLAS is missing or cannot take these layouts.
/// Each matrix is a memory block and its strided layout.
pub(crate) fn matmul(
    q: &CudaBatch,
    dev: &CudaDevice,
    [a, b, out]: [(&Arc<Block>, &Layout); 3],
    [m, n, k]: [usize; 3],
    types: Types,
) -> Result<bool> {
    if !available() || k == 0 {
        return Ok(false);
    }
    let Some(g) = Gemm::of([a.1, b.1, out.1], [m, n, k]) else {
        return Ok(false);
    };
    // cuBLAS is present but unusable without a handle: the kernel path still works.
    if !prepare(q, dev)? {
        return Ok(false);
    }
    let (element, compute) = types.cublas()?;
    let slot = lock(&q.blas);
    let handle = *slot
        .as_ref()
        .map(|h| h.handle.handle())
        .ok_or_else(|| Error::Internal("no cuBLAS handle".into()))?;
    let (alpha, beta) = (1.0f32, 0.0f32);
    // `address` counts 4-byte elements: offsets of 16-bit matrices are added in bytes.
    let size = types.element_bytes();
    let at = |(buf, layout): (&Arc<Block>, &Layout)| -> Result<u64> {
        Ok(address(buf, 0)? + (layout.offset * size) as u64)
    };
    let (pa, pb, pc) = (at(a)?, at(b)?, at(out)?);
    let [mi, ni, ki] = g.sizes;
    // SAFETY: every matrix of every batch lies inside its block (the op validated the
    // shapes); alpha and beta are host values, as the handle's default pointer mode expects.
    unsafe {
        result::gemm_strided_batched_ex(
            handle,
            g.op_b,
            g.op_a,
            ni,
            mi,
            ki,
            (&alpha as *const f32).cast(),
            pb as *const std::ffi::c_void,
            element,
            g.ldb,
            g.stride_b,
            pa as *const std::ffi::c_void,
            element,
            g.lda,
            g.stride_a,
            (&beta as *const f32).cast(),
            pc as *mut std::ffi::c_void,
            element,
            ni,
            (m * n) as i64,
            g.batches,
            compute,
            sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
        )
    }
    .map_err(|e| {
        Error::Device(format!(
            "cuBLAS GEMM {m}x{n}x{k} (batch {}) failed: {e:?}",
            g.batches
        ))
    })?;
    drop(slot);
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_map_to_operations() {
        use sys::cublasOperation_t::{CUBLAS_OP_N as N, CUBLAS_OP_T as T};
        assert_eq!(operand(3, 5, 5, 1), Some((N, 5)));
        assert_eq!(operand(3, 5, 1, 3), Some((T, 3)));
        assert_eq!(operand(3, 5, 8, 1), Some((N, 8)), "padded rows");
        assert_eq!(operand(1, 5, 0, 1), Some((N, 5)), "one row");
        assert_eq!(operand(3, 5, 10, 2), None, "no unit stride");
        assert_eq!(operand(3, 5, 0, 1), None, "broadcast rows");
        assert_eq!(flat_batch_stride(&[2, 3], &[15, 5]), Some(5));
        assert_eq!(flat_batch_stride(&[2, 3], &[0, 0]), Some(0));
        assert_eq!(flat_batch_stride(&[2, 3], &[0, 5]), None);
        assert_eq!(flat_batch_stride(&[1, 3], &[99, 7]), Some(7));
        assert_eq!(flat_batch_stride(&[], &[]), Some(0));
    }
}
