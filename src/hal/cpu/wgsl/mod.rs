//! WGSL compute kernels on the CPU backend, native and in wasm: an executor of naga's
//! validated IR. The invocations of one workgroup run together, one value per invocation
//! for each expression ([`lanes::Lanes`]), so `workgroupBarrier` and `var<workgroup>`
//! memory behave as on a GPU; divergent control flow runs under a mask of the invocations
//! still active (exec.rs). Workgroups run in parallel (rayon). Memory access is clamped into
//! its buffer (WebGPU's robust access). What the executor does not cover is refused when the
//! kernel is compiled, with its line and column (`hal::wgsl_subset`).

mod access;
mod control;
mod direct;
mod eval;
mod exec;
mod geometry;
mod half;
mod lanes;
mod math;
mod matrix;
mod memory;
mod pack;
mod reuse;
mod schedule;
mod subgroup;

use std::sync::atomic::AtomicU32;
use std::sync::Arc;

use crate::base::par::*;
use crate::hal::wgsl_overrides::array_length;
use naga::valid::ModuleInfo;
use naga::{AddressSpace, Handle, Module, TypeInner};

use crate::hal::{Block, UserArg};
use crate::{Error, Result};
use memory::Words;

/// A WGSL compute entry point ready to run on the CPU.
pub(crate) struct WgslProgram {
    module: Module,
    info: ModuleInfo,
    entry: usize,
    /// The entry point's `@workgroup_size`.
    size: [u32; 3],
    /// The most workgroups that may run together as one set of lanes ([`schedule`]).
    batch: usize,
    /// The values that the entry point's expressions may reuse ([`reuse`]).
    entry_reuse: reuse::Reuse,
    /// The same for each of the module's functions, by handle.
    reuse: Vec<reuse::Reuse>,
}

/// Parse, validate and check `source`'s entry point `entry` against what the executor runs.
pub(crate) fn compile(source: &str, entry: &str, constants: &[(&str, f64)]) -> Result<WgslProgram> {
    let (module, info, entry) = crate::hal::wgsl_subset::parse(source, entry, constants, "cpu")?;
    let size = module.entry_points[entry].workgroup_size;
    let entry_reuse = reuse::reuse(
        &module,
        info.get_entry_point(entry),
        &module.entry_points[entry].function,
        true,
    );
    let reuse = module
        .functions
        .iter()
        .map(|(h, f)| reuse::reuse(&module, &info[h], f, false))
        .collect();
    let mut program = WgslProgram {
        module,
        info,
        entry,
        size,
        batch: 1,
        entry_reuse,
        reuse,
    };
    program.batch = schedule::batch(
        &program.module,
        entry,
        program.words_per_lane(),
        program.workgroup_words(),
    );
    Ok(program)
}

impl WgslProgram {
    /// The (group, binding) of each variable the entry point uses, in order.
    #[cfg(all(test, not(target_arch = "wasm32")))]
    pub(crate) fn bindings(&self) -> Vec<(u32, u32)> {
        let used = self.info.get_entry_point(self.entry);
        let mut all: Vec<(u32, u32)> = self
            .module
            .global_variables
            .iter()
            .filter(|(h, _)| !used[*h].is_empty())
            .filter_map(|(_, v)| v.binding.as_ref().map(|b| (b.group, b.binding)))
            .collect();
        all.sort_unstable();
        all
    }

    /// The variable at (`group`, `binding`) that the entry point uses: WGSL lets variables
    /// share a binding (a buffer seen as `array<f32>` and as `array<vec4<f32>>`) as long as
    /// one entry point uses only one of them.
    fn bound_at(
        &self,
        group: u32,
        binding: u32,
    ) -> Option<(Handle<naga::GlobalVariable>, &naga::GlobalVariable)> {
        let used = self.info.get_entry_point(self.entry);
        self.module.global_variables.iter().find(|(h, v)| {
            !used[*h].is_empty()
                && v.binding
                    .as_ref()
                    .is_some_and(|b| b.group == group && b.binding == binding)
        })
    }

    /// Invocations in one workgroup.
    fn invocations(&self) -> usize {
        self.size.iter().map(|&n| n as usize).product()
    }

    /// Words a value of `ty` takes in memory (its WGSL layout; a bool one word, an f16 half
    /// of one).
    fn words(&self, ty: Handle<naga::Type>) -> usize {
        self.words_of(&self.module.types[ty].inner)
    }

    fn words_of(&self, inner: &TypeInner) -> usize {
        match *inner {
            TypeInner::Scalar(_) | TypeInner::Atomic(_) => 1,
            TypeInner::Vector { size, scalar } if scalar.width == 2 => (size as usize).div_ceil(2),
            TypeInner::Vector { size, .. } => size as usize,
            TypeInner::Matrix { columns, rows, .. } => {
                columns as usize * matrix::column_words(rows)
            }
            TypeInner::Array { base, size, stride } => match array_length(&self.module, size) {
                Some(n) if half::is_half(&self.module.types[base].inner) => {
                    (n as usize).div_ceil(2)
                }
                Some(n) => n as usize * self.stride(base, stride),
                None => 0,
            },
            TypeInner::Struct { span, .. } => span.div_ceil(4) as usize,
            _ => 0,
        }
    }

