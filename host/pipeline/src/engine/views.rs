//! A plugin's views of a call (the optional `present` and `show` exports
//! of 0.2.0 and later), in the host's [`Presentation`]. Only asks and
//! converts: which sandbox a view runs in is the sandbox step's business.

use super::bindings::{v0_2_present, v0_2_show, v0_3_present, v0_3_show};
use super::contract::{CallContext, Contract, GuestResult, Phase, PluginPre};
use super::state::CallState;
use crate::presentation::{Presentation, View};
use wasmtime::Store;

/// A `presentation` of one binding module (each generates its own types)
/// in the host's type.
macro_rules! presentation {
    ($version:ident, $p:expr) => {{
        use $version::exports::toolwarden::tool::present::View as V;
        let p = $p;
        Presentation {
            view: match p.view {
                V::Terminal => View::Terminal,
                V::Diff => View::Diff,
                V::Search => View::Search,
                V::Read => View::Read,
                V::Web => View::Web,
                V::Generic => View::Generic,
            },
            title: p.title,
            path: p.path,
            body: p.body,
        }
    }};
}

/// `preview` through one version's `present` bindings; none when the
/// instance does not export it.
macro_rules! preview_in {
    ($version:ident, $store:expr, $instance:expr, $name:expr, $args:expr, $cx:expr) => {{
        let Ok(plugin) = $version::PresentingPlugin::new(&mut *$store, &$instance) else {
            return Ok(None);
        };
        use $version::exports::toolwarden::tool::tool::CallContext as Cx;
        let cx = Cx {
            call_id: $cx.call_id,
            session_id: $cx.session_id,
            workspace: $cx.workspace,
        };
        let shown = plugin
            .toolwarden_tool_present()
            .call_preview(&mut *$store, $name, $args, &cx)
            .await
            .map_err(|e| (Phase::Call, e))?;
        Ok(shown.map(|p| presentation!($version, p)))
    }};
}

/// `show-result` through one version's `show` bindings.
macro_rules! show_in {
    ($version:ident, $store:expr, $instance:expr, $name:expr, $args:expr, $value:expr) => {{
        let Ok(plugin) = $version::ShowingPlugin::new(&mut *$store, &$instance) else {
            return Ok(None);
        };
        let shown = plugin
            .toolwarden_tool_show()
            .call_show_result(&mut *$store, $name, $args, $value)
            .await
            .map_err(|e| (Phase::Call, e))?;
        Ok(shown.map(|p| presentation!($version, p)))
    }};
}

impl PluginPre {
    /// Starts the plugin and asks how a call of tool `name` on `args`
    /// would look; none when it has no `present` export (every 0.1.0
    /// plugin) or no preview for the tool.
    pub(crate) async fn preview(
        &self,
        store: &mut Store<CallState>,
        name: &str,
        args: &str,
        cx: CallContext,
    ) -> GuestResult<Option<Presentation>> {
        let Some(instance) = self.instantiate_later(store).await? else {
            return Ok(None);
        };
        match self.contract() {
            Contract::V0_1 => Ok(None),
            Contract::V0_2 => preview_in!(v0_2_present, store, instance, name, args, cx),
            Contract::V0_3 => preview_in!(v0_3_present, store, instance, name, args, cx),
        }
    }

    /// Starts the plugin and asks how a finished call of tool `name` on
    /// `args` that returned `value` looks; none when it has no `show`
    /// export or no view of the tool's results.
    pub(crate) async fn show_result(
        &self,
        store: &mut Store<CallState>,
        name: &str,
        args: &str,
        value: &str,
    ) -> GuestResult<Option<Presentation>> {
        let Some(instance) = self.instantiate_later(store).await? else {
            return Ok(None);
        };
        match self.contract() {
            Contract::V0_1 => Ok(None),
            Contract::V0_2 => show_in!(v0_2_show, store, instance, name, args, value),
            Contract::V0_3 => show_in!(v0_3_show, store, instance, name, args, value),
        }
    }
}
