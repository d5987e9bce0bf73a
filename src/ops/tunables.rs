//! What the ops hand the chooser: the ops with kernel variants ([`Tunable`]s), and the work
//! the device selection times.

use super::{conv, matmul, reduce, Conv2dParams};
use crate::choice::{pattern_tensor, Probe, Problem, Recording, Tunable};
use crate::{DType, Device, Queue, Result};

/// Every op with kernel variants.
pub(crate) const TUNABLES: &[&dyn Tunable] = &[&matmul::Variants, &reduce::Variants];

/// The op with kernel variants named `op` (`"matmul"`, `"reduce"`).
pub(crate) fn tunable(op: &str) -> Option<&'static dyn Tunable> {
    TUNABLES.iter().copied().find(|t| t.op().name() == op)
}

/// Every variant name some backend of this build has for the tunable `op` (`"matmul"` or
/// `"reduce"`; none for other names), whatever devices this machine has: the names a policy
/// or a bench may give. An opened device runs those of [`crate::Device::variants`].
pub fn variant_names(op: &str) -> Vec<&'static str> {
    tunable(op).map_or_else(Vec::new, |t| t.all_variants())
}

/// The probe edge: a square matmul of this edge...
const PROBE_MATMUL: usize = 256;
/// ...and a 3x3 conv2d (padding 1) of `[1, c, hw, hw]` with `c` output channels.
const PROBE_CONV: [usize; 2] = [32, 32];

/// What `auto` device selection times on each candidate without a hardware GPU.
pub(crate) static PROBE: Probe = Probe {
    describe: probe_text,
    setup: probe_setup,
};

/// What the probe runs, in words (reasons and the tune cache).
fn probe_text() -> String {
    let (e, [c, hw]) = (PROBE_MATMUL, PROBE_CONV);
    format!("matmul {e}^3 + conv2d [1, {c}, {hw}, {hw}] * [{c}, {c}, 3, 3]")
}

/// The probe's inputs on `device`, and what records it (the backend's default matmul
/// variant, whatever the policy names: "auto" must not tune here).
fn probe_setup(device: &Device) -> Result<Recording> {
    let (e, [c, hw]) = (PROBE_MATMUL, PROBE_CONV);
    let pattern = |shape: &[usize]| pattern_tensor(device, shape);
    let (a, x, w) = (
        pattern(&[e, e])?,
        pattern(&[1, c, hw, hw])?,
        pattern(&[c, c, 3, 3])?,
    );
    let problem = Problem::Matmul {
        batch: 1,
        m: e,
        n: e,
        k: e,
        dtype: DType::F32,
    };
    let (variant, _) = matmul::Variants.default_variant(device, problem);
    Ok(Box::new(move |queue: &Queue| {
        matmul::matmul_variant(queue, &a, &a, variant)?;
        conv::conv2d(
            queue,
            &x,
            &w,
            Conv2dParams {
                padding: [1, 1],
                ..Conv2dParams::default()
            },
        )?;
        Ok(())
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ops' `Tunable`s are the ops of `TUNABLE_OPS`, in its order, and each has variants.
    #[test]
    fn tunables_are_the_tunable_ops() {
        let ops: Vec<&str> = TUNABLES.iter().map(|t| t.op().name()).collect();
        assert_eq!(ops, crate::TUNABLE_OPS);
        for op in crate::TUNABLE_OPS {
            assert!(!variant_names(op).is_empty(), "{op} has no variants");
        }
    }
}
