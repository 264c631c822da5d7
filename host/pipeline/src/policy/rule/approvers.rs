//! Who must approve a call an `ask` rule stops: how many distinct people,
//! and whether the caller may be one of them (`approvers`,
//! `self_approval`).

use serde::Serialize;

/// The most approvers a rule may ask for: a quorum larger than any team
/// that would ever gather is a rule that never lets a call run.
pub const MAX_APPROVERS: u8 = 16;

/// What an `ask` rule wants of the people who approve its calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Approvers {
    /// Distinct people who must approve before the call runs once.
    pub quorum: u8,
    /// Whether the caller may be one of them.
    pub self_approval: bool,
}

impl Default for Approvers {
    /// One person, whoever it is: what an `ask` rule always meant.
    fn default() -> Approvers {
        Approvers {
            quorum: 1,
            self_approval: true,
        }
    }
}

impl Approvers {
    /// What satisfies both: when several `ask` rules match a call, each
    /// one's demand holds.
    pub fn stricter(self, other: Approvers) -> Approvers {
        Approvers {
            quorum: self.quorum.max(other.quorum),
            self_approval: self.self_approval && other.self_approval,
        }
    }

    pub fn is_default(&self) -> bool {
        *self == Approvers::default()
    }
}
