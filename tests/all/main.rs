//! toolwarden's integration tests: real components built from this
//! repository's plugins and hostile fixtures, a real workspace on disk, and
//! the real `toolwarden` binary for the CLI.

mod compiled;
mod harness;

mod approvals;
mod approvers;
mod audit;
mod authoring;
mod cli;
mod compose;
mod content;
mod contract;
mod credential_leaks;
mod export;
mod faults;
mod fuzz;
mod guards;
mod hostile;
mod idempotency;
mod json_schema_suite;
mod limits;
mod links;
mod mcp;
mod names;
mod network;
mod offers;
mod onboarding;
mod paths;
mod pipeline;
mod policy;
mod previews;
mod profiles;
mod prompts;
mod questions;
mod rate_limits;
mod registry;
mod resources;
mod retention;
mod retry;
mod sampling;
mod sandbox;
mod scheduler;
mod sdk;
mod soak;
mod trust;
mod url_rules;
mod web;

/// Every example plugin must be exercised by a test named after it in
/// [`plugins`]: adding a plugin without one fails to compile.
mod plugins {
    macro_rules! assert_test_exists {
        ($name:ident) => {
            #[allow(unused_imports)]
            use super::plugin_tests::$name as _;
        };
    }
    toolwarden_tests::for_each_plugin!(assert_test_exists);
}

mod plugin_tests;
