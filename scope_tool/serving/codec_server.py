"""The codec server: decrypt payloads for the Temporal Web UI and CLI, over HTTP.

With encryption on, Temporal holds only ciphertext, so its Web UI shows ``binary/encrypted``
blobs. A codec server holds the keys and follows Temporal's remote codec protocol: ``POST
.../encode`` and ``POST .../decode`` with a ``Payloads`` message as protobuf JSON
(``{"payloads": [{"metadata": {...}, "data": "<base64>"}]}``) answered in the same shape; only
the last path segment is looked at, so it can be mounted under any prefix. The Web UI calls it
from the operator's browser, so it answers CORS preflights for the UI origins it is told about
(``--ui-origin``) and for no other.

Who may decode: with a token (``SCOPE_TOOL_CODEC_TOKEN``), every request must carry
``Authorization: Bearer <token>`` (``temporal --codec-endpoint URL --codec-auth 'Bearer ...'``,
or an authenticating proxy in front of the UI's calls). Without one it only binds a loopback
address: that is how ``scope-tool dev`` wires it into its local Web UI. Loopback is not enough
on its own, since any web page the operator opens can reach it: a tokenless server answers only
to its own host names (the DNS-rebinding rule of :mod:`scope_tool.serving._hosts`, as the inbox
does), and on every server a POST must say ``Content-Type: application/json``, which a browser
never sends cross-site without a CORS preflight (answered only for ``--ui-origin``).

Bodies are read only with a well-formed ``Content-Length`` up to 16 MiB; anything else (a
negative, signed or repeated length, chunked encoding, none) is refused before a byte is read.

It is standard-library HTTP on a thread (no web stack in the core install).
"""

from __future__ import annotations

import hmac
import ipaddress
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from google.protobuf import json_format
from temporalio.api.common.v1 import Payloads

from scope_tool.config.codec import EncryptionCodec, encryption_codec_from_environment
from scope_tool.serving._errors import EXIT_USAGE, CommandError
from scope_tool.serving._hosts import answers_to, bound_names
from scope_tool.wire.errors import EncryptionConfigError, PayloadDecryptionError

__all__ = [
    "TOKEN_VARIABLE",
    "CodecServer",
    "dev_codec_server",
    "start_codec_server",
]

TOKEN_VARIABLE = "SCOPE_TOOL_CODEC_TOKEN"
_MAX_BODY_BYTES = 16 * 1024 * 1024
_ALLOWED_HEADERS = "Content-Type, X-Namespace, Authorization"
_DIGITS = re.compile(r"[0-9]{1,20}")
_IDLE_SECONDS = 20.0
"""A connection silent this long (mid-headers, mid-body, or between requests) is closed."""
_MAX_CONNECTIONS = 64
"""Connections served at once; one more is closed at once rather than given a thread."""


