//! How the workgroups of a launch are run: how many of them advance together as one set of
//! lanes. Workgroups without subgroup operations may run side by side in lockstep, which
//! spreads the executor's cost per expression over many more invocations; each has its own
//! copy of the `var<workgroup>` memory, and its pointers into it start at that copy
//! (exec.rs). Workgroups with subgroup operations run one at a time.

use naga::{Block, Module, Statement as S};

/// Lanes a run of batched workgroups aims at.
const TARGET_LANES: usize = 2048;
/// Words of private, function and workgroup memory all lanes of a run may take together.
const MEMORY_WORDS: usize = 1 << 20;

/// The most workgroups of entry point `entry` that may run as one set of lanes.
/// `words_per_lane` of private and function memory, `workgroup_words` of workgroup memory.
pub(super) fn batch(
    module: &Module,
    entry: usize,
    words_per_lane: usize,
    workgroup_words: usize,
) -> usize {
    let ep = &module.entry_points[entry];
    let size = ep
        .workgroup_size
        .iter()
        .map(|&n| n as usize)
        .product::<usize>()
        .max(1);
    let mut functions =
        std::iter::once(&ep.function).chain(module.functions.iter().map(|(_, f)| f));
    if functions.any(|f| has_subgroup_op(&f.body)) || has_subgroup_builtin(module, &ep.function) {
        return 1;
    }
    let by_memory = MEMORY_WORDS / (words_per_lane * size + workgroup_words).max(1);
    (TARGET_LANES / size).min(by_memory).max(1)
}

/// Workgroups to run together in each of the runs of a launch of `count` workgroups, at most
/// `batch`, leaving at least four runs for each thread where there are enough workgroups.
pub(super) fn per_run(batch: usize, count: usize, threads: usize) -> usize {
    batch.min(count / (4 * threads.max(1))).max(1)
}

fn has_subgroup_op(block: &Block) -> bool {
    block.iter().any(|s| match *s {
        S::SubgroupBallot { .. }
        | S::SubgroupCollectiveOperation { .. }
        | S::SubgroupGather { .. } => true,
        S::Block(ref b) => has_subgroup_op(b),
        S::If {
            ref accept,
            ref reject,
            ..
        } => has_subgroup_op(accept) || has_subgroup_op(reject),
        S::Switch { ref cases, .. } => cases.iter().any(|c| has_subgroup_op(&c.body)),
        S::Loop {
            ref body,
            ref continuing,
            ..
        } => has_subgroup_op(body) || has_subgroup_op(continuing),
        _ => false,
    })
}

/// Whether the entry point takes a subgroup built-in (alone or in a struct).
fn has_subgroup_builtin(module: &Module, entry: &naga::Function) -> bool {
    use naga::{Binding::BuiltIn, BuiltIn as B};
    let subgroup = |b: Option<&naga::Binding>| {
        matches!(
            b,
            Some(BuiltIn(
                B::SubgroupSize | B::SubgroupInvocationId | B::SubgroupId | B::NumSubgroups
            ))
        )
    };
    entry.arguments.iter().any(|a| {
        subgroup(a.binding.as_ref())
            || match module.types[a.ty].inner {
                naga::TypeInner::Struct { ref members, .. } => {
                    members.iter().any(|m| subgroup(m.binding.as_ref()))
                }
                _ => false,
            }
    })
}
