"""Submitted form values -> the JSON answer, with every problem named by its field.

Browsers send strings; the schema wants integers, booleans, nested objects and lists. This module
turns a submission of an :class:`~scope_tool.inbox.forms.AnswerForm` into the JSON value
the workflow will check, following these rules:

* an empty optional input is left out of the answer (not sent as ``""`` or ``null``); an empty
  required input is a problem, unless the schema allows ``null``, which is then sent;
* integers must be whole numbers, numbers must be finite; both keep their JSON lexeme type
  (``2`` stays an integer, ``2.5`` a float);
* a required boolean is a checkbox (unchecked means ``false``), an optional one a yes/no/not-set
  choice; choices carry their JSON text, so ``1`` and ``"1"`` never get confused;
* a list takes one item per line, blank lines ignored;
* an optional group whose inputs are all empty is left out;
* the JSON editor (``_answer_json``), when its own button (``_via=json``) is used, is the answer
  as written; the fields are then ignored (and kept for the page).

Conversion problems are collected for all fields at once and raised together, so a person fixes
everything in one go; the submitted values are kept by the caller to re-fill the form.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from scope_tool.errors import ToolError
from scope_tool.inbox.forms import AnswerForm, FieldKind, FormField, FormKind

__all__ = [
    "ANSWER_JSON_KEY",
    "DECISION_KEY",
    "VIA_JSON",
    "VIA_KEY",
    "AnswerFormError",
    "FieldProblem",
    "FormValues",
    "answer_from_form",
]

FormValues = Mapping[str, Sequence[str]]
"""Submitted values, several per key (checkbox lists), e.g. from ``FormData.multi_items()``."""

ANSWER_JSON_KEY: Final = "_answer_json"
"""Form key of the JSON editor; when filled in, it is the whole answer."""

VIA_KEY: Final = "_via"
VIA_JSON: Final = "json"
"""``_via=json`` (the JSON editor's button) sends the editor's text instead of the fields."""

DECISION_KEY: Final = "_decision"
"""Form key of the Approve/Decline and choice buttons (their JSON text)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FieldProblem:
    """What is wrong with one input: ``name`` is its form key, ``label`` what the person sees."""

    name: str
    label: str
    message: str


class AnswerFormError(ToolError, ValueError):
    """The submission cannot be turned into JSON; ``problems`` names each field at fault."""

    def __init__(self, problems: Sequence[FieldProblem]) -> None:
        self.problems = tuple(problems)
        super().__init__(
            "; ".join(f"{problem.label}: {problem.message}" for problem in self.problems)
        )

    @classmethod
    def for_field(cls, name: str, label: str, message: str) -> AnswerFormError:
        """The error for a submission with one field at fault."""
        return cls([FieldProblem(name=name, label=label, message=message)])


class _Absent:
    """Marks an input left empty that is not part of the answer."""


_ABSENT: Final = _Absent()


def _first(values: FormValues, key: str) -> str:
    found = values.get(key) or ()
    return found[0] if found else ""


def answer_from_form(form: AnswerForm, values: FormValues) -> object:
    """The JSON value a submission stands for.

    Raises:
        AnswerFormError: An input cannot be converted (not a number, required but empty, invalid
            JSON, not one of the choices). Nothing is sent when this is raised.
    """
    if form.kind is FormKind.JSON or _first(values, VIA_KEY) == VIA_JSON:
        raw_json = _first(values, ANSWER_JSON_KEY)
        return _parse_json(raw_json, name=ANSWER_JSON_KEY, label="Answer (JSON)")
    if form.kind is FormKind.APPROVAL:
        decision = _first(values, DECISION_KEY)
        if decision not in ("true", "false"):
            raise AnswerFormError.for_field(DECISION_KEY, "Decision", "choose Approve or Decline")
        return decision == "true"
    if form.kind is FormKind.CHOICE:
        return _choice(
            form.choices, _first(values, DECISION_KEY), name=DECISION_KEY, label="Choice"
        )
    problems: list[FieldProblem] = []
    answer = _object(form.fields, values, problems)
    if problems:
        raise AnswerFormError(problems)
    return answer


def _parse_json(text: str, *, name: str, label: str) -> object:
    if not text.strip():
        raise AnswerFormError.for_field(name, label, "write a JSON value")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as error:
        raise AnswerFormError.for_field(name, label, f"not valid JSON ({error})") from None


def _choice(choices: Sequence[object], chosen: str, *, name: str, label: str) -> object:
    allowed = {getattr(choice, "value", None) for choice in choices}
    if chosen not in allowed:
        message = (
            "choose one of the options" if not chosen else f"{chosen} is not one of the options"
        )
        raise AnswerFormError.for_field(name, label, message)
    return json.loads(chosen)


def _object(
    fields: Sequence[FormField], values: FormValues, problems: list[FieldProblem]
) -> dict[str, object]:
    answer: dict[str, object] = {}
    for field in fields:
        value = _field(field, values, problems)
        if not isinstance(value, _Absent):
            answer[field.key] = value
    return answer


def _blank(field: FormField, values: FormValues) -> bool:
    """Whether the person left every input of this field empty (a checkbox unchecked)."""
    if field.kind is FieldKind.GROUP:
        return all(_blank(child, values) for child in field.children)
    return not any(value.strip() for value in values.get(field.name) or ())


def _empty(field: FormField, problems: list[FieldProblem]) -> object:
    if not field.required:
        return _ABSENT
    if field.nullable:
        return None
    problems.append(FieldProblem(name=field.name, label=field.label, message="required"))
    return _ABSENT


def _field(field: FormField, values: FormValues, problems: list[FieldProblem]) -> object:
    kind = field.kind
    if kind is FieldKind.CHECKBOX:
        return _first(values, field.name) == "true"
    if kind is FieldKind.GROUP:
        if not field.required and _blank(field, values):
            return _ABSENT
        return _object(field.children, values, problems)
    if kind is FieldKind.MULTI_CHOICE:
        chosen = [value for value in values.get(field.name) or () if value]
        if not chosen:
            return [] if field.required else _ABSENT
        try:
            return [
                _choice(field.choices, value, name=field.name, label=field.label)
                for value in chosen
            ]
        except AnswerFormError as error:
            problems.extend(error.problems)
            return _ABSENT
    text = _first(values, field.name)
    if kind is FieldKind.LIST:
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if not lines:
            return [] if field.required and not field.nullable else _empty(field, problems)
        items = [_scalar(field.item_kind or FieldKind.TEXT, line) for line in lines]
        bad = [item for item in items if isinstance(item, _Problem)]
        if bad:
            problems.append(
                FieldProblem(name=field.name, label=field.label, message=bad[0].message)
            )
            return _ABSENT
        return items
    if kind is FieldKind.TEXT:
        return _empty(field, problems) if text == "" else text
    if not text.strip():
        return _empty(field, problems)
    if kind is FieldKind.JSON:
        try:
            return _parse_json(text, name=field.name, label=field.label)
        except AnswerFormError as error:
            problems.extend(error.problems)
            return _ABSENT
    if kind in (FieldKind.CHOICE, FieldKind.YES_NO):
        choices = field.choices
        if kind is FieldKind.YES_NO:
            return _yes_no(field, text, problems)
        try:
            return _choice(choices, text, name=field.name, label=field.label)
        except AnswerFormError as error:
            problems.extend(error.problems)
            return _ABSENT
    value = _scalar(kind, text.strip())
    if isinstance(value, _Problem):
        problems.append(FieldProblem(name=field.name, label=field.label, message=value.message))
        return _ABSENT
    return value


def _yes_no(field: FormField, text: str, problems: list[FieldProblem]) -> object:
    if text in ("true", "false"):
        return text == "true"
    problems.append(
        FieldProblem(name=field.name, label=field.label, message=f"choose yes or no, not {text!r}")
    )
    return _ABSENT


@dataclass(frozen=True, slots=True)
class _Problem:
    message: str


def _scalar(kind: FieldKind, text: str) -> object:
    if kind is FieldKind.INTEGER:
        try:
            return int(text, 10)
        except ValueError:
            return _Problem(f"{text!r} is not a whole number")
    if kind is FieldKind.NUMBER:
        try:
            return int(text, 10)
        except ValueError:
            pass
        try:
            number = float(text)
        except ValueError:
            return _Problem(f"{text!r} is not a number")
        if not math.isfinite(number):
            return _Problem(f"{text!r} is not a finite number")
        return number
    return text
