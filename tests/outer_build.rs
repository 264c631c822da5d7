/// Settings of the outer cargo build that a nested `cargo` must not inherit:
/// they are for the host, not for the crates the nested build compiles.
/// Shared by the build script (guest plugins) and the scaffold test.
pub const OUTER_BUILD_VARS: &[&str] = &[
    "CARGO_ENCODED_RUSTFLAGS",
    "RUSTFLAGS",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_TARGET",
    "CARGO_MAKEFLAGS",
    "MAKEFLAGS",
    "MFLAGS",
    "RUSTC_WORKSPACE_WRAPPER",
];
