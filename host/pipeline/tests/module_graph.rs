//! The pipeline library's top-level modules form layers, and this test
//! holds them to it (the front ends above them are crates of their own,
//! which cargo keeps from being used by the library): a module may use only modules listed before it in [`LAYERS`]. That
//! rules out every cycle and keeps the pipeline steps in pipeline order (a
//! step never reaches into a later step, `config` only gathers, and the
//! edges sit on top). It reads the crate's own sources: every
//! `crate::<module>` path outside plain comments counts, in code or in a
//! doc comment, `use` or not.
//!
//! Inside a module the same reading finds circles of files (in every crate
//! under `host/`): two files of one directory may not use each other.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Lowest first. A new module must be placed here, where it belongs.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "plain values and leaf libraries",
        &[
            "content",
            "suggest",
            "presentation",
            "sampling",
            "question",
            "when",
            "outcome",
            "origin",
            "canonical_url",
            "spec",
            "prompt",
            "changes",
            "resource",
            "settings",
            "profile",
            "private_file",
            "console_url",
            "provenance",
            "real_path",
            "caller",
            "call",
            "materialize",
            "capability",
            "limits",
            "store",
            "schema",
        ],
    ),
    (
        "egress and the engine: requests, compiling, linking, describing",
        &["egress", "engine"],
    ),
    (
        "the pipeline steps, in pipeline order",
        &[
            "ownership",
            "nesting",
            "registry",
            "validation",
            "workspace",
            "policy",
            "guards",
            "approval",
            "sandbox",
            "output",
            "idempotency",
            "audit",
            "scheduler",
        ],
    ),
    (
        "gathering and ordering",
        &["error", "config", "records", "check", "controller"],
    ),
    ("entry points for the fuzzers", &["fuzzing"]),
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a source file belongs to (`None` for the crate
/// roots).
fn owner(file: &Path) -> Option<String> {
    let first = file.strip_prefix(src()).ok()?.components().next()?;
    let name = first.as_os_str().to_str()?.trim_end_matches(".rs");
    (!matches!(name, "lib" | "main")).then(|| name.to_owned())
}

/// Source text without plain `//` comments. Doc comments stay: a doc link
/// (`[`crate::x`]`) ties the docs of one module to another as much as a
/// `use` does, so a module's docs may name only modules below it too.
fn code(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) if line[at..].starts_with("///") || line[at..].starts_with("//!") => line,
            // `"//"` inside a string literal ends the line early; that only
            // drops code, never adds a dependency.
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every top-level module a piece of code names through `crate::`,
/// including those inside `use crate::{a, b::c}` groups.
fn named_modules(code: &str) -> BTreeSet<String> {
    named_after(code, "crate::")
}

/// Every first path segment a piece of code names after `prefix` (such as
/// `super::` or `crate::store::`), groups included.
fn named_after(code: &str, prefix: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find(prefix) {
        if rest[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
        {
            rest = &rest[at + prefix.len()..];
            continue;
        }
        rest = &rest[at + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut end = group.len();
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                if depth == 0 {
                    end = i;
                    break;
                }
            }
            let mut depth = 0;
            let mut item = String::new();
            for c in group[..end].chars().chain([',']) {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        names.insert(first_segment(&item));
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                item.push(c);
            }
        } else {
            names.insert(first_segment(rest));
        }
    }
    names.retain(|n| !n.is_empty());
    names
}

fn first_segment(path: &str) -> String {
    path.trim()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let Some(from) = owner(&file) else { continue };
        let text = std::fs::read_to_string(&file).unwrap();
        let used = graph.entry(from.clone()).or_default();
        used.extend(
            named_modules(&code(&text))
                .into_iter()
                .filter(|m| *m != from),
        );
    }
    graph
}

