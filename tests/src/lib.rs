//! Paths of the plugins and fixtures the build script compiled to
//! `wasm32-wasip2`. The tests themselves live in `all/`.

include!(concat!(env!("OUT_DIR"), "/plugins.rs"));
