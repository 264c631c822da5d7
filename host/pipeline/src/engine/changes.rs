//! The `changes` import (0.3.0): a tool tells the host that one of its
//! plugin's resources changed. The run's [`Announced`] checks and keeps
//! the URI; the sandbox tells the listeners once the run's changes are
//! real. Where nothing a client reads can change, the tool is told `ok` and
//! nobody hears it. Never fails the call.

use super::bindings::v0_3_changes::toolwarden::tool::changes::Host;
use super::state::CallState;
#[cfg(doc)]
use crate::resource::Announced;

impl Host for CallState {
    fn resource_changed(&mut self, uri: String) -> Result<(), String> {
        match &mut self.host.announced {
            Some(announced) => announced.announce(&uri),
            None => Ok(()),
        }
    }
}
