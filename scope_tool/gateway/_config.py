"""The gateway config: upstream MCP servers in the usual ``mcpServers`` shape, with a policy.

::

    {"mcpServers": {
        "git":  {"command": "python", "args": ["-m", "mcp_server_git", "--repository", "."],
                 "env": {"GIT_AUTHOR_NAME": "bot"},
                 "policy": {"run": ["git_status", "git_log"], "approve": ["git_commit"],
                            "hide": ["git_reset*"], "readOnly": "run", "default": "approve"}},
        "docs": {"url": "https://mcp.example.com/mcp",
                 "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}, "prefix": "docs_"}}}

``${NAME}`` in ``env``, ``headers``, ``url``, ``command`` and ``args`` is read from the
worker's environment when the gateway starts; the config (and so every credential) stays in the
worker process and never reaches workflow history, which holds only tool names and arguments.

A tool's policy is the first of: its name matching a ``hide``, ``approve`` or ``run`` pattern
(in that order; ``fnmatch`` globs), the ``readOnly`` policy when the upstream annotates it
``readOnlyHint: true``, else ``default`` (``approve`` unless set: an unknown tool waits for a
person).

An ``approve`` entry is a pattern, or an object naming a pattern and the
:class:`~scope_tool.ApprovalPolicy` (its JSON shape, ``ApprovalPolicy.to_json_dict``) that decides
the gate's questions of calls started without a policy of their own::

    "approve": ["git_commit", {"tool": "git_push", "policy": {"quorum": 2,
                                                              "voters": ["ann", "bob", "cy"]}}]
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from scope_tool import ApprovalPolicy
from scope_tool.errors import InvalidPolicyError
from scope_tool.gateway.errors import GatewayConfigError

__all__ = ["GatewayConfig", "Policy", "ToolPolicy", "UpstreamConfig"]

_SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_SERVER_MEMBERS = frozenset(
    {"command", "args", "env", "cwd", "url", "headers", "policy", "prefix", "type", "timeout"}
)
_POLICY_MEMBERS = frozenset({"run", "approve", "hide", "readOnly", "default", "allowEdit"})


class Policy(StrEnum):
    """What the gateway does with an upstream tool."""

    RUN = "run"
    """Serve it; each call runs at once (still a durable call)."""
    APPROVE = "approve"
    """Serve it behind the approval gate: a person approves the exact arguments first."""
    HIDE = "hide"
    """Do not serve it at all."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolPolicy:
    """The per-tool policy of one upstream server (see the module docstring)."""

    run: tuple[str, ...] = ()
    approve: tuple[str, ...] = ()
    hide: tuple[str, ...] = ()
    read_only: Policy = Policy.RUN
    default: Policy = Policy.APPROVE
    allow_edit: bool = True
    approve_policies: tuple[tuple[str, ApprovalPolicy], ...] = ()
    """``(pattern, policy)`` of the ``approve`` entries that carry a policy."""

    def approval_policy(self, name: str) -> ApprovalPolicy | None:
        """The policy of the first ``approve`` entry matching the upstream tool ``name`` (its
        gate's own policy), or ``None``: one answer decides (or the call's policy)."""
        for pattern in self.approve:
            if fnmatch.fnmatchcase(name, pattern):
                return dict(self.approve_policies).get(pattern)
        return None

    def decide(self, name: str, *, read_only_hint: bool) -> Policy:
        """The policy of the upstream tool ``name`` (its upstream name, not the prefixed one)."""
        for policy, patterns in (
            (Policy.HIDE, self.hide),
            (Policy.APPROVE, self.approve),
            (Policy.RUN, self.run),
        ):
            if any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns):
                return policy
        return self.read_only if read_only_hint else self.default


@dataclass(frozen=True, slots=True, kw_only=True)
class UpstreamConfig:
    """One upstream server: a stdio command or a streamable HTTP URL."""

    name: str
    prefix: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] | None = None
    timeout: float = 30.0
    policy: ToolPolicy = ToolPolicy()

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"

    def __repr__(self) -> str:  # never the env, headers or URL: they may hold credentials
        return f"UpstreamConfig(name={self.name!r}, transport={self.transport!r})"


