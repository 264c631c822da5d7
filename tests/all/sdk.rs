//! The guest SDK (`toolwarden-plugin`) derives schemas the host enforces as
//! they are, and its argument errors read well.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use toolwarden::Schema;
use toolwarden_plugin::{Context, Tool, ToolError, WorkspacePath, input_schema, output_schema};

/// Every shape of argument a plugin author is likely to reach for.
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct KitchenSink {
    /// A file in the workspace.
    path: WorkspacePath,
    small: u8,
    medium: i32,
    unsigned: u32,
    large: i64,
    ratio: f64,
    flag: bool,
    maybe: Option<String>,
    list: Vec<u16>,
    map: BTreeMap<String, i64>,
    mode: Mode,
    shape: Shape,
    inner: Inner,
    #[serde(default)]
    defaulted: u32,
    #[schemars(length(min = 1, max = 8), regex(pattern = r"^[a-z]+$"))]
    word: String,
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Mode {
    /// Fast and loose.
    Fast,
    /// Slow and careful.
    Slow,
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[allow(dead_code)]
enum Shape {
    Circle { radius: u32 },
    Square { side: u32 },
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[allow(dead_code)]
struct Inner {
    format: String,
    properties: Vec<Inner>,
}

fn compiled<T: JsonSchema>(schema: Value) -> Schema {
    Schema::compile(&schema).unwrap_or_else(|e| {
        panic!(
            "the SDK derived a schema the host refuses for {}: {e}\n{schema:#}",
            std::any::type_name::<T>()
        )
    })
}

fn good() -> Value {
    json!({
        "path": "src/lib.rs", "small": 7, "medium": -3, "unsigned": 9, "large": 1, "ratio": 0.5,
        "flag": true, "list": [1, 2], "map": {"a": 1}, "mode": "slow",
        "shape": {"kind": "circle", "radius": 2},
        "inner": {"format": "x", "properties": [{"format": "y", "properties": []}]},
        "word": "abc"
    })
}

#[test]
fn derived_schemas_compile_in_the_host_subset() {
    let input = compiled::<KitchenSink>(input_schema::<KitchenSink>());
    assert!(input.is_object_schema());
    let found = input.violations(&good());
    assert!(found.is_empty(), "{found:?}");
    compiled::<Inner>(output_schema::<Inner>());
    compiled::<Shape>(output_schema::<Shape>());
    assert!(
        input.path_pointers(&good()).contains(&"/path".to_owned()),
        "a WorkspacePath is a `format: path` the path guard checks"
    );
}

#[test]
fn the_host_refuses_bad_arguments_with_a_pointer_for_each() {
    let input = compiled::<KitchenSink>(input_schema::<KitchenSink>());
    let mut bad = good();
    bad["small"] = json!(300);
    bad["medium"] = json!(i64::from(i32::MAX) + 1);
    bad["mode"] = json!("medium");
    bad["word"] = json!("UPPER");
    bad["extra"] = json!(1);
    bad["inner"]["properties"][0]["surprise"] = json!(true);
    let found: Vec<String> = input
        .violations(&bad)
        .iter()
        .map(ToString::to_string)
        .collect();
    for expected in [
        "`/small` must be at most 255",
        "`/medium` must be at most 2147483647",
        "`/mode` must match exactly one of 2",
        "`/word` must match the pattern",
        "`/` has an unexpected property `extra`",
        "`/inner/properties/0` has an unexpected property `surprise`",
    ] {
        assert!(
            found.iter().any(|v| v.starts_with(expected)),
            "{expected} in {found:#?}"
        );
    }
}

#[derive(Serialize, JsonSchema)]
struct Echo {
    word: String,
}

fn echo(args: KitchenSink, _: &Context) -> Result<Echo, ToolError> {
    Ok(Echo { word: args.word })
}

#[test]
fn the_guest_side_parse_error_names_the_field_without_json_positions() {
    let tool = Tool::new("echo", "Echoes the word.", echo);
    let ctx = Context::for_test(None);
    let out = tool.call(&good().to_string(), &ctx).unwrap();
    assert_eq!(out.value, r#"{"word":"abc"}"#);
    assert_eq!(out.text, None);
    let mut missing = good();
    missing.as_object_mut().unwrap().remove("word");
    match tool.call(&missing.to_string(), &ctx) {
        Err(ToolError::InvalidArgs(m)) => {
            assert_eq!(m, "invalid arguments for `echo`: missing field `word`")
        }
        other => panic!("{other:?}"),
    }
    let mut wrong = good();
    wrong["small"] = json!("seven");
    match tool.call(&wrong.to_string(), &ctx) {
        Err(ToolError::InvalidArgs(m)) => assert!(
            m.starts_with("invalid arguments for `echo`: invalid type: string \"seven\"")
                && !m.contains("line"),
            "{m}"
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        tool.input_schema()["additionalProperties"],
        json!(false),
        "closed objects tell the model unknown keys are refused"
    );
}
