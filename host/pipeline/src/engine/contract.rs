//! The contract versions a plugin may be built against, behind one shape.
//!
//! A component exports `toolwarden:tool/tool` at the version it was built
//! for; the host links it against exactly that version's bindings (chosen
//! when it loads) and turns what each version says into the host's own
//! types here, so nothing above this file knows there is more than one
//! contract. A 0.1.0 plugin is seen as a 0.2.0 one that declares no
//! network. Never decides anything about a plugin: checking what it
//! declared is the describing step's job.

use super::bindings::{v0_1, v0_2, v0_2_present, v0_2_show};
use super::state::CallState;
use crate::content::{Block, Bytes, ResourceContents};
use crate::presentation::{Presentation, View};
use crate::spec::{Effect, Effects, FsNeed, Risk};
use std::fmt;
use wasmtime::Store;
use wasmtime::component::{Instance, InstancePre};

/// A version of the `toolwarden:tool` contract the host speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Contract {
    V0_1,
    V0_2,
}

impl Contract {
    pub fn as_str(self) -> &'static str {
        match self {
            Contract::V0_1 => "toolwarden:tool@0.1.0",
            Contract::V0_2 => "toolwarden:tool@0.2.0",
        }
    }
}

impl fmt::Display for Contract {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a plugin's `tools()` said about one tool, in the host's types but
/// not yet checked: texts as sent, schemas unparsed, origins unparsed.
#[derive(Debug)]
pub(crate) struct DeclaredSpec {
    pub name: String,
    pub title: String,
    pub description: String,
    pub input_schema: String,
    pub output_schema: Option<String>,
    pub effects: Effects,
    pub risk: Risk,
    pub filesystem: FsNeed,
    pub timeout_ms: Option<u32>,
    pub network: Option<DeclaredNetwork>,
    /// Listed by the optional `keyed` export (0.2.0).
    pub keyed: bool,
}

/// The `network-need` of a 0.2.0 spec, unparsed.
#[derive(Debug)]
pub(crate) struct DeclaredNetwork {
    pub origins: Vec<String>,
    pub credentials: Vec<String>,
}

/// The facts about a call the host passes to `invoke`.
pub(crate) struct CallContext {
    pub call_id: String,
    pub session_id: String,
    pub workspace: Option<String>,
}

/// What a tool returned on success, unchecked.
#[derive(Debug)]
pub struct RawOutput {
    pub value: String,
    pub text: Option<String>,
    /// Content blocks beside the value (none from a 0.1.0 plugin).
    pub content: Vec<Block>,
}

/// A tool's own expected error (the WIT `tool-error`).
#[derive(Debug, PartialEq, Eq)]
pub enum ToolFailure {
    InvalidArgs(String),
    NotFound(String),
    Failed(String),
}

impl ToolFailure {
    /// The tool's own error as the caller gets it (`TOOL_FAILED`).
    pub fn into_error(self) -> crate::outcome::CallError {
        let message = match self {
            ToolFailure::InvalidArgs(m) => format!("the tool refused the arguments: {m}"),
            ToolFailure::NotFound(m) => format!("not found: {m}"),
            ToolFailure::Failed(m) => m,
        };
        crate::outcome::CallError::new(crate::outcome::ErrorCode::ToolFailed, message)
    }
}

/// A plugin linked against the contract version it was built for.
pub(crate) enum PluginPre {
    V0_1(v0_1::PluginPre<CallState>),
    V0_2(v0_2::CompositePluginPre<CallState>),
}

/// The spec conversion is the same for every version but the types are
/// not: each version's bindings have their own `Effects`, `Risk` and
/// `Filesystem`.
macro_rules! declared {
    ($version:ident, $spec:expr, $network:expr) => {{
        use $version::exports::toolwarden::tool::tool::{Effects as E, Filesystem, Risk as R};
        let spec = $spec;
        let flags = [
            (E::READ_ONLY, Effect::ReadOnly),
            (E::MUTATES_WORKSPACE, Effect::MutatesWorkspace),
            (E::EXCLUSIVE, Effect::Exclusive),
            (E::STATEFUL, Effect::Stateful),
            (E::IDEMPOTENT, Effect::Idempotent),
            (E::OPEN_WORLD, Effect::OpenWorld),
        ];
        let effects: Effects = flags
            .into_iter()
            .filter(|(f, _)| spec.effects.contains(*f))
            .map(|(_, e)| e)
            .collect();
        DeclaredSpec {
            network: $network(&spec),
            name: spec.name,
            title: spec.title,
            description: spec.description,
            input_schema: spec.input_schema,
            output_schema: spec.output_schema,
            effects,
            risk: match spec.risk {
                R::Safe => Risk::Safe,
                R::Normal => Risk::Normal,
                R::Dangerous => Risk::Dangerous,
            },
            filesystem: match spec.filesystem {
                Filesystem::None => FsNeed::None,
                Filesystem::ReadOnly => FsNeed::ReadOnly,
                Filesystem::WorkspaceWrite => FsNeed::WorkspaceWrite,
            },
            timeout_ms: spec.timeout_ms,
            keyed: false,
        }
    }};
}

/// A 0.2.0 content block in the host's types.
fn block(block: v0_2::exports::toolwarden::tool::tool::ContentBlock) -> Block {
    use v0_2::exports::toolwarden::tool::tool::{ContentBlock as B, ResourceContents as R};
    match block {
        B::Text(text) => Block::Text { text },
        B::Image(media) => Block::Image {
            mime_type: media.mime_type,
            data: Bytes(media.data),
        },
        B::Audio(media) => Block::Audio {
            mime_type: media.mime_type,
            data: Bytes(media.data),
        },
        B::ResourceLink(link) => Block::ResourceLink {
            uri: link.uri,
            name: link.name,
            mime_type: link.mime_type,
            description: link.description,
        },
        B::Embedded(resource) => Block::Resource {
            uri: resource.uri,
            mime_type: resource.mime_type,
            contents: match resource.contents {
                R::Text(text) => ResourceContents::Text(text),
                R::Blob(blob) => ResourceContents::Blob(Bytes(blob)),
            },
        },
    }
}

/// `invoke` with the call context and result types of one version;
/// `$content` takes the version's output apart (value, text, blocks).
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

macro_rules! invoke {
    ($version:ident, $plugin:expr, $store:expr, $name:expr, $args:expr, $cx:expr, $content:expr) => {{
        use $version::exports::toolwarden::tool::tool::{CallContext as Cx, ToolError};
        let CallContext {
            call_id,
            session_id,
            workspace,
        } = $cx;
        let cx = Cx {
            call_id,
            session_id,
            workspace,
        };
        $plugin
            .toolwarden_tool_tool()
            .call_invoke($store, $name, $args, &cx)
            .await
            .map(|returned| match returned {
                Ok(output) => {
                    let (value, text, content) = $content(output);
                    Ok(RawOutput {
                        value,
                        text,
                        content,
                    })
                }
                Err(ToolError::InvalidArgs(m)) => Err(ToolFailure::InvalidArgs(m)),
                Err(ToolError::NotFound(m)) => Err(ToolFailure::NotFound(m)),
                Err(ToolError::Failed(m)) => Err(ToolFailure::Failed(m)),
            })
    }};
}

/// The export a plugin lists its keyed tools in (see `interface keyed`).
const KEYED_EXPORT: &str = "toolwarden:tool/keyed@0.2.0";

/// The tools the optional `keyed` export names; none when the plugin does
/// not export it (every plugin built before it existed).
async fn keyed_tools(
    instance: &Instance,
    store: &mut Store<CallState>,
) -> wasmtime::Result<Vec<String>> {
    let Some(keyed) = instance.get_export_index(&mut *store, None, KEYED_EXPORT) else {
        return Ok(Vec::new());
    };
    let func = instance
        .get_export_index(&mut *store, Some(&keyed), "keyed-tools")
        .ok_or_else(|| wasmtime::format_err!("`{KEYED_EXPORT}` has no `keyed-tools` function"))?;
    let func = instance.get_typed_func::<(), (Vec<String>,)>(&mut *store, &func)?;
    let (names,) = func.call_async(&mut *store, ()).await?;
    Ok(names)
}

/// Where a guest stopped when it failed: starting it is the host's
/// business, what it does once started is the plugin's.
pub(crate) enum Phase {
    Instantiate,
    Call,
}

type GuestResult<T> = Result<T, (Phase, wasmtime::Error)>;

impl PluginPre {
    /// Links `pre` against the contract its exports say it was built for.
    /// The error names what each version found missing.
    pub(crate) fn new(pre: InstancePre<CallState>) -> Result<PluginPre, String> {
        let current = match v0_2::CompositePluginPre::new(pre.clone()) {
            Ok(linked) => return Ok(PluginPre::V0_2(linked)),
            Err(e) => e,
        };
        match v0_1::PluginPre::new(pre) {
            Ok(linked) => Ok(PluginPre::V0_1(linked)),
            Err(earlier) => Err(format!(
                "as {}: {current:#}; as {}: {earlier:#}",
                Contract::V0_2,
                Contract::V0_1
            )),
        }
    }

