"""SMTP as production uses it: STARTTLS (the server's certificate verified) and a login from the
environment's credentials. ``aiosmtpd`` on loopback requires both; a self-signed certificate for
127.0.0.1 is trusted through ``SSL_CERT_FILE``, which ``ssl.create_default_context`` reads."""

from __future__ import annotations

import dataclasses
import datetime
import ipaddress
import json
import smtplib
import ssl
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from channels._servers import free_port
from scope_tool.config.channels import EmailSettings
from scope_tool.wire import AnnounceInput
from scope_tool.wire.links import link_key
from scope_tool.workers._channels import Announcer

KEY = link_key(b"smtp-test-identity-secret-01234")


def _certificate(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


class _Server:
    def __init__(self) -> None:
        self.logins: list[str] = []
        self.received: list[Any] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.received.append((session.authenticated, envelope.rcpt_tos))
        return "250 OK"

    def authenticate(
        self, server: Any, session: Any, envelope: Any, mechanism: str, data: Any
    ) -> AuthResult:
        if isinstance(data, LoginPassword) and (data.login, data.password) == (
            b"approvals",
            b"s3cret-pass",
        ):
            self.logins.append(data.login.decode())
            return AuthResult(success=True)
        return AuthResult(success=False, handled=False)


def _question() -> AnnounceInput:
    return AnnounceInput(
        call_id="tls-1",
        tool="deploy",
        request_id="tls-1/r1",
        arguments="{}",
        prompt=json.dumps({"question": "Deploy?"}).encode(),
        response_schema=b'{"type": "boolean"}',
        allowed_answerers=("alice",),
        channels=("email",),
    )


def test_starttls_and_login_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = _certificate(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    server = _Server()
    port = free_port()
    controller = Controller(
        server,
        hostname="127.0.0.1",
        port=port,
        tls_context=context,
        require_starttls=True,
        auth_required=True,
        authenticator=server.authenticate,
    )
    controller.start()
    try:
        settings = EmailSettings.from_env(
            {
                "SCOPE_TOOL_SMTP_HOST": "127.0.0.1",
                "SCOPE_TOOL_SMTP_PORT": str(port),
                "SCOPE_TOOL_SMTP_USERNAME": "approvals",
                "SCOPE_TOOL_SMTP_PASSWORD": "s3cret-pass",
                "SCOPE_TOOL_EMAIL_FROM": "approvals@example.test",
                "SCOPE_TOOL_EMAIL_TO": "alice=alice@example.test",
                "SCOPE_TOOL_INBOX_PUBLIC_URL": "https://inbox.example.test",
            }
        )
        assert settings is not None
        assert settings.starttls  # the default
        announcer = Announcer(email=settings, ledger=tmp_path / "ledger")
        # A wrong password is an error (retried by the activity); nothing is marked sent.
        wrong = dataclasses.replace(settings, password="wrong")
        with pytest.raises(smtplib.SMTPAuthenticationError):
            announcer._send_one(wrong, KEY, _question(), "alice", "alice@example.test")
        assert server.received == []
        assert announcer._send_one(settings, KEY, _question(), "alice", "alice@example.test")
        assert server.logins == ["approvals"]
        assert server.received == [(True, ["alice@example.test"])]
    finally:
        controller.stop()


def test_an_untrusted_certificate_is_refused(tmp_path: Path) -> None:
    cert, key = _certificate(tmp_path)  # not trusted: SSL_CERT_FILE is not set
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    port = free_port()
    controller = Controller(
        _Server(), hostname="127.0.0.1", port=port, tls_context=context, require_starttls=True
    )
    controller.start()
    try:
        settings = EmailSettings(
            host="127.0.0.1",
            port=port,
            sender="approvals@example.test",
            inbox_url="https://inbox.example.test",
        )
        announcer = Announcer(email=settings, ledger=tmp_path / "ledger")
        with pytest.raises(ssl.SSLCertVerificationError):
            announcer._send_one(settings, KEY, _question(), "alice", "alice@example.test")
    finally:
        controller.stop()
