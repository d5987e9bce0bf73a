//! The quantised matmul on wgpu: qmatmul.wgsl reading the packed words. On GPUs one
//! workgroup per 8 output columns and four rows of A (`qmatmul_group_main`); on software
//! adapters, barrier-free, per 64 columns and one row (m = 1, `qmatmul_gemv_main`) or four
//! (`qmatmul_tiled_main`). On devices that end long loops early, in pieces of k.

use super::QMatmul;
#[cfg(test)]
use crate::hal::webgpu::Specialisation;
use crate::hal::webgpu::{Bind, GpuBatch, GpuDevice, WgslSource};
use crate::hal::OpContext;
use crate::ops::common::split;
use crate::ops::common::webgpu::{
    check_binding, software_kernels, specialise, u32_of, wgsl_params, COMMON,
};
use crate::Result;

static SOURCE: WgslSource = WgslSource {
    name: "qmatmul.wgsl",
    text: crate::ops::common::wgsl_file!("qmatmul/qmatmul.wgsl"),
    preludes: &[COMMON, QMatmulWords::DECL],
};

wgsl_params! {
    /// qmatmul.wgsl's parameters.
    struct QMatmulWords: Q {
        m: u32,
        n: u32,
        k: u32,
        /// Blocks per row of weights and u32 words per block.
        blocks: u32,
        block_words: u32,
        /// Bytes of one row's packed zero points.
        zero_row: u32,
        /// Offsets (in elements, words for the packed operands; 0 for absent ones).
        a: u32,
        packed: u32,
        scales: u32,
        zero: u32,
        bias: u32,
        out: u32,
        /// The first row of A of this launch.
        first_row: u32,
        /// Bit 0: add to the stored sums (every piece of k but the first).
        flags: u32,
        /// The blocks of this launch, `[begin, end)`.
        block_range: [u32; 2],
    }
}

/// One of qmatmul.wgsl's entry points and the output tile of its workgroups.
struct Kernel {
    entry: &'static str,
    /// Rows of A and output columns per workgroup.
    rows: usize,
    columns: usize,
    /// Invocations that share a column's words.
    lanes: usize,
}

/// The kernel for `m` rows of A: on software adapters (`software`) a barrier-free one.
fn kernel(m: usize, software: bool) -> Kernel {
    let (entry, rows, columns, lanes) = match (software, m) {
        (true, 1) => ("qmatmul_gemv_main", 1, 64, 1),
        (true, _) => ("qmatmul_tiled_main", 4, 64, 1),
        (false, _) => ("qmatmul_group_main", 4, 8, 8),
    };
    Kernel {
        entry,
        rows,
        columns,
        lanes,
    }
}

/// The parameter words of `op` (covering every block from the first row).
fn params(op: &QMatmul<'_>) -> Result<QMatmulWords> {
    let offset = |o: Option<&crate::ops::Operand<'_>>| {
        o.map_or(Ok(0), |o| u32_of("offset", o.layout.offset))
    };
    Ok(QMatmulWords {
        m: u32_of("rows", op.m)?,
        n: u32_of("columns", op.n)?,
        k: u32_of("k", op.k)?,
        blocks: u32_of("blocks", op.blocks())?,
        block_words: op.block_words() as u32,
        zero_row: u32_of("zero-point bytes", op.zero_row_bytes())?,
        a: offset(Some(&op.a))?,
        packed: offset(Some(&op.packed))?,
        scales: offset(Some(&op.scales))?,
        zero: offset(op.zero.as_ref())?,
        bias: offset(op.bias.as_ref())?,
        out: offset(Some(&op.out))?,
        first_row: 0,
        flags: 0,
        block_range: [0, u32_of("blocks", op.blocks())?],
    })
}

