//! Where a run's figures go: `target/bench/bench-<unix ms>.json`.

use serde_json::{Map, Value};
use std::path::Path;

pub(crate) fn write(out: Map<String, Value>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench");
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let file = dir.join(format!("bench-{stamp}.json"));
    let written = std::fs::create_dir_all(&dir).and_then(|()| {
        std::fs::write(
            &file,
            serde_json::to_string_pretty(&Value::Object(out)).unwrap_or_default(),
        )
    });
    match written {
        Ok(()) => println!("figures written to {}", file.display()),
        Err(e) => eprintln!("cannot write {}: {e}", file.display()),
    }
}
