//! Generated bindings for `wit/tool.wit`. Nothing hand-written belongs here.

wasmtime::component::bindgen!({
    path: "../wit",
    world: "plugin",
    exports: { default: async },
});
