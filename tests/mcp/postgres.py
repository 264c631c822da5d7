"""A real PostgreSQL server for the tests that share one store between
hosts: `initdb` and `pg_ctl` from the machine's PostgreSQL 15 in a
temporary directory, listening on a free loopback port only, with a
password (SCRAM) login. Run as root (as CI does), the server runs as the
unprivileged `postgres` user, as PostgreSQL insists."""

import contextlib
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

BIN = Path(os.environ.get("PG_BIN", "/usr/lib/postgresql/15/bin"))
USER = "toolwarden"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Postgres:
    def __init__(self, root: Path, port: int, password: str):
        self.root, self.port, self.password = root, port, password
        self.data = root / "data"

    @property
    def url(self) -> str:
        """The store URL without its password (which goes in a file)."""
        return f"postgres://{USER}@127.0.0.1:{self.port}/postgres"

    def password_file(self, directory: Path) -> Path:
        path = directory / "pg-password"
        path.write_text(self.password + "\n")
        path.chmod(0o600)
        return path

    def _as_owner(self, *args: str) -> subprocess.CompletedProcess:
        command = [str(BIN / args[0]), *args[1:]]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        return subprocess.run(command, capture_output=True, text=True, timeout=120)

    def start(self):
        out = self._as_owner("pg_ctl", "-D", str(self.data), "-l", str(self.root / "log"), "-w", "-t", "60",
                             "-o", f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root}", "start")
        assert out.returncode == 0, out.stdout + out.stderr + self.log()

    def stop(self):
        self._as_owner("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def log(self) -> str:
        try:
            return (self.root / "log").read_text()[-3000:]
        except OSError:
            return ""

    def sql(self, query: str, database: str = "postgres") -> str:
        out = subprocess.run([str(BIN / "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", USER,
                              "-d", database, "-At", "-c", query],
                             env={**os.environ, "PGPASSWORD": self.password},
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()


@contextlib.contextmanager
def postgres():
    assert (BIN / "initdb").exists(), f"PostgreSQL is missing at {BIN} (set PG_BIN)"
    root = Path(tempfile.mkdtemp(prefix="toolwarden-pg-"))
    password = secrets.token_hex(16)
    server = Postgres(root, free_port(), password)
    try:
        (root / "pw").write_text(password + "\n")
        if os.geteuid() == 0:
            shutil.chown(root, "postgres", "postgres")
            shutil.chown(root / "pw", "postgres", "postgres")
        out = server._as_owner("initdb", "-D", str(server.data), "-U", USER, "--pwfile", str(root / "pw"),
                               "--auth=scram-sha-256", "-E", "UTF8", "--no-sync")
        assert out.returncode == 0, out.stdout + out.stderr
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    # `python postgres.py COMMAND...`: runs COMMAND with a server up, named
    # by TOOLWARDEN_TEST_POSTGRES (HOST:PORT) and its login's password, as
    # the Rust tests' harness expects; its exit status is COMMAND's.
    import sys

    with postgres() as pg:
        status = subprocess.run(sys.argv[1:], env={
            **os.environ,
            "TOOLWARDEN_TEST_POSTGRES": f"127.0.0.1:{pg.port}",
            "TOOLWARDEN_TEST_POSTGRES_PASSWORD": pg.password,
        }).returncode
    sys.exit(status)