/// The block ranges of one launch each: all of them, or on devices that end long loops
/// early, as many as the loop iterations of one of `kernel`'s invocations allow.
fn block_pieces(dev: &GpuDevice, op: &QMatmul<'_>, kernel: &Kernel) -> Vec<[usize; 2]> {
    let Some(budget) = split::budget(dev.max_loop_iterations()) else {
        return vec![[0, op.blocks()]];
    };
    // A block: its own iteration, the word loop's, and each of its words' loop over quads
    // (the invocation's share of them, rounded up, and one more for a word loop across).
    let words = op.block_words().div_ceil(kernel.lanes) + 1;
    let per_block = 2 + words + words * (32 / op.bits / 4 + 1);
    // The loops outside: the word loop's last test, the sums of the lanes.
    split::pieces(op.blocks(), budget.saturating_sub(12) / per_block)
}

pub(super) fn qmatmul(
    op: &QMatmul<'_>,
    q: &GpuBatch,
    dev: &GpuDevice,
    cx: &OpContext<'_>,
) -> Result<()> {
    let operands = [
        Some(&op.a),
        Some(&op.packed),
        Some(&op.scales),
        op.zero.as_ref(),
    ];
    for o in operands
        .into_iter()
        .flatten()
        .chain(op.bias.as_ref())
        .chain([&op.out])
    {
        check_binding(dev, o)?;
    }
    let kernel = kernel(op.m, software_kernels(dev, cx));
    let constants = vec![
        ("BITS", op.bits as u32),
        ("ZERO", op.zero_mode),
        ("HAS_BIAS", u32::from(op.bias.is_some())),
    ];
    let pipeline = dev.pipeline(specialise(&SOURCE, kernel.entry, constants));
    let binds = [
        (1, Bind::Mem(op.a.buf)),
        (2, Bind::Mem(op.packed.buf)),
        (3, Bind::Mem(op.scales.buf)),
        (
            4,
            op.zero
                .as_ref()
                .map_or(Bind::SpareRead, |o| Bind::Mem(o.buf)),
        ),
        (
            5,
            op.bias
                .as_ref()
                .map_or(Bind::SpareRead, |o| Bind::Mem(o.buf)),
        ),
        (6, Bind::Mem(op.out.buf)),
    ];
    let mut words = params(op)?;
    let max = dev.max_workgroups_per_dimension() as usize;
    let gx = u32_of("column workgroups", op.n.div_ceil(kernel.columns))?;
    let pieces = block_pieces(dev, op, &kernel);
    let rows = kernel.rows;
    let mut first = 0;
    while first < op.m {
        let groups = (op.m - first).div_ceil(rows).min(max);
        words.first_row = first as u32;
        for (i, range) in pieces.iter().enumerate() {
            words.block_range = [range[0] as u32, range[1] as u32];
            words.flags = split::flags(i, pieces.len());
            let grid = [gx, groups as u32, 1];
            q.launch(dev, pipeline.clone(), words.words(), &binds, grid)?;
        }
        first += groups * rows;
    }
    Ok(())
}

/// Every specialisation: both entry points, each width and zero-point mode, with and without
/// a bias.
#[cfg(test)]
pub(super) fn specialisations() -> Vec<Specialisation> {
    let mut all = Vec::new();
    for entry in [
        "qmatmul_gemv_main",
        "qmatmul_tiled_main",
        "qmatmul_group_main",
    ] {
        for bits in [4, 8] {
            for zero in [super::ZERO_MID, super::ZERO_PACKED, super::ZERO_FLOAT] {
                for bias in [0, 1] {
                    let constants = vec![("BITS", bits), ("ZERO", zero), ("HAS_BIAS", bias)];
                    all.push(specialise(&SOURCE, entry, constants));
                }
            }
        }
    }
    all
}

