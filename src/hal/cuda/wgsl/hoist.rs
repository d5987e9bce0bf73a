//! Values of a loop's body that its `continuing` block uses. WGSL lets `continuing` name the
//! body's `let`s; the C++ body is a block of its own (so that `continue`, a jump to the
//! continuing label, bypasses no initialisation), so such values are declared before it and
//! assigned in it.

use std::ops::Range;

use naga::{Block, Expression, Handle, Statement as S};

use super::{types, Function};

impl Function<'_> {
    /// Declare before `body` (text at `body` of the output, its top level at `depth + 1`)
    /// the values it defines at its top level that the text at `continuing` names, and
    /// assign them there instead of defining them.
    pub(super) fn hoist(
        &mut self,
        block: &Block,
        body: Range<usize>,
        continuing: Range<usize>,
        depth: usize,
    ) -> Result<(), String> {
        let mut declarations = String::new();
        let mut text = self.out[body.clone()].to_string();
        let indent = " ".repeat(4 * (depth + 1));
        for h in top_level_values(block) {
            let name = format!("e{}", h.index());
            if !names(&self.out[continuing.clone()], &name) {
                continue;
            }
            let ty = types::resolved(self.module, &self.info[h].ty)?;
            declarations.push_str(&format!("{}{ty} {name};\n", " ".repeat(4 * depth)));
            let defined = format!("{indent}const auto {name} = ");
            text = text.replace(&defined, &format!("{indent}{name} = "));
        }
        if !declarations.is_empty() {
            self.out.replace_range(body, &(declarations + &text));
        }
        Ok(())
    }
}

/// The values `block`'s own statements (not nested blocks) define.
fn top_level_values(block: &Block) -> Vec<Handle<Expression>> {
    let mut out = Vec::new();
    for statement in block.iter() {
        match *statement {
            S::Emit(ref range) => out.extend(range.clone()),
            S::Call {
                result: Some(r), ..
            }
            | S::Atomic {
                result: Some(r), ..
            }
            | S::WorkGroupUniformLoad { result: r, .. }
            | S::SubgroupBallot { result: r, .. }
            | S::SubgroupCollectiveOperation { result: r, .. }
            | S::SubgroupGather { result: r, .. } => out.push(r),
            _ => {}
        }
    }
    out
}

/// Whether `text` has the identifier `name` (not as part of a longer one).
fn names(text: &str, name: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back().is_none_or(|c| !word(c));
        let after = text[at + name.len()..]
            .chars()
            .next()
            .is_none_or(|c| !word(c));
        before && after
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_are_whole_identifiers() {
        assert!(super::names("x = e12 + 1;", "e12"));
        assert!(super::names("e12", "e12"));
        assert!(!super::names("x = e123;", "e12"));
        assert!(!super::names("x = te12;", "e12"));
    }
}
