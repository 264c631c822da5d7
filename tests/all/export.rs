//! `toolwarden schemas`: every exported tool list obeys its API's rules.

use crate::harness::{TestHost, run_cli};
use serde_json::Value;
use toolwarden_tests::{CALC, FS, HOSTILE};

fn export(t: &TestHost, format: &str) -> (i32, Vec<Value>, String) {
    let (code, stdout, stderr) = run_cli(t.cli().args(["schemas", "--format", format]));
    let list: Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"));
    (code, list.as_array().unwrap().clone(), stderr)
}

fn name_ok(name: &str, max: usize) -> bool {
    !name.is_empty()
        && name.len() <= max
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// OpenAI strict mode: every object closed, every property required, no oneOf.
fn assert_strict(schema: &Value, at: &str) {
    let obj = schema
        .as_object()
        .unwrap_or_else(|| panic!("{at}: not an object"));
    assert!(!obj.contains_key("oneOf"), "{at}: oneOf");
    if let Some(props) = obj.get("properties").and_then(Value::as_object) {
        assert_eq!(
            obj.get("additionalProperties"),
            Some(&Value::Bool(false)),
            "{at}: not closed"
        );
        let mut required: Vec<&str> = obj["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let mut keys: Vec<&str> = props.keys().map(String::as_str).collect();
        required.sort();
        keys.sort();
        assert_eq!(required, keys, "{at}: every property must be required");
        for (k, sub) in props {
            assert_strict(sub, &format!("{at}/properties/{k}"));
        }
    }
    for key in ["items"] {
        if let Some(sub) = obj.get(key) {
            assert_strict(sub, &format!("{at}/{key}"));
        }
    }
    for (i, alt) in obj
        .get("anyOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        assert_strict(alt, &format!("{at}/anyOf/{i}"));
    }
    assert_ne!(
        obj.get("format"),
        Some(&Value::from("path")),
        "{at}: toolwarden's own format marker leaked"
    );
}

#[test]
fn every_exported_schema_follows_its_formats_rules() {
    let t = TestHost::new(&[CALC, FS, HOSTILE]);
    let host = t.controller();
    let registry = host.registry();
    let count = registry.tools().count();

    let (code, openai, _) = export(&t, "openai");
    assert_eq!((code, openai.len()), (0, count));
    for tool in &openai {
        assert_eq!(tool["type"], "function");
        let name = tool["function"]["name"].as_str().unwrap();
        assert!(
            name_ok(name, 64) && registry.get(name).is_some(),
            "{name} maps back to its tool"
        );
        assert_eq!(tool["function"]["parameters"]["type"], "object");
        assert!(!tool["function"]["description"].as_str().unwrap().is_empty());
    }

    let (code, strict, stderr) = export(&t, "openai-strict");
    assert_eq!((code, strict.len()), (0, count), "{stderr}");
    for tool in &strict {
        assert_eq!(tool["function"]["strict"], true);
        assert_strict(
            &tool["function"]["parameters"],
            tool["function"]["name"].as_str().unwrap(),
        );
    }
    let read = strict
        .iter()
        .find(|t| t["function"]["name"] == "read_file")
        .unwrap();
    assert_eq!(
        read["function"]["parameters"]["properties"]["max_bytes"]["type"],
        serde_json::json!(["integer", "null"])
    );

    let (code, anthropic, _) = export(&t, "anthropic");
    assert_eq!((code, anthropic.len()), (0, count));
    for tool in &anthropic {
        assert!(name_ok(tool["name"].as_str().unwrap(), 128));
        assert_eq!(tool["input_schema"]["type"], "object");
    }

    let (code, mcp, _) = export(&t, "mcp");
    assert_eq!((code, mcp.len()), (0, count));
    let write = mcp.iter().find(|t| t["name"] == "write_file").unwrap();
    assert_eq!(write["inputSchema"]["type"], "object");
    assert_eq!(write["annotations"]["destructiveHint"], true);
    assert_eq!(write["outputSchema"]["type"], "object");

    let (code, _, stderr) = run_cli(t.cli().args(["schemas", "--format", "gemini"]));
    assert_eq!(code, 2, "{stderr}");
}