    pub(crate) fn contract(&self) -> Contract {
        match self {
            PluginPre::V0_1(_) => Contract::V0_1,
            PluginPre::V0_2(_) => Contract::V0_2,
        }
    }

    /// The engine it was compiled for: its stores must be made on it.
    pub(crate) fn engine(&self) -> &wasmtime::Engine {
        match self {
            PluginPre::V0_1(pre) => pre.engine(),
            PluginPre::V0_2(pre) => pre.engine(),
        }
    }

    /// Starts the plugin and asks it for its tools.
    pub(crate) async fn tools(
        &self,
        store: &mut Store<CallState>,
    ) -> GuestResult<Vec<DeclaredSpec>> {
        let call = |e| (Phase::Call, e);
        let start = |e| (Phase::Instantiate, e);
        match self {
            PluginPre::V0_1(pre) => {
                let plugin = pre.instantiate_async(&mut *store).await.map_err(start)?;
                let specs = plugin.toolwarden_tool_tool().call_tools(&mut *store).await;
                Ok(specs
                    .map_err(call)?
                    .into_iter()
                    .map(|spec| declared!(v0_1, spec, |_: &_| None))
                    .collect())
            }
            PluginPre::V0_2(pre) => {
                let instance = pre
                    .instance_pre()
                    .instantiate_async(&mut *store)
                    .await
                    .map_err(start)?;
                let plugin = v0_2::CompositePlugin::new(&mut *store, &instance).map_err(start)?;
                let specs = plugin.toolwarden_tool_tool().call_tools(&mut *store).await;
                let keyed = keyed_tools(&instance, store).await.map_err(call)?;
                let network = |spec: &v0_2::exports::toolwarden::tool::tool::ToolSpec| {
                    spec.network.as_ref().map(|need| DeclaredNetwork {
                        origins: need.origins.clone(),
                        credentials: need.credentials.clone(),
                    })
                };
                let mut specs: Vec<DeclaredSpec> = specs
                    .map_err(call)?
                    .into_iter()
                    .map(|spec| declared!(v0_2, spec, network))
                    .collect();
                for name in keyed {
                    match specs.iter_mut().find(|spec| spec.name == name) {
                        Some(spec) => spec.keyed = true,
                        None => {
                            let shown: String = name.chars().take(64).collect();
                            return Err((
                                Phase::Call,
                                wasmtime::format_err!(
                                    "`keyed-tools` names `{shown}`, which `tools()` does not declare"
                                ),
                            ));
                        }
                    }
                }
                Ok(specs)
            }
        }
    }

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
        let Some(instance) = self.instantiate_for_view(store).await? else {
            return Ok(None);
        };
        let Ok(plugin) = v0_2_present::PresentingPlugin::new(&mut *store, &instance) else {
            return Ok(None);
        };
        use v0_2_present::exports::toolwarden::tool::tool::CallContext as Cx;
        let cx = Cx {
            call_id: cx.call_id,
            session_id: cx.session_id,
            workspace: cx.workspace,
        };
        let shown = plugin
            .toolwarden_tool_present()
            .call_preview(&mut *store, name, args, &cx)
            .await
            .map_err(|e| (Phase::Call, e))?;
        Ok(shown.map(|p| presentation!(v0_2_present, p)))
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
        let Some(instance) = self.instantiate_for_view(store).await? else {
            return Ok(None);
        };
        let Ok(plugin) = v0_2_show::ShowingPlugin::new(&mut *store, &instance) else {
            return Ok(None);
        };
        let shown = plugin
            .toolwarden_tool_show()
            .call_show_result(&mut *store, name, args, value)
            .await
            .map_err(|e| (Phase::Call, e))?;
        Ok(shown.map(|p| presentation!(v0_2_show, p)))
    }

