"""Row 13 of `make bench`: what each SDK costs an author and a caller.

Per language (Rust, Python, JavaScript):
- new → governed call on a fresh machine: `toolwarden new --lang L`, the
  toolchain installed by the documented commands (Python: a venv and `pip
  install componentize-py`; JavaScript: `npm install`; Rust: nothing beyond
  the wasm32-wasip2 target), `toolwarden build`, `install`, `call '{}'`, under
  a fresh HOME so pip and npm start with empty caches (cargo's registry is
  shared: its download is not the author's per project);
- the component's size, the cold compile (what `install` spends checking and
  compiling it into an empty cache) and its first call;
- warm latency of the example tools' `greet` through the whole pipeline over
  MCP stdio, from the official Python SDK client (median and p99).

Prints the figures and writes them to target/bench/sdks-<ms>.json.
"""

import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BINARY = ROOT / "target" / "release" / "toolwarden"
RUST_EXAMPLES = ROOT / "target" / "wasm" / "wasm32-wasip2" / "guest" / "sdk_examples.wasm"
CALLS = int(os.environ.get("BENCH_SDK_CALLS", "300"))
POLICY = '[[rule]]\ntools = ["*"]\ndecision = "allow"\nreason = "bench"\n'


def run(cmd, cwd, env, what):
    started = time.monotonic()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{what} failed:\n{done.stdout}\n{done.stderr}")
    return time.monotonic() - started, done.stdout


def new_to_call(lang: str, base: Path) -> dict:
    home = base / "home"
    home.mkdir()
    env = {"HOME": str(home), "PATH": os.environ["PATH"],
           "CARGO_HOME": os.environ.get("CARGO_HOME", str(Path.home() / ".cargo")),
           "RUSTUP_HOME": os.environ.get("RUSTUP_HOME", str(Path.home() / ".rustup"))}
    ws = base / "ws"
    ws.mkdir()
    (ws / "toolwarden.toml").write_text(POLICY)
    tw = {**env, "TOOLWARDEN_WORKSPACE": str(ws), "TOOLWARDEN_TRUST_CONFIG": "1",
          "TOOLWARDEN_PLUGINS": str(base / "plugins")}
    figures = {}
    start = time.monotonic()
    figures["new_s"], _ = run([str(BINARY), "new", "word_count", "--lang", lang], base, env, "new")
    project = base / "word_count"
    if lang == "python":
        figures["toolchain_s"], _ = run(
            ["sh", "-c", "python3 -m venv .venv && .venv/bin/pip install -q componentize-py==0.25.1"],
            project, env, "pip install")
    elif lang == "js":
        figures["toolchain_s"], _ = run(["npm", "install", "--no-audit", "--no-fund"], project, env,
                                        "npm install")
    else:
        figures["toolchain_s"] = 0.0
    figures["build_s"], _ = run([str(BINARY), "build"], project, env, "build")
    wasm = project / "word_count.wasm"
    figures["bytes"] = wasm.stat().st_size
    figures["install_cold_compile_s"], _ = run([str(BINARY), "install", str(wasm)], project, tw, "install")
    figures["first_call_s"], out = run([str(BINARY), "call", "word_count", "{}"], project, tw, "call")
    figures["new_to_call_min"] = (time.monotonic() - start) / 60
    assert '"words":0' in out.replace(" ", ""), out
    return figures


async def warm_latency(wasm: Path, base: Path) -> dict:
    from mcp import Client, StdioServerParameters

    for d in ("ws", "plugins", "state"):
        (base / d).mkdir(parents=True)
    shutil.copy(wasm, base / "plugins" / "sdk_examples.wasm")
    (base / "ws" / "toolwarden.toml").write_text(POLICY)
    env = {"PATH": os.environ["PATH"], "TOOLWARDEN_PLUGINS": str(base / "plugins"),
           "TOOLWARDEN_STATE": str(base / "state"), "TOOLWARDEN_WORKSPACE": str(base / "ws"),
           "TOOLWARDEN_TRUST_CONFIG": "1"}
    server = StdioServerParameters(command=str(BINARY), args=["serve"], env=env)
    async with Client(server) as client:
        started = time.monotonic()
        await client.call_tool("greet", {"name": "Ada"})
        first = time.monotonic() - started
        samples = []
        for _ in range(CALLS):
            started = time.perf_counter()
            result = await client.call_tool("greet", {"name": "Ada"})
            samples.append((time.perf_counter() - started) * 1e6)
            assert result.is_error is False
    samples.sort()
    return {"first_call_ms": round(first * 1e3, 1), "median_us": round(statistics.median(samples)),
            "p99_us": round(samples[int(len(samples) * 0.99) - 1])}


def main() -> None:
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        examples = {"rust": RUST_EXAMPLES}
        for lang, source in (("python", ROOT / "sdk" / "python" / "example"),
                             ("js", ROOT / "sdk" / "js" / "example")):
            copy = tmp / "examples" / lang
            shutil.copytree(source, copy)
            env = {**os.environ, "PATH": f"{ROOT / '.venv' / 'bin'}:{ROOT / 'tests' / 'sdk' / 'node_modules' / '.bin'}:{os.environ['PATH']}"}
            run([str(BINARY), "build"], copy, env, f"building the {lang} examples")
            examples[lang] = copy / "sdk_examples.wasm"
        for lang in ("rust", "python", "js"):
            base = tmp / lang
            (base / "new").mkdir(parents=True)
            figures = new_to_call(lang, base / "new")
            figures["greet_over_mcp_stdio"] = asyncio.run(warm_latency(examples[lang], base / "warm"))
            figures["examples_bytes"] = examples[lang].stat().st_size
            results[lang] = figures
            warm = figures["greet_over_mcp_stdio"]
            print(f"13. {lang:<6} new→call {figures['new_to_call_min']:.1f} min (toolchain "
                  f"{figures['toolchain_s']:.0f} s, build {figures['build_s']:.1f} s, install/cold compile "
                  f"{figures['install_cold_compile_s']:.1f} s)   component {figures['bytes'] / 1e6:.1f} MB "
                  f"(examples {figures['examples_bytes'] / 1e6:.1f} MB)   greet over stdio median "
                  f"{warm['median_us']} µs p99 {warm['p99_us']} µs")
    out = ROOT / "target" / "bench"
    out.mkdir(parents=True, exist_ok=True)
    file = out / f"sdks-{int(time.time() * 1000)}.json"
    file.write_text(json.dumps({"sdks": results}, indent=2))
    print(f"figures written to {file}")


if __name__ == "__main__":
    main()
