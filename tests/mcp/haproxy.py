"""A real load balancer for the tests that run several hosts: Debian's
HAProxy in the foreground, on a free loopback port, in front of the given
hosts. `/mcp` is spread round robin with no stickiness, as a deployment of
stateless 2026-07-28 clients may; `/console` keeps a browser on the host
that signed it in (a cookie naming the host), since a console session lives
in its host's memory. Every answer names the host that gave it
(`X-Served-By`), and a host that stops accepting connections is skipped:
the request is sent to another (`retries`, `redispatch`), and health checks
take the host out of rotation."""

import contextlib
import shutil
import socket
import subprocess
import time
from pathlib import Path

HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"

CONFIG = """
global
    maxconn 512

defaults
    mode http
    timeout connect 2s
    timeout client 120s
    timeout server 120s
    retries 3
    option redispatch 1

frontend front
    bind 127.0.0.1:{port}
    use_backend console if {{ path_beg /console }}
    default_backend mcp
    http-response set-header X-Served-By %[srv_name]

backend mcp
    balance roundrobin
{mcp_servers}

backend console
    balance roundrobin
    cookie TOOLWARDEN_HOST insert indirect nocache httponly
{console_servers}
"""


@contextlib.contextmanager
def haproxy(directory: Path, hosts: dict, port: int):
    """HAProxy on `port` in front of `hosts` (name -> port) until the block
    ends; yields its base URL."""
    assert Path(HAPROXY).exists(), "haproxy is missing: `apt-get install haproxy` (.ci/run does)"
    servers = "\n".join(f"    server {name} 127.0.0.1:{p} check inter 300ms fall 1 rise 2"
                        for name, p in hosts.items())
    sticky = "\n".join(f"    server {name} 127.0.0.1:{p} check inter 300ms fall 1 rise 2 cookie {name}"
                       for name, p in hosts.items())
    config = directory / "haproxy.cfg"
    config.write_text(CONFIG.format(port=port, mcp_servers=servers, console_servers=sticky))
    checked = subprocess.run([HAPROXY, "-c", "-f", str(config)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    proc = subprocess.Popen([HAPROXY, "-db", "-f", str(config)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read().decode()
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
