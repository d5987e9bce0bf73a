//! The docs against the code they show: the README stays a hub (at most 1,200 words), its
//! first programs are verbatim the files CI runs (`examples/first_program.rs`, run by
//! `scripts/test.sh`; `npm/test/first-program.mjs`, run by `scripts/test-npm.sh`, which
//! `npm/README.md` shows too), and the
//! book in `docs/src/` includes only files that exist (with their anchors), links only to
//! pages and headings that exist, and lists every page in its `SUMMARY.md`.
//!
//! Reads the sources, so it is a test binary of its own, like `tests/layers.rs`.
#![cfg(not(target_arch = "wasm32"))]

use std::fs;
use std::path::{Path, PathBuf};

/// The README's word budget (counted as `wc -w` counts).
const README_WORDS: usize = 1_200;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The body of the first fenced block with this info string after the heading `heading`.
fn fenced_block(markdown: &str, heading: &str, info: &str) -> String {
    let section = markdown
        .split_once(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("no heading {heading:?}"))
        .1;
    let body = section
        .split_once(&format!("```{info}\n"))
        .unwrap_or_else(|| panic!("no ```{info} block under {heading:?}"))
        .1;
    let end = body.find("```").expect("an unclosed fenced block");
    body[..end].to_string()
}

/// Every `.md` file under `dir`.
fn markdown_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).unwrap().map(Result::unwrap) {
        let path = entry.path();
        if path.is_dir() {
            out.extend(markdown_files(&path));
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
    out
}

/// The book's pages, and the README beside them.
fn pages() -> Vec<PathBuf> {
    let mut pages = markdown_files(&root().join("docs/src"));
    pages.push(root().join("README.md"));
    pages
}

/// The targets of `{{#include ...}}` in `text`.
fn includes(text: &str) -> Vec<&str> {
    text.split("{{#include ")
        .skip(1)
        .map(|rest| rest.split("}}").next().unwrap().trim())
        .collect()
}

/// The relative link targets of `text`: `](target)` that is not a URL.
fn relative_links(text: &str) -> Vec<&str> {
    text.split("](")
        .skip(1)
        .map(|rest| rest.split(')').next().unwrap())
        .filter(|t| !t.contains("://") && !t.starts_with("mailto:"))
        .collect()
}

/// The id mdBook (and GitHub) gives a heading: lower case, white space to `-`, other
/// punctuation dropped.
fn heading_id(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            c if c.is_whitespace() => Some('-'),
            _ => None,
        })
        .collect()
}

/// The ids of the headings of a markdown page (outside fenced blocks).
fn heading_ids(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut ids = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            ids.push(heading_id(line.trim_start_matches('#')));
        }
    }
    ids
}

#[test]
fn the_readme_is_a_hub_of_at_most_1200_words() {
    let words = read(&root().join("README.md")).split_whitespace().count();
    assert!(
        words <= README_WORDS,
        "README.md has {words} words: at most {README_WORDS} (move the detail into docs/src/)"
    );
}

#[test]
fn the_readme_rust_program_is_the_example_ci_runs() {
    let readme = read(&root().join("README.md"));
    let block = fenced_block(&readme, "## A first program in Rust", "rust");
    let example = read(&root().join("examples/first_program.rs"));
    assert!(
        block.contains("fn main()"),
        "the README's Rust block is not a program"
    );
    assert!(
        example.ends_with(&block),
        "the README's Rust program differs from examples/first_program.rs (from `use` on)"
    );
}

#[test]
fn the_readme_js_program_is_the_file_npm_tests_run() {
    let readme = read(&root().join("README.md"));
    let block = fenced_block(&readme, "## A first program in JS", "js");
    let file = read(&root().join("npm/test/first-program.mjs"));
    assert!(
        file.starts_with(&block),
        "the README's JS program differs from the start of npm/test/first-program.mjs"
    );
    let npm_readme = read(&root().join("npm/README.md"));
    let npm_block = fenced_block(&npm_readme, "## A first program", "js");
    assert_eq!(
        npm_block, block,
        "npm/README.md's first program differs from the README's"
    );
    let runner = read(&root().join("scripts/test-npm.sh"));
    assert!(
        runner.contains("node first-program.mjs"),
        "scripts/test-npm.sh does not run it"
    );
}

#[test]
fn every_book_include_names_a_file_and_anchor_that_exist() {
    for page in markdown_files(&root().join("docs/src")) {
        let text = read(&page);
        for include in includes(&text) {
            let (path, anchor) = include.split_once(':').unwrap_or((include, ""));
            let target = page.parent().unwrap().join(path);
            assert!(target.is_file(), "{}: no file {path}", page.display());
            if !anchor.is_empty() {
                let source = read(&target);
                let (start, end) = (format!("ANCHOR: {anchor}"), format!("ANCHOR_END: {anchor}"));
                assert!(
                    source.contains(&start) && source.contains(&end),
                    "{}: {path} has no anchor {anchor}",
                    page.display()
                );
            }
        }
    }
}

#[test]
fn every_relative_link_names_a_file_and_heading_that_exist() {
    for page in pages() {
        let text = read(&page);
        for link in relative_links(&text) {
            let (path, fragment) = link.split_once('#').unwrap_or((link, ""));
            let target = if path.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(path)
            };
            assert!(target.exists(), "{}: no file {path}", page.display());
            if !fragment.is_empty() {
                let ids = heading_ids(&read(&target));
                assert!(
                    ids.iter().any(|id| id == fragment),
                    "{}: {path} has no heading #{fragment} (it has {ids:?})",
                    page.display()
                );
            }
        }
    }
}

#[test]
fn every_book_page_is_in_the_summary() {
    let src = root().join("docs/src");
    let summary = read(&src.join("SUMMARY.md"));
    let listed = relative_links(&summary);
    for page in markdown_files(&src) {
        let name = page
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if name != "SUMMARY.md" {
            assert!(
                listed.contains(&name.as_str()),
                "docs/src/{name} is not in SUMMARY.md"
            );
        }
    }
}
