"""A public attribute that reads a private one: :class:`ReadOnly`.

Many values show what they were made with as read-only attributes: an exception's ``kind`` and
``cause``, an invocation's ``arguments``, a handle's ``call_id``. Each reads the private
attribute (or slot) ``_<name>`` that the value set when it was made, carries a docstring for
``help()`` and the API docs, has a static type, and refuses assignment. ``ReadOnly`` says all
that in one line of the class body instead of a five-line ``@property`` per attribute::

    class Failure(ToolError):
        kind: ReadOnly[FailureKind] = ReadOnly("Whether the call failed or was refused.")

        def __init__(self, ...) -> None:
            self._kind = ...

It is a data descriptor (it defines ``__set__``), so it wins over an instance's ``__dict__``:
an exception, which has one, cannot have ``kind`` shadowed by ``error.kind = ...`` or by a
write to ``error.__dict__``. ``__set__`` takes ``Never``, so mypy flags an assignment before it
runs; at run time it raises :class:`AttributeError` naming the class and the attribute.
"""

from __future__ import annotations

from typing import Generic, Never, NoReturn, Self, TypeVar, overload

__all__ = ["ReadOnly"]

T = TypeVar("T")


class ReadOnly(Generic[T]):
    """A typed, documented, read-only view of the attribute ``_<name>`` of the same object.

    Args:
        doc: What the attribute is; shown by ``help()`` and the docs (the descriptor's
            ``__doc__``).
    """

    def __init__(self, doc: str) -> None:
        self.__doc__ = doc
        self._name = ""
        self._private = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name
        self._private = f"_{name}"

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> Self: ...

    @overload
    def __get__(self, instance: object, owner: type | None = None) -> T: ...

    def __get__(self, instance: object, owner: type | None = None) -> T | Self:
        # Read on the class (``Failure.kind``), it is the descriptor, so help() sees its doc.
        if instance is None:
            return self
        value: T = getattr(instance, self._private)
        return value

    def __set__(self, instance: object, value: Never) -> NoReturn:
        raise AttributeError(f"{type(instance).__name__}.{self._name} is read-only")

    def __delete__(self, instance: object) -> NoReturn:
        raise AttributeError(f"{type(instance).__name__}.{self._name} is read-only")

    def __repr__(self) -> str:
        return f"ReadOnly({self._name!r})"