#[test]
fn every_module_uses_only_modules_below_it() {
    let rank: BTreeMap<&str, usize> = LAYERS
        .iter()
        .flat_map(|(_, modules)| modules.iter().copied())
        .enumerate()
        .map(|(i, m)| (m, i))
        .collect();
    let graph = graph();
    let mut problems = Vec::new();
    for (from, used) in &graph {
        let Some(&from_rank) = rank.get(from.as_str()) else {
            problems.push(format!(
                "`{from}` is not in LAYERS: place it in the lowest layer whose modules are all it uses"
            ));
            continue;
        };
        for to in used {
            match rank.get(to.as_str()) {
                // `crate::` followed by a name that is no module (a
                // re-exported item such as `crate::Error`) is not checked.
                None if !graph.contains_key(to) => {}
                None => problems.push(format!("`{to}` is not in LAYERS")),
                Some(&to_rank) if to_rank >= from_rank => problems.push(format!(
                    "`{from}` uses `{to}`, which is not below it: move the shared part down, or \
                     let `{to}` hand `{from}` what it needs"
                )),
                Some(_) => {}
            }
        }
    }
    assert!(
        problems.is_empty(),
        "module layering:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_reader_sees_grouped_and_nested_imports() {
    let names = named_modules(
        "use crate::{a::{B, C}, d, e::f};\nfn x() { crate::g::h(); }\n// crate::comment",
    );
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    assert_eq!(names, ["a", "comment", "d", "e", "g"]);
    assert!(named_modules(&code("// crate::comment\nlet x = 1;")).is_empty());
    let documented = named_modules(&code("/// See [`crate::docs`].\n//! [`crate::inner`]"));
    assert_eq!(
        documented.into_iter().collect::<Vec<_>>(),
        ["docs", "inner"]
    );
}

/// The source files of every crate under `host/`.
fn host_files() -> Vec<PathBuf> {
    let host = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut files = Vec::new();
    for krate in std::fs::read_dir(host).unwrap() {
        let src = krate.unwrap().path().join("src");
        if src.is_dir() {
            rust_files(&src, &mut files);
        }
    }
    files
}

/// A file and the module it is: `engine/state.rs` is `state` among the
/// files of `engine/`, `engine/mod.rs` is `engine` among those of `src/`.
fn place(file: &Path) -> (PathBuf, String) {
    let stem = file.file_stem().unwrap().to_str().unwrap().to_owned();
    let dir = file.parent().unwrap();
    if stem == "mod" {
        let name = dir.file_name().unwrap().to_str().unwrap().to_owned();
        (dir.parent().unwrap().to_owned(), name)
    } else {
        (dir.to_owned(), stem)
    }
}

/// The module path of a directory inside its crate (`store::shared` for
/// `src/store/shared`), as `crate::` paths spell it.
fn module_path(dir: &Path) -> String {
    let mut parts = Vec::new();
    let mut at = dir;
    while at.file_name().is_some_and(|n| n != "src") {
        parts.push(at.file_name().unwrap().to_str().unwrap().to_owned());
        at = at.parent().unwrap();
    }
    parts.reverse();
    parts.join("::")
}

/// A circle of files is a module split in name only: each file needs the
/// others to be read. Siblings (files of one directory, a directory's
/// `mod.rs` standing for it) may use each other one way; the shared part
/// of two that need each other belongs in a third, below both.
#[test]
fn no_files_of_a_module_use_each_other_in_a_circle() {
    let files = host_files();
    let mut siblings: BTreeMap<PathBuf, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let (dir, name) = place(file);
        if !matches!(name.as_str(), "lib" | "main" | "src") {
            siblings.entry(dir).or_default().insert(name);
        }
    }
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let (dir, name) = place(file);
        let Some(around) = siblings.get(&dir) else {
            continue;
        };
        let code = code(&std::fs::read_to_string(file).unwrap());
        let mut used = named_after(&code, "super::");
        let path = module_path(&dir);
        if !path.is_empty() {
            used.extend(named_after(&code, &format!("crate::{path}::")));
        }
        let host = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let shown = dir.strip_prefix(host).unwrap_or(&dir).display().to_string();
        let key = |n: &str| format!("{shown}/{n}");
        edges.entry(key(&name)).or_default().extend(
            used.iter()
                .filter(|u| **u != name && around.contains(*u))
                .map(|u| key(u)),
        );
    }
    let circles = circles(&edges);
    assert!(
        circles.is_empty(),
        "files that use each other:\n{}",
        circles.join("\n")
    );
}

/// Each circle in `edges`, as `a -> b -> a`.
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    fn walk(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        found: &mut Vec<String>,
    ) {
        if let Some(at) = path.iter().position(|p| p == node) {
            let mut circle = path[at..].to_vec();
            circle.push(node.to_owned());
            found.push(circle.join(" -> "));
            return;
        }
        if !done.insert(node.to_owned()) {
            return;
        }
        path.push(node.to_owned());
        for next in edges.get(node).into_iter().flatten() {
            walk(next, edges, path, done, found);
        }
        path.pop();
    }
    let mut found = Vec::new();
    let mut done = BTreeSet::new();
    for node in edges.keys() {
        walk(node, edges, &mut Vec::new(), &mut done, &mut found);
    }
    found
}

#[test]
fn a_circle_of_three_is_found_and_a_chain_is_not() {
    let edges = |pairs: &[(&str, &str)]| {
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in pairs {
            edges.entry((*a).into()).or_default().insert((*b).into());
        }
        edges
    };
    assert_eq!(
        circles(&edges(&[("a", "b"), ("b", "c"), ("c", "a")])),
        ["a -> b -> c -> a"]
    );
    assert!(circles(&edges(&[("a", "b"), ("b", "c"), ("a", "c")])).is_empty());
    let used = named_after(
        "use super::{state::X, host};\nsuper::links::f();\nx::super::no",
        "super::",
    );
    assert_eq!(
        used.into_iter().collect::<Vec<_>>(),
        ["host", "links", "state"]
    );
}
