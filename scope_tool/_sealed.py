"""Immutable slotted values, and the sealed ones whose constructors refuse to run.

``Contract``, ``Binding``, ``Invocation``, ``InputRequest``, ``Continuation`` and
``CompiledSchema`` are :class:`Immutable`: they set their slots once, with
``object.__setattr__``, and refuse assignment afterwards. The trust types among them
(``Contract``, ``Binding``, ``Invocation``, ``Continuation``) are :class:`Sealed`: calling the
class raises ``TypeError``, so only the package makes them (``bind``, ``Contract.prepare``,
``InputRequest.continuation``), setting their slots through :func:`mint_sealed`.
"""

from __future__ import annotations

from typing import ClassVar, NoReturn, TypeVar

__all__ = ["Immutable", "Sealed", "mint_sealed"]

_T = TypeVar("_T", bound="Immutable")


def mint_sealed(cls: type[_T], **slots: object) -> _T:
    """An instance of ``cls`` made without ``__init__``, its slots set as :meth:`~Immutable._set_slots`.

    Args:
        cls: The sealed class.
        **slots: Each slot's name (with its leading underscore) and value.
    """
    instance: _T = object.__new__(cls)
    instance._set_slots(**slots)
    return instance


class Immutable:
    """A value whose slots, once set, cannot be assigned or deleted (nor new ones added)."""

    __slots__ = ()

    def _set_slots(self, **slots: object) -> None:
        """Set slots while the value is being made: the only writes it takes, past the guard."""
        for name, value in slots.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError(f"{type(self).__name__} is immutable; cannot set {name!r}")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(f"{type(self).__name__} is immutable; cannot delete {name!r}")


class Sealed(Immutable):
    """An immutable value only the package makes: calling the class raises ``TypeError``.

    Each subclass names, in ``_made_by``, the one way to get an instance; the message says it.
    """

    __slots__ = ()

    _made_by: ClassVar[str]

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise TypeError(
            f"{type(self).__name__} cannot be constructed directly; use {self._made_by}"
        )
