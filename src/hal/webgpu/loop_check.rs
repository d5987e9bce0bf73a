//! User kernels on devices that end long loops early ([`crate::Limits::max_loop_iterations`]:
//! Mesa's llvmpipe ends every loop of an invocation once its loops together have gone round
//! 65,535 times, and the kernel goes on with wrong values). Each loop body that the entry
//! point reaches counts into a per-invocation counter; an invocation whose count reaches the
//! limit sets a hidden status word, which the next read of the launching thread reports
//! (`runtime/checks.rs`), so a loop cut short never passes as a result.
//!
//! The count is added to the source text: a call at the start of each loop body, and the
//! counter, the status binding and the counting function appended at the end, so that the
//! lines and columns of the user's code stay where they were.

use naga::{Block, Span, Statement as S};

use crate::hal::LoopCheck;
use crate::{Error, Result};

/// `source` with the loops that `entry` reaches counted against `limit`, and where its
/// status word binds; `None` if the entry point reaches no loop.
pub(crate) fn instrument(source: &str, entry: &str, limit: u64) -> Result<Option<(String, LoopCheck)>> {
    let internal = |e: String| Error::Device(format!("internal: counting the loops of `{entry}`: {e}"));
    let mut module = naga::front::wgsl::parse_str(source).map_err(|e| internal(e.message().to_string()))?;
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
    let mut at: Vec<usize> = Vec::new();
    for span in spans {
        let start = span.to_range().ok_or_else(|| internal("a loop without a place in the source".into()))?.start;
        let open = code[start..].find('{').ok_or_else(|| internal(format!("no body after byte {start}")))?;
        at.push(start + open + 1);
    }
    at.sort_unstable();
    at.dedup();
    let tag = (0..).map(|i| format!("unicompute_loops{i}")).find(|t| !source.contains(t.as_str())).unwrap_or_default();
    let mut out = String::with_capacity(source.len() + 32 * at.len() + 400);
    let mut from = 0;
    for &i in &at {
        out.push_str(&source[from..i]);
        out.push_str(&format!(" {tag}_tick();"));
        from = i;
    }
    out.push_str(&source[from..]);
    out.push_str(&format!(
        "\nvar<private> {tag}_count: u32;\n\
         @group({group}) @binding({binding}) var<storage, read_write> {tag}_status: atomic<u32>;\n\
         fn {tag}_tick() {{ {tag}_count += 1u; \
         if ({tag}_count == {limit}u) {{ atomicStore(&{tag}_status, {tag}_count); }} }}\n"
    ));
    Ok(Some((out, LoopCheck { group, binding, limit })))
}

/// The spans of the loops in `block`, nested ones included.
fn loops(block: &Block, out: &mut Vec<Span>) {
    for (statement, span) in block.span_iter() {
        match statement {
            S::Loop { body, continuing, .. } => {
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
    let bound: Vec<_> = module.global_variables.iter().filter_map(|(_, v)| v.binding.clone()).collect();
    let group = bound.iter().map(|b| b.group).min().unwrap_or(0);
    let last = bound.iter().filter(|b| b.group == group).map(|b| b.binding + 1).max().unwrap_or(0);
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
