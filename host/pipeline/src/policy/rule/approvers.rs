//! Who must approve a call an `ask` rule stops: how many distinct people,
//! and whether the caller may be one of them (`approvers`,
//! `self_approval`).

use super::Verdict;
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

    /// Whether a rule deciding `verdict` may say this: only an `ask` rule
    /// asks anyone, and the quorum is bounded. The message and hint if not.
    pub(super) fn check(&self, verdict: Verdict) -> Result<(), (String, &'static str)> {
        if verdict != Verdict::Ask && !self.is_default() {
            return Err((
                format!(
                    "`approvers` and `self_approval` say who approves a call, and this rule \
                     decides `{}`, so no one is asked",
                    verdict.as_str()
                ),
                "use them with decision = \"ask\", or drop them",
            ));
        }
        if !(1..=MAX_APPROVERS).contains(&self.quorum) {
            return Err((
                format!(
                    "`approvers = {}` is not between 1 and {MAX_APPROVERS}",
                    self.quorum
                ),
                "e.g. approvers = 2: two distinct people must approve each call",
            ));
        }
        Ok(())
    }

    pub fn is_default(&self) -> bool {
        *self == Approvers::default()
    }

    /// How a person reads it: "2 distinct people, not the one who asked".
    pub fn describe(&self) -> String {
        Approvers::describe_raw(i64::from(self.quorum), self.self_approval)
    }

    /// [`Approvers::describe`] for an approval's stored values.
    pub fn describe_raw(quorum: i64, self_approval: bool) -> String {
        let people = match quorum {
            1 => "1 person".to_owned(),
            n => format!("{n} distinct people"),
        };
        if self_approval {
            people
        } else {
            format!("{people}, not the one who asked")
        }
    }
}
