//! The pipeline library's top-level modules form layers, and this test
//! holds them to it (the front ends above them are crates of their own,
//! which cargo keeps from being used by the library): a module may use only modules listed before it in [`LAYERS`]. That
//! rules out every cycle and keeps the pipeline steps in pipeline order (a
//! step never reaches into a later step, `config` only gathers, and the
//! edges sit on top). It reads the crate's own sources: every
//! `crate::<module>` path outside plain comments counts, in code or in a
//! doc comment, `use` or not.

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
            "question",
            "when",
            "outcome",
            "origin",
            "canonical_url",
            "spec",
            "settings",
            "profile",
            "private_file",
            "console_url",
            "provenance",
            "real_path",
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
    let mut names = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
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
