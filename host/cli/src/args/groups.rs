//! The commands that group others: `policy`, `store`, `approvals`,
//! `audit` and `plugins`, each a subcommand enum (clap types only).

use super::RegistryArgs;
use clap::{Args, Subcommand};

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Show which rules match a call, the decision and why, without running anything
    Explain {
        /// The tool's name
        tool: String,
        /// Arguments as a JSON object [default: {}]
        args: Option<String>,
        /// Who calls, for rules on the caller: `subject=alice`, `issuer=URL`,
        /// `proof=shared_token`, or a claim (`groups=oncall`; repeat a claim
        /// for a list). Without it, rules on the caller show as depending on it
        #[arg(long, value_name = "KEY=VALUE")]
        caller: Vec<String>,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Show how the config file differs from the text last trusted
    Diff {
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Trust the config file as it is now (after reviewing `policy diff`)
    Trust {
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Copy this host's state (approvals, audit chain, executions) from its
    /// SQLite file into the empty shared store, chain intact
    Migrate {
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum ApprovalsCommand {
    /// Every approval, newest first
    List {
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Exactly what an approval would run: tool, full arguments, capability, reason, expiry
    Show {
        id: String,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Approve a pending approval: the bound call may then run once
    Approve {
        id: String,
        /// Why (kept in the audit log)
        #[arg(long)]
        reason: Option<String>,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Deny a pending approval: the bound call never runs
    Deny {
        id: String,
        /// Why (kept in the audit log)
        #[arg(long)]
        reason: Option<String>,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Check the hash chain; exit 1 and name the first bad record if it is broken
    Verify {
        /// Print JSON
        #[arg(long)]
        json: bool,
        /// Check an exported segment (`audit export`) on its own instead
        #[arg(long, value_name = "FILE")]
        file: Option<std::path::PathBuf>,
    },
    /// Move old records out of the database into a file that `audit verify
    /// --file` checks on its own; removed only once they are on disk
    Export {
        /// Every record older than this: 30s, 10m, 2h, 7d, or milliseconds since the epoch
        #[arg(long, value_name = "WHEN", required_unless_present = "keep")]
        before: Option<String>,
        /// Or every record but the newest N
        #[arg(long, value_name = "N", conflicts_with = "before")]
        keep: Option<u32>,
        /// Write to this new file instead of standard output (which must then be a file)
        #[arg(long, short, value_name = "FILE")]
        output: Option<std::path::PathBuf>,
    },
    /// Print the chain's head (record count and last hash), to anchor it elsewhere
    Head {
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// One call read back: how it ended, its approval's preview, and its
    /// result as its tool shows it (replayed from the audit log)
    Show {
        /// The call's id (`toolwarden audit` lists them)
        id: String,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// How each tool behaved: calls, outcomes, refusals, approvals, duration, fuel, output size
    Stats {
        /// Print JSON
        #[arg(long)]
        json: bool,
        /// Only records this recent: 30s, 10m, 2h, 7d, or milliseconds since the epoch
        #[arg(long, value_name = "WHEN")]
        since: Option<String>,
        /// Only this tool
        #[arg(long)]
        tool: Option<String>,
    },
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// Print JSON
    #[arg(long)]
    pub json: bool,
    /// Only records this recent: 30s, 10m, 2h, 7d, or milliseconds since the epoch
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// Only records of this tool
    #[arg(long)]
    pub tool: Option<String>,
    /// Only records of this call and of the calls its tool made (`compose`), down the tree
    #[arg(long, value_name = "ID")]
    pub call: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum PluginsCommand {
    /// Every installed plugin: where it came from, its digest and signer
    List {
        #[arg(long)]
        json: bool,
    },
    /// Install the newest build of each plugin's tag (or of NAME's)
    Update {
        /// A plugin file name [default: all]
        name: Option<String>,
        #[command(flatten)]
        registry: RegistryArgs,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Take a plugin out of the plugins directory and the lock file
    Remove {
        /// A plugin file name (`calc.wasm` or `calc`)
        name: String,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
}
