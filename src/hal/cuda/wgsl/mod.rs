//! WGSL compute kernels on CUDA: naga's validated IR translated to CUDA C, which NVRTC then
//! compiles like any user kernel. The subset is the CPU executor's (`hal::wgsl_subset`).
//!
//! The translation is one C++ source: prelude.cuh (WGSL's vectors, and its arithmetic rules
//! where C++'s differ), a struct per WGSL array and struct type with WGSL's layout, the
//! `var<workgroup>` variables as `__shared__` ones (zeroed at the start, as WGSL's are), and a
//! struct `Invocation` holding the bound buffers and the `var<private>` variables, whose
//! member functions are the module's functions. The kernel `wgsl_entry` takes each binding
//! the entry point uses, in (group, binding) order, as a pointer and its length in bytes,
//! fills an `Invocation` and calls the entry point with the compute built-ins.

mod expr;
mod hoist;
mod stmt;
mod types;

use std::collections::HashSet;
use std::fmt::Write;

use naga::valid::{FunctionInfo, ModuleInfo};
use naga::{AddressSpace, Handle, Module};

use crate::{Error, Result};

/// The name of the translated kernel.
pub(crate) const ENTRY: &str = "wgsl_entry";

const PRELUDE: &str = include_str!("prelude.cuh");
/// Matrices and f16, after the prelude.
const TYPES: &str = include_str!("types.cuh");

/// What the translation does not cover, and where.
type Refusal = (String, naga::Span);

/// One function being written: its IR, what has been named so far, the loops around, and
/// the place being written (for errors).
pub(super) struct Function<'a> {
    module: &'a Module,
    info: &'a FunctionInfo,
    function: &'a naga::Function,
    emitted: HashSet<Handle<naga::Expression>>,
    out: String,
    loops: Vec<usize>,
    next_loop: usize,
    at: naga::Span,
    /// The WGSL source, for the `#line` directive before each statement's lines.
    source: &'a str,
}

/// Where a function's statements end: the lines after it are the translation's own again
/// (`translate` numbers them).
const OWN_LINES: &str = "#line OWN\n";
/// The file name `#line` gives the translation's own lines.
const OWN_FILE: &str = "translation.cu";

/// Translate `source`'s entry point `entry` and compile the result with NVRTC for sm_80 and
/// sm_90, with no device: the CUDA C, or why not (NVRTC missing: `Unsupported`).
pub(crate) fn check(source: &str, entry: &str, constants: &[(&str, f64)]) -> Result<String> {
    let translated = translate(source, entry, constants)?;
    for arch in ["sm_80", "sm_90"] {
        super::compile::compile(&translated, "wgsl.cu", &super::compile::base_options(arch))
            .map_err(|e| match e {
                super::compile::CompileFailure::Nvrtc(why) => Error::Unsupported {
                    backend: crate::BackendKind::Cuda,
                    what: format!("compiling the CUDA translation: {why}"),
                },
                super::compile::CompileFailure::Source(log) => {
                    compile_failure(source, entry, arch, &log)
                }
            })?;
    }
    Ok(translated)
}

/// `source`'s compute entry point `entry` as CUDA C (its kernel is [`ENTRY`]). Constructs
/// outside the subset are refused at their line:column.
pub(crate) fn translate(source: &str, entry: &str, constants: &[(&str, f64)]) -> Result<String> {
    let (module, info, ep) = crate::hal::wgsl_subset::parse(source, entry, constants, "cuda")?;
    let refuse = |(what, span): Refusal| {
        crate::hal::wgsl_subset::located(
            source,
            format!("the cuda backend does not run {what}"),
            span,
        )
    };
    let mut out = String::from(PRELUDE);
    out.push_str(TYPES);
    out.push_str(&types::declarations(&module).map_err(refuse)?);
    // Every workgroup variable: functions the entry point never calls may name one (the
    // compiler drops what no kernel reaches).
    for (h, var) in module
        .global_variables
        .iter()
        .filter(|(_, v)| v.space == AddressSpace::WorkGroup)
    {
        let name = types::name(&module, var.ty)
            .map_err(|what| refuse((what, module.global_variables.get_span(h))))?;
        let _ = writeln!(out, "__shared__ {name} w{};", h.index());
    }
    out.push_str(&invocation(&module, &info, ep, source).map_err(refuse)?);
    out.push_str(&kernel(&module, &info, ep).map_err(refuse)?);
    Ok(own_lines_numbered(&out))
}

