"""A real OpenID Connect provider on 127.0.0.1: tests/oidc_provider in its own process.

`start(...)` runs `python -m tests.oidc_provider.serve PORT` (django-oauth-toolkit,
an RSA key of its own, a PostgreSQL database of its own, `database`) and waits for its discovery document.
Its people and their groups/amr are the JSON file `people_file`: rewrite it
(`Provider.set_people`) and the next token or userinfo answer says so.
`Provider.expire_access_token` ends an access token's lifetime at the provider.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.oidc_provider.serve import password_of

ROOT = Path(__file__).resolve().parents[3]


@dataclass
class Provider:
    url: str
    people_file: Path
    process: subprocess.Popen
    database: str

    @property
    def issuer(self) -> str:
        return f"{self.url}/o"

    def set_people(self, people: dict) -> None:
        self.people_file.write_text(json.dumps(people))

    def expire_access_token(self, token: str) -> None:
        """The access token's lifetime is over at the provider: its expiry, in the
        provider's own database, moved an hour into the past (its clock is not ours)."""
        past = datetime.now(UTC) - timedelta(hours=1)
        checksum = hashlib.sha256(token.encode()).hexdigest()
        with psycopg.connect(self.database, autocommit=True) as db:
            changed = db.execute(
                "UPDATE oauth2_provider_accesstoken SET expires = %s WHERE token_checksum = %s",
                (past, checksum),
            ).rowcount
        assert changed == 1, "no such access token at the provider"

    @staticmethod
    def password(username: str) -> str:
        return password_of(username)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(directory: Path, *, database: str, people: dict, clients: list[dict]) -> Provider:
    """`database`: the URL of an empty PostgreSQL database of its own (`create_database`)."""
    directory.mkdir(parents=True, exist_ok=True)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    (directory / "key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    people_file = directory / "people.json"
    people_file.write_text(json.dumps(people))
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "DJANGO_SETTINGS_MODULE": "tests.oidc_provider.settings",
        "OP_DB": database,
        "OP_KEY": str(directory / "key.pem"),
        "OP_USERS": str(people_file),
        "OP_CLIENTS": json.dumps(clients),
    }
    log = open(directory / "server.log", "wb")  # noqa: SIM115 (open while it runs)
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.oidc_provider.serve", str(port)],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    provider = Provider(f"http://127.0.0.1:{port}", people_file, process, database)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError((directory / "server.log").read_text())
        try:
            if requests.get(provider.issuer + "/.well-known/openid-configuration", timeout=1).ok:
                return provider
        except requests.ConnectionError:
            pass
        time.sleep(0.2)
    process.terminate()
    raise RuntimeError(
        "the stand-in provider did not start: " + (directory / "server.log").read_text()
    )


def stop(provider: Provider) -> None:
    provider.process.terminate()
    provider.process.wait(timeout=10)


def create_database(owner_url: str, name: str) -> str:
    """A fresh PostgreSQL database `name` on the tests' server, owned by the owner role
    (which has CREATEDB); its URL."""
    with psycopg.connect(owner_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    parts = urlsplit(owner_url)
    return urlunsplit(parts._replace(path="/" + name))


def drop_database(owner_url: str, name: str) -> None:
    with psycopg.connect(owner_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
