"""Plugins from registries, pinned and signed: a real OCI registry
(Debian's `docker-registry`) on loopback, the `oras` Python client as the
third party on the other side, the `minisign` CLI signing, and a running
`toolwarden serve` picking up installs and removals.
"""

import hashlib
import http.server
import json
import os
import shutil
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from mcp import ClientSession
from mcp.client.stdio import stdio_client

from conftest import BINARY, WASM, free_port

pytestmark = pytest.mark.anyio

WASM_CONFIG = "application/vnd.wasm.config.v0+json"
REGISTRY = shutil.which("docker-registry") or "/usr/bin/docker-registry"
MINISIGN = shutil.which("minisign") or "/usr/bin/minisign"


class Registry:
    def __init__(self, root: Path, users: dict | None = None):
        assert Path(REGISTRY).exists(), "docker-registry is missing: `apt-get install docker-registry` (.ci/run does)"
        self.port = free_port()
        self.host = f"127.0.0.1:{self.port}"
        self.data = root / "registry"
        config = root / "registry.yml"
        auth = ""
        if users:
            import warnings
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                import crypt
            htpasswd = root / "htpasswd"
            htpasswd.write_text("".join(
                f"{user}:{crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH))}\n"
                for user, password in users.items()))
            auth = f"auth:\n  htpasswd:\n    realm: toolwarden-tests\n    path: {htpasswd}\n"
        config.write_text(f"""version: 0.1
log:
  level: error
storage:
  filesystem:
    rootdirectory: {self.data}
  delete:
    enabled: true
http:
  addr: {self.host}
{auth}""")
        self.proc = subprocess.Popen([REGISTRY, "serve", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(f"http://{self.host}/v2/", timeout=1):
                    return
            except urllib.error.HTTPError as e:
                if e.code == 401:
                    return
                raise
            except OSError:
                assert self.proc.poll() is None, self.proc.stderr.read().decode()
                assert time.monotonic() < deadline, "the registry did not start"
                time.sleep(0.05)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)

    def oras(self):
        import oras.provider
        return oras.provider.Registry(hostname=self.host, insecure=True)

    def oras_push_default(self, tmp: Path, repo: str, files: list[tuple[Path, str]]):
        """Pushes files as `oras push REF file:TYPE ...` does with no config:
        oras's own default config (`application/vnd.unknown.config.v1+json`)."""
        work = tmp / f"oras-default-{repo.replace('/', '-').replace(':', '-')}"
        work.mkdir(exist_ok=True)
        names = []
        for path, media_type in files:
            shutil.copy(path, work / path.name)
            names.append(f"{path.name}:{media_type}")
        cwd = os.getcwd()
        os.chdir(work)
        try:
            response = self.oras().push(target=f"{self.host}/{repo}", files=names)
        finally:
            os.chdir(cwd)
        assert response.status_code in (200, 201), response.text

    def push_manifest(self, repo: str, tag: str, manifest: dict, blobs: list[bytes]):
        """Uploads blobs and a manifest by hand (the registry API), for
        manifest shapes no client here writes."""
        for blob in blobs:
            digest = "sha256:" + hashlib.sha256(blob).hexdigest()
            start = urllib.request.Request(f"http://{self.host}/v2/{repo}/blobs/uploads/", method="POST")
            with urllib.request.urlopen(start, timeout=10) as response:
                location = response.headers["Location"]
            if location.startswith("/"):
                location = f"http://{self.host}{location}"
            sep = "&" if "?" in location else "?"
            put = urllib.request.Request(f"{location}{sep}digest={digest}", data=blob, method="PUT",
                                         headers={"Content-Type": "application/octet-stream"})
            urllib.request.urlopen(put, timeout=10).close()
        body = json.dumps(manifest).encode()
        put = urllib.request.Request(f"http://{self.host}/v2/{repo}/manifests/{tag}", data=body, method="PUT",
                                     headers={"Content-Type": "application/vnd.oci.image.manifest.v1+json"})
        urllib.request.urlopen(put, timeout=10).close()

    def oras_push(self, tmp: Path, repo: str, wasm: Path):
        """Pushes `wasm` as a Wasm component artifact with oras."""
        work = tmp / f"oras-{repo.replace('/', '-')}"
        work.mkdir(exist_ok=True)
        shutil.copy(wasm, work / "component.wasm")
        (work / "config.json").write_text(json.dumps({"architecture": "wasm", "os": "wasip2"}))
        cwd = os.getcwd()
        os.chdir(work)
        try:
            response = self.oras().push(target=f"{self.host}/{repo}",
                                        files=["component.wasm:application/wasm"],
                                        manifest_config=f"config.json:{WASM_CONFIG}")
        finally:
            os.chdir(cwd)
        assert response.status_code in (200, 201), response.text

    def manifest(self, repo: str, reference: str) -> dict:
        request = urllib.request.Request(f"http://{self.host}/v2/{repo}/manifests/{reference}",
                                         headers={"Accept": "application/vnd.oci.image.manifest.v1+json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def blob_file(self, digest: str) -> Path:
        hex_ = digest.removeprefix("sha256:")
        return self.data / "docker/registry/v2/blobs/sha256" / hex_[:2] / hex_ / "data"


@pytest.fixture
def registry(tmp_path):
    running = Registry(tmp_path)
    yield running
    running.stop()


@pytest.fixture
def empty(host):
    """The test host with no plugins yet."""
    for f in host.plugins.iterdir():
        f.unlink()
    return host


class Keys:
    def __init__(self, root: Path, name: str):
        self.public_file = root / f"{name}.pub"
        self.secret_file = root / f"{name}.key"
        subprocess.run([MINISIGN, "-G", "-W", "-p", str(self.public_file), "-s", str(self.secret_file)],
                       check=True, capture_output=True)
        lines = self.public_file.read_text().splitlines()
        self.public = lines[-1].strip()
        self.id = lines[0].split()[-1]

    def sign(self, file: Path):
        subprocess.run([MINISIGN, "-S", "-s", str(self.secret_file), "-m", str(file)], check=True, capture_output=True)


def component(tmp_path: Path, name: str = "calc") -> Path:
    """A copy of an example plugin, to publish and sign."""
    out = tmp_path / "build" / f"{name}.wasm"
    out.parent.mkdir(exist_ok=True)
    shutil.copy(WASM / f"{name}.wasm", out)
    return out


def policy(host, extra: str = ""):
    (host.workspace / "toolwarden.toml").write_text(
        f"{extra}\n[[rule]]\ntools = [\"*\"]\ndecision = \"allow\"\nreason = \"registry tests\"\n")
    code, _, err = host.cli("policy", "trust")
    assert code == 0, err


def locked(host) -> dict:
    code, out, err = host.cli("plugins", "list", "--json")
    assert code == 0, err
    return {p["file"]: p for p in json.loads(out)}


def leftovers(host) -> list:
    return [p.name for p in host.plugins.iterdir() if p.name.startswith(".")]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_install_by_tag_and_by_digest_what_a_third_party_pushed(empty, registry, tmp_path):
    host = empty
    policy(host)
    calc = component(tmp_path)
    registry.oras_push(tmp_path, "tools/calc:1.0", calc)
    code, out, err = host.cli("install", f"oci://{registry.host}/tools/calc:1.0")
    assert code == 0, err
    assert "installed calc.wasm" in out and ": calc" in out
    assert sha256(host.plugins / "calc.wasm") == sha256(calc)
    entry = locked(host)["calc.wasm"]
    assert entry["tag"] == "1.0" and entry["sha256"] == sha256(calc)
    digest = entry["digest"]
    assert digest.startswith("sha256:")
    code, out, err = host.cli("call", "calc", '{"op":"add","a":40,"b":2}', "--json")
    assert json.loads(out)["value"] == {"result": 42}

    code, _, err = host.cli("plugins", "remove", "calc")
    assert code == 0, err
    assert not (host.plugins / "calc.wasm").exists() and "calc.wasm" not in locked(host)
    code, out, err = host.cli("install", f"oci://{registry.host}/tools/calc@{digest}")
    assert code == 0, err
    assert locked(host)["calc.wasm"]["digest"] == digest
    assert leftovers(host) == [], "no staging left behind"


def test_what_toolwarden_publishes_a_third_party_pulls(empty, registry, tmp_path):
    calc = component(tmp_path)
    code, out, err = empty.cli("publish", str(calc), f"oci://{registry.host}/tools/published:1.0")
    assert code == 0, err
    manifest = registry.manifest("tools/published", "1.0")
    assert manifest["config"]["mediaType"] == WASM_CONFIG
    assert [layer["mediaType"] for layer in manifest["layers"]] == ["application/wasm"]
    out_dir = tmp_path / "pulled"
    out_dir.mkdir()
    pulled = registry.oras().pull(target=f"{registry.host}/tools/published:1.0", outdir=str(out_dir))
    assert len(pulled) == 1 and sha256(Path(pulled[0])) == sha256(calc)
    # The layer is titled, so `oras pull` writes a file named as published.
    assert manifest["layers"][0]["annotations"]["org.opencontainers.image.title"] == calc.name
    assert Path(pulled[0]).name == calc.name


def test_install_takes_a_component_however_the_common_tools_pushed_it(empty, registry, tmp_path):
    host = empty
    policy(host)
    calc = component(tmp_path)
    # `oras push REF calc.wasm:application/wasm`, with oras's default config.
    registry.oras_push_default(tmp_path, "tools/oras:1.0", [(calc, "application/wasm")])
    assert registry.manifest("tools/oras", "1.0")["config"]["mediaType"] == "application/vnd.unknown.config.v1+json"
    code, out, err = host.cli("install", f"oci://{registry.host}/tools/oras:1.0", "--name", "oras_calc.wasm")
    assert code == 0, err
    assert "ORAS artifact" in err, err
    assert sha256(host.plugins / "oras_calc.wasm") == sha256(calc)

    # An OCI 1.1 artifact: the empty config and an artifactType.
    data = calc.read_bytes()
    empty_config = b"{}"
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "artifactType": "application/vnd.wasm.component.v1+wasm",
        "config": {"mediaType": "application/vnd.oci.empty.v1+json",
                   "digest": "sha256:" + hashlib.sha256(empty_config).hexdigest(), "size": 2},
        "layers": [{"mediaType": "application/wasm",
                    "digest": "sha256:" + hashlib.sha256(data).hexdigest(), "size": len(data)}],
    }
    registry.push_manifest("tools/typed", "1.0", manifest, [empty_config, data])
    code, out, err = host.cli("install", f"oci://{registry.host}/tools/typed:1.0", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report[0]["format"] == "an OCI artifact of type `application/vnd.wasm.component.v1+wasm`"
    assert "calc" in report[0]["tools"]

    # Something else entirely: a text file pushed with oras is refused, and says why.
    notes = tmp_path / "notes.txt"
    notes.write_text("not a component")
    registry.oras_push_default(tmp_path, "tools/notes:1.0", [(notes, "text/plain")])
    code, out, err = host.cli("install", f"oci://{registry.host}/tools/notes:1.0", "--name", "notes.wasm")
    assert code == 2, (out, err)
    assert "none of its 1 layers is a component" in err and "text/plain" in err, err
    assert not (host.plugins / "notes.wasm").exists()

    # A wasm layer that is not a component is refused when it is checked.
    core = tmp_path / "core.wasm"
    core.write_bytes(b"\0asm\x01\x00\x00\x00")
    registry.oras_push_default(tmp_path, "tools/core:1.0", [(core, "application/wasm")])
    code, out, err = host.cli("install", f"oci://{registry.host}/tools/core:1.0")
    assert code == 2, (out, err)
    assert "component" in err.lower(), err
    assert not (host.plugins / "core.wasm").exists()


def test_a_tampered_layer_is_refused_and_nothing_is_installed(empty, registry, tmp_path):
    host = empty
    policy(host)
    calc = component(tmp_path)
    registry.oras_push(tmp_path, "tools/calc:1.0", calc)
    layer = registry.manifest("tools/calc", "1.0")["layers"][0]["digest"]
    blob = registry.blob_file(layer)
    data = bytearray(blob.read_bytes())
    data[len(data) // 2] ^= 0xFF
    blob.write_bytes(bytes(data))
    code, out, err = host.cli("install", f"oci://{registry.host}/tools/calc:1.0")
    assert code == 2, (out, err)
    assert "digest" in err.lower(), err
    assert list(host.plugins.iterdir()) == [], "nothing was installed, nothing left behind"


def test_signatures_are_required_verified_and_named(empty, registry, tmp_path):
    host = empty
    trusted, stranger = Keys(tmp_path, "trusted"), Keys(tmp_path, "stranger")
    policy(host, f'[plugins]\nrequire_signature = true\ntrusted_keys = ["{trusted.public}"]\n')
    calc = component(tmp_path)

    registry.oras_push(tmp_path, "tools/unsigned:1.0", calc)
    code, _, err = host.cli("install", f"oci://{registry.host}/tools/unsigned:1.0", "--name", "calc.wasm")
    assert code == 2 and "not signed" in err, err

    stranger.sign(calc)
    code, _, err = host.cli("publish", str(calc), f"oci://{registry.host}/tools/strange:1.0")
    assert code == 0, err
    code, _, err = host.cli("install", f"oci://{registry.host}/tools/strange:1.0", "--name", "calc.wasm")
    assert code == 2 and "does not verify" in err, err
    assert list(host.plugins.iterdir()) == []

    trusted.sign(calc)
    code, _, err = host.cli("publish", str(calc), f"oci://{registry.host}/tools/calc:1.0")
    assert code == 0, err
    code, out, err = host.cli("install", f"oci://{registry.host}/tools/calc:1.0")
    assert code == 0, err
    assert f"signed by {trusted.id}" in out
    assert (host.plugins / "calc.wasm.minisig").exists()
    assert locked(host)["calc.wasm"]["signer"] == trusted.id
    code, out, err = host.cli("call", "calc", '{"op":"mul","a":6,"b":7}', "--json")
    assert json.loads(out)["status"] == "ok", out
    outcome = [r for r in host.audit("calc") if r["kind"] == "outcome"][-1]
    assert outcome["data"]["plugin"] == {"sha256": sha256(calc), "signer": trusted.id}

    # The same rule at start: a plugin someone copied in unsigned does not load.
    shutil.copy(WASM / "fs.wasm", host.plugins / "fs.wasm")
    code, out, err = host.cli("list", "--json")
    names = [t["name"] for t in json.loads(out)]
    assert names == ["calc"], names
    assert "fs.wasm" in err and "not signed" in err


async def test_an_unsigned_plugin_is_refused_on_hot_reload_and_a_removed_one_leaves(empty, registry, tmp_path):
    host = empty
    trusted = Keys(tmp_path, "trusted")
    policy(host, f'[plugins]\nrequire_signature = true\ntrusted_keys = ["{trusted.public}"]\n')
    calc = component(tmp_path)
    trusted.sign(calc)
    code, _, err = host.cli("publish", str(calc), f"oci://{registry.host}/tools/calc:1.0")
    assert code == 0, err

    async def names(session):
        return sorted(t.name for t in (await session.list_tools()).tools)

    async def until(session, want, seconds=10):
        deadline = time.monotonic() + seconds
        while (got := await names(session)) != want and time.monotonic() < deadline:
            await anyio_sleep(0.2)
        return got

    async with stdio_client(host.server()) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        assert await names(s) == []
        code, _, err = host.cli("install", f"oci://{registry.host}/tools/calc:1.0")
        assert code == 0, err
        assert await until(s, ["calc"]) == ["calc"], "a running server picks up the install"
        shutil.copy(WASM / "fs.wasm", host.plugins / "fs.wasm")
        await anyio_sleep(2)
        assert await names(s) == ["calc"], "an unsigned plugin is refused on hot reload"
        code, _, err = host.cli("plugins", "remove", "calc")
        assert code == 0, err
        assert await until(s, []) == [], "a removed plugin leaves the running server"


async def anyio_sleep(seconds: float):
    import anyio
    await anyio.sleep(seconds)


def test_locked_reproduces_the_locked_digest_and_update_moves_to_the_tags_newest(empty, registry, tmp_path):
    host = empty
    policy(host)
    first, second = component(tmp_path, "calc"), component(tmp_path, "fs")
    registry.oras_push(tmp_path, "tools/tool:1", first)
    code, _, err = host.cli("install", f"oci://{registry.host}/tools/tool:1")
    assert code == 0, err
    before = locked(host)["tool.wasm"]
    registry.oras_push(tmp_path, "tools/tool:1", second)  # the tag moves on
    (host.plugins / "tool.wasm").unlink()
    code, out, err = host.cli("install", "--locked")
    assert code == 0, err
    assert sha256(host.plugins / "tool.wasm") == sha256(first), "exactly the locked digest"
    after = locked(host)["tool.wasm"]
    assert (after["digest"], after["source"]) == (before["digest"], before["source"])
    code, out, err = host.cli("plugins", "update", "tool")
    assert code == 0, err
    assert sha256(host.plugins / "tool.wasm") == sha256(second)
    assert locked(host)["tool.wasm"]["digest"] != before["digest"]


class Cutting(http.server.BaseHTTPRequestHandler):
    """A proxy to the registry that sends half of every large blob, then
    hangs up: a registry going away in the middle of a pull."""
    upstream = ""

    def do_GET(self):
        request = urllib.request.Request(f"http://{self.upstream}{self.path}", headers={
            k: v for k, v in self.headers.items() if k.lower() in ("accept", "authorization")})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                body = response.read()
                status, headers = response.status, response.headers
        except urllib.error.HTTPError as e:
            body, status, headers = e.read(), e.code, e.headers
        self.send_response(status)
        for name in ("Content-Type", "Docker-Content-Digest"):
            if headers.get(name):
                self.send_header(name, headers[name])
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if "/blobs/" in self.path and len(body) > 10_000:
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_a_registry_that_stops_mid_pull_leaves_nothing_half_installed(empty, registry, tmp_path):
    host = empty
    policy(host)
    registry.oras_push(tmp_path, "tools/calc:1.0", component(tmp_path))
    Cutting.upstream = registry.host
    proxy = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Cutting)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        code, out, err = host.cli("install", f"oci://127.0.0.1:{proxy.server_address[1]}/tools/calc:1.0")
    finally:
        proxy.shutdown()
    assert code == 2, (out, err)
    assert list(host.plugins.iterdir()) == [], "no file, no staging directory, no lock entry"


def test_check_is_the_authors_check_without_a_config(empty, tmp_path):
    host = empty
    calc = component(tmp_path)
    (host.workspace / "toolwarden.toml").unlink()
    code, out, err = host.cli("check", str(calc))
    assert code == 0, (out, err)
    assert "no problems" in out
    code, out, err = host.cli("check", str(calc), "--policy")
    assert code == 1 and "no policy rule covers" in out, out


def test_registry_credentials_come_from_the_docker_config_or_the_flags(empty, tmp_path):
    host = empty
    policy(host)
    locked_registry = Registry(tmp_path, users={"ci": "s3cret-pass"})
    try:
        calc = component(tmp_path)
        target = f"oci://{locked_registry.host}/tools/calc:1.0"
        code, _, err = host.cli("publish", str(calc), target)
        assert code == 2 and ("401" in err or "nauthorized" in err.lower()), err
        published = subprocess.run([str(BINARY), "publish", str(calc), target, "--username", "ci"],
                                   input="s3cret-pass\n", env=host.env(), capture_output=True, text=True, timeout=60)
        assert published.returncode == 0, published.stderr
        code, _, err = host.cli("install", target)
        assert code == 2, "anonymous pulls are refused by this registry"
        docker = tmp_path / "docker"
        docker.mkdir()
        import base64
        (docker / "config.json").write_text(json.dumps({"auths": {
            locked_registry.host: {"auth": base64.b64encode(b"ci:s3cret-pass").decode()}}}))
        installed = subprocess.run([str(BINARY), "install", target], env={**host.env(), "DOCKER_CONFIG": str(docker)},
                                   capture_output=True, text=True, timeout=60)
        assert installed.returncode == 0, installed.stderr
        assert sha256(host.plugins / "calc.wasm") == sha256(calc)
    finally:
        locked_registry.stop()
