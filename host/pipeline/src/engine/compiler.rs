//! One wasmtime engine with everything a plugin is linked against (WASI,
//! `wasi:http` behind the egress hooks, the checked link operations, every
//! contract version's `toolwarden:tool` imports) and its compile cache:
//! compiling a component and linking it. Never runs guest code.

use super::bindings;
use super::{CallState, EngineError, PluginError, PluginPre};
use super::{cache, links, setup};
use wasmtime::component::{Component, HasSelf, Linker};

/// One wasmtime engine, the linker every plugin is linked with on it, and
/// its compile cache (entries are per engine: the two never mix).
pub(super) struct Compiler {
    pub(super) wasmtime: wasmtime::Engine,
    linker: Linker<CallState>,
    pub(super) cache: cache::Cache,
}

impl Compiler {
    pub(super) fn new(
        engine: wasmtime::Engine,
        cache: &cache::CacheDir,
    ) -> Result<Compiler, EngineError> {
        let engine_error = EngineError::from_wasmtime;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(engine_error)?;
        // Linked for every plugin, so a plugin that imports it still loads
        // and is then refused by name if it declares no network; a call
        // without a network grant has every request refused.
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker).map_err(engine_error)?;
        links::shadow(&mut linker).map_err(engine_error)?;
        bindings::v0_1::toolwarden::tool::host::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)
            .map_err(engine_error)?;
        bindings::v0_2::toolwarden::tool::host::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)
            .map_err(engine_error)?;
        bindings::v0_2::toolwarden::tool::compose::add_to_linker::<_, HasSelf<_>>(
            &mut linker,
            |s| s,
        )
        .map_err(engine_error)?;
        bindings::v0_2_ask::toolwarden::tool::ask::add_to_linker::<_, HasSelf<_>>(
            &mut linker,
            |s| s,
        )
        .map_err(engine_error)?;
        bindings::v0_3::toolwarden::tool::host::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)
            .map_err(engine_error)?;
        bindings::v0_3::toolwarden::tool::compose::add_to_linker::<_, HasSelf<_>>(
            &mut linker,
            |s| s,
        )
        .map_err(engine_error)?;
        bindings::v0_3_ask::toolwarden::tool::ask::add_to_linker::<_, HasSelf<_>>(
            &mut linker,
            |s| s,
        )
        .map_err(engine_error)?;
        bindings::v0_3_client::toolwarden::tool::client::add_to_linker::<_, HasSelf<_>>(
            &mut linker,
            |s| s,
        )
        .map_err(engine_error)?;
        bindings::v0_3_changes::toolwarden::tool::changes::add_to_linker::<_, HasSelf<_>>(
            &mut linker,
            |s| s,
        )
        .map_err(engine_error)?;
        let cache = cache.for_engine(setup::engine_key(&engine));
        Ok(Compiler {
            wasmtime: engine,
            linker,
            cache,
        })
    }

    /// Compiles `wasm` and caches the result.
    pub(super) fn compile(&self, wasm: &[u8], sha256: &str) -> Result<Component, PluginError> {
        let component = Component::new(&self.wasmtime, wasm)
            .map_err(|e| PluginError::NotAComponent(format!("{e:#}")))?;
        self.cache.put(sha256, &component);
        Ok(component)
    }

    pub(super) fn link(&self, component: &Component) -> Result<PluginPre, PluginError> {
        let pre = self
            .linker
            .instantiate_pre(component)
            .map_err(|e| PluginError::WrongWorld(format!("{e:#}")))?;
        PluginPre::new(pre).map_err(PluginError::WrongWorld)
    }
}
