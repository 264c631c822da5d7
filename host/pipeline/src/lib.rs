//! toolwarden: a governed host for AI-agent tools that are WebAssembly
//! components.
//!
//! This crate (host/pipeline) is the library people embed: the contract's
//! types, the engine (wasmtime, WASI, egress), the state (the SQLite store,
//! the PostgreSQL one several hosts share with the `postgres` feature, the
//! audit chain) and every pipeline step, ordered by the controller. It never speaks a protocol: MCP, the console, OCI
//! registries and the command line are crates of their own on top of it
//! (`toolwarden-mcp`, `-console`, `-distribution`, `-cli`), so embedding
//! it pulls in none of rmcp, axum, maud or oci-client.
//!
//! Build a [`Controller`] from a [`Config`] (plugins directory, workspace,
//! state directory, policy) and hand it [`CallRequest`]s; every call goes
//! through the same pipeline (materialize, resolve, validate, paths, policy,
//! guards, approval, sandboxed run, output check) and ends in a [`CallResult`] with a
//! stable [`ErrorCode`] when it did not succeed.
//!
//! ```no_run
//! # async fn demo() -> Result<(), toolwarden::Error> {
//! use toolwarden::{CallRequest, ConfigBuilder, Controller};
//! let config = ConfigBuilder::new("/path/to/workspace")
//!     .plugins_dir("/path/to/plugins")
//!     .state_dir("/path/to/state")
//!     .build()?;
//! let host = Controller::new(config)?;
//! let result = host.handle(CallRequest::new("calc", r#"{"op":"add","a":2,"b":3}"#)).await;
//! println!("{:?} {:?}", result.status, result.value);
//! # Ok(()) }
//! ```

// In MCP stdio mode stdout is the protocol stream: one stray print corrupts
// it. All output goes through the CLI's printer.
#![deny(clippy::print_stdout, clippy::print_stderr)]

// The modules the front ends build on (the MCP server, the console,
// distribution, the CLI: crates of their own under host/). The items
// re-exported below are the library's API for embedding it.
pub mod approval;
pub mod audit;
pub mod call;
pub mod caller;
mod canonical_url;
pub mod capability;
pub mod changes;
pub mod check;
/// The `toolwarden` binary's commands: its entry point, not library API.
pub mod config;
pub mod console_url;
pub mod content;
pub mod controller;
mod egress;
mod engine;
pub mod error;
/// Entry points for `cargo fuzz` and the fuzz tests; not library API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod guards;
mod idempotency;
mod limits;
mod materialize;
mod nesting;
mod origin;
pub mod outcome;
mod output;
mod ownership;
pub mod policy;
pub mod presentation;
pub mod private_file;
mod profile;
pub mod prompt;
pub mod provenance;
pub mod question;
mod real_path;
pub mod records;
pub mod registry;
pub mod resource;
pub mod sampling;
mod sandbox;
mod scheduler;
mod schema;
mod settings;
pub mod spec;
pub mod store;
pub mod suggest;
mod validation;
pub mod when;
mod workspace;

pub use approval::{Approval, ApprovalDecision, Decider};
pub use audit::segment::{SegmentCheck, SegmentHeader, verify_segment};
pub use audit::{
    ApprovalStats, Cut, ExportError, HeadCheck, Record, Retention, SessionStats, Spread, Stats,
    ToolStats, Verification,
};
pub use call::{
    CallId, CallRequest, CancelToken, LogLevel, LogLine, LogSink, MAX_ARGS_BYTES, Progress,
    ProgressSink, RawArgs, SessionId, Sink, Tracing,
};
pub use capability::{FsAccess, Grant, GrantedOrigin, Network, NetworkGrant, Reach, SandboxMode};
pub use check::{Problem, Report};
pub use config::{Config, ConfigBuilder, DEFAULT_CONFIG_FILE};
pub use content::{Block, BlockSummary, Bytes, ResourceContents};
pub use controller::{Controller, Inspection, OfferRequest, ShownCall};
pub use egress::{RequestDecision, RequestRecord};
/// The tuned wasmtime configuration, for `make bench`'s bare-engine floor.
#[doc(hidden)]
pub use engine::engine_config;
pub use engine::{Contract, Origin, PluginError};
pub use error::Error;
pub use guards::MAX_RESIDENT_SESSIONS;
pub use limits::Limits;
pub use origin::OriginPattern;
pub use outcome::{CallError, CallResult, ChildCall, ErrorCode, Status, TraceStep};
pub use policy::{Decision, Verdict};
pub use presentation::{Rendered, View};
pub use question::{Answer, Answers, Asked, Question};
pub use records::Records;
pub use records::{AuditFilter, DB_FILE, HEAD_FILE, Head};
pub use registry::{LoadFailure, Plugin, Registry, Tool};
pub use schema::{Schema, SchemaError, Violation, Violations};
pub use spec::{Effect, Effects, FsNeed, NetworkNeed, Risk, ToolSpec};
