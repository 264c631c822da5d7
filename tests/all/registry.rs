//! Loading plugins: bad files are reported and skipped, duplicate names stop
//! the host, and compiled code is cached across starts.

use crate::harness::{TestHost, assert_still_serves, run_cli};
use toolwarden::{Origin, PluginError};
use toolwarden_tests::{BROKEN_TOOLS, CALC, FS, HOSTILE, SHADOW};

#[test]
fn corrupt_and_broken_plugins_are_reported_and_the_good_ones_load() {
    let t = TestHost::new(&[CALC, FS, BROKEN_TOOLS]);
    let calc = std::fs::read(crate::harness::wasm(CALC)).unwrap();
    std::fs::write(t.plugins.join("truncated.wasm"), &calc[..calc.len() / 2]).unwrap();
    std::fs::write(
        t.plugins.join("random.wasm"),
        (0..4096u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    std::fs::write(t.plugins.join("empty.wasm"), b"").unwrap();
    // A core module, not a component.
    std::fs::write(t.plugins.join("core.wasm"), b"\0asm\x01\0\0\0").unwrap();
    std::fs::write(t.plugins.join("notes.txt"), b"not a plugin, ignored").unwrap();
    let host = t.controller();
    let failures: Vec<(String, String)> = host
        .registry()
        .failures()
        .iter()
        .map(|f| {
            (
                f.file().file_name().unwrap().to_string_lossy().into_owned(),
                f.to_string(),
            )
        })
        .collect();
    let names: Vec<&str> = failures.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "broken_tools.wasm",
            "core.wasm",
            "empty.wasm",
            "random.wasm",
            "truncated.wasm"
        ],
        "{failures:#?}"
    );
    for (name, message) in &failures {
        assert!(
            message.contains(name),
            "the error names the file: {message}"
        );
    }
    assert!(
        failures[0].1.contains("`tools()` failed"),
        "{}",
        failures[0].1
    );
    assert!(matches!(
        host.registry().failures()[1].error(),
        PluginError::NotAComponent(_)
    ));
    assert_eq!(
        host.registry().tools().count(),
        5,
        "calc and the four fs tools load"
    );
    assert_still_serves(&host);
}

#[test]
fn duplicate_tool_names_refuse_to_start() {
    let t = TestHost::new(&[FS, SHADOW]);
    let err = t.start().expect_err("two plugins declare read_file");
    assert_eq!(err.code(), "DUPLICATE_TOOL");
    let message = err.to_string();
    assert!(
        message.contains("fs.wasm")
            && message.contains("shadow.wasm")
            && message.contains("read_file"),
        "{message}"
    );
    let (code, _, stderr) = run_cli(t.cli().arg("list"));
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("shadow.wasm") && stderr.contains("hint:"),
        "{stderr}"
    );
}

#[test]
fn a_second_start_loads_from_the_cache_instead_of_recompiling() {
    let t = TestHost::cold(&[CALC, HOSTILE]);
    let origins = |host: &toolwarden::Controller| {
        host.registry()
            .plugins()
            .iter()
            .map(|p| p.origin())
            .collect::<Vec<_>>()
    };
    let first = t.controller();
    assert_eq!(origins(&first), [Origin::Compiled, Origin::Compiled]);
    drop(first);
    let second = t.controller();
    assert_eq!(origins(&second), [Origin::Cache, Origin::Cache]);
    assert_still_serves(&second);
}

/// Starts a host and waits until every plugin's optimized code is built
/// and cached, which a start otherwise finishes in the background.
fn start_and_compile(t: &TestHost) {
    let host = t.controller();
    host.registry().finish_compiling();
    assert!(host.registry().plugins().iter().all(|p| p.is_optimized()));
}

#[test]
fn a_new_plugin_is_described_from_fast_code_and_called_on_optimized_code() {
    let t = TestHost::cold(&[CALC, FS]);
    let host = t.controller();
    let registry = host.registry();
    let plugins = registry.plugins();
    assert!(plugins.iter().all(|p| p.origin() == Origin::Compiled));
    // The call builds (or waits for) its own plugin's optimized code.
    assert_still_serves(&host);
    let calc = plugins
        .iter()
        .find(|p| p.file_name() == "calc.wasm")
        .unwrap();
    assert!(calc.is_optimized());
    registry.finish_compiling();
    drop(registry);
    drop(host);
    // One entry per plugin: each optimized entry replaced its baseline one.
    let entries = std::fs::read_dir(t.state.join("cache")).unwrap().count();
    assert_eq!(entries, 2);
    let host = t.controller();
    assert!(
        host.registry()
            .plugins()
            .iter()
            .all(|p| p.origin() == Origin::Cache && p.is_optimized())
    );
    assert_still_serves(&host);
}