/// `text` with each [`OWN_LINES`] marker made a `#line` directive that gives the lines after
/// it their true numbers, so that NVRTC reports the translation's own lines where they are.
fn own_lines_numbered(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.lines().enumerate() {
        if line == OWN_LINES.trim_end() {
            let _ = writeln!(out, "#line {} \"{OWN_FILE}\"", i + 2);
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The error for NVRTC's `log` on the translation of `source`'s kernel `entry`: at the WGSL
/// line and column of the statement whose translation failed (`#line` directives name them
/// `wgsl@<column>`), else an internal error with the log.
pub(crate) fn compile_failure(source: &str, entry: &str, arch: &str, log: &str) -> Error {
    let error = super::compile::first_error(log);
    let at = error.and_then(|e| {
        let column = e.file.rsplit_once("wgsl@")?.1.parse().ok()?;
        Some((e.line, column, e.message))
    });
    match at {
        Some((line, column, message)) => {
            let message = format!(
                "the CUDA translation of this line does not compile for {arch}, a bug of \
                 unicompute's (please report it with the kernel): {message}"
            );
            crate::hal::wgsl_subset::located_at(source, line, column, message)
        }
        None => Error::Internal(format!(
            "the CUDA translation of `{entry}` does not compile for {arch}: {log}"
        )),
    }
}

/// `struct Invocation`: the bound buffers, the private variables and the functions.
fn invocation(
    module: &Module,
    info: &ModuleInfo,
    ep: usize,
    source: &str,
) -> Result<String, Refusal> {
    let mut out = String::from("struct Invocation {\n");
    for (h, var) in module.global_variables.iter() {
        let at = |what: String| (what, module.global_variables.get_span(h));
        let name = types::name(module, var.ty).map_err(at)?;
        match var.space {
            AddressSpace::Storage { .. } | AddressSpace::Uniform => {
                let _ = writeln!(
                    out,
                    "    {name}* g{0} = nullptr;\n    u64 g{0}_bytes = 0;",
                    h.index()
                );
            }
            AddressSpace::Private => {
                let init = var
                    .init
                    .map_or(Ok(format!("{name}{{}}")), |e| types::constant(module, e))
                    .map_err(at)?;
                let _ = writeln!(out, "    {name} p{} = {init};", h.index());
            }
            _ => {}
        }
    }
    for (h, f) in module.functions.iter() {
        out.push_str(&function(
            module,
            &info[h],
            f,
            &format!("f{}", h.index()),
            source,
        )?);
    }
    let entry = &module.entry_points[ep].function;
    out.push_str(&function(
        module,
        info.get_entry_point(ep),
        entry,
        "entry",
        source,
    )?);
    out.push_str("};\n");
    Ok(out)
}

/// One member function: its signature, its local variables, then its body.
fn function(
    module: &Module,
    info: &FunctionInfo,
    f: &naga::Function,
    name: &str,
    source: &str,
) -> Result<String, Refusal> {
    let whole = |what: String| (what, naga::Span::default());
    let result = f
        .result
        .as_ref()
        .map_or(Ok("void".to_string()), |r| types::name(module, r.ty))
        .map_err(whole)?;
    let args = f
        .arguments
        .iter()
        .enumerate()
        .map(|(i, a)| Ok(format!("{} a{i}", types::name(module, a.ty)?)))
        .collect::<Result<Vec<_>, String>>()
        .map_err(whole)?;
    let mut w = Function {
        module,
        info,
        function: f,
        emitted: HashSet::new(),
        out: String::new(),
        loops: Vec::new(),
        next_loop: 0,
        at: naga::Span::default(),
        source,
    };
    let _ = writeln!(
        w.out,
        "    __device__ {result} {name}({}) {{",
        args.join(", ")
    );
    for (h, local) in f.local_variables.iter() {
        let at = |what: String| (what, f.local_variables.get_span(h));
        let ty = types::name(module, local.ty).map_err(at)?;
        let init = match local.init {
            Some(e) => w.expr(e).map_err(at)?,
            None => format!("{ty}{{}}"),
        };
        let _ = writeln!(w.out, "        {ty} l{} = {init};", h.index());
    }
    w.block(&f.body, 2).map_err(|what| (what, w.at))?;
    w.out.push_str(OWN_LINES);
    w.out.push_str("    }\n");
    Ok(w.out)
}

/// The `extern "C"` kernel: zero the workgroup memory, bind the buffers, call the entry.
fn kernel(module: &Module, info: &ModuleInfo, ep: usize) -> Result<String, Refusal> {
    kernel_text(module, info, ep).map_err(|what| (what, naga::Span::default()))
}

fn kernel_text(module: &Module, info: &ModuleInfo, ep: usize) -> Result<String, String> {
    let used = info.get_entry_point(ep);
    let mut bound: Vec<_> = module
        .global_variables
        .iter()
        .filter(|(h, v)| v.binding.is_some() && !used[*h].is_empty())
        .collect();
    bound.sort_by_key(|(_, v)| v.binding.as_ref().map(|b| (b.group, b.binding)));
    let mut params = Vec::new();
    let mut binds = String::new();
    for (h, var) in &bound {
        let name = types::name(module, var.ty)?;
        params.push(format!("{name}* b{0}, u64 b{0}_bytes", h.index()));
        let _ = writeln!(
            binds,
            "    inv.g{0} = b{0};\n    inv.g{0}_bytes = b{0}_bytes;",
            h.index()
        );
    }
    let [x, y, z] = module.entry_points[ep].workgroup_size;
    let mut out = format!(
        "extern \"C\" __global__ void __launch_bounds__({}) {ENTRY}({}) {{\n",
        x * y * z,
        params.join(", ")
    );
    out.push_str(
        "    const u32 flat = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * \
        threadIdx.z);\n",
    );
    out.push_str("    const u32 threads = blockDim.x * blockDim.y * blockDim.z;\n");
    for (h, var) in module.global_variables.iter() {
        if var.space == AddressSpace::WorkGroup && !used[h].is_empty() {
            let _ = writeln!(
                out,
                "    for (u32 i = flat; i < sizeof(w{0}); i += threads) \
                ((unsigned char*)&w{0})[i] = 0;",
                h.index()
            );
        }
    }
    out.push_str("    __syncthreads();\n    Invocation inv;\n");
    out.push_str(&binds);
    let args = module.entry_points[ep]
        .function
        .arguments
        .iter()
        .map(|a| builtin_argument(module, a))
        .collect::<Result<Vec<_>, String>>()?;
    let _ = writeln!(out, "    inv.entry({});\n}}", args.join(", "));
    Ok(out)
}

/// The value of an entry-point argument: a compute built-in, or a struct of them.
fn builtin_argument(module: &Module, arg: &naga::FunctionArgument) -> Result<String, String> {
    match &module.types[arg.ty].inner {
        naga::TypeInner::Struct { members, .. } => {
            let name = types::name(module, arg.ty)?;
            let sets = members
                .iter()
                .enumerate()
                .map(|(i, m)| Ok(format!(" s.m{i} = {};", builtin(&m.binding)?)))
                .collect::<Result<String, String>>()?;
            Ok(format!("([&] {{ {name} s{{}};{sets} return s; }}())"))
        }
        _ => builtin(&arg.binding),
    }
}

fn builtin(binding: &Option<naga::Binding>) -> Result<String, String> {
    use naga::BuiltIn as B;
    let v3 = |x: &str, y: &str, z: &str| format!("vec<u32, 3>{{{{{x}, {y}, {z}}}}}");
    Ok(match binding {
        Some(naga::Binding::BuiltIn(B::GlobalInvocationId)) => v3(
            "blockIdx.x * blockDim.x + threadIdx.x",
            "blockIdx.y * blockDim.y + threadIdx.y",
            "blockIdx.z * blockDim.z + threadIdx.z",
        ),
        Some(naga::Binding::BuiltIn(B::LocalInvocationId)) => {
            v3("threadIdx.x", "threadIdx.y", "threadIdx.z")
        }
        Some(naga::Binding::BuiltIn(B::WorkGroupId)) => {
            v3("blockIdx.x", "blockIdx.y", "blockIdx.z")
        }
        Some(naga::Binding::BuiltIn(B::NumWorkGroups)) => v3("gridDim.x", "gridDim.y", "gridDim.z"),
        Some(naga::Binding::BuiltIn(B::LocalInvocationIndex)) => "flat".into(),
        Some(naga::Binding::BuiltIn(B::SubgroupSize)) => "32u".into(),
        Some(naga::Binding::BuiltIn(B::SubgroupInvocationId)) => "(flat % 32u)".into(),
        Some(naga::Binding::BuiltIn(B::SubgroupId)) => "(flat / 32u)".into(),
        Some(naga::Binding::BuiltIn(B::NumSubgroups)) => "((threads + 31u) / 32u)".into(),
        other => return Err(format!("the entry-point input {other:?}")),
    })
}

#[cfg(test)]
mod tests {
    const SOURCE: &str = "@group(0) @binding(0) var<storage, read_write> y: array<u32>;\n\n\
        @compute @workgroup_size(4)\nfn main(@builtin(global_invocation_id) id: vec3<u32>) {\n    \
        y[id.x] = id.x + 1u;\n}\n";

    /// Each statement's C++ comes after a `#line` naming its WGSL line and column; the
    /// translation's own lines keep their true numbers.
    #[test]
    fn lines_name_the_wgsl_they_come_from() {
        let text = super::translate(SOURCE, "main", &[]).unwrap();
        assert!(text.contains("#line 5 \"wgsl@"), "{text}");
        assert!(!text.contains("#line OWN"), "{text}");
        let own = format!("\"{}\"", super::OWN_FILE);
        for (i, line) in text.lines().enumerate().filter(|(_, l)| l.ends_with(&own)) {
            assert_eq!(line, format!("#line {} {own}", i + 2), "line {}", i + 1);
        }
    }

    /// NVRTC's error on a translated statement points at the user's WGSL, not at the C++.
    #[test]
    fn compile_failures_point_at_the_wgsl() {
        let log = "wgsl@5(5): error: identifier \"e4\" is undefined\n1 error detected";
        let e = super::compile_failure(SOURCE, "main", "sm_90", log);
        let text = e.to_string();
        assert_eq!(e.code(), "SHADER", "{e}");
        assert!(
            text.contains("5:5") && text.contains("y[id.x]") && text.contains("e4"),
            "{e}"
        );
        let e = super::compile_failure(SOURCE, "main", "sm_90", "translation.cu(40): error: x");
        assert_eq!(e.code(), "INTERNAL", "{e}");
    }
}
