//! What a call is granted: the policy computes a [`Grant`] and the sandbox
//! turns it into preopens, in exactly one place. The default grants nothing.
//! A plain value, like the session's [`SandboxMode`] that caps it.

use crate::spec::FsNeed;
use serde::Serialize;
use std::str::FromStr;

/// The most a session lets tools do to the workspace. Tools get the lesser of
/// what they declare and this.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SandboxMode {
    /// Tools may read the workspace, never change it.
    #[default]
    ReadOnly,
    /// Tools that declare `workspace-write` may change the workspace.
    WorkspaceWrite,
}

impl SandboxMode {
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
        }
    }
}

impl FromStr for SandboxMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "read-only" => Ok(SandboxMode::ReadOnly),
            "workspace-write" => Ok(SandboxMode::WorkspaceWrite),
            other => Err(format!(
                "unknown sandbox mode `{other}`; use `read-only` or `workspace-write`"
            )),
        }
    }
}

/// Filesystem access to the workspace for one call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FsAccess {
    /// No preopen at all: the guest sees no filesystem.
    #[default]
    None,
    /// The workspace, mapped at `/workspace`, read-only.
    ReadOnly,
    /// The workspace, mapped at `/workspace`, readable and writable.
    ReadWrite,
}

impl FsAccess {
    /// The lesser of what the tool needs and what the session allows.
    pub fn for_tool(need: FsNeed, session: SandboxMode) -> FsAccess {
        match (need, session) {
            (FsNeed::None, _) => FsAccess::None,
            (FsNeed::ReadOnly, _) | (FsNeed::WorkspaceWrite, SandboxMode::ReadOnly) => {
                FsAccess::ReadOnly
            }
            (FsNeed::WorkspaceWrite, SandboxMode::WorkspaceWrite) => FsAccess::ReadWrite,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            FsAccess::None => "none",
            FsAccess::ReadOnly => "read-only",
            FsAccess::ReadWrite => "read-write",
        }
    }
}

/// Everything a call may use beyond its own memory. Network is never granted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct Grant {
    pub fs: FsAccess,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_grant_is_nothing() {
        assert_eq!(Grant::default().fs, FsAccess::None);
    }

    #[test]
    fn session_mode_caps_what_a_tool_gets() {
        use FsNeed::*;
        use SandboxMode as S;
        assert_eq!(FsAccess::for_tool(None, S::WorkspaceWrite), FsAccess::None);
        assert_eq!(
            FsAccess::for_tool(ReadOnly, S::WorkspaceWrite),
            FsAccess::ReadOnly
        );
        assert_eq!(
            FsAccess::for_tool(WorkspaceWrite, S::ReadOnly),
            FsAccess::ReadOnly
        );
        assert_eq!(
            FsAccess::for_tool(WorkspaceWrite, S::WorkspaceWrite),
            FsAccess::ReadWrite
        );
    }
}
