//! What checking one rule against one call found: a match, or the first
//! matcher that missed (the sentence for people is written only when
//! someone asks, in `shown.rs`).

use crate::spec::Effect;

/// Whether a rule matched one call, and if not, the first matcher that failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleMatch {
    Matched,
    Missed(Miss),
    /// Everything but `when` matched, and no arguments were given to check it.
    NeedsArgs,
}

/// The first matcher of a rule that did not match a call. Deciding a call
/// needs only this; the sentence for people ([`Rule::miss_note`]) is written
/// only when someone asks for an explanation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Miss {
    Tools,
    /// The rule decides prompts or resources, not tool calls.
    NotAboutCalls,
    Plugin,
    Risk,
    Effect(Effect),
    Filesystem,
    Network,
    /// `nested` or `parent` does not fit who made the call.
    Caller,
    /// `caller` does not fit who the agent is, or nothing proved who.
    Identity,
    /// The `when` entry at this position.
    When(usize),
}
