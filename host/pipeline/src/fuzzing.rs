//! Entry points of the fuzz targets (`fuzz/`, run by hand with cargo-fuzz)
//! and of their smoke runs in `make test` on the stable toolchain. Each takes
//! arbitrary bytes and must return, whatever they are: a panic, a hang or an
//! abort is a bug. Not part of the API.

use crate::config::parse_policy;
use crate::engine::Engine;
use crate::limits::Limits;
use crate::materialize::Arguments;
use crate::policy::Policy;
use crate::schema::Schema;
use crate::spec::{Effect, Effects, FsNeed, Risk, ToolSpec};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::sync::OnceLock;

/// A config file: parsing, rule compilation, globs and pointers.
pub fn config_file(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = parse_policy(text);
    }
}

const POLICY: &str = r#"
[[rule]]
tools = ["read_*"]
decision = "allow"
reason = "reads"

[[rule]]
tools = ["write_file"]
when = { "/path" = "src/**", "/force" = false }
decision = "allow"
reason = "edits in src"

[[rule]]
tools = ["write_file"]
when = { "/path" = { not = "src/**" } }
decision = "ask"
reason = "elsewhere"

[[rule]]
effects = ["mutates-workspace"]
when = { "/mode" = "overwrite" }
decision = "deny"
reason = "no overwrites"
"#;

struct Fixture {
    policy: Policy,
    tools: Vec<(ToolSpec, Schema)>,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let path = json!({ "type": "string", "format": "path", "minLength": 1, "maxLength": 4096 });
        let tools = [
            (
                "read_file",
                json!({ "type": "object", "properties": { "path": path, "max_bytes": { "type": ["integer", "null"], "minimum": 1 } }, "required": ["path"], "additionalProperties": false }),
                Effects::from_iter([Effect::ReadOnly, Effect::Idempotent]),
                FsNeed::ReadOnly,
            ),
            (
                "write_file",
                json!({ "type": "object", "properties": {
                    "path": path, "content": { "type": "string", "maxLength": 1000 },
                    "force": { "type": "boolean" },
                    "mode": { "enum": ["overwrite", "create"] },
                    "tags": { "type": "array", "items": { "type": "string", "pattern": "^[a-z]+$" }, "maxItems": 4, "uniqueItems": true },
                    "nested": { "$ref": "#/$defs/node" },
                  }, "required": ["path", "content"], "additionalProperties": false,
                  "$defs": { "node": { "type": "object", "properties": { "next": { "anyOf": [{ "$ref": "#/$defs/node" }, { "type": "null" }] } } } } }),
                Effects::from_iter([Effect::MutatesWorkspace]),
                FsNeed::WorkspaceWrite,
            ),
        ]
        .into_iter()
        .filter_map(|(name, schema, effects, filesystem)| {
            let compiled = Schema::compile(&schema).ok()?;
            let spec = ToolSpec {
                name: name.into(),
                title: name.into(),
                description: "fuzz fixture".into(),
                input_schema: schema,
                output_schema: None,
                effects,
                risk: Risk::Normal,
                filesystem,
                timeout_ms: None,
                network: None,
                keyed: false,
            };
            Some((spec, compiled))
        })
        .collect();
        let policy = parse_policy(POLICY).unwrap_or_else(|e| panic!("the fuzz policy is valid: {e}"));
        Fixture { policy, tools }
    })
}

/// Argument text through materialization, validation, path extraction and
/// an argument-aware policy decision.
pub fn arguments(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(args) = Arguments::materialize(text) else {
        return;
    };
    let fixture = fixture();
    for (spec, schema) in &fixture.tools {
        let violations = schema.violations(args.value());
        let _ = crate::schema::describe("arguments", &violations);
        for pointer in schema.path_pointers(args.value()) {
            let _ = args.value().pointer(&pointer).and_then(Value::as_str);
        }
        let _ = fixture.policy.explain(
            spec,
            "fuzz.wasm",
            Some(args.value()),
            Some(args.value()),
            (
                crate::policy::Caller::Agent,
                crate::policy::Who::Known(None),
            ),
        );
        let _ = fixture
            .policy
            .evaluate(spec, "fuzz.wasm", Some(args.value()));
    }
}

/// Plugin bytes through validation, compilation, linking and `tools()`.
pub fn plugin(data: &[u8]) {
    static SANDBOX: OnceLock<Option<Engine>> = OnceLock::new();
    let sandbox = SANDBOX.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("toolwarden-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("workspace")).ok()?;
        Engine::new(
            &dir.join("workspace"),
            &dir,
            &Limits::default(),
            std::sync::Arc::default(),
            std::sync::Arc::default(),
        )
        .ok()
    });
    let Some(sandbox) = sandbox else {
        return;
    };
    let sha256 = hex::encode(Sha256::digest(data));
    if let Ok(loaded) = sandbox.load(data, &sha256) {
        let _ = sandbox.describe(&loaded);
    }
}
