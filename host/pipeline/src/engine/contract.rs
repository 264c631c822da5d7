//! The contract versions a plugin may be built against, behind one shape.
//!
//! A component exports `toolwarden:tool/tool` at the version it was built
//! for; the host links it against exactly that version's bindings (chosen
//! when it loads) and turns what each version says into the host's own
//! types here, so nothing above this file knows there is more than one
//! contract. A 0.1.0 plugin is seen as a 0.2.0 one that declares no
//! network. Never decides anything about a plugin: checking what it
//! declared is the describing step's job.

use super::bindings::{v0_1, v0_2, v0_3};
use super::state::CallState;
use crate::content::{Block, Bytes, ResourceContents};
use crate::spec::{Effect, Effects, FsNeed, Risk};
use std::fmt;
use wasmtime::Store;
use wasmtime::component::{Instance, InstancePre};

/// A version of the `toolwarden:tool` contract the host speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Contract {
    V0_1,
    V0_2,
    V0_3,
}

impl Contract {
    pub fn as_str(self) -> &'static str {
        match self {
            Contract::V0_1 => "toolwarden:tool@0.1.0",
            Contract::V0_2 => "toolwarden:tool@0.2.0",
            Contract::V0_3 => "toolwarden:tool@0.3.0",
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
    V0_3(v0_3::CompositePluginPre<CallState>),
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

/// A content block of one binding module (0.2.0 and later) in the host's
/// types.
macro_rules! block {
    ($version:ident, $block:expr) => {{
        use $version::exports::toolwarden::tool::tool::{ContentBlock as B, ResourceContents as R};
        match $block {
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
    }};
}
pub(super) use block;

/// `invoke` with the call context and result types of one version;
/// `$content` takes the version's output apart (value, text, blocks).
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

/// The tools the optional `keyed` export (`export`, of the plugin's
/// contract version) names; none when the plugin does not export it (every
/// plugin built before it existed).
async fn keyed_tools(
    instance: &Instance,
    store: &mut Store<CallState>,
    export: &str,
) -> wasmtime::Result<Vec<String>> {
    let Some(keyed) = instance.get_export_index(&mut *store, None, export) else {
        return Ok(Vec::new());
    };
    let func = instance
        .get_export_index(&mut *store, Some(&keyed), "keyed-tools")
        .ok_or_else(|| wasmtime::format_err!("`{export}` has no `keyed-tools` function"))?;
    let func = instance.get_typed_func::<(), (Vec<String>,)>(&mut *store, &func)?;
    let (names,) = func.call_async(&mut *store, ()).await?;
    Ok(names)
}

/// Marks the specs `keyed` names; a name `tools()` does not declare is
/// the plugin's defect.
fn mark_keyed(specs: &mut [DeclaredSpec], keyed: Vec<String>) -> wasmtime::Result<()> {
    for name in keyed {
        match specs.iter_mut().find(|spec| spec.name == name) {
            Some(spec) => spec.keyed = true,
            None => {
                let shown: String = name.chars().take(64).collect();
                return Err(wasmtime::format_err!(
                    "`keyed-tools` names `{shown}`, which `tools()` does not declare"
                ));
            }
        }
    }
    Ok(())
}

/// Where a guest stopped when it failed: starting it is the host's
/// business, what it does once started is the plugin's.
pub(crate) enum Phase {
    Instantiate,
    Call,
}

pub(crate) type GuestResult<T> = Result<T, (Phase, wasmtime::Error)>;

/// `tools()` (and `keyed`) of a 0.2.0-or-later plugin, on an instance of
/// it: the specs are the same shape in every such version.
macro_rules! declared_tools {
    ($version:ident, $plugin:expr, $instance:expr, $store:expr, $keyed_export:expr) => {{
        let specs = $plugin
            .toolwarden_tool_tool()
            .call_tools(&mut *$store)
            .await;
        let keyed = keyed_tools($instance, $store, $keyed_export).await;
        let network = |spec: &$version::exports::toolwarden::tool::tool::ToolSpec| {
            spec.network.as_ref().map(|need| DeclaredNetwork {
                origins: need.origins.clone(),
                credentials: need.credentials.clone(),
            })
        };
        specs.and_then(|specs| {
            let mut specs: Vec<DeclaredSpec> = specs
                .into_iter()
                .map(|spec| declared!($version, spec, network))
                .collect();
            mark_keyed(&mut specs, keyed?)?;
            Ok(specs)
        })
    }};
}

impl PluginPre {
    /// Links `pre` against the contract its exports say it was built for.
    /// The error names what each version found missing.
    pub(crate) fn new(pre: InstancePre<CallState>) -> Result<PluginPre, String> {
        let newest = match v0_3::CompositePluginPre::new(pre.clone()) {
            Ok(linked) => return Ok(PluginPre::V0_3(linked)),
            Err(e) => e,
        };
        let middle = match v0_2::CompositePluginPre::new(pre.clone()) {
            Ok(linked) => return Ok(PluginPre::V0_2(linked)),
            Err(e) => e,
        };
        match v0_1::PluginPre::new(pre) {
            Ok(linked) => Ok(PluginPre::V0_1(linked)),
            Err(earlier) => Err(format!(
                "as {}: {newest:#}; as {}: {middle:#}; as {}: {earlier:#}",
                Contract::V0_3,
                Contract::V0_2,
                Contract::V0_1
            )),
        }
    }

    pub(crate) fn contract(&self) -> Contract {
        match self {
            PluginPre::V0_1(_) => Contract::V0_1,
            PluginPre::V0_2(_) => Contract::V0_2,
            PluginPre::V0_3(_) => Contract::V0_3,
        }
    }

    /// The engine it was compiled for: its stores must be made on it.
    pub(crate) fn engine(&self) -> &wasmtime::Engine {
        match self {
            PluginPre::V0_1(pre) => pre.engine(),
            PluginPre::V0_2(pre) => pre.engine(),
            PluginPre::V0_3(pre) => pre.engine(),
        }
    }

    /// An instance of a plugin with optional exports (0.2.0 and later):
    /// those are found on it by name. None for a 0.1.0 plugin.
    pub(crate) async fn instantiate_later(
        &self,
        store: &mut Store<CallState>,
    ) -> GuestResult<Option<Instance>> {
        let pre = match self {
            PluginPre::V0_1(_) => return Ok(None),
            PluginPre::V0_2(pre) => pre.instance_pre(),
            PluginPre::V0_3(pre) => pre.instance_pre(),
        };
        pre.instantiate_async(&mut *store)
            .await
            .map(Some)
            .map_err(|e| (Phase::Instantiate, e))
    }

    /// Starts the plugin and asks it for its tools; with them, the
    /// instance of a plugin whose contract has prompts (0.3.0), to be asked
    /// for those next.
    pub(crate) async fn describe(
        &self,
        store: &mut Store<CallState>,
    ) -> GuestResult<(Vec<DeclaredSpec>, Option<Instance>)> {
        let call = |e| (Phase::Call, e);
        let start = |e| (Phase::Instantiate, e);
        let tools = |tools| (tools, None);
        match self {
            PluginPre::V0_1(pre) => {
                let plugin = pre.instantiate_async(&mut *store).await.map_err(start)?;
                let specs = plugin.toolwarden_tool_tool().call_tools(&mut *store).await;
                Ok(tools(
                    specs
                        .map_err(call)?
                        .into_iter()
                        .map(|spec| declared!(v0_1, spec, |_: &_| None))
                        .collect(),
                ))
            }
            PluginPre::V0_2(pre) => {
                let instance = pre
                    .instance_pre()
                    .instantiate_async(&mut *store)
                    .await
                    .map_err(start)?;
                let plugin = v0_2::CompositePlugin::new(&mut *store, &instance).map_err(start)?;
                let export = "toolwarden:tool/keyed@0.2.0";
                declared_tools!(v0_2, plugin, &instance, store, export)
                    .map(tools)
                    .map_err(call)
            }
            PluginPre::V0_3(pre) => {
                let instance = pre
                    .instance_pre()
                    .instantiate_async(&mut *store)
                    .await
                    .map_err(start)?;
                let plugin = v0_3::CompositePlugin::new(&mut *store, &instance).map_err(start)?;
                let export = "toolwarden:tool/keyed@0.3.0";
                let specs =
                    declared_tools!(v0_3, plugin, &instance, store, export).map_err(call)?;
                Ok((specs, Some(instance)))
            }
        }
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
                    let content = output
                        .content
                        .into_iter()
                        .map(|b| block!(v0_2, b))
                        .collect();
                    (output.value, output.text, content)
                };
                invoke!(v0_2, plugin, &mut *store, name, args, cx, parts).map_err(call)
            }
            PluginPre::V0_3(pre) => {
                let plugin = pre.instantiate_async(&mut *store).await.map_err(start)?;
                let parts = |output: v0_3::exports::toolwarden::tool::tool::ToolOutput| {
                    let content = output
                        .content
                        .into_iter()
                        .map(|b| block!(v0_3, b))
                        .collect();
                    (output.value, output.text, content)
                };
                invoke!(v0_3, plugin, &mut *store, name, args, cx, parts).map_err(call)
            }
        }
    }
}