@dataclass(frozen=True, slots=True, kw_only=True)
class GatewayConfig:
    """Every upstream server of a gateway, by name (the ``mcpServers`` keys)."""

    servers: tuple[UpstreamConfig, ...]
    source: str = "<config>"

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> GatewayConfig:
        """Read a config file.

        Raises:
            GatewayConfigError: the file is missing, not JSON, or malformed (the message names
                the member and the value); a ``${NAME}`` whose variable is unset.
        """
        source = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise GatewayConfigError(f"gateway config {source}: {exc.strerror or exc}") from None
        try:
            document = json.loads(text)
        except json.JSONDecodeError as exc:
            raise GatewayConfigError(f"gateway config {source}: not JSON: {exc}") from None
        return cls.from_dict(document, source=source, base=Path(path).resolve().parent)

    @classmethod
    def from_dict(
        cls,
        document: Any,
        *,
        source: str = "<config>",
        base: Path | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> GatewayConfig:
        """Read a config already parsed from JSON (see :meth:`load`)."""
        reader = _Reader(source, os.environ if environ is None else environ, base)
        return reader.config(document)


class _Reader:
    def __init__(self, source: str, environ: Mapping[str, str], base: Path | None) -> None:
        self.source = source
        self.environ = environ
        self.base = base

    def fail(self, where: str, problem: str) -> GatewayConfigError:
        return GatewayConfigError(f"gateway config {self.source}: {where}: {problem}")

    def config(self, document: Any) -> GatewayConfig:
        if not isinstance(document, dict) or not isinstance(document.get("mcpServers"), dict):
            raise self.fail("(root)", 'must be an object with an "mcpServers" object')
        unknown = sorted(set(document) - {"mcpServers"})
        if unknown:
            raise self.fail("(root)", f"unknown member {json.dumps(unknown[0])}")
        servers = document["mcpServers"]
        if not servers:
            raise self.fail("mcpServers", "names no server")
        read = tuple(self.server(name, value) for name, value in servers.items())
        prefixes: dict[str, str] = {}
        for server in read:
            if server.prefix in prefixes:
                raise self.fail(
                    f"mcpServers.{server.name}.prefix",
                    f"{server.prefix!r} is also the prefix of {prefixes[server.prefix]!r};"
                    " tools of two servers would clash",
                )
            prefixes[server.prefix] = server.name
        return GatewayConfig(servers=read, source=self.source)

    def server(self, name: str, value: Any) -> UpstreamConfig:
        where = f"mcpServers.{name}"
        if _SERVER_NAME.fullmatch(name) is None:
            raise self.fail(where, "a server name is 1-32 of A-Z a-z 0-9 _ -")
        if not isinstance(value, dict):
            raise self.fail(where, "must be an object")
        unknown = sorted(set(value) - _SERVER_MEMBERS)
        if unknown:
            raise self.fail(where, f"unknown member {json.dumps(unknown[0])}")
        command, url = value.get("command"), value.get("url")
        if (command is None) == (url is None):
            raise self.fail(where, 'needs exactly one of "command" (stdio) or "url" (HTTP)')
        kind = value.get("type")
        if kind is not None and kind not in ("stdio", "http", "streamable-http", "streamableHttp"):
            raise self.fail(f"{where}.type", f"{kind!r} is not stdio or streamable HTTP")
        prefix = value.get("prefix", f"{name}_")
        if not isinstance(prefix, str) or re.fullmatch(r"[A-Za-z0-9_-]{0,32}", prefix) is None:
            raise self.fail(f"{where}.prefix", f"{prefix!r} is not 0-32 of A-Z a-z 0-9 _ -")
        timeout = value.get("timeout", 30.0)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise self.fail(f"{where}.timeout", f"{timeout!r} is not a positive number of seconds")
        common: dict[str, Any] = {
            "name": name,
            "prefix": prefix,
            "timeout": float(timeout),
            "policy": self.policy(f"{where}.policy", value.get("policy", {})),
        }
        if command is not None:
            if url is not None or "headers" in value:
                raise self.fail(where, '"headers" belong to an HTTP server ("url")')
            cwd = value.get("cwd")
            if cwd is not None and not isinstance(cwd, str):
                raise self.fail(f"{where}.cwd", "must be a string")
            if cwd is not None and self.base is not None:
                cwd = str(self.base / self.expand(f"{where}.cwd", cwd))
            return UpstreamConfig(
                command=self.expand(f"{where}.command", self.text(f"{where}.command", command)),
                args=tuple(
                    self.expand(f"{where}.args", arg)
                    for arg in self.strings(f"{where}.args", value.get("args", []))
                ),
                env=self.mapping(f"{where}.env", value.get("env")),
                cwd=cwd,
                **common,
            )
        if "env" in value or "args" in value or "cwd" in value:
            raise self.fail(where, '"env", "args" and "cwd" belong to a stdio server ("command")')
        address = self.expand(f"{where}.url", self.text(f"{where}.url", url))
        if not address.startswith(("http://", "https://")):
            raise self.fail(f"{where}.url", "must be an http:// or https:// URL")
        return UpstreamConfig(
            url=address, headers=self.mapping(f"{where}.headers", value.get("headers")), **common
        )

    def policy(self, where: str, value: Any) -> ToolPolicy:
        if not isinstance(value, dict):
            raise self.fail(where, "must be an object")
        unknown = sorted(set(value) - _POLICY_MEMBERS)
        if unknown:
            raise self.fail(where, f"unknown member {json.dumps(unknown[0])}")
        allow_edit = value.get("allowEdit", True)
        if not isinstance(allow_edit, bool):
            raise self.fail(f"{where}.allowEdit", "must be true or false")
        approve, approve_policies = self.approve(f"{where}.approve", value.get("approve", []))
        return ToolPolicy(
            run=self.strings(f"{where}.run", value.get("run", [])),
            approve=approve,
            approve_policies=approve_policies,
            hide=self.strings(f"{where}.hide", value.get("hide", [])),
            read_only=self.choice(f"{where}.readOnly", value.get("readOnly", "run")),
            default=self.choice(f"{where}.default", value.get("default", "approve")),
            allow_edit=allow_edit,
        )

    def approve(
        self, where: str, value: Any
    ) -> tuple[tuple[str, ...], tuple[tuple[str, ApprovalPolicy], ...]]:
        """The ``approve`` patterns, and the policy each ``{"tool", "policy"}`` entry carries."""
        if not isinstance(value, list):
            raise self.fail(where, "must be a list of patterns or {tool, policy} objects")
        patterns: list[str] = []
        policies: list[tuple[str, ApprovalPolicy]] = []
        for index, entry in enumerate(value):
            if isinstance(entry, str):
                patterns.append(entry)
                continue
            if (
                not isinstance(entry, dict)
                or set(entry) != {"tool", "policy"}
                or not isinstance(entry["tool"], str)
            ):
                raise self.fail(
                    f"{where}[{index}]",
                    'must be a pattern or an object {"tool": PATTERN, "policy": {...}}',
                )
            try:
                policy = ApprovalPolicy.from_json_dict(entry["policy"])
            except InvalidPolicyError as exc:
                raise self.fail(f"{where}[{index}].policy", str(exc)) from None
            patterns.append(entry["tool"])
            policies.append((entry["tool"], policy))
        return tuple(patterns), tuple(policies)

    def choice(self, where: str, value: Any) -> Policy:
        try:
            return Policy(value)
        except ValueError:
            raise self.fail(where, f"{value!r} is not one of run, approve, hide") from None

    def text(self, where: str, value: Any) -> str:
        if not isinstance(value, str) or not value:
            raise self.fail(where, "must be a non-empty string")
        return value

    def strings(self, where: str, value: Any) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self.fail(where, "must be a list of strings")
        return tuple(value)

    def mapping(self, where: str, value: Any) -> dict[str, str] | None:
        if value is None:
            return None
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise self.fail(where, "must be an object of strings")
        return {key: self.expand(f"{where}.{key}", item) for key, item in value.items()}

    def expand(self, where: str, text: str) -> str:
        def variable(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in self.environ:
                raise self.fail(where, f"${{{name}}} is not set in the environment")
            return self.environ[name]

        return _VARIABLE.sub(variable, text)