/// qmatmul.wgsl run by the CPU's WGSL executor, with the parameter words this file writes,
/// gives the CPU kernel's result.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod on_the_cpu_executor {
    use super::*;
    use crate::ops::common::webgpu::{bound, run_on_cpu, stored_words, with_overrides};
    use crate::ops::qmatmul::QuantWeights;
    use crate::{BackendChoice, BackendKind, Buffer, DType, Device, Tensor};

    /// `count` pseudo-random bytes from `seed`.
    fn bytes(seed: usize, count: usize) -> Vec<u8> {
        (0..count)
            .map(|i| ((i * 7919 + seed * 104_729) % 251) as u8)
            .collect()
    }

    #[test]
    fn qmatmul_matches_the_cpu_kernel() {
        let d = Device::open(BackendChoice::Backend(BackendKind::Cpu)).unwrap();
        // k = 40 pads the last block of 16; 8-bit values, packed 4-bit-wide zero points.
        let cases = [
            (1usize, 4usize, false, true),
            (5, 4, true, true),
            (3, 8, true, true),
        ];
        let group = [
            (1, 4, true, false),
            (5, 8, false, false),
            (6, 4, true, false),
        ];
        for (m, bits, zero, software) in cases.into_iter().chain(group) {
            compare(&d, m, bits, zero, software);
        }
    }

    /// The operands of a case: `a` `[m, 40]`, 67 columns of `bits`-bit weights in blocks of
    /// 16, their scales, packed zero points and a bias.
    fn operands(d: &Device, m: usize, bits: usize) -> [Tensor; 5] {
        let (n, k, block) = (67usize, 40usize, 16usize);
        let blocks = k.div_ceil(block);
        let av: Vec<f32> = (0..m * k)
            .map(|i| ((i * 31) % 17) as f32 / 8.0 - 1.0)
            .collect();
        let a = Tensor::from_slice(d, &av, &[m, k]).unwrap();
        let packed = Tensor::from_slice(
            d,
            &bytes(1, n * blocks * block * bits / 8),
            &[n, blocks, block * bits / 8],
        )
        .unwrap();
        let sv: Vec<f32> = (0..n * blocks)
            .map(|i| (i % 7) as f32 / 64.0 + 0.01)
            .collect();
        let scales = Tensor::from_slice(d, &sv, &[n, blocks]).unwrap();
        let zero_row = (blocks * bits).div_ceil(8);
        let zp = Tensor::from_slice(d, &bytes(2, n * zero_row), &[n, zero_row]).unwrap();
        let bias = Tensor::from_slice(d, &sv[..n], &[n]).unwrap();
        [a, packed, scales, zp, bias]
    }

    /// One case's WGSL kernel on the CPU's executor against the CPU kernel.
    fn compare(d: &Device, m: usize, bits: usize, zero: bool, software: bool) {
        let (n, k, block) = (67usize, 40usize, 16usize);
        let [a, packed, scales, zp, bias] = operands(d, m, bits);
        let w = QuantWeights {
            packed: &packed,
            scales: &scales,
            zero_points: zero.then_some(&zp),
            k,
            bits,
            block,
        };
        let want = a.qmatmul(&w, Some(&bias)).unwrap();
        let kernel = kernel(m, software);
        let source = with_overrides(
            specialise(&SOURCE, kernel.entry, vec![]).full_source(),
            &[
                ("BITS", bits as u32),
                ("ZERO", u32::from(zero)),
                ("HAS_BIAS", 1),
            ],
        );
        let op = QMatmul {
            a: a.operand(),
            packed: packed.operand(),
            scales: scales.operand(),
            zero: None,
            zero_mode: u32::from(zero),
            bias: Some(bias.operand()),
            out: want.operand(),
            m,
            n,
            k,
            bits,
            block,
        };
        let inputs: Vec<Buffer<u32>> = [&a, &packed, &scales, &zp, &bias]
            .iter()
            .map(|t| Buffer::from_slice(d, &stored_words(t)).unwrap())
            .collect();
        let out = Buffer::from_slice(d, &vec![0x7fa5_a5a5u32; m * n]).unwrap();
        let bindings: Vec<_> = inputs.iter().map(bound).chain([bound(&out)]).collect();
        let groups = [
            n.div_ceil(kernel.columns) as u32,
            m.div_ceil(kernel.rows) as u32,
            1,
        ];
        let words = params(&op).unwrap();
        run_on_cpu(d, &source, kernel.entry, words.words(), &bindings, groups).unwrap();
        let got = out.read_blocking().unwrap();
        let want = stored_words(&want.cast(DType::F32).unwrap());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            let (g, w) = (f32::from_bits(*g), f32::from_bits(*w));
            assert!(
                (g - w).abs() <= 1e-5 * (1.0 + w.abs()),
                "{} m {m}, {bits} bits: element {i} is {g}, the CPU's {w}",
                kernel.entry
            );
        }
    }
}