#[test]
fn a_first_call_waits_for_its_own_plugins_optimized_code_not_for_the_others() {
    let t = TestHost::cold(&[CALC]);
    toolwarden_tests::numbered_plugins(&t.plugins, 40);
    let host = t.controller();
    assert_eq!(host.registry().plugins().len(), 41);
    // Forty plugins take seconds to optimize on two cores; calc's own
    // compile a fraction of one.
    assert_still_serves(&host);
    let optimized = host
        .registry()
        .plugins()
        .iter()
        .filter(|p| p.is_optimized())
        .count();
    assert!(
        optimized < 41,
        "the call returned only after every plugin was optimized"
    );
    host.registry().finish_compiling();
    assert!(host.registry().plugins().iter().all(|p| p.is_optimized()));
}

/// Winch, the baseline compiler, does not compile tail calls: a plugin
/// that uses them is compiled optimized at once, not refused. (This one
/// then fails to link, since it exports no tool: that it got that far shows
/// it was compiled.)
#[test]
fn a_plugin_the_baseline_compiler_refuses_is_compiled_optimized_instead() {
    let t = TestHost::cold(&[CALC]);
    let tail_calls = wat::parse_str(
        r#"(component (core module (func $loop (param i32) (return_call $loop (local.get 0)))))"#,
    )
    .unwrap();
    std::fs::write(t.plugins.join("tail_calls.wasm"), tail_calls).unwrap();
    let host = t.controller();
    let registry = host.registry();
    let failures = registry.failures();
    assert_eq!(failures.len(), 1);
    assert!(
        matches!(failures[0].error(), PluginError::WrongWorld(_)),
        "compiled, then refused for what it exports: {}",
        failures[0]
    );
    drop(registry);
    assert_still_serves(&host);
}

/// A command may exit while a background compile writes its entry; the
/// half-written temporary it leaves is removed by a later start once it is
/// clearly abandoned, and one that may still be written is left alone.
#[test]
fn a_temporary_left_in_the_cache_by_a_stopped_process_is_removed_later() {
    let t = TestHost::cold(&[CALC]);
    start_and_compile(&t);
    let cache = t.state.join("cache");
    let abandoned = cache.join("left-by-a-stopped-process.tmp");
    let fresh = cache.join("being-written-now.tmp");
    for file in [&abandoned, &fresh] {
        std::fs::write(file, b"half an entry").unwrap();
    }
    std::fs::File::options()
        .write(true)
        .open(&abandoned)
        .unwrap()
        .set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(7200))
        .unwrap();
    let host = t.controller();
    assert!(!abandoned.exists());
    assert!(fresh.exists());
    assert_still_serves(&host);
}

