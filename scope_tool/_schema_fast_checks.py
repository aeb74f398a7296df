"""Building blocks of the fast exact engine (``_schema_fast``): compiled checks, exact numbers.

A :class:`FastCheck` is one compiled subschema: ``valid`` decides (the hot path, no message),
``explain`` says why on a refusal (run once), ``weight`` is the steps one application costs.
Decimal arithmetic runs under :data:`EXACT_CONTEXT`, where any rounding or flushing signal
raises and the exact integer routine answers instead.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import (
    MAX_EMAX,
    MIN_EMIN,
    Clamped,
    Context,
    Decimal,
    DecimalException,
    DivisionByZero,
    Inexact,
    InvalidOperation,
    Overflow,
    Rounded,
    Subnormal,
    Underflow,
)
from typing import Any, Final

from scope_tool._ijson import JSONDecimal
from scope_tool._schema_exact import is_multiple
from scope_tool._schema_limits import Meter, OverBudget

__all__ = ["EXACT_CONTEXT", "Failure", "FastCheck", "Maker", "Sub", "charge"]

Failure = tuple[list[str], str]
Valid = Callable[[Any, Meter], bool]
Explain = Callable[[Any, Meter], Failure | None]


class FastCheck:
    """A compiled schema: ``valid`` decides, ``explain`` (run once, on refusal) says why."""

    __slots__ = ("explain", "valid", "weight")

    def __init__(self, valid: Valid, explain: Explain, weight: int) -> None:
        self.valid = valid
        self.explain = explain
        self.weight = weight  # steps one application costs, not counting nested containers


_MAX_MESSAGE: Final = 400
_MAX_WEIGHT: Final = 1 << 40


def charge(meter: Meter, steps: int) -> None:
    """Spend ``steps`` of the meter's budget before doing the work; OverBudget if it cannot."""
    meter.steps += steps
    if meter.max_steps is not None and meter.steps > meter.max_steps:
        raise OverBudget


def _show(value: Any) -> str:
    if isinstance(value, str):
        text = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    elif value is True or value is False:
        text = "true" if value else "false"
    elif value is None:
        text = "null"
    elif isinstance(value, int | Decimal):
        text = str(value)
    else:
        text = "an array" if isinstance(value, list) else "an object"
    return text if len(text) <= _MAX_MESSAGE else text[:_MAX_MESSAGE] + "..."


# --- types and values ----------------------------------------------------------------------


def _is_integer(value: Any, _meter: object = None) -> bool:
    if type(value) is int:
        return True
    if type(value) not in _DECIMALS and not isinstance(value, Decimal):
        return False
    try:
        return not value % 1  # exact under EXACT_CONTEXT, or a signal is raised
    except DecimalException:  # too many digits, or beyond the exponent range: exact, slower
        return is_multiple(value, 1)


_DECIMALS: Final = frozenset({Decimal, JSONDecimal})
_NUMBERS: Final = frozenset({int, Decimal, JSONDecimal})


def _is_number(value: Any, _meter: object = None) -> bool:
    return type(value) in _NUMBERS or isinstance(value, Decimal)


_TYPES: Final[dict[str, Callable[..., bool]]] = {
    "null": lambda value, _meter=None: value is None,
    "boolean": lambda value, _meter=None: value is True or value is False,
    "integer": _is_integer,
    "number": _is_number,
    "string": lambda value, _meter=None: type(value) is str,
    "array": lambda value, _meter=None: type(value) is list,
    "object": lambda value, _meter=None: type(value) is dict,
}


def _key(value: Any) -> Any:
    """A hashable key equal for equal JSON values (1 == 1.0, true != 1, key order ignored)."""
    if value is True or value is False:
        return ("b", value)
    if type(value) is int or isinstance(value, Decimal):
        return ("n", value)  # int and Decimal compare and hash by value
    if type(value) is str:
        return ("s", value)
    if value is None:
        return ("z",)
    if type(value) is list:
        return ("l", tuple(_key(item) for item in value))
    return ("o", frozenset((name, _key(item)) for name, item in value.items()))


def _multiple(value: Any, divisor: Any) -> bool:
    if type(value) is int and type(divisor) is int:
        return value % divisor == 0
    try:
        return not value % divisor  # exact under EXACT_CONTEXT, or a signal is raised
    except DecimalException:
        return is_multiple(value, divisor)


# Decimal arithmetic in the fast engine runs under this context: every signal that could mean
# a rounded or flushed result (1e-1000030 % 0.01 underflows to 0 under the default context)
# raises instead, and the exact integer routine answers. Set once per check, never per number.
EXACT_CONTEXT: Final = Context(
    prec=400,
    Emin=MIN_EMIN,
    Emax=MAX_EMAX,
    traps=[InvalidOperation, Inexact, Rounded, Subnormal, Underflow, Overflow, Clamped,
           DivisionByZero],
)  # fmt: skip


_ACCEPT: Final = FastCheck(lambda _value, _meter: True, lambda _value, _meter: None, 0)
_REFUSE: Final = FastCheck(
    lambda _value, _meter: False,
    lambda value, _meter: ([], f"False schema does not allow {_show(value)}"),
    0,
)


def _conjunction(checks: list[FastCheck]) -> FastCheck:
    weight = min(sum(check.weight for check in checks), _MAX_WEIGHT)
    if not checks:
        return FastCheck(_ACCEPT.valid, _ACCEPT.explain, weight)
    if len(checks) == 1:
        return checks[0]
    tests = tuple(check.valid for check in checks)
    if len(tests) == 2:
        first, second = tests

        def valid(value: Any, meter: Meter) -> bool:
            return first(value, meter) and second(value, meter)

    else:

        def valid(value: Any, meter: Meter) -> bool:
            for test in tests:  # noqa: SIM110 - a plain loop is faster than all(<genexpr>)
                if not test(value, meter):
                    return False
            return True

    def explain(value: Any, meter: Meter) -> Failure | None:
        for check in checks:
            failure = check.explain(value, meter)
            if failure is not None:
                return failure
        return None

    return FastCheck(valid, explain, weight)


Sub = Callable[[Any], FastCheck]
Maker = Callable[[Any, dict[str, Any], Sub], FastCheck | None]


def _leaf(test: Callable[..., bool], message: Callable[[Any], str]) -> FastCheck:
    """A check of the value alone (no subschema): one step. ``test`` takes an optional
    second argument (the meter, ignored) so it is called directly, without a wrapper."""

    def explain(value: Any, _meter: Meter) -> Failure | None:
        return None if test(value) else ([], message(value))

    return FastCheck(test, explain, 1)


def _at(failure: Failure | None, part: str) -> Failure | None:
    if failure is not None:
        failure[0].append(part)
    return failure


def _over(
    pick: Callable[[Any], list[tuple[str, Any, FastCheck]]], kind: type, unit: int
) -> FastCheck:
    """A check of parts of the value: ``pick`` names (part, item, check) to apply."""

    def valid(value: Any, meter: Meter) -> bool:
        if type(value) is not kind:
            return True
        chosen = pick(value)
        charge(meter, unit + sum(check.weight for _, _, check in chosen))
        for _, item, check in chosen:  # noqa: SIM110 - faster than all(<genexpr>)
            if not check.valid(item, meter):
                return False
        return True

    def explain(value: Any, meter: Meter) -> Failure | None:
        if type(value) is not kind:
            return None
        for part, item, check in pick(value):
            failure = check.explain(item, meter)
            if failure is not None:
                return _at(failure, part)
        return None

    return FastCheck(valid, explain, 1)
