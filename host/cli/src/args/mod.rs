//! What the user typed: clap types only, no behaviour.

use crate::capability::SandboxMode;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

mod flags;
mod groups;

pub use flags::{ConsoleArgs, ListenArgs, ProfileArg, RegistryArgs, ServeArgs};
pub use groups::{
    ApprovalsCommand, AuditArgs, AuditCommand, PluginsCommand, PolicyCommand, StoreCommand,
};

#[derive(Debug, Parser)]
#[command(
    name = "toolwarden",
    version,
    about = "A governed host for AI-agent tools that are WebAssembly components"
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// The languages `new` writes plugins in, and `build` builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    Rust,
    Python,
    Js,
}

impl Lang {
    pub fn as_str(self) -> &'static str {
        match self {
            Lang::Rust => "rust",
            Lang::Python => "python",
            Lang::Js => "js",
        }
    }
}

#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Directory of plugin `*.wasm` files [default: $XDG_DATA_HOME/toolwarden/plugins]
    #[arg(long, env = "TOOLWARDEN_PLUGINS", global = true, value_name = "DIR")]
    pub plugins: Option<PathBuf>,

    /// The project folder tools work in (they see it at /workspace)
    /// [default: the current directory, unless it is your home or `/`]
    #[arg(long, env = "TOOLWARDEN_WORKSPACE", global = true, value_name = "DIR")]
    pub workspace: Option<PathBuf>,

    /// Policy and limits [default: <workspace>/toolwarden.toml]
    #[arg(long, env = "TOOLWARDEN_CONFIG", global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Host state: compile cache, approvals, audit [default: $XDG_STATE_HOME/toolwarden]
    #[arg(long, env = "TOOLWARDEN_STATE", global = true, value_name = "DIR")]
    pub state: Option<PathBuf>,

    /// The most tools may do to the workspace: read-only or workspace-write
    #[arg(
        long,
        env = "TOOLWARDEN_SANDBOX",
        global = true,
        value_name = "MODE",
        default_value = "read-only"
    )]
    pub sandbox: SandboxMode,

    /// Trust the config file if it was never trusted before (never one that
    /// changed after it was trusted): for MCP client configurations
    #[arg(
        long,
        env = "TOOLWARDEN_TRUST_CONFIG",
        global = true,
        action = clap::ArgAction::SetTrue,
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub trust_config: bool,

    /// More log output on stderr (-v info, -vv debug); or set TOOLWARDEN_LOG
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Make this folder a governed project: the plugins directory, a commented
    /// toolwarden.toml (shown, then trusted), and what to run next
    #[command(after_help = "Example:\n  cd ~/src/my-project && toolwarden init")]
    Init {
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Print the configuration an MCP client needs to start this host over stdio
    #[command(
        name = "mcp-config",
        after_help = "Example:\n  toolwarden mcp-config --client claude-desktop --workspace ~/src/my-project"
    )]
    McpConfig {
        /// The MCP client
        #[arg(long, value_enum)]
        client: crate::commands::mcp_config::Client,
        /// Print only the client's JSON document
        #[arg(long)]
        json: bool,
    },
    /// Print a shell completion script: `toolwarden completions bash > ~/.local/share/bash-completion/completions/toolwarden`
    #[command(
        after_help = "Example:\n  toolwarden completions zsh > ~/.local/share/zsh/site-functions/_toolwarden"
    )]
    Completions {
        /// bash, zsh, fish, powershell or elvish
        shell: clap_complete::Shell,
    },
    /// Write man pages (toolwarden.1 and one per command) into a directory
    #[command(after_help = "Example:\n  toolwarden man ~/.local/share/man/man1")]
    Man {
        /// Where to write them, e.g. ~/.local/share/man/man1
        dir: PathBuf,
    },
    /// List every tool, with its plugin, risk, filesystem need, effects and policy decision
    #[command(after_help = "Example:\n  toolwarden list --json")]
    List {
        /// Print a JSON array
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        profile: ProfileArg,
    },
    /// Show what one plugin file declares, its hash and its imports
    #[command(after_help = "Example:\n  toolwarden inspect target/plugins/fs.wasm")]
    Inspect {
        /// The plugin's `.wasm` file
        file: PathBuf,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Check plugins and the policy without running anything; one line per problem
    #[command(
        after_help = "Example:\n  toolwarden check target/wasm32-wasip2/release/word_count.wasm"
    )]
    Check {
        /// A plugin file or a directory [default: the plugins directory]
        target: Option<std::path::PathBuf>,
        /// Print JSON
        #[arg(long)]
        json: bool,
        /// Also report what the policy makes of the plugins (no rule covering
        /// a tool, ...) when there is no config file [default: only with one]
        #[arg(long)]
        policy: bool,
    },
    /// Create a plugin project with one example tool and its tests, ready to build
    #[command(
        after_help = "Examples:\n  toolwarden new word_count && cd word_count && toolwarden build\n  toolwarden new word_count --lang python\n  toolwarden new word_count --lang js"
    )]
    New {
        /// The plugin's name, also its first tool's: `[a-z][a-z0-9_]*`
        name: String,
        /// The language to write it in
        #[arg(long, value_enum, default_value_t = Lang::Rust)]
        lang: Lang,
        /// Where to create it [default: ./NAME]; must not exist or be empty
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// The `toolwarden-plugin` SDK crate to depend on [default: the one built into this binary, written under $XDG_DATA_HOME/toolwarden/sdk]
        #[arg(long, value_name = "DIR", env = "TOOLWARDEN_SDK")]
        sdk: Option<PathBuf>,
    },
    /// Build the plugin project in DIR into DIR/NAME.wasm, with its language's toolchain
    #[command(
        after_help = "Example:\n  cd word_count && toolwarden build && toolwarden check word_count.wasm"
    )]
    Build {
        /// The project [default: the current directory]
        #[arg(default_value = ".")]
        dir: PathBuf,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Rebuild the plugin project in DIR on every save and install it into the plugins directory, where a running server reloads it
    #[command(
        after_help = "Example:\n  toolwarden serve --http 127.0.0.1:8765 &  cd word_count && toolwarden dev"
    )]
    Dev {
        /// The project [default: the current directory]
        #[arg(default_value = ".")]
        dir: PathBuf,
    },
    /// Run the tool calls of one model turn (OpenAI or Anthropic shape) as a batch
    #[command(
        after_help = "Example:\n  echo '[{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"calc\",\"input\":{\"op\":\"add\",\"a\":1,\"b\":2}}]' | toolwarden turn -"
    )]
    Turn {
        /// A JSON list of tool calls, or `-` for stdin
        input: std::path::PathBuf,
        /// Print every result in full instead of the API's result messages
        #[arg(long)]
        json: bool,
        /// The agent session the turn belongs to [default: a fresh one]
        #[arg(long, value_name = "ID", value_parser = session_name)]
        session: Option<String>,
        #[command(flatten)]
        profile: ProfileArg,
    },
    /// The tool list as a model API takes it: openai, openai-strict, anthropic or mcp
    #[command(after_help = "Example:\n  toolwarden schemas --format anthropic")]
    Schemas {
        #[arg(long, default_value = "openai")]
        format: crate::export::Format,
        #[command(flatten)]
        profile: ProfileArg,
    },
    /// Policy tools: `explain` how the rules decide a call; `diff` and `trust` the config file
    #[command(
        after_help = "Example:\n  toolwarden policy explain read_file '{\"path\":\"src/main.rs\"}'"
    )]
    Policy {
        #[command(subcommand)]
        command: PolicyCommand,
    },
    /// Call a tool through the full pipeline
    #[command(after_help = "Example:\n  toolwarden call calc '{\"op\":\"add\",\"a\":2,\"b\":40}'")]
    Call {
        /// The tool's name
        tool: String,
        /// Arguments as a JSON object, or `-` to read them from stdin [default: {}]
        args: Option<String>,
        /// Print one JSON object with every detail of the result
        #[arg(long)]
        json: bool,
        /// The agent session the call belongs to [default: a fresh one, or the
        /// approval's session with --approval]
        #[arg(long, value_name = "ID", value_parser = session_name)]
        session: Option<String>,
        /// Consume this approved approval (see `toolwarden approvals`)
        #[arg(long, value_name = "ID")]
        approval: Option<String>,
        /// Show every pipeline step with what it found and how long it took
        #[arg(long)]
        trace: bool,
        #[command(flatten)]
        profile: ProfileArg,
    },
    /// Serve every tool over MCP: on stdin/stdout (logs go to stderr), or over HTTP
    #[command(
        after_help = "Example:\n  toolwarden serve --http 127.0.0.1:8765 --token-file ~/.config/toolwarden/token"
    )]
    Serve(ServeArgs),
    /// Serve the web console alone (approvals, audit, tools), for stdio users
    #[command(
        after_help = "Example:\n  toolwarden console    # then open http://127.0.0.1:8766/console"
    )]
    Console(ConsoleArgs),
    /// Install a plugin from an OCI registry or a file, checked as the host would load it
    #[command(after_help = "Example:\n  toolwarden install oci://ghcr.io/acme/fs:1.2.0")]
    Install {
        /// oci://REGISTRY/REPO:TAG, oci://REGISTRY/REPO@sha256:DIGEST or a .wasm file
        /// [default with --locked: everything in plugins.lock]
        source: Option<String>,
        /// The file name in the plugins directory [default: the repository's last part]
        #[arg(long, value_name = "NAME.wasm")]
        name: Option<String>,
        /// Install exactly the digests plugins.lock records
        #[arg(long)]
        locked: bool,
        #[command(flatten)]
        registry: RegistryArgs,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Push a component (and FILE.minisig, if there) to an OCI registry
    #[command(after_help = "Example:\n  toolwarden publish fs.wasm oci://ghcr.io/acme/fs:1.2.0")]
    Publish {
        /// The component
        file: std::path::PathBuf,
        /// oci://REGISTRY/REPO:TAG
        target: String,
        #[command(flatten)]
        registry: RegistryArgs,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// List, update or remove installed plugins
    #[command(after_help = "Example:\n  toolwarden plugins list")]
    Plugins {
        #[command(subcommand)]
        command: PluginsCommand,
    },
    /// The shared store several hosts use ([store] in the config)
    #[command(after_help = "Example:\n  toolwarden store migrate")]
    Store {
        #[command(subcommand)]
        command: StoreCommand,
    },
    /// Review and decide approvals that the policy asked for
    #[command(
        after_help = "Example:\n  toolwarden approvals list && toolwarden approvals approve ID --reason 'checked the diff'"
    )]
    Approvals {
        #[command(subcommand)]
        command: ApprovalsCommand,
    },
    /// Read and verify the audit log
    #[command(
        after_help = "Example:\n  toolwarden audit --since 1h --tool write_file && toolwarden audit verify"
    )]
    Audit {
        #[command(subcommand)]
        command: Option<AuditCommand>,
        #[command(flatten)]
        filter: AuditArgs,
    },
}