    /// Words a value of type `inner` takes in the executor's lanes: its memory layout, but
    /// for f16 scalars and vectors, one word (the f32 bits) per component.
    fn value_words(&self, inner: &TypeInner) -> usize {
        match *inner {
            TypeInner::Vector { size, scalar } if scalar.width == 2 => size as usize,
            ref other => self.words_of(other),
        }
    }

    /// Words of private and function memory one invocation may hold at once, at most (every
    /// function's variables, as if all were called at once).
    fn words_per_lane(&self) -> usize {
        let m = &self.module;
        let private: usize = m
            .global_variables
            .iter()
            .filter(|(_, v)| v.space == AddressSpace::Private)
            .map(|(_, v)| self.words(v.ty))
            .sum();
        let functions = std::iter::once(&m.entry_points[self.entry].function)
            .chain(m.functions.iter().map(|(_, f)| f));
        private
            + functions
                .flat_map(|f| f.local_variables.iter())
                .map(|(_, l)| self.words(l.ty))
                .sum::<usize>()
    }

    /// Words of `var<workgroup>` memory one workgroup of the entry point uses.
    fn workgroup_words(&self) -> usize {
        let used = self.info.get_entry_point(self.entry);
        self.module
            .global_variables
            .iter()
            .filter(|(h, v)| v.space == AddressSpace::WorkGroup && !used[*h].is_empty())
            .map(|(_, v)| self.words(v.ty))
            .sum()
    }

    /// Words from one array element to the next.
    fn stride(&self, base: Handle<naga::Type>, stride: u32) -> usize {
        (stride as usize / 4).max(self.words(base))
    }
}

/// The words of each bound buffer, in the order of the module's resource bindings.
fn bind<'a>(
    program: &WgslProgram,
    args: &[UserArg<'_>],
    guards: &'a mut [Guard<'_>],
) -> Result<Vec<(Handle<naga::GlobalVariable>, Words<'a>)>> {
    let mut out = Vec::new();
    for (arg, guard) in args.iter().zip(guards.iter_mut()) {
        let UserArg::Buffer {
            group,
            binding,
            byte_offset,
            byte_len,
            ..
        } = *arg
        else {
            return Err(Error::Invalid("a WGSL kernel takes buffers only".into()));
        };
        let var = program.bound_at(group, binding).map(|(h, _)| h);
        let var = var.ok_or_else(|| {
            Error::Internal(format!(
                "no variable at @group({group}) @binding({binding})"
            ))
        })?;
        let range = (byte_offset / 4) as usize..((byte_offset + byte_len) / 4) as usize;
        let words = match guard {
            Guard::Read(g) => Words::Read(&g[range]),
            // SAFETY: `AtomicU32` has the size and alignment of `u32`, and the guard lends
            // these words exclusively for the launch: viewing them as atomics is sound.
            Guard::Write(g) => {
                Words::Write(unsafe { &*(&mut g[range] as *mut [u32] as *const [AtomicU32]) })
            }
        };
        out.push((var, words));
    }
    Ok(out)
}

/// A bound buffer's lock: read-only bindings share, read-write ones are exclusive (the launch
/// checks refuse a read-write buffer bound twice).
enum Guard<'a> {
    Read(std::sync::RwLockReadGuard<'a, Vec<u32>>),
    Write(std::sync::RwLockWriteGuard<'a, Vec<u32>>),
}

/// Run `program` over `workgroups` workgroups with `args` bound.
pub(crate) fn run(program: &WgslProgram, args: &[UserArg<'_>], workgroups: [u32; 3]) -> Result<()> {
    let count = workgroups.iter().map(|&n| n as usize).product::<usize>();
    if count == 0 {
        return Ok(());
    }
    let mut guards = Vec::with_capacity(args.len());
    for arg in args {
        if let UserArg::Buffer {
            block,
            group,
            binding,
            ..
        } = *arg
        {
            guards.push(guard(program, (group, binding), block)?);
        }
    }
    let bound = bind(program, args, &mut guards)?;
    let per = schedule::per_run(program.batch, count, current_num_threads());
    (0..count.div_ceil(per))
        .into_par_iter()
        .try_for_each(|run| {
            exec::workgroups(
                program,
                &bound,
                run * per..((run + 1) * per).min(count),
                workgroups,
            )
        })
}

/// The lock of `block` as the binding at (`group`, `binding`) needs it.
fn guard<'a>(
    program: &WgslProgram,
    (group, binding): (u32, u32),
    block: &'a Arc<Block>,
) -> Result<Guard<'a>> {
    let writable = program.bound_at(group, binding).is_some_and(|(_, v)| {
        matches!(
            v.space,
            AddressSpace::Storage { access } if access.contains(naga::StorageAccess::STORE)
        )
    });
    Ok(if writable {
        Guard::Write(crate::hal::cpu::write_guard(block)?)
    } else {
        Guard::Read(crate::hal::cpu::read_guard(block)?)
    })
}
