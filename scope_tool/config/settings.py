"""The one reader of connection settings: flags, ``SCOPE_TOOL_*`` environment, defaults.

Every process that talks to Temporal (the CLI, ``python -m scope_tool.workers``, ``scope-tool dev``, client
apps) builds a :class:`Settings` here, so they all read the same variables with the same rules:
``SCOPE_TOOL_<FIELD>`` per field (``SCOPE_TOOL_ADDRESS``, ``SCOPE_TOOL_NAMESPACE``,
``SCOPE_TOOL_TASK_QUEUE``, ``SCOPE_TOOL_TLS``, ``SCOPE_TOOL_TLS_CERT``, ``SCOPE_TOOL_TLS_KEY``,
``SCOPE_TOOL_TLS_CA``, ``SCOPE_TOOL_API_KEY``), an empty variable counts as unset, and a boolean
is one of ``1 true yes on`` / ``0 false no off`` (anything else is an error, never a guess).
Adding a setting is one field with its default; its variable follows from its name.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Final

from temporalio.client import Client
from temporalio.service import TLSConfig

from scope_tool.config._converter import DATA_CONVERTER
from scope_tool.wire.errors import SettingsError

__all__ = [
    "DEFAULT_ADDRESS",
    "DEFAULT_NAMESPACE",
    "DEFAULT_TASK_QUEUE",
    "ENV_PREFIX",
    "Settings",
    "add_env_option",
    "env_name",
    "parse_flag",
]

ENV_PREFIX: Final = "SCOPE_TOOL_"

_TRUE: Final = frozenset({"1", "true", "yes", "on"})
_FALSE: Final = frozenset({"0", "false", "no", "off"})


def parse_flag(name: str, value: str) -> bool:
    """The one truth rule for boolean settings (see the module docstring)."""
    word = value.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise SettingsError(
        f"{name} must be one of {', '.join(sorted(_TRUE))} or {', '.join(sorted(_FALSE))},"
        f" got {value!r}"
    )


DEFAULT_ADDRESS: Final = "localhost:7233"
DEFAULT_NAMESPACE: Final = "default"
DEFAULT_TASK_QUEUE: Final = "scope-tools"


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """Where the Temporal cluster is and how to reach it.

    Attributes:
        address: the frontend ``host:port``.
        namespace: the Temporal namespace.
        task_queue: where the workers poll and calls are started.
        tls: connect with TLS (implied by any TLS file).
        tls_cert: client certificate (PEM) for mutual TLS; goes with ``tls_key``.
        tls_key: client private key (PEM) for mutual TLS.
        tls_ca: server root CA (PEM), when not a public one.
        api_key: an API key (e.g. Temporal Cloud).
        notify_secret: the worker signs webhook bodies with it (``scope_tool.config.webhook``).
        notify_allowed: comma-separated URL prefixes a ``notify_url`` must fall under, checked
            by ``ToolCalls.start`` and by the worker (unset: any http(s) URL).
    """

    address: str = DEFAULT_ADDRESS
    namespace: str = DEFAULT_NAMESPACE
    task_queue: str = DEFAULT_TASK_QUEUE
    tls: bool = False
    tls_cert: Path | None = None
    tls_key: Path | None = None
    tls_ca: Path | None = None
    api_key: str | None = None
    notify_secret: str | None = None
    notify_allowed: str | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Defaults, then ``SCOPE_TOOL_*`` variables, then ``overrides`` (``None`` = not given).

        Raises:
            SettingsError: a variable or override has a value its field cannot take.
        """
        source = os.environ if environ is None else environ
        found: dict[str, Any] = {}
        for each in fields(cls):
            raw = source.get(env_name(each.name), "")
            if raw:
                found[each.name] = _convert(each.name, raw)
        settings = cls(**found)
        return settings.with_overrides(**overrides)

    def with_overrides(self, **changes: Any) -> Settings:
        """A copy with the given fields replaced; ``None`` or ``""`` leaves a field as it is."""
        known = {each.name for each in fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise SettingsError(f"unknown settings: {', '.join(unknown)}")
        given: dict[str, Any] = {
            name: Path(value) if name.startswith("tls_") and isinstance(value, str) else value
            for name, value in changes.items()
            if value is not None and value != ""
        }
        updated = dataclasses.replace(self, **given)
        if (updated.tls_cert is None) != (updated.tls_key is None):
            raise SettingsError(
                f"--tls-cert and --tls-key go together ({env_name('tls_cert')} and"
                f" {env_name('tls_key')}): mutual TLS needs the certificate and key given together"
            )
        return updated

    def tls_config(self) -> TLSConfig | bool:
        """``False`` for plain text, ``True`` for system roots, or a config with files read.

        Raises:
            SettingsError: a TLS file cannot be read (its path is named).
        """
        files = (self.tls_cert, self.tls_key, self.tls_ca)
        if not self.tls and all(each is None for each in files):
            return False
        if all(each is None for each in files):
            return True
        return TLSConfig(
            server_root_ca_cert=_read(self.tls_ca, "tls_ca"),
            client_cert=_read(self.tls_cert, "tls_cert"),
            client_private_key=_read(self.tls_key, "tls_key"),
        )

    def to_env(self) -> dict[str, str]:
        """The settings as ``SCOPE_TOOL_*`` variables (unset fields left out), for a child."""
        found: dict[str, str] = {}
        for each in fields(self):
            value = getattr(self, each.name)
            if value is None or value is False:
                continue
            found[env_name(each.name)] = "1" if value is True else str(value)
        return found

    def worker_command(
        self,
        tools: str | Sequence[str],
        *,
        gateway: str | None = None,
        retry_safe: Sequence[str] = (),
        metrics: str | None = None,
        python: str = sys.executable,
    ) -> tuple[list[str], dict[str, str]]:
        """The one way to start ``python -m scope_tool.workers``: its argv and the variables to add.

        Everything but the tools travels in the environment, so the worker reads it with this
        same class and no setting is spelled twice. Several ``tools`` are versions, newest first.
        """
        command = [python, "-m", "scope_tool.workers"]
        if gateway is not None:  # a gateway config replaces the tools (docs/gateway.md)
            command += ["--gateway", gateway]
        else:
            for spec in (tools,) if isinstance(tools, str) else tools:
                command += ["--tools", spec]
        for name in retry_safe:
            command += ["--retry-safe", name]
        if metrics is not None:
            command += ["--metrics", metrics]
        return command, self.to_env()

    async def connect(self, **options: Any) -> Client:
        """A Temporal client with the data converter the workflow's values need.

        ``options`` go to ``Client.connect`` as they are (a worker passes its metrics runtime and
        interceptors, see ``scope_tool.workers.telemetry.connect_options``); without ``interceptors`` the
        client traces when ``SCOPE_TOOL_TRACING`` is on (``scope_tool.config.tracing``).
        """
        from scope_tool.config.tracing import client_tracing_interceptors

        options.setdefault("interceptors", client_tracing_interceptors())
        return await Client.connect(
            self.address,
            namespace=self.namespace,
            tls=self.tls_config(),
            api_key=self.api_key,
            data_converter=DATA_CONVERTER,
            **options,
        )


def add_env_option(
    parser: argparse.ArgumentParser,
    flag: str,
    variable: str,
    *,
    help: str,
    fallback: object = None,
    **options: Any,
) -> None:
    """Add ``flag``, whose default is the text of ``variable`` (unset or empty: ``fallback``).

    The help ends with ``(env VARIABLE)``, so every such option says where else it comes from.
    The variable is read as text when the parser is built; an option whose value needs
    converting passes ``type=``, which argparse applies to a text default only when the command
    that has the option is the one run (a mistyped variable cannot break other commands).
    """
    parser.add_argument(
        flag,
        default=os.environ.get(variable) or fallback,
        help=f"{help} (env {variable})",
        **options,
    )


def env_name(field_name: str) -> str:
    """The environment variable of a field: ``SCOPE_TOOL_`` + its name in capitals."""
    return ENV_PREFIX + field_name.upper()


def _convert(name: str, raw: str) -> Any:
    if name == "tls":
        return parse_flag(env_name(name), raw)
    if name.startswith("tls_"):
        return Path(raw)
    return raw


def _read(path: Path | None, name: str) -> bytes | None:
    if path is None:
        return None
    try:
        return path.read_bytes()
    except OSError as error:
        raise SettingsError(
            f"cannot read the {name.replace('_', ' ')} file {str(path)!r}"
            f" ({env_name(name)} / --{name.replace('_', '-')}): {error.strerror}"
        ) from None