/// A session name as `--session` takes it (see
/// [`crate::call::SessionId::is_valid_name`]).
fn session_name(text: &str) -> Result<String, String> {
    if crate::call::SessionId::is_valid_name(text) {
        Ok(text.to_owned())
    } else {
        Err(format!(
            "a session name is 1 to {} letters, digits, `.`, `_`, `:` or `-`",
            crate::call::MAX_SESSION_NAME
        ))
    }
}

impl Command {
    /// Whether the command was asked for JSON output (its errors are then
    /// JSON as well).
    pub fn wants_json(&self) -> bool {
        match self {
            Command::Init { json }
            | Command::McpConfig { json, .. }
            | Command::List { json, .. }
            | Command::Inspect { json, .. }
            | Command::Check { json, .. }
            | Command::Turn { json, .. }
            | Command::Call { json, .. }
            | Command::Install { json, .. }
            | Command::Publish { json, .. } => *json,
            Command::Policy { command } => match command {
                PolicyCommand::Explain { json, .. }
                | PolicyCommand::Diff { json }
                | PolicyCommand::Trust { json } => *json,
            },
            Command::Plugins { command } => match command {
                PluginsCommand::List { json }
                | PluginsCommand::Update { json, .. }
                | PluginsCommand::Remove { json, .. } => *json,
            },
            Command::Store { command } => match command {
                StoreCommand::Migrate { json } => *json,
            },
            Command::Approvals { command } => match command {
                ApprovalsCommand::List { json }
                | ApprovalsCommand::Show { json, .. }
                | ApprovalsCommand::Approve { json, .. }
                | ApprovalsCommand::Deny { json, .. } => *json,
            },
            Command::Audit { command, filter } => match command {
                None => filter.json,
                Some(
                    AuditCommand::Verify { json, .. }
                    | AuditCommand::Head { json }
                    | AuditCommand::Show { json, .. }
                    | AuditCommand::Stats { json, .. },
                ) => *json,
                Some(AuditCommand::Export { .. }) => false,
            },
            Command::Build { json, .. } => *json,
            Command::New { .. }
            | Command::Dev { .. }
            | Command::Completions { .. }
            | Command::Man { .. }
            | Command::Schemas { .. }
            | Command::Serve(_)
            | Command::Console(_) => false,
        }
    }
}
