//! toolwarden: a governed host for AI-agent tools that are WebAssembly
//! components.
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

mod approval;
mod audit;
mod call;
mod canonical_url;
mod capability;
mod check;
/// The `toolwarden` binary's commands: its entry point, not library API.
#[doc(hidden)]
pub mod cli;
mod config;
mod console;
mod console_url;
mod content;
mod controller;
mod distribution;
mod egress;
mod engine;
mod error;
mod export;
/// Entry points for `cargo fuzz` and the fuzz tests; not library API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod guards;
mod idempotency;
mod limits;
mod materialize;
mod mcp;
mod nesting;
mod origin;
mod outcome;
mod output;
mod policy;
mod presentation;
mod private_file;
mod profile;
mod provenance;
mod question;
mod real_path;
mod records;
mod registry;
mod sandbox;
mod scheduler;
mod schema;
mod settings;
mod spec;
mod store;
mod suggest;
mod turn;
mod validation;
mod web_origin;
mod when;
mod workspace;

pub use approval::{Approval, ApprovalDecision, Decider};
pub use audit::segment::{SegmentCheck, SegmentHeader, verify_segment};
pub use audit::{
    ApprovalStats, Cut, ExportError, HeadCheck, Record, Retention, SessionStats, Spread, Stats,
    ToolStats, Verification,
};
pub use call::{
    CallId, CallRequest, CancelToken, MAX_ARGS_BYTES, Progress, ProgressSink, RawArgs, SessionId,
    Tracing,
};
pub use capability::{FsAccess, Grant, GrantedOrigin, Network, NetworkGrant, Reach, SandboxMode};
pub use check::{Problem, Report};
pub use config::{Config, ConfigBuilder, DEFAULT_CONFIG_FILE};
pub use content::{Block, BlockSummary, Bytes, ResourceContents};
pub use controller::{Controller, Inspection, ShownCall};
pub use egress::{RequestDecision, RequestRecord};
/// The tuned wasmtime configuration, for `make bench`'s bare-engine floor.
#[doc(hidden)]
pub use engine::engine_config;
pub use engine::{Contract, Origin, PluginError};
pub use error::Error;
pub use export::{Format, Unexportable};
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
