"""The approval gate's form: Approve, Deny with a reason, Edit the arguments.

When the pending question's response schema is ``scope_tool.require_approval``'s
(:func:`scope_tool.client.read_approval`), the page offers three actions instead of a generated form.
A submission becomes one of the gate's three answers; what cannot be sent (a denial without a
reason, edited arguments that are not a JSON object) is a field problem shown next to the
input, and nothing is sent. The workflow still judges the answer against the schema (an edit
is checked against the tool's own input schema there).
"""

from __future__ import annotations

import json
from typing import Final

from scope_tool.client import ApprovalQuestion
from scope_tool.inbox.form_values import (
    DECISION_KEY,
    AnswerFormError,
    FormValues,
)

__all__ = ["EDIT_ARGUMENTS_KEY", "REASON_KEY", "answer_from_approval"]

REASON_KEY: Final = "_reason"
"""Form key of the denial's reason."""

EDIT_ARGUMENTS_KEY: Final = "_edit_arguments"
"""Form key of the JSON editor holding the edited arguments (prefilled with the shown ones)."""


def _first(values: FormValues, key: str) -> str:
    found = values.get(key) or ()
    return found[0] if found else ""


def answer_from_approval(approval: ApprovalQuestion, values: FormValues) -> object:
    """The gate's answer a submission stands for.

    Raises:
        AnswerFormError: No known decision, a denial without a reason, or edited arguments
            that are not a JSON object.
    """
    decision = _first(values, DECISION_KEY)
    if decision not in approval.decisions:
        choices = " or ".join(name.capitalize() for name in approval.decisions)
        raise AnswerFormError.for_field(DECISION_KEY, "Decision", f"choose {choices}")
    if decision == "approve":
        return {"decision": "approve"}
    if decision == "deny":
        reason = _first(values, REASON_KEY).strip()
        if not reason:
            raise AnswerFormError.for_field(
                REASON_KEY, "Reason", "say why you deny the call (the model reads it)"
            )
        return {"decision": "deny", "reason": reason}
    text = _first(values, EDIT_ARGUMENTS_KEY)
    try:
        arguments = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise AnswerFormError.for_field(
            EDIT_ARGUMENTS_KEY, "Edited arguments", f"not valid JSON ({error})"
        ) from None
    if not isinstance(arguments, dict):
        raise AnswerFormError.for_field(
            EDIT_ARGUMENTS_KEY, "Edited arguments", "the arguments must be a JSON object"
        )
    return {"decision": "edit", "arguments": arguments}
