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

/// Bindings of one later contract version, from `$path`: the world with
/// the optional `compose` import a plugin may or may not use (linking takes
/// what it imports), and one module per optional interface, each found on
/// an instance when a plugin has it.
macro_rules! contract_bindings {
    ($path:literal, $main:ident, $ask:ident, $present:ident, $show:ident) => {
        pub(crate) mod $main {
            wasmtime::component::bindgen!({
                path: $path,
                world: "composite-plugin",
                imports: { "toolwarden:tool/compose.call-tool": async },
                exports: { default: async },
            });
        }

        /// The optional `ask` import: trappable, so a question nobody has
        /// answered yet stops the call where it was asked.
        pub(crate) mod $ask {
            wasmtime::component::bindgen!({
                path: $path,
                world: "asking-plugin",
                imports: {
                    "toolwarden:tool/ask.question": trappable,
                    "toolwarden:tool/ask.questions": trappable,
                },
                exports: { default: async },
            });
        }

        /// The optional `present` export; only its export is used.
        pub(crate) mod $present {
            wasmtime::component::bindgen!({
                path: $path,
                world: "presenting-plugin",
                exports: { default: async },
            });
        }

        /// The optional `show` export, which comes with `present`.
        pub(crate) mod $show {
            wasmtime::component::bindgen!({
                path: $path,
                world: "showing-plugin",
                exports: { default: async },
            });
        }
    };
}

contract_bindings!("../../wit/0.2.0", v0_2, v0_2_ask, v0_2_present, v0_2_show);
contract_bindings!("../../wit", v0_3, v0_3_ask, v0_3_present, v0_3_show);

/// The optional `prompts` export of 0.3.0 (`wit/tool.wit`), found on an
/// instance when a plugin has it.
pub(crate) mod v0_3_prompts {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "prompting-plugin",
        exports: { default: async },
    });
}

/// The optional `resources` export of 0.3.0 (`wit/tool.wit`), found on an
/// instance when a plugin has it.
pub(crate) mod v0_3_resources {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "serving-plugin",
        exports: { default: async },
    });
}

/// The optional `client` import of 0.3.0 (`wit/tool.wit`): trappable, so a
/// request nobody has answered yet stops the call where it was made.
pub(crate) mod v0_3_client {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "client-plugin",
        imports: {
            "toolwarden:tool/client.create-message": trappable,
            "toolwarden:tool/client.list-roots": trappable,
            "toolwarden:tool/client.gather": trappable,
        },
        exports: { default: async },
    });
}

/// The optional `changes` import of 0.3.0 (`wit/tool.wit`).
pub(crate) mod v0_3_changes {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "announcing-plugin",
        exports: { default: async },
    });
}
