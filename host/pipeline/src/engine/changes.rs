//! The `changes` import (0.3.0): a tool tells the host that one of its
//! plugin's resources changed, or offers or withdraws its plugin's tools.
//! The run's [`Announced`] and [`Reoffered`] check and keep what it asked;
//! the sandbox makes it real once the run's changes are. Outside a tool's
//! call the tool is told `ok` and nothing changes. Never fails the call.

use super::bindings::v0_3_changes::toolwarden::tool::changes::Host;
use super::state::CallState;
#[cfg(doc)]
use crate::{changes::Reoffered, resource::Announced};

impl Host for CallState {
    fn resource_changed(&mut self, uri: String) -> Result<(), String> {
        match &mut self.host.announced {
            Some(announced) => announced.announce(&uri),
            None => Ok(()),
        }
    }

    fn offered_tools(&mut self) -> Vec<String> {
        self.host
            .reoffered
            .as_ref()
            .map(crate::changes::Reoffered::offered)
            .unwrap_or_default()
    }

    fn offer_tools(&mut self, names: Vec<String>, offered: bool) -> Result<(), String> {
        match &mut self.host.reoffered {
            Some(reoffered) => reoffered.offer(&names, offered),
            None => Ok(()),
        }
    }
}
