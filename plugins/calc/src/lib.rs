//! `calc`: exact integer arithmetic for agents, a pure tool with no filesystem.
//!
//! Models are bad at arithmetic on large numbers; this tool is exact or says
//! why it cannot be (overflow, division by zero), never approximate.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolwarden_plugin::{Context, Effects, Reply, Risk, Tool, ToolError};

/// JSON numbers above 2^53 lose precision in many clients, so the tool only
/// takes and returns integers that every JSON reader represents exactly.
const MAX_SAFE: i64 = 9_007_199_254_740_991;

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// The operation: a op b.
    op: Op,
    #[schemars(range(min = -MAX_SAFE, max = MAX_SAFE))]
    a: i64,
    #[schemars(range(min = -MAX_SAFE, max = MAX_SAFE))]
    b: i64,
}

#[derive(Deserialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Pow,
}

#[derive(Serialize, JsonSchema)]
struct Answer {
    result: i64,
}

fn calc(Args { op, a, b }: Args, _: &Context) -> Result<Reply<Answer>, ToolError> {
    if matches!(op, Op::Div | Op::Rem) && b == 0 {
        return Err(ToolError::InvalidArgs(
            "division by zero: `b` must not be 0".into(),
        ));
    }
    let result = match op {
        Op::Add => a.checked_add(b),
        Op::Sub => a.checked_sub(b),
        Op::Mul => a.checked_mul(b),
        Op::Div => a.checked_div(b),
        Op::Rem => a.checked_rem(b),
        Op::Pow => {
            let exp = u32::try_from(b).map_err(|_| {
                ToolError::InvalidArgs("`pow` needs a non-negative exponent `b`".into())
            })?;
            a.checked_pow(exp)
        }
    };
    result
        .filter(|r| (-MAX_SAFE..=MAX_SAFE).contains(r))
        .map(|result| Reply::new(Answer { result }).with_text(result.to_string()))
        .ok_or_else(|| {
            ToolError::Failed(format!(
                "the result of {a} {op} {b} is outside the exact integer range ±(2^53-1)"
            ))
        })
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Op::Add => "add",
            Op::Sub => "sub",
            Op::Mul => "mul",
            Op::Div => "div",
            Op::Rem => "rem",
            Op::Pow => "pow",
        })
    }
}

pub fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "calc",
            "Exact integer arithmetic on two operands: add, sub, mul, div (truncating), rem, \
             pow. Use it whenever a result must be exact. Not for fractions or floating point: \
             operands and results are integers between -(2^53-1) and 2^53-1; a result outside \
             that range is an error.",
            calc,
        )
        .title("Integer calculator")
        .effects(Effects::READ_ONLY | Effects::IDEMPOTENT)
        .risk(Risk::Safe)
        .timeout_ms(1000),
    ]
}

toolwarden_plugin::export!(tools);

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &str) -> Result<String, ToolError> {
        tools()[0]
            .call(args, &Context::for_test(None))
            .map(|out| out.value)
    }

    #[test]
    fn exact_results_and_honest_failures() {
        assert_eq!(
            run(r#"{"op":"mul","a":3,"b":-4}"#).ok(),
            Some(r#"{"result":-12}"#.into())
        );
        assert!(matches!(
            run(r#"{"op":"div","a":1,"b":0}"#),
            Err(ToolError::InvalidArgs(_))
        ));
        let overflow = run(r#"{"op":"pow","a":10,"b":20}"#);
        assert!(
            matches!(&overflow, Err(ToolError::Failed(m)) if m.contains("10 pow 20")),
            "{overflow:?}"
        );
    }

    #[test]
    fn bad_arguments_say_what_is_wrong() {
        let missing = run(r#"{"op":"add","a":1}"#);
        assert!(
            matches!(&missing, Err(ToolError::InvalidArgs(m)) if m == "invalid arguments for `calc`: missing field `b`"),
            "{missing:?}"
        );
        let op = run(r#"{"op":"sqrt","a":1,"b":2}"#);
        assert!(
            matches!(&op, Err(ToolError::InvalidArgs(m)) if m.contains("unknown variant `sqrt`")),
            "{op:?}"
        );
    }
}
