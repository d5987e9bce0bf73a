//! WGSL enable directives that naga does not parse yet but WebGPU requires: `enable
//! subgroups;` (and `subgroups_f16`) must precede subgroup built-ins in browsers, while naga
//! 30 refuses the directive and accepts the built-ins without it. Before naga reads a
//! source, those names are blanked out of its directives, byte for byte, so every line and
//! column of the rest stays where it was. Browsers get the source as it was written.

use std::borrow::Cow;

/// Extensions that WebGPU requires to be enabled and naga parses without.
const IMPLIED: [&str; 2] = ["subgroups", "subgroups_f16"];

/// `source` as naga reads it: the [`IMPLIED`] extensions blanked out of its leading
/// `enable` directives (a directive left with none is blanked whole).
pub(crate) fn for_naga(source: &str) -> Cow<'_, str> {
    let mut out: Option<Vec<u8>> = None;
    let mut at = 0;
    while let Some(start) = next_token(source, at) {
        let rest = &source[start..];
        let Some(end) = rest.find(';').map(|e| start + e + 1) else {
            break;
        };
        let is_directive = ["enable", "requires", "diagnostic"]
            .iter()
            .any(|d| word_at(rest, d));
        if !is_directive {
            break;
        }
        if word_at(rest, "enable") {
            let blanks = blanked(&source[start..end]);
            if !blanks.is_empty() {
                let bytes = out.get_or_insert_with(|| source.as_bytes().to_vec());
                for (from, to) in blanks {
                    bytes[start + from..start + to].fill(b' ');
                }
            }
        }
        at = end;
    }
    match out.map(String::from_utf8) {
        Some(Ok(text)) => Cow::Owned(text),
        _ => Cow::Borrowed(source),
    }
}

/// Whether `text` starts with the word `word`.
fn word_at(text: &str, word: &str) -> bool {
    text.starts_with(word)
        && !text[word.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
}

/// The byte ranges of `directive` (`enable a, b;`) to blank: each implied name with the
/// comma after it (or before it, for the last), or everything if no other name is left.
fn blanked(directive: &str) -> Vec<(usize, usize)> {
    let list_start = "enable".len();
    let list = &directive[list_start..directive.len() - 1];
    let mut names = Vec::new();
    let mut offset = list_start;
    for part in list.split(',') {
        let name = part.trim();
        if !name.is_empty() {
            let from = offset + part.find(name).unwrap_or(0);
            names.push((name, from, from + name.len(), offset + part.len()));
        }
        offset += part.len() + 1;
    }
    let implied = names.iter().filter(|n| IMPLIED.contains(&n.0)).count();
    if implied == 0 {
        return Vec::new();
    }
    if implied == names.len() {
        return vec![(0, directive.len())];
    }
    let mut out = Vec::new();
    for (i, &(name, from, to, comma)) in names.iter().enumerate() {
        if IMPLIED.contains(&name) {
            let last = i + 1 == names.len();
            // Up to and with its comma; the last takes the comma before it instead.
            out.push(if last {
                (names[i - 1].2, to)
            } else {
                (from, (comma + 1).min(directive.len() - 1))
            });
        }
    }
    out
}

/// Where the next token starts at or after `at`, past whitespace and comments.
fn next_token(source: &str, mut at: usize) -> Option<usize> {
    let bytes = source.as_bytes();
    loop {
        while at < bytes.len() && bytes[at].is_ascii_whitespace() {
            at += 1;
        }
        if source[at..].starts_with("//") {
            at += source[at..].find('\n')?;
        } else if source[at..].starts_with("/*") {
            at += 2 + source[at + 2..].find("*/")? + 2;
        } else {
            return (at < bytes.len()).then_some(at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::for_naga;

    #[test]
    fn implied_extensions_are_blanked_in_place() {
        let cases = [
            (
                "enable subgroups;\nfn f() {}",
                "                 \nfn f() {}",
            ),
            (
                "// x\nenable f16, subgroups;\n",
                "// x\nenable f16           ;\n",
            ),
            ("enable subgroups, f16;", "enable            f16;"),
            ("enable f16;requires a;", "enable f16;requires a;"),
            ("fn f() {} enable subgroups;", "fn f() {} enable subgroups;"),
        ];
        for (source, want) in cases {
            let got = for_naga(source);
            assert_eq!(got, want, "{source:?}");
            assert_eq!(got.len(), source.len());
        }
        let both = "enable subgroups,subgroups_f16 ;";
        let got = for_naga(&format!("/* c */ {both} x")).into_owned();
        assert_eq!(got, format!("/* c */ {} x", " ".repeat(both.len())));
    }
}
