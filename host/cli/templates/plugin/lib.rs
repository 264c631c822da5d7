//! `{{name}}`: a toolwarden plugin.
//!
//! Change the argument and result types, the handler and the description,
//! then build with `cargo build --release --target wasm32-wasip2`. The host
//! reads the schemas derived from `Args` and `Counted`, checks every call's
//! arguments against them, and governs the call before `run` sees it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolwarden_plugin::{Context, Effects, Level, Risk, Tool, ToolError};

/// What the model passes. Doc comments become the schema's descriptions,
/// which the model reads.
#[derive(Deserialize, JsonSchema)]
struct Args {
    /// The text whose words to count.
    #[serde(default)]
    #[schemars(length(max = 100000))]
    text: String,
}

/// What the tool returns; the host checks it against this type's schema.
#[derive(Serialize, JsonSchema)]
struct Counted {
    /// Number of whitespace-separated words.
    words: usize,
}

/// An `Err` is an expected failure the model reads and can act on
/// (`ToolError::InvalidArgs`, `NotFound`, `Failed`); a panic is a defect.
fn run(args: Args, ctx: &Context) -> Result<Counted, ToolError> {
    ctx.log(Level::Debug, "counting words");
    Ok(Counted {
        words: args.text.split_whitespace().count(),
    })
}

pub fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "{{name}}",
            "Counts the words in a text. Use it when an exact word count matters; not for \
             characters or lines.",
            run,
        )
        .title("Count words")
        // Pure computation: reads nothing, changes nothing, safe to repeat.
        .effects(Effects::READ_ONLY | Effects::IDEMPOTENT)
        .risk(Risk::Safe)
        .timeout_ms(1000),
    ]
}

toolwarden_plugin::export!(tools);

#[cfg(test)]
mod tests {
    use super::*;

    fn call(args: &str) -> Result<String, ToolError> {
        tools()[0]
            .call(args, &Context::for_test(None))
            .map(|out| out.value)
    }

    #[test]
    fn counts_words() {
        assert_eq!(
            call(r#"{"text": "one two  three"}"#).ok().as_deref(),
            Some(r#"{"words":3}"#)
        );
    }

    #[test]
    fn runs_without_arguments() {
        assert_eq!(call("{}").ok().as_deref(), Some(r#"{"words":0}"#));
    }
}
