//! Generated bindings for every contract version the host speaks: the
//! current `wit/tool.wit` and each earlier one kept under `wit/`. Nothing
//! hand-written belongs here.

/// `toolwarden:tool@0.1.0` (`wit/0.1.0/tool.wit`).
pub(crate) mod v0_1 {
    wasmtime::component::bindgen!({
        path: "../../wit/0.1.0",
        world: "plugin",
        exports: { default: async },
    });
}

/// `toolwarden:tool@0.2.0` (`wit/tool.wit`), with the optional `compose`
/// import a plugin may or may not use (linking takes what it imports).
pub(crate) mod v0_2 {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "composite-plugin",
        imports: { "toolwarden:tool/compose.call-tool": async },
        exports: { default: async },
    });
}

/// The optional `ask` import of 0.2.0 (`wit/tool.wit`): trappable, so a
/// question nobody has answered yet stops the call where it was asked.
pub(crate) mod v0_2_ask {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "asking-plugin",
        imports: {
            "toolwarden:tool/ask.question": trappable,
            "toolwarden:tool/ask.questions": trappable,
        },
        exports: { default: async },
    });
}

/// The optional `present` export of 0.2.0 (`wit/tool.wit`), found on an
/// instance when a plugin has it; only its export is used.
pub(crate) mod v0_2_present {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "presenting-plugin",
        exports: { default: async },
    });
}

/// The optional `show` export of 0.2.0 (`wit/tool.wit`), which comes with
/// `present`; found on an instance when a plugin has it.
pub(crate) mod v0_2_show {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "showing-plugin",
        exports: { default: async },
    });
}
