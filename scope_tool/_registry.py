"""An instance-scoped set of bound tools: :class:`Registry`.

There is deliberately no global registry and no unregister: a registry is built once (or grown
in atomic batches) and then read from many places, such as a worker's activities, concurrently.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterable

from scope_tool._approval import ApprovalGate, require_approval
from scope_tool._contract import Binding, bind
from scope_tool._definition import Definition
from scope_tool._policy import ApprovalPolicy
from scope_tool._tool import Tool
from scope_tool.errors import DuplicateToolError, InvalidRegistryError, ToolError, _go_quote

__all__ = ["Registry"]


class Registry:
    """Bound tools by name; thread-safe and usable empty.

    Args:
        *tools: Tools to register at once, as one :meth:`register` batch.

    Raises:
        ToolError: As :meth:`register`.
    """

    __slots__ = ("_bindings", "_lock")

    def __init__(self, *tools: Tool) -> None:
        self._lock = threading.Lock()
        self._bindings: dict[str, Binding] = {}
        self.register(*tools)

    def register(self, *tools: Tool) -> None:
        """Bind a batch of tools and add all of them, or none.

        Binding (which calls each tool's ``definition()``) happens outside the lock; the
        duplicate check and the insertion happen together under it. The first problem in
        batch order decides the error, so a bind failure at index 1 wins over a duplicate at
        index 2.

        Raises:
            InvalidToolError: ``tools[I]: tool: invalid tool: ...``; the bind error (same
                class) is the ``__cause__``.
            DuplicateToolError: ``"N" appears more than once in batch`` or
                ``"N" is already registered``.
            InvalidRegistryError: A list or tuple was passed instead of separate tools.
        """
        batch: dict[str, Binding] = {}
        for index, tool in enumerate(tools):
            if isinstance(tool, list | tuple | set | frozenset):
                raise InvalidRegistryError(
                    f"tools[{index}]: got a {type(tool).__qualname__}; pass tools as separate "
                    "arguments (register(*tools))"
                )
            try:
                binding = bind(tool)
            except ToolError as exc:
                raise _indexed(exc, index) from exc
            name = binding.contract.name
            if name in batch:
                raise DuplicateToolError(f"{_go_quote(name)} appears more than once in batch")
            batch[name] = binding
        if not batch:
            return
        with self._lock:
            for name in batch:
                if name in self._bindings:
                    raise DuplicateToolError(f"{_go_quote(name)} is already registered")
            self._bindings.update(batch)

    def resolve(self, name: str) -> Binding | None:
        """The binding registered under exactly ``name`` (case-sensitive), or ``None``."""
        with self._lock:
            return self._bindings.get(name)

    def definitions(self) -> list[Definition]:
        """The model-visible definitions, sorted by name; a fresh list on every call."""
        with self._lock:
            bindings: Iterable[Binding] = tuple(self._bindings.values())
        return sorted((binding.contract.definition for binding in bindings), key=_name_of)

    def with_approval(
        self,
        *,
        names: Collection[str] = (),
        where: Callable[[Definition], bool] | None = None,
        allow_edit: bool = True,
        policy: ApprovalPolicy | None = None,
    ) -> Registry:
        """A new registry in which the chosen tools ask a person before they run.

        The tools' code is not touched: each chosen tool is wrapped with
        :func:`~scope_tool.require_approval`; the others are registered as they are. This
        registry is left unchanged (a registry never loses or swaps a tool). A tool that
        already requires approval is kept as it is, so gating twice is harmless.

        Args:
            names: Tools to gate, by exact name.
            where: Gate every tool whose (canonical) definition this predicate accepts.
            allow_edit: Passed to :func:`~scope_tool.require_approval`.
            policy: Passed to :func:`~scope_tool.require_approval`: how the gated tools'
                questions are decided when a call carries no policy of its own.

        Raises:
            InvalidRegistryError: ``names`` is a bare string, names a tool this registry does
                not hold, or neither ``names`` nor ``where`` chooses anything to gate.
        """
        if isinstance(names, str | bytes):
            raise InvalidRegistryError(
                f"names must be a collection of tool names, not the string {names!r}"
            )
        if not names and where is None:
            raise InvalidRegistryError("with_approval needs names=... or where=... to choose tools")
        with self._lock:
            bindings = dict(self._bindings)
        unknown = sorted(name for name in names if name not in bindings)
        if unknown:
            raise InvalidRegistryError(
                f"with_approval: no tool named {', '.join(_go_quote(name) for name in unknown)}"
                f" in {self!r}"
            )
        chosen = set(names)
        tools: list[Tool] = []
        for name in sorted(bindings):
            binding = bindings[name]
            gated = isinstance(binding._tool, ApprovalGate)
            if not gated and (
                name in chosen or (where is not None and where(binding.contract.definition))
            ):
                tools.append(require_approval(binding._tool, allow_edit=allow_edit, policy=policy))
            else:
                tools.append(binding._tool)
        return Registry(*tools)

    def __len__(self) -> int:
        with self._lock:
            return len(self._bindings)

    def __contains__(self, name: object) -> bool:
        with self._lock:
            return name in self._bindings

    def __repr__(self) -> str:
        with self._lock:
            names = sorted(self._bindings)
        return f"Registry({', '.join(names)})"


def _name_of(definition: Definition) -> str:
    return definition.name


def _indexed(error: ToolError, index: int) -> ToolError:
    """Same exception class as the bind error, its message prefixed with the batch index."""
    indexed = type(error).__new__(type(error))
    indexed.__dict__.update(error.__dict__)
    indexed.args = (f"tools[{index}]: {error}",)
    return indexed
