"""TLS to the shared store, against a real PostgreSQL 15 with `ssl = on`
that refuses every connection without TLS (tests/mcp/postgres.py starts it;
the certificates are made here by a test CA): `verify-full` works; a server
certificate from another CA, or for another name, is refused with a message
that says which; `verify-ca` accepts the other name; a client certificate
logs in where PostgreSQL asks for one (`cert` in pg_hba.conf)."""

import datetime
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from conftest import BINARY, Host
from postgres import postgres

CALL = ("call", "calc", '{"op": "add", "a": 40, "b": 2}')


class Authority:
    """A certificate authority for the test: its key and self-signed certificate."""

    def __init__(self, name: str):
        self.key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        self.cert = (self._builder(subject, subject, self.key.public_key())
                     .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                     .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                                  content_commitment=False, key_encipherment=False,
                                                  data_encipherment=False, key_agreement=False,
                                                  encipher_only=False, decipher_only=False), critical=True)
                     .sign(self.key, hashes.SHA256()))

    @staticmethod
    def _builder(subject, issuer, public_key):
        now = datetime.datetime.now(datetime.timezone.utc)
        return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer)
                .public_key(public_key).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(hours=1))
                .not_valid_after(now + datetime.timedelta(days=1)))

    def issue(self, name: str, usage, dns: list[str] = ()):
        """A key and a certificate for `name`, signed by this CA."""
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (self._builder(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]),
                                 self.cert.subject, key.public_key())
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
        if dns:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([x509.DNSName(d) for d in dns]), critical=False)
        return key, builder.sign(self.key, hashes.SHA256())


def pem(cert) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def pem_key(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def owned_by_postgres(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    path.chmod(0o600)
    if os.geteuid() == 0:
        shutil.chown(path, "postgres", "postgres")


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory):
    """PostgreSQL with TLS on, its certificate for `localhost` only, from
    `ours`; `certified` logs in with a client certificate alone."""
    files = tmp_path_factory.mktemp("tls")
    ours, other = Authority("toolwarden test CA"), Authority("another CA")
    server_key, server_cert = ours.issue("localhost", ExtendedKeyUsageOID.SERVER_AUTH, ["localhost"])
    client_key, client_cert = ours.issue("certified", ExtendedKeyUsageOID.CLIENT_AUTH)
    for name, data in {"ca.pem": pem(ours.cert), "other-ca.pem": pem(other.cert),
                       "client.pem": pem(client_cert), "client.key": pem_key(client_key)}.items():
        (files / name).write_bytes(data)
    (files / "client.key").chmod(0o600)
    with postgres() as pg:
        pg.sql("CREATE ROLE certified LOGIN")
        pg.sql("CREATE DATABASE certified OWNER certified")
        owned_by_postgres(pg.data / "server.crt", pem(server_cert))
        owned_by_postgres(pg.data / "server.key", pem_key(server_key))
        owned_by_postgres(pg.data / "client-ca.crt", pem(ours.cert))
        with open(pg.data / "postgresql.conf", "a") as conf:
            conf.write("ssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n"
                       "ssl_ca_file = 'client-ca.crt'\n")
        (pg.data / "pg_hba.conf").write_text(
            "local all all scram-sha-256\n"
            "hostssl all certified 127.0.0.1/32 cert\n"
            "hostssl all all 127.0.0.1/32 scram-sha-256\n"
            "hostnossl all all 0.0.0.0/0 reject\n")
        pg.stop()
        pg.start()
        yield pg, files


def run(tmp_path: Path, store: str) -> subprocess.CompletedProcess:
    """`toolwarden call` on a fresh host whose `[store]` says `store`."""
    host = Host(tmp_path / "host")
    config = host.workspace / "toolwarden.toml"
    config.write_text(config.read_text() + f"\n[store]\n{store}\n")
    ran = subprocess.run([str(BINARY), *CALL, "--json"], env=host.env(),
                         capture_output=True, text=True, timeout=120)
    ran.said = ran.stdout + ran.stderr  # a refusal is JSON on stdout with --json
    return ran


def test_verify_full_reaches_the_server_its_certificate_names(tls_server, tmp_path):
    pg, files = tls_server
    ran = run(tmp_path, f'url = "postgres://toolwarden@localhost:{pg.port}/postgres'
                        f'?sslmode=verify-full&sslrootcert={files / "ca.pem"}"\n'
                        f'password_file = "{pg.password_file(tmp_path)}"')
    assert ran.returncode == 0, ran.said
    assert '"result": 42' in ran.stdout or '"result":42' in ran.stdout, ran.stdout


def test_a_certificate_from_another_ca_or_for_another_name_is_refused(tls_server, tmp_path):
    pg, files = tls_server
    password = pg.password_file(tmp_path)
    other = run(tmp_path / "a", f'url = "postgres://toolwarden@localhost:{pg.port}/postgres"\n'
                                f'sslmode = "verify-full"\nsslrootcert = "{files / "other-ca.pem"}"\n'
                                f'password_file = "{password}"')
    assert other.returncode != 0
    assert "not signed by a CA `sslrootcert` trusts" in other.said, other.said
    by_address = f'url = "postgres://toolwarden@127.0.0.1:{pg.port}/postgres"\n' \
                 f'sslrootcert = "{files / "ca.pem"}"\npassword_file = "{password}"\n'
    wrong_name = run(tmp_path / "b", by_address + 'sslmode = "verify-full"')
    assert wrong_name.returncode != 0
    assert "not for the host the store URL names" in wrong_name.said, wrong_name.said
    any_name = run(tmp_path / "c", by_address + 'sslmode = "verify-ca"')
    assert any_name.returncode == 0, any_name.said
    # Without TLS the server refuses: what passed above went over TLS.
    plain = run(tmp_path / "d", f'url = "postgres://toolwarden@127.0.0.1:{pg.port}/postgres"\n'
                                f'password_file = "{password}"')
    assert plain.returncode != 0 and "no encryption" in plain.said, plain.said


def test_a_client_certificate_logs_in_where_postgres_asks_for_one(tls_server, tmp_path):
    pg, files = tls_server
    store = (f'url = "postgres://certified@localhost:{pg.port}/certified?sslmode=verify-full"\n'
             f'sslrootcert = "{files / "ca.pem"}"\n')
    without = run(tmp_path / "a", store)
    assert without.returncode != 0 and "certificate" in without.said, without.said
    ran = run(tmp_path / "b", store + f'sslcert = "{files / "client.pem"}"\n'
                                      f'sslkey = "{files / "client.key"}"')
    assert ran.returncode == 0, ran.said


def test_another_machine_is_reached_with_verify_full_only(tmp_path):
    refused = run(tmp_path, 'url = "postgres://toolwarden@db.example.com/postgres?sslmode=require"')
    assert refused.returncode == 2, refused.said
    assert "another machine" in refused.said and "verify-full" in refused.said, refused.said
