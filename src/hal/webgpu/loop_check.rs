//! User kernels on devices that end long loops early ([`crate::Limits::max_loop_iterations`]:
//! Mesa's llvmpipe runs the invocations of a subgroup in the lanes of one SIMD loop, and
//! ends every loop once its loops together have gone round 65,535 times, whichever lanes
//! were active, and the kernel goes on with wrong values). Each loop body that the entry
//! point reaches counts into a per-invocation counter; an invocation whose count reaches the
//! limit sets a hidden status word, which the next read of the launching thread reports
//! (`runtime/checks.rs`), so a loop cut short does not pass as a result.
//!
//! Where the device has subgroups, the count follows the subgroup's rather than each
//! invocation's own: each body start takes the largest count of the active invocations plus
//! one, and so does the statement after each loop, when its invocations meet again. (A
//! subgroup whose invocations split between loops in two branches of an `if` counts only the
//! larger of the two; without subgroups each invocation counts its own iterations.)
//!
//! The count is added to the source text: a call at the start of each loop body and after
//! each loop, and the counter, the status binding and the counting functions appended at the
//! end, so that the lines and columns of the user's code stay where they were.

use naga::{Block, Span, Statement as S};

use crate::hal::LoopCheck;
use crate::{Error, Result};

/// `source` with the loops that `entry` reaches counted against `limit`, and where its
/// status word binds; `None` if the entry point reaches no loop.
pub(crate) fn instrument(
    source: &str,
    entry: &str,
    limit: u64,
    subgroups: bool,
) -> Result<Option<(String, LoopCheck)>> {
    let internal = |e: String| Error::Internal(format!("counting the loops of `{entry}`: {e}"));
    let text = crate::hal::wgsl_enables::for_naga(source);
    let mut module =
        naga::front::wgsl::parse_str(&text).map_err(|e| internal(e.message().to_string()))?;
    let (group, binding) = free_binding(&module);
    module.entry_points.retain(|ep| ep.name == entry);
    naga::compact::compact(&mut module, naga::compact::KeepUnused::No);
    let mut spans = Vec::new();
    for ep in &module.entry_points {
        loops(&ep.function.body, &mut spans);
    }
    for (_, f) in module.functions.iter() {
        loops(&f.body, &mut spans);
    }
    if spans.is_empty() {
        return Ok(None);
    }
    let code = without_comments(source);
    let mut at: Vec<(usize, &str)> = Vec::new();
    for span in spans {
        let start = span
            .to_range()
            .ok_or_else(|| internal("a loop without a place in the source".into()))?
            .start;
        let open = start
            + code[start..]
                .find('{')
                .ok_or_else(|| internal(format!("no body after byte {start}")))?;
        let close = matching_brace(&code, open)
            .ok_or_else(|| internal(format!("no end of the body at byte {open}")))?;
        at.push((open + 1, "tick"));
        at.push((close + 1, "meet"));
    }
    at.sort_unstable();
    at.dedup();
    let tag = (0..)
        .map(|i| format!("unicompute_loops{i}"))
        .find(|t| !source.contains(t.as_str()))
        .unwrap_or_default();
    let mut out = String::with_capacity(source.len() + 32 * at.len() + 600);
    let mut from = 0;
    for &(i, call) in &at {
        out.push_str(&source[from..i]);
        out.push_str(&format!(" {tag}_{call}();"));
        from = i;
    }
    out.push_str(&source[from..]);
    out.push_str(&counting(&tag, group, binding, limit, subgroups));
    Ok(Some((
        out,
        LoopCheck {
            group,
            binding,
            limit,
        },
    )))
}

/// The counter, the status binding and the counting functions, named after `tag`.
fn counting(tag: &str, group: u32, binding: u32, limit: u64, subgroups: bool) -> String {
    let shared = if subgroups {
        format!("subgroupMax({tag}_count)")
    } else {
        format!("{tag}_count")
    };
    format!(
        "\nvar<private> {tag}_count: u32;\n\
         @group({group}) @binding({binding}) var<storage, read_write> {tag}_status: atomic<u32>;\n\
         fn {tag}_tick() {{ {tag}_count = {shared} + 1u; \
         if ({tag}_count >= {limit}u) {{ atomicMin(&{tag}_status, {tag}_count); }} }}\n\
         fn {tag}_meet() {{ {tag}_count = {shared}; }}\n"
    )
}

/// The index of the `}` that closes the `{` at `open` in `code` (comments blanked).
fn matching_brace(code: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, b) in code.bytes().enumerate().skip(open) {
        match b {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// The spans of the loops in `block`, nested ones included.
fn loops(block: &Block, out: &mut Vec<Span>) {
    for (statement, span) in block.span_iter() {
        match statement {
            S::Loop {
                body, continuing, ..
            } => {
                out.push(*span);
                loops(body, out);
                loops(continuing, out);
            }
            S::Block(b) => loops(b, out),
            S::If { accept, reject, .. } => {
                loops(accept, out);
                loops(reject, out);
            }
            S::Switch { cases, .. } => cases.iter().for_each(|c| loops(&c.body, out)),
            _ => {}
        }
    }
}

/// A binding no variable of `module` takes: after the last of the lowest group in use.
fn free_binding(module: &naga::Module) -> (u32, u32) {
    let bound: Vec<_> = module
        .global_variables
        .iter()
        .filter_map(|(_, v)| v.binding)
        .collect();
    let group = bound.iter().map(|b| b.group).min().unwrap_or(0);
    let last = bound
        .iter()
        .filter(|b| b.group == group)
        .map(|b| b.binding + 1)
        .max()
        .unwrap_or(0);
    (group, last)
}

/// `source` with its comments blanked out (same length, so offsets still hold), so that a
/// brace inside a comment is not taken for a loop's body.
fn without_comments(source: &str) -> String {
    let bytes = source.as_bytes();
    let mut out = bytes.to_vec();
    let (mut i, mut depth) = (0, 0usize);
    while i < bytes.len() {
        let next = bytes.get(i + 1).copied();
        if depth == 0 && bytes[i] == b'/' && next == Some(b'/') {
            while i < bytes.len() && bytes[i] != b'\n' {
                out[i] = b' ';
                i += 1;
            }
            continue;
        }
        if bytes[i] == b'/' && next == Some(b'*') {
            depth += 1;
            out[i..i + 2].fill(b' ');
            i += 2;
            continue;
        }
        if depth > 0 && bytes[i] == b'*' && next == Some(b'/') {
            depth -= 1;
            out[i..i + 2].fill(b' ');
            i += 2;
            continue;
        }
        if depth > 0 && bytes[i].is_ascii() && bytes[i] != b'\n' {
            out[i] = b' ';
        }
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| source.to_string())
}
