//! `calc`: exact integer arithmetic for agents, a pure tool with no filesystem.
//!
//! Models are bad at arithmetic on large numbers; this tool is exact or says
//! why it cannot be (overflow, division by zero), never approximate.

wit_bindgen::generate!({ path: "../../wit", world: "plugin" });

use exports::toolwarden::tool::tool::{
    CallContext, Effects, Filesystem, Guest, Risk, ToolError, ToolOutput, ToolSpec,
};
use serde_json::{Value, json};

/// JSON numbers above 2^53 lose precision in many clients, so the tool only
/// takes and returns integers that every JSON reader represents exactly.
const MAX_SAFE: i64 = 9_007_199_254_740_991;

struct Calc;

impl Guest for Calc {
    fn tools() -> Vec<ToolSpec> {
        let operand = json!({ "type": "integer", "minimum": -MAX_SAFE, "maximum": MAX_SAFE });
        vec![ToolSpec {
            name: "calc".into(),
            title: "Integer calculator".into(),
            description: "Exact integer arithmetic on two operands: add, sub, mul, div \
                (truncating), rem, pow. Use it whenever a result must be exact. Not for \
                fractions or floating point: operands and results are integers between \
                -(2^53-1) and 2^53-1; a result outside that range is an error."
                .into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "op": { "enum": ["add", "sub", "mul", "div", "rem", "pow"],
                            "description": "The operation: a op b." },
                    "a": operand,
                    "b": operand,
                },
                "required": ["op", "a", "b"],
                "additionalProperties": false,
            })
            .to_string(),
            output_schema: Some(
                json!({
                    "type": "object",
                    "properties": { "result": { "type": "integer" } },
                    "required": ["result"],
                    "additionalProperties": false,
                })
                .to_string(),
            ),
            effects: Effects::READ_ONLY | Effects::IDEMPOTENT,
            risk: Risk::Safe,
            filesystem: Filesystem::None,
            timeout_ms: Some(1000),
        }]
    }

    fn invoke(name: String, args_json: String, _ctx: CallContext) -> Result<ToolOutput, ToolError> {
        if name != "calc" {
            return Err(ToolError::NotFound(format!(
                "this plugin has no tool `{name}`"
            )));
        }
        let args: Value = serde_json::from_str(&args_json)
            .map_err(|e| ToolError::InvalidArgs(format!("arguments are not JSON: {e}")))?;
        let operand = |key: &str| {
            args[key]
                .as_i64()
                .ok_or_else(|| ToolError::InvalidArgs(format!("`{key}` must be an integer")))
        };
        let (a, b) = (operand("a")?, operand("b")?);
        let result = match args["op"].as_str().unwrap_or_default() {
            "add" => a.checked_add(b),
            "sub" => a.checked_sub(b),
            "mul" => a.checked_mul(b),
            "div" | "rem" if b == 0 => {
                return Err(ToolError::InvalidArgs(
                    "division by zero: `b` must not be 0".into(),
                ));
            }
            "div" => a.checked_div(b),
            "rem" => a.checked_rem(b),
            "pow" => {
                let exp = u32::try_from(b).map_err(|_| {
                    ToolError::InvalidArgs("`pow` needs a non-negative exponent `b`".into())
                })?;
                a.checked_pow(exp)
            }
            other => return Err(ToolError::InvalidArgs(format!("unknown op `{other}`"))),
        }
        .filter(|r| (-MAX_SAFE..=MAX_SAFE).contains(r))
        .ok_or_else(|| {
            ToolError::Failed(format!(
                "the result of {a} {} {b} is outside the exact integer range ±(2^53-1)",
                args["op"].as_str().unwrap_or_default()
            ))
        })?;
        Ok(ToolOutput {
            value: json!({ "result": result }).to_string(),
            text: Some(result.to_string()),
        })
    }
}

export!(Calc);
