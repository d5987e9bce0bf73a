//! CUDA C front end: read the parameter list of an `extern "C" __global__` entry point, so
//! launches can be checked like WGSL ones. (NVRTC itself reports compile errors later.)

use super::{BindingInfo, BindingKind, KernelInfo, KernelLanguage};
use crate::{DType, Error, Result};

/// Reflect `entry` of `source`, launched with `block` threads per block.
pub(crate) fn reflect(source: &str, entry: &str, block: [u32; 3]) -> Result<KernelInfo> {
    let mut chars = entry.chars();
    if !chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return Err(Error::Invalid(format!(
            "entry point name `{entry}`: expected a C identifier"
        )));
    }
    if block.contains(&0) {
        return Err(Error::Invalid(format!(
            "block size {block:?} of `{entry}`: expected every dimension >= 1"
        )));
    }
    let code = strip_comments(source);
    let (prefix, params) = find_entry(&code, entry)?;
    if !prefix.contains("extern \"C\"") {
        return Err(Error::Invalid(format!(
            "`{entry}` is not declared `extern \"C\"`: expected `extern \"C\" __global__ void \
                {entry}(...)` so NVRTC keeps its name"
        )));
    }
    let mut bindings = Vec::new();
    for (i, param) in params.split(',').map(str::trim).enumerate() {
        if param.is_empty() || param == "void" {
            if params.trim().is_empty() || params.trim() == "void" {
                break;
            }
            return Err(Error::Invalid(format!(
                "parameter {i} of `{entry}` is empty"
            )));
        }
        bindings.push(parameter(entry, i as u32, param)?);
    }
    Ok(KernelInfo {
        language: KernelLanguage::Cuda,
        entry: entry.to_string(),
        workgroup_size: block,
        bindings,
    })
}

/// `source` with comments replaced by spaces (newlines kept, so positions stay put).
fn strip_comments(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut chars = source.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('/', Some('/')) => {
                while chars.peek().is_some_and(|&c| c != '\n') {
                    chars.next();
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                    }
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
                out.push(' ');
            }
            _ => out.push(c),
        }
    }
    out
}

/// The declaration text before `entry` and its parameter list.
fn find_entry<'a>(code: &'a str, entry: &str) -> Result<(&'a str, &'a str)> {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut from = 0;
    while let Some(found) = code[from..].find(entry) {
        let at = from + found;
        from = at + entry.len();
        let before_ok = code[..at].chars().next_back().is_none_or(|c| !is_ident(c));
        let rest = code[from..].trim_start();
        if !before_ok || !rest.starts_with('(') {
            continue;
        }
        let start = code[..at].rfind([';', '}']).map_or(0, |p| p + 1);
        let prefix = &code[start..at];
        if !prefix.contains("__global__") {
            continue;
        }
        let open = code.len() - rest.len();
        let close = code[open..].find(')').ok_or_else(|| {
            Error::Invalid(format!("the parameter list of `{entry}` is not closed"))
        })?;
        return Ok((prefix, &code[open + 1..open + close]));
    }
    Err(Error::Invalid(format!(
        "no `__global__` function `{entry}` found in the CUDA source"
    )))
}

/// One parameter: a pointer (buffer) or a by-value scalar.
fn parameter(entry: &str, index: u32, text: &str) -> Result<BindingInfo> {
    let spaced = text.replace('*', " * ");
    let words: Vec<&str> = spaced.split_whitespace().collect();
    let pointers = words.iter().filter(|&&w| w == "*").count();
    let is_const = words
        .iter()
        .position(|&w| w == "const")
        .is_some_and(|c| words.iter().position(|&w| w == "*").is_none_or(|p| c < p));
    let Some((&name, rest)) = words.split_last() else {
        return Err(Error::Invalid(format!(
            "parameter {index} of `{entry}` is empty"
        )));
    };
    let ty: Vec<&str> = rest
        .iter()
        .copied()
        .filter(|w| {
            !matches!(
                *w,
                "*" | "const" | "__restrict__" | "__restrict" | "restrict" | "volatile"
            )
        })
        .collect();
    let ty = ty.join(" ");
    let dtype = match ty.as_str() {
        "float" => Some(DType::F32),
        "int" | "signed" | "signed int" | "int32_t" => Some(DType::I32),
        "unsigned" | "unsigned int" | "uint32_t" | "uint" => Some(DType::U32),
        _ => None,
    };
    let unsupported = || {
        Error::Invalid(format!(
            "parameter {index} `{name}` of `{entry}` has type `{}`: expected float, int or \
                unsigned int, or a pointer to one of them",
            text.trim()
        ))
    };
    let dtype = dtype.ok_or_else(unsupported)?;
    let kind = match pointers {
        0 => BindingKind::Scalar,
        1 if is_const => BindingKind::StorageRead,
        1 => BindingKind::StorageReadWrite,
        _ => return Err(unsupported()),
    };
    Ok(BindingInfo {
        group: 0,
        binding: index,
        name: name.to_string(),
        kind,
        dtype: Some(dtype),
        min_bytes: 0,
        runtime_sized: kind != BindingKind::Scalar,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pointer_and_scalar_parameters() {
        let src = r#"
            // saxpy(a, x, y)
            extern "C" __global__ void saxpy(float a, const float* __restrict__ x, /* out */ float *y, unsigned n) { }
        "#;
        let info = reflect(src, "saxpy", [128, 1, 1]).unwrap();
        let kinds: Vec<_> = info
            .bindings
            .iter()
            .map(|b| (b.name.as_str(), b.kind, b.dtype))
            .collect();
        assert_eq!(
            kinds,
            [
                ("a", BindingKind::Scalar, Some(DType::F32)),
                ("x", BindingKind::StorageRead, Some(DType::F32)),
                ("y", BindingKind::StorageReadWrite, Some(DType::F32)),
                ("n", BindingKind::Scalar, Some(DType::U32)),
            ]
        );
        assert_eq!(info.workgroup_size, [128, 1, 1]);
    }

    #[test]
    fn rejects_what_it_cannot_check() {
        let err = |src: &str| reflect(src, "k", [1, 1, 1]).unwrap_err().to_string();
        assert!(err("__global__ void k(float* x) {}").contains("extern \"C\""));
        assert!(err("extern \"C\" __global__ void k(double* x) {}").contains("`double* x`"));
        assert!(err("extern \"C\" __global__ void other(float* x) {}")
            .contains("no `__global__` function `k`"));
        assert!(err("extern \"C\" __device__ void k(float* x) {}").contains("no `__global__`"));
        assert!(reflect("extern \"C\" __global__ void k() {}", "k", [0, 1, 1]).is_err());
        assert!(
            reflect("extern \"C\" __global__ void k() {}", "", [1, 1, 1]).is_err(),
            "empty name"
        );
        assert!(reflect("extern \"C\" __global__ void k() {}", "k k", [1, 1, 1]).is_err());
        assert!(
            reflect("extern \"C\" __global__ void k(void) {}", "k", [1, 1, 1])
                .unwrap()
                .bindings
                .is_empty()
        );
    }
}
