//! The component export glue: `export!` and what it expands to call. A
//! plugin's code never names these directly.

use crate::bindings::exports::toolwarden::tool::tool as wit;
use crate::{Context, Output, Presentation, Prompt, Tool, ToolError};

/// The prompts of a plugin that offers none (`export!(tools)`).
#[doc(hidden)]
pub fn __no_prompts() -> Vec<Prompt> {
    Vec::new()
}

#[doc(hidden)]
pub mod __private {
    use super::*;

    pub fn specs(tools: Vec<Tool>) -> Vec<wit::ToolSpec> {
        tools.iter().map(Tool::spec).collect()
    }

    pub fn keyed(tools: Vec<Tool>) -> Vec<String> {
        tools
            .into_iter()
            .filter(|t| t.keyed)
            .map(|t| t.name)
            .collect()
    }

    pub fn preview(
        tools: Vec<Tool>,
        name: &str,
        args_json: &str,
        ctx: wit::CallContext,
    ) -> Option<Presentation> {
        let tool = tools.iter().find(|t| t.name == name)?;
        let ctx = Context::from_host(ctx);
        tool.preview.as_ref()?(args_json, &ctx)
    }

    pub fn show_result(
        tools: Vec<Tool>,
        name: &str,
        args_json: &str,
        value_json: &str,
    ) -> Option<Presentation> {
        let tool = tools.iter().find(|t| t.name == name)?;
        tool.show_result.as_ref()?(args_json, value_json)
    }

    pub fn invoke(
        tools: Vec<Tool>,
        name: &str,
        args_json: &str,
        ctx: wit::CallContext,
    ) -> Result<wit::ToolOutput, ToolError> {
        let tool = tools
            .iter()
            .find(|t| t.name == name)
            .ok_or_else(|| ToolError::NotFound(format!("this plugin has no tool `{name}`")))?;
        let ctx = Context::from_host(ctx);
        let Output {
            value,
            text,
            content,
        } = tool.call(args_json, &ctx)?;
        Ok(wit::ToolOutput {
            value,
            text,
            content,
        })
    }
}

/// Exports the tools a function returns as this crate's component:
/// `toolwarden_plugin::export!(tools);` where `fn tools() -> Vec<Tool>`,
/// `toolwarden_plugin::export!(tools, prompts);` with the prompts
/// `fn prompts() -> Vec<Prompt>` returns as well, and
/// `toolwarden_plugin::export!(tools, prompts, resources);` with the
/// resources `fn resources() -> Resources` serves.
#[macro_export]
macro_rules! export {
    ($tools:path) => {
        $crate::export!($tools, $crate::__no_prompts, $crate::resources::__private::none);
    };
    ($tools:path, $prompts:path) => {
        $crate::export!($tools, $prompts, $crate::resources::__private::none);
    };
    ($tools:path, $prompts:path, $resources:path) => {
        struct __ToolwardenPlugin;

        impl $crate::bindings::exports::toolwarden::tool::tool::Guest for __ToolwardenPlugin {
            fn tools() -> ::std::vec::Vec<$crate::bindings::exports::toolwarden::tool::tool::ToolSpec> {
                $crate::__private::specs($tools())
            }

            fn invoke(
                name: ::std::string::String,
                args_json: ::std::string::String,
                ctx: $crate::bindings::exports::toolwarden::tool::tool::CallContext,
            ) -> ::std::result::Result<
                $crate::bindings::exports::toolwarden::tool::tool::ToolOutput,
                $crate::ToolError,
            > {
                $crate::__private::invoke($tools(), &name, &args_json, ctx)
            }
        }

        impl $crate::bindings::exports::toolwarden::tool::keyed::Guest for __ToolwardenPlugin {
            fn keyed_tools() -> ::std::vec::Vec<::std::string::String> {
                $crate::__private::keyed($tools())
            }
        }

        impl $crate::bindings::exports::toolwarden::tool::present::Guest for __ToolwardenPlugin {
            fn preview(
                name: ::std::string::String,
                args_json: ::std::string::String,
                ctx: $crate::bindings::exports::toolwarden::tool::tool::CallContext,
            ) -> ::std::option::Option<$crate::Presentation> {
                $crate::__private::preview($tools(), &name, &args_json, ctx)
            }
        }

        impl $crate::bindings::exports::toolwarden::tool::show::Guest for __ToolwardenPlugin {
            fn show_result(
                name: ::std::string::String,
                args_json: ::std::string::String,
                value_json: ::std::string::String,
            ) -> ::std::option::Option<$crate::Presentation> {
                $crate::__private::show_result($tools(), &name, &args_json, &value_json)
            }
        }

        impl $crate::bindings::exports::toolwarden::tool::prompts::Guest for __ToolwardenPlugin {
            fn prompts() -> ::std::vec::Vec<$crate::bindings::exports::toolwarden::tool::prompts::PromptSpec> {
                $crate::prompts::__private::specs($prompts())
            }

            fn get_prompt(
                name: ::std::string::String,
                arguments: ::std::vec::Vec<(::std::string::String, ::std::string::String)>,
            ) -> ::std::result::Result<
                $crate::bindings::exports::toolwarden::tool::prompts::RenderedPrompt,
                $crate::ToolError,
            > {
                $crate::prompts::__private::get($prompts(), &name, arguments)
            }

            fn complete(
                name: ::std::string::String,
                argument: ::std::string::String,
                value: ::std::string::String,
                context: ::std::vec::Vec<(::std::string::String, ::std::string::String)>,
            ) -> ::std::vec::Vec<::std::string::String> {
                $crate::prompts::__private::complete($prompts(), &name, &argument, &value, context)
            }
        }

        impl $crate::bindings::exports::toolwarden::tool::resources::Guest for __ToolwardenPlugin {
            fn catalog() -> $crate::bindings::exports::toolwarden::tool::resources::ResourceCatalog {
                $crate::resources::__private::catalog($resources())
            }

            fn read(
                uri: ::std::string::String,
            ) -> ::std::result::Result<::std::vec::Vec<$crate::ResourceContent>, $crate::ToolError> {
                $crate::resources::__private::read($resources(), &uri)
            }

            fn complete(
                uri_template: ::std::string::String,
                variable: ::std::string::String,
                value: ::std::string::String,
                context: ::std::vec::Vec<(::std::string::String, ::std::string::String)>,
            ) -> ::std::vec::Vec<::std::string::String> {
                $crate::resources::__private::complete($resources(), &uri_template, &variable, &value, context)
            }
        }

        $crate::bindings::export_component!(__ToolwardenPlugin with_types_in $crate::bindings);
    };
}