class _BoundedServer(ThreadingHTTPServer):
    """A thread per connection, but at most ``_MAX_CONNECTIONS`` of them.

    With the handler's socket timeout, a client that sends half a request and waits (before
    any token is checked) holds one slot for ``_IDLE_SECONDS`` at most, not a thread forever.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._slots = threading.BoundedSemaphore(_MAX_CONNECTIONS)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


@dataclass(frozen=True, slots=True, kw_only=True)
class CodecServer:
    """A running codec server: where it listens, and how to stop it."""

    url: str
    server: ThreadingHTTPServer
    thread: threading.Thread

    def stop(self) -> None:
        """Stop serving and release the port."""
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def start_codec_server(
    codec: EncryptionCodec,
    *,
    host: str = "127.0.0.1",
    port: int = 8235,
    ui_origins: Sequence[str] = (),
    token: str | None = None,
) -> CodecServer:
    """Serve ``codec`` on ``host:port`` in a background thread.

    Raises:
        CommandError: no token on a non-loopback address, or the port cannot be bound.
    """
    if not token and not _is_loopback(host):
        raise CommandError(
            f"the codec server decrypts for whoever asks: on {host} (not loopback) it needs a"
            f" token; set {TOKEN_VARIABLE}",
            exit_code=EXIT_USAGE,
        )
    origins = frozenset(origin.rstrip("/") for origin in ui_origins)
    names, any_address = bound_names(host)
    handler = _handler_class(
        codec,
        origins=origins,
        token=token or None,
        # With a token, DNS rebinding gains nothing (the page has no token), and the server may
        # sit behind a proxy under any name; without one, the Host is the only defence.
        host_check=None if token else (names, any_address),
    )
    try:
        server = _BoundedServer((host, port), handler)
    except OSError as error:
        raise CommandError(
            f"the codec server cannot listen on {host}:{port}: {error.strerror or error}"
        ) from None
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="codec-server", daemon=True)
    thread.start()
    shown = "localhost" if _is_loopback(host) else host
    return CodecServer(
        url=f"http://{shown}:{server.server_address[1]}", server=server, thread=thread
    )


def dev_codec_server(*, ip: str, port: int, ui_port: int) -> CodecServer | None:
    """For ``scope-tool dev``: a loopback codec server for its Web UI, if keys are configured.

    Raises:
        CommandError: the keys setting is malformed, or the port is taken.
    """
    try:
        codec = encryption_codec_from_environment()
    except EncryptionConfigError as error:
        raise CommandError.usage(error) from None
    if codec is None:
        return None
    origins = (f"http://localhost:{ui_port}", f"http://{ip}:{ui_port}")
    return start_codec_server(codec, host=ip, port=port, ui_origins=origins)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _handler_class(
    codec: EncryptionCodec,
    *,
    origins: frozenset[str],
    token: str | None,
    host_check: tuple[frozenset[str], bool] | None,
) -> type[BaseHTTPRequestHandler]:
    expected = f"Bearer {token}".encode() if token else None

    class Handler(BaseHTTPRequestHandler):
        server_version = "scope-tool-codec/1"
        timeout = _IDLE_SECONDS  # socket timeout: a stalled request is dropped, not kept

        def log_message(self, format: str, *args: Any) -> None:
            pass  # request logs would name payload sizes per namespace; keep quiet

        def _cors(self) -> None:
            origin = self.headers.get("Origin", "").rstrip("/")
            if origin and origin in origins:
                self.send_header("Access-Control-Allow-Origin", origin)
                self.send_header("Access-Control-Allow-Credentials", "true")
                self.send_header("Vary", "Origin")

        def _reply(self, status: int, body: bytes, content_type: str = "application/json") -> None:
            self.send_response(status)
            self._cors()
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def _error(self, status: int, message: str) -> None:
            self._reply(status, message.encode("utf-8") + b"\n", "text/plain; charset=utf-8")

        def _preflight(self) -> None:
            origin = self.headers.get("Origin", "").rstrip("/")
            if origin not in origins:
                self._error(403, f"origin {origin or '(none)'} may not call this codec server")
                return
            self.send_response(200)
            self._cors()
            self.send_header("Access-Control-Allow-Methods", "POST, OPTIONS")
            self.send_header("Access-Control-Allow-Headers", _ALLOWED_HEADERS)
            self.send_header("Access-Control-Max-Age", "600")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def _foreign_host(self) -> bool:
            if host_check is None:
                return False
            names, any_address = host_check
            host = self.headers.get("Host", "")
            if answers_to(host, names=names, any_address=any_address):
                return False
            self._error(
                403,
                f"this codec server does not answer to host {host[:100]!r} (it answers to"
                f" {', '.join(sorted(names))}); a page that reached it under another name is"
                " refused, since that is how DNS rebinding works",
            )
            return True

        def _body_length(self) -> int | None:
            """The declared body length, or None after refusing a missing or bad one."""
            if self.headers.get("Transfer-Encoding") is not None:
                self._error(411, "send the body with a Content-Length, not Transfer-Encoding")
                return None
            declared = self.headers.get_all("Content-Length") or []
            if not declared:
                self._error(411, "a Content-Length is required")
                return None
            if len(declared) > 1 or not _DIGITS.fullmatch(declared[0].strip()):
                self._error(400, "Content-Length must be one decimal number of bytes")
                return None
            length = int(declared[0])
            if length > _MAX_BODY_BYTES:
                self._error(413, f"body over {_MAX_BODY_BYTES} bytes")
                return None
            return length

        def do_OPTIONS(self) -> None:
            if self._foreign_host():
                return
            self._preflight()

        def do_POST(self) -> None:
            self.close_connection = True  # a refused body is never read, so never reuse
            if self._foreign_host():
                return
            operation = self.path.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
            if operation not in ("encode", "decode"):
                self._error(404, "POST .../encode or .../decode")
                return
            if expected is not None and not hmac.compare_digest(
                self.headers.get("Authorization", "").encode(), expected
            ):
                self._error(401, "missing or wrong bearer token")
                return
            media_type = self.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()
            if media_type != "application/json":
                # text/plain and form types are "simple": a browser sends them cross-site
                # without a preflight, so the origin check would never run.
                self._error(415, "send Payloads JSON with Content-Type: application/json")
                return
            length = self._body_length()
            if length is None:
                return
            payloads = Payloads()
            try:
                json_format.Parse(self.rfile.read(length), payloads)
            except (json_format.ParseError, ValueError) as error:
                self._error(400, f"the body is not Payloads protobuf JSON: {error}")
                return
            try:
                if operation == "encode":
                    done = [codec.seal(each) for each in payloads.payloads]
                else:
                    done = [codec.open(each) for each in payloads.payloads]
            except PayloadDecryptionError as error:
                self._error(422, str(error))
                return
            body = json_format.MessageToJson(Payloads(payloads=done)).encode("utf-8")
            self._reply(200, body)

    return Handler
