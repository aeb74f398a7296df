"""Keyword arguments typed as a ``TypedDict`` (``**options: Unpack[...]``), checked at run time.

mypy checks the names at a typed call site; an untyped caller (a script, a dict spread from
configuration) gets the ``TypeError`` Python gives a misspelled keyword, naming the known ones.
"""

from __future__ import annotations

from collections.abc import Mapping, Set

__all__ = ["refuse_unknown_keywords"]


def refuse_unknown_keywords(given: Mapping[str, object], known: Set[str], what: str) -> None:
    """Raise ``TypeError`` for the first keyword in ``given`` that is not in ``known``.

    Args:
        given: The keywords passed.
        known: The ``TypedDict``'s keys (``__optional_keys__``).
        what: How the message names them, e.g. ``"call options"``.
    """
    unknown = sorted(set(given) - set(known))
    if unknown:
        names = ", ".join(sorted(known))
        raise TypeError(f"unexpected keyword argument {unknown[0]!r} ({what}: {names})")