#[test]
fn a_corrupted_cache_entry_is_recompiled_never_run() {
    let t = TestHost::cold(&[CALC]);
    start_and_compile(&t);
    let entries: Vec<_> = std::fs::read_dir(t.state.join("cache"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    let mut bytes = std::fs::read(&entries[0]).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&entries[0], &bytes).unwrap();
    let host = t.controller();
    assert_eq!(host.registry().plugins()[0].origin(), Origin::Compiled);
    assert_still_serves(&host);
    // Cut short (its trailer gone), or truncated to nothing: same.
    let whole = std::fs::read(&entries[0]).unwrap();
    for cut in [&whole[..whole.len() - 3], &b""[..]] {
        std::fs::write(&entries[0], cut).unwrap();
        let host = t.controller();
        assert_eq!(host.registry().plugins()[0].origin(), Origin::Compiled);
        assert_still_serves(&host);
    }
    let host = t.controller();
    assert_eq!(host.registry().plugins()[0].origin(), Origin::Cache);
    assert_still_serves(&host);
}

#[test]
fn an_entry_of_the_earlier_cache_format_is_replaced_not_read() {
    let t = TestHost::cold(&[CALC]);
    start_and_compile(&t);
    let cache = t.state.join("cache");
    let current = std::fs::read_dir(&cache)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let name = current.file_name().unwrap().to_str().unwrap().to_owned();
    let stem = name.strip_suffix("-v3.cwasm").unwrap().to_owned();
    // The earlier formats: a SHA-256 then the artefact, and the artefact
    // then a CRC-32 (which anyone can recompute); here junk under their names.
    let legacy = [
        cache.join(stem.clone() + ".cwasm"),
        cache.join(stem + "-v2.cwasm"),
    ];
    for old in &legacy {
        std::fs::write(old, [0x5a; 4096]).unwrap();
    }
    std::fs::remove_file(&current).unwrap();
    let host = t.controller();
    assert_eq!(host.registry().plugins()[0].origin(), Origin::Compiled);
    assert_still_serves(&host);
    for old in &legacy {
        assert!(
            !old.exists(),
            "the superseded entry {} is removed",
            old.display()
        );
    }
    assert!(current.exists());
}

/// Regression for issue #17: entries were checked by a CRC-32 only, so
/// anyone who could write the cache could plant native code the host ran.
#[test]
fn a_cache_entry_made_without_this_hosts_key_is_recompiled_never_run() {
    let planter = TestHost::cold(&[CALC]);
    start_and_compile(&planter);
    let victim = TestHost::cold(&[CALC]);
    let planted = std::fs::read_dir(planter.state.join("cache"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    // A valid entry, with a valid MAC under another state directory's key.
    std::fs::create_dir_all(victim.state.join("cache")).unwrap();
    let at = victim
        .state
        .join("cache")
        .join(planted.file_name().unwrap());
    std::fs::copy(&planted, &at).unwrap();
    let host = victim.controller();
    assert_eq!(host.registry().plugins()[0].origin(), Origin::Compiled);
    assert_still_serves(&host);
    drop(host);
    assert_ne!(
        std::fs::read(&at).unwrap(),
        std::fs::read(&planted).unwrap(),
        "the planted entry was replaced by one made with this host's key"
    );
    let host = victim.controller();
    assert_eq!(host.registry().plugins()[0].origin(), Origin::Cache);
}

#[test]
fn a_missing_plugins_dir_is_a_clear_error() {
    let t = TestHost::new(&[]);
    std::fs::remove_dir(&t.plugins).unwrap();
    let err = t.start().expect_err("no plugins dir");
    assert_eq!(err.code(), "PLUGINS_DIR");
    assert!(err.hint().contains("--plugins"));
}

#[test]
fn a_schema_outside_the_enforced_subset_is_a_load_error_naming_plugin_tool_keyword_and_pointer() {
    let t = TestHost::new(&[CALC, toolwarden_tests::BAD_SCHEMA]);
    let host = t.controller();
    let registry = host.registry();
    let failure = &registry.failures()[0];
    let message = format!("{failure} (hint: {})", failure.error().hint());
    for part in [
        "bad_schema.wasm",
        "`loose`",
        "`unevaluatedProperties`",
        "/properties/n/unevaluatedProperties",
    ] {
        assert!(message.contains(part), "missing {part:?} in {message}");
    }
    assert!(host.registry().get("loose").is_none());
    assert_still_serves(&host);
}

#[test]
fn reload_adds_and_removes_plugins_and_rejects_newcomers_that_clash_or_break() {
    let t = TestHost::new(&[CALC]);
    let host = t.controller();
    let before = host.registry();
    t.add_plugin(FS);
    assert!(host.reload().unwrap(), "a new plugin changes the tool list");
    assert!(host.registry().get("read_file").is_some());
    assert!(
        before.get("read_file").is_none(),
        "a version in use is never changed under its callers"
    );
    assert!(before.get("calc").is_some());

    t.add_plugin(SHADOW);
    std::fs::write(t.plugins.join("broken.wasm"), b"\0asm\x0d\0\x01\0garbage").unwrap();
    assert!(
        !host.reload().unwrap(),
        "a rejected newcomer changes nothing"
    );
    let registry = host.registry();
    let failures: Vec<String> = registry
        .failures()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(failures.len(), 2, "{failures:#?}");
    assert!(
        failures.iter().any(|f| f.contains("shadow.wasm")
            && f.contains("already served by")
            && f.contains("fs.wasm")),
        "{failures:#?}"
    );
    assert!(
        failures.iter().any(|f| f.contains("broken.wasm")),
        "{failures:#?}"
    );
    assert!(
        registry
            .get("read_file")
            .unwrap()
            .plugin()
            .file()
            .ends_with("fs.wasm")
    );
    assert_still_serves(&host);

    std::fs::remove_file(t.plugins.join("shadow.wasm")).unwrap();
    std::fs::remove_file(t.plugins.join("fs.wasm")).unwrap();
    assert!(host.reload().unwrap());
    assert!(host.registry().get("read_file").is_none());
    assert_still_serves(&host);

    std::fs::remove_dir_all(&t.plugins).unwrap();
    assert_eq!(
        host.reload().unwrap_err().code(),
        "PLUGINS_DIR",
        "a vanished directory is an error"
    );
    assert_still_serves(&host);
}

/// Regression for issue #17: a schema whose `$ref`s form a long chain
/// overflowed the host's stack at load (the cycle check recursed once per
/// link), killing `list`, `call` and a server alike, while `check FILE`
/// (on a bigger stack) said it was fine.
#[test]
fn a_schema_with_a_long_ref_chain_is_refused_at_load_and_the_rest_serve() {
    // Its schema is 3.5 MB: let it past the size limit to reach the chain.
    let t = TestHost::new(&[CALC, toolwarden_tests::REF_CHAIN]).config(&format!(
        "[limits]\nmax_schema_kb = 16384\n\n{}",
        crate::harness::ALLOW_ALL
    ));
    let host = t.controller();
    let registry = host.registry();
    let failure = &registry.failures()[0];
    let text = failure.to_string();
    assert!(
        text.contains("ref_chain.wasm") && text.contains("chained"),
        "{text}"
    );
    assert!(text.contains("more than 32 `$ref`s"), "{text}");
    assert_still_serves(&host);
    for args in [&["list"][..], &["check"][..]] {
        let (code, stdout, stderr) = run_cli(t.cli().args(args));
        assert!(
            code == 0 || code == 1,
            "{args:?} ended with {code}: {stderr}"
        );
        assert!(
            format!("{stdout}{stderr}").contains("more than 32 `$ref`s"),
            "{args:?}: {stdout}{stderr}"
        );
    }
    let (code, stdout, stderr) =
        run_cli(
            t.cli()
                .args(["call", "calc", r#"{"op":"add","a":1,"b":1}"#]),
        );
    assert_eq!(code, 0, "{stdout}{stderr}");
}

/// Regression for issue #17: a plugin could declare any number of tools,
/// and schemas and descriptions of any size.
#[test]
fn what_a_plugin_may_declare_is_bounded_by_the_limits() {
    let t = TestHost::new(&[CALC, toolwarden_tests::REF_CHAIN]);
    let host = t.controller();
    let text = host.registry().failures()[0].to_string();
    assert!(
        text.contains("input schema is") && text.contains("limits.max_schema_kb"),
        "{text}"
    );
    assert_still_serves(&host);
    let t = TestHost::new(&[CALC, HOSTILE]).config(&format!(
        "[limits]\nmax_tools_per_plugin = 5\n\n{}",
        crate::harness::ALLOW_ALL
    ));
    let host = t.controller();
    let registry = host.registry();
    let failures = registry.failures();
    assert_eq!(failures.len(), 1, "calc declares one tool, hostile many");
    let text = failures[0].to_string();
    assert!(
        text.contains("hostile.wasm") && text.contains("at most 5 (`limits.max_tools_per_plugin`)"),
        "{text}"
    );
    assert_still_serves(&host);
    let t = TestHost::new(&[CALC]).config("[limits]\nmax_description_kb = 0\n");
    assert_eq!(
        t.start().unwrap_err().code(),
        "CONFIG_INVALID",
        "a limit cannot be turned off"
    );
}

/// Compiling plugins never seen before takes a while: on a terminal a bar
/// shows how far loading is, once it has taken a second; a start from the
/// cache draws nothing (nor does a dumb terminal, which cannot redraw).
#[test]
fn a_slow_cold_start_shows_progress_on_a_terminal_and_a_warm_one_does_not() {
    let t = TestHost::cold(&[]);
    toolwarden_tests::numbered_plugins(&t.plugins, 24);
    let mut xterm = t.command("script");
    xterm.env("TERM", "xterm");
    let started = std::time::Instant::now();
    let (code, out) = crate::harness::on_a_terminal(xterm, "list", "");
    let cold = started.elapsed();
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("numbered_tool_00023"), "{out}");
    if cold > std::time::Duration::from_millis(1500) {
        assert!(
            out.contains("compiled") && out.contains("24/24 plugins"),
            "a {cold:?} start showed no progress: {out}"
        );
    }
    let mut xterm = t.command("script");
    xterm.env("TERM", "xterm");
    let (code, out) = crate::harness::on_a_terminal(xterm, "list", "");
    assert_eq!(code, 0, "{out}");
    assert!(
        !out.contains("plugins (") && out.contains("numbered_tool_00023"),
        "from the cache: {out}"
    );
    let (code, stdout, stderr) = run_cli(t.cli().arg("list"));
    assert_eq!(code, 0);
    assert!(
        !stderr.contains("compil"),
        "no bar off a terminal: {stderr}"
    );
    assert!(stdout.contains("numbered_tool_00000"));
}
