//! The official JSON-Schema-Test-Suite (draft 2020-12) against the host's
//! schema loader and validator: every case of every enforced keyword either
//! validates exactly as the suite says, or its schema is refused at load
//! and listed in `outside-subset.txt` with the reason. A case that starts
//! or stops being refused fails the test, so the list cannot go stale.

use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::PathBuf;
use toolwarden::Schema;

#[derive(Deserialize)]
struct Case {
    description: String,
    schema: Value,
    tests: Vec<Test>,
}

#[derive(Deserialize)]
struct Test {
    description: String,
    data: Value,
    valid: bool,
}

fn suite_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/json-schema-test-suite")
}

/// `file: case description` of every case the loader is expected to refuse.
fn expected_refusals() -> BTreeSet<String> {
    let text = std::fs::read_to_string(suite_dir().join("outside-subset.txt"))
        .expect("outside-subset.txt is vendored with the suite");
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| l.split(" -- ").next().unwrap_or(l).trim().to_owned())
        .collect()
}

#[test]
fn the_official_suite_passes_for_every_enforced_keyword() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(suite_dir().join("draft2020-12"))
        .expect("the vendored suite")
        .map(|e| e.expect("a directory entry").path())
        .collect();
    files.sort();
    assert!(files.len() >= 35, "the vendored files are missing");
    let mut refused = BTreeSet::new();
    let mut refusal_reasons = Vec::new();
    let mut failures = Vec::new();
    let (mut cases, mut checks) = (0, 0);
    for path in &files {
        let file = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        let text = std::fs::read_to_string(path).expect("a suite file");
        let suite: Vec<Case> = serde_json::from_str(&text).expect("suite JSON");
        for case in suite {
            let name = format!("{file}: {}", case.description);
            let schema = match Schema::compile(&case.schema) {
                Ok(schema) => schema,
                Err(e) => {
                    refusal_reasons.push(format!("{name} -- {e}"));
                    refused.insert(name);
                    continue;
                }
            };
            cases += 1;
            for test in &case.tests {
                checks += 1;
                let violations = schema.violations(&test.data);
                if violations.is_empty() != test.valid {
                    failures.push(format!(
                        "{name} / {}: expected valid={}, got {:?}",
                        test.description,
                        test.valid,
                        violations.iter().collect::<Vec<_>>()
                    ));
                }
            }
        }
    }
    println!(
        "JSON-Schema-Test-Suite: {cases} cases ({checks} checks) run, {} refused at load",
        refused.len()
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    let expected = expected_refusals();
    let newly: Vec<_> = refusal_reasons
        .iter()
        .filter(|r| !expected.contains(r.split(" -- ").next().unwrap_or(r)))
        .collect();
    let accepted: Vec<_> = expected.difference(&refused).collect();
    assert!(
        newly.is_empty() && accepted.is_empty(),
        "refused but not listed in outside-subset.txt:\n{}\nlisted but now accepted:\n{:?}",
        newly
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        accepted
    );
    assert!(
        cases > 200 && checks > 700,
        "{cases} cases, {checks} checks"
    );
}