    /// An instance of a 0.2.0 plugin, the only contract with views.
    async fn instantiate_for_view(
        &self,
        store: &mut Store<CallState>,
    ) -> GuestResult<Option<Instance>> {
        let PluginPre::V0_2(pre) = self else {
            return Ok(None);
        };
        pre.instance_pre()
            .instantiate_async(&mut *store)
            .await
            .map(Some)
            .map_err(|e| (Phase::Instantiate, e))
    }

    /// Starts the plugin and runs tool `name` on `args`.
    pub(crate) async fn invoke(
        &self,
        store: &mut Store<CallState>,
        name: &str,
        args: &str,
        cx: CallContext,
    ) -> GuestResult<Result<RawOutput, ToolFailure>> {
        let call = |e| (Phase::Call, e);
        let start = |e| (Phase::Instantiate, e);
        match self {
            PluginPre::V0_1(pre) => {
                let plugin = pre.instantiate_async(&mut *store).await.map_err(start)?;
                let parts = |output: v0_1::exports::toolwarden::tool::tool::ToolOutput| {
                    (output.value, output.text, Vec::new())
                };
                invoke!(v0_1, plugin, &mut *store, name, args, cx, parts).map_err(call)
            }
            PluginPre::V0_2(pre) => {
                let plugin = pre.instantiate_async(&mut *store).await.map_err(start)?;
                let parts = |output: v0_2::exports::toolwarden::tool::tool::ToolOutput| {
                    let content = output.content.into_iter().map(block).collect();
                    (output.value, output.text, content)
                };
                invoke!(v0_2, plugin, &mut *store, name, args, cx, parts).map_err(call)
            }
        }
    }
}
