"""Minting instances of the sealed trust types, whose constructors refuse to run.

``Contract``, ``Binding`` and ``Continuation`` raise ``TypeError`` from ``__init__`` so that only
the package makes them (``bind``, ``InputRequest.continuation``), and refuse ``__setattr__`` so
that they stay as made. Their package-internal factories set the slots through here.
"""

from __future__ import annotations

from typing import TypeVar

__all__ = ["mint_sealed"]

_T = TypeVar("_T")


def mint_sealed(cls: type[_T], **slots: object) -> _T:
    """An instance of ``cls`` made without ``__init__``, each slot set past the immutability guard.

    Args:
        cls: The sealed class.
        **slots: Each slot's name (with its leading underscore) and value.
    """
    instance: _T = object.__new__(cls)
    for name, value in slots.items():
        object.__setattr__(instance, name, value)
    return instance
