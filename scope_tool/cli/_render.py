"""Turning call snapshots into what a person reads (tables) or a script parses (``--json``).

The facade returns frozen values with raw JSON kept as bytes; this module is the one place that
decides how those look on a terminal, so every command shows a prompt, a schema or an outcome the
same way.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from scope_tool._text import escaped_controls
from scope_tool.client import json_value, read_approval, read_prompt

if TYPE_CHECKING:
    from scope_tool import ApprovalPolicy, Output
    from scope_tool.client import (
        AnswerRejectedError,
        ApprovalQuestion,
        CallOutcome,
        CallStatus,
        PendingInput,
    )
    from scope_tool.wire._status import DeadlineStep

__all__ = [
    "answer_hint",
    "outcome_to_json",
    "output_text",
    "pending_to_json",
    "prompt_text",
    "refusal_line",
    "render_outcome",
    "render_status",
    "render_table",
    "schema_refusal_details",
    "schema_text",
    "status_to_json",
]


_ARGUMENTS_LABEL = "will run with"


def _deadline_step(step: DeadlineStep) -> str:
    """One ``reminder`` / ``escalation`` / ``extension`` / ``delegation`` row of status."""
    if step.kind == "reminder":
        return f"{_when(step.at)} ({step.before_seconds or 0:g} s before the deadline)"
    if step.kind == "extension":
        return f"{_when(step.at)} by {step.by}: deadline {_when(step.deadline)}"
    by = f" by {step.by}" if step.by else ""
    return f"{_when(step.at)}{by} to {', '.join(step.assignees)}, until {_when(step.deadline)}"


def _when(moment: datetime | None) -> str:
    if moment is None:
        return "-"
    return moment.isoformat(timespec="seconds")


def prompt_text(prompt: bytes, schema: bytes | None = None) -> str:
    """A prompt as one readable line: its question first, then the details as compact JSON.

    With the response ``schema`` of an approval gate, the line is the gate's question and the
    arguments the call will run with (not the gate's whole prompt object).
    """
    approval = read_approval(prompt, schema) if schema is not None else None
    if approval is not None:
        shown = approval.arguments_json(indent=None)
        return f"{approval.question} {shown}" if shown else approval.question
    return read_prompt(prompt).one_line()


def schema_text(schema: bytes) -> str:
    """The response schema, indented, for showing next to a refused answer."""
    return json.dumps(json_value(schema), indent=2, ensure_ascii=False)


def answer_hint(
    call_id: str, schema: bytes, *, verified: bool = False, connection: str = ""
) -> str:
    """A command line that answers the call, with an example value the schema accepts.

    ``verified``: the call takes only answers with an identity token, so the line says so.
    ``connection``: the connection flags of the command printing it, appended.
    """
    line = f"scope-tool answer {call_id} '{json.dumps(_example(json_value(schema)))}'"
    return f"{line} --token TOKEN{connection}" if verified else f"{line}{connection}"


def example_json(schema: bytes) -> str:
    """A JSON value ``schema`` accepts in its simple cases (required members, first enum value)."""
    return json.dumps(_example(json_value(schema)), ensure_ascii=False)


def _example(schema: Any) -> Any:
    if not isinstance(schema, dict):
        return True
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "boolean":
        return True
    if kind == "string":
        return "..."
    if kind in ("integer", "number"):
        return 0
    if kind == "array":
        return []
    if kind == "object":
        properties = schema.get("properties", {})
        required = schema.get("required", [])
        return {name: _example(properties.get(name, {})) for name in required}
    return True


def output_text(output: Output) -> str:
    """The model-visible output as text: its text blocks, else its JSON details."""
    text = output.text()
    if text is not None:
        return text
    return json.dumps(json_value(output.to_json()), ensure_ascii=False)


def pending_to_json(pending: PendingInput) -> dict[str, Any]:
    """The pending request in the one JSON shape (:meth:`PendingInput.to_json_dict`)."""
    return pending.to_json_dict()


def outcome_to_json(outcome: CallOutcome) -> dict[str, Any]:
    """A finished call's outcome in the one JSON shape (:meth:`CallOutcome.to_json_dict`)."""
    return outcome.to_json_dict()


def status_to_json(status: CallStatus) -> dict[str, Any]:
    """A status snapshot in the one JSON shape (:meth:`CallStatus.to_json_dict`)."""
    return status.to_json_dict()


def render_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain left-aligned table; cells are single lines (newlines shown as spaces)."""
    cleaned = [[cell.replace("\n", " ") for cell in row] for row in rows]
    widths = [len(header) for header in headers]
    for row in cleaned:
        for index, cell in enumerate(row):
            widths[index] = max(widths[index], len(cell))
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    for row in cleaned:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    return "\n".join(lines)


def render_status(status: CallStatus, *, connection: str = "") -> str:
    """A status snapshot as a two-column table a person reads top to bottom.

    ``connection``: the connection flags to append to each command it suggests.
    """
    rows: list[tuple[str, str]] = [
        ("call id", status.call_id),
        ("tool", status.tool),
        ("phase", str(status.phase)),
        ("round", str(status.round)),
    ]
    if status.principal is not None:
        from scope_tool.cli._identity import principal_text

        rows.append(("acting for", principal_text(status.principal)))
    if status.require_verified:
        rows.append(("answers", "verified identities only (identity token)"))
    if status.waiting_for_worker is not None:
        rows += [
            ("stuck", status.waiting_for_worker.message),
            ("since", _when(status.waiting_for_worker.waiting_since)),
            ("to end it", f"scope-tool cancel {status.call_id}"),
        ]
    if status.progress is not None:
        note = status.progress
        if note.progress is not None:
            done = f"{note.progress:g}" + (f"/{note.total:g}" if note.total is not None else "")
            rows.append(("progress", done + (f" {note.message}" if note.message else "")))
        if note.idempotency_key is not None:
            rows.append(("idempotency key", note.idempotency_key))
    if status.pending is not None:
        pending = status.pending
        approval = read_approval(pending.prompt, pending.response_schema)
        if approval is not None:
            rows.append(("waiting for", approval.question))
            if approval.description:
                rows.append(("tool does", approval.description))
            if approval.refused_edit:
                rows.append(("edit refused", approval.refused_edit))
            if approval.has_arguments:
                rows.append((_ARGUMENTS_LABEL, approval.arguments_json(indent=2)))
        else:
            rows.append(("waiting for", prompt_text(pending.prompt)))
        rows.append(("request id", pending.request_id))
        if approval is None:
            rows.append(("answer schema", json.dumps(json_value(pending.response_schema))))
        rows += [
            ("asked at", _when(pending.asked_at)),
            ("deadline", _when(pending.deadline)),
        ]
        if status.allowed_answerers:
            rows.append(("who may answer", ", ".join(status.allowed_answerers)))
        if status.policy is not None:
            rows.append(("policy", _policy_text(status.policy, status.policy_source)))
        if status.rule_verdict:
            rows.append(("rules", status.rule_verdict))
        rows += [
            (step.kind, _deadline_step(step))
            for step in status.deadline_steps
            if step.request_id == pending.request_id
        ]
        if status.tally:
            rows.append(("votes", status.tally))
            rows += [
                (
                    "vote",
                    f"{vote.voter}: {vote.kind}"
                    + (" (verified)" if vote.verified else "")
                    + (" (superseded by an edit)" if vote.superseded else ""),
                )
                for vote in status.votes
            ]
        if approval is not None:
            rows += _decision_rows(status, approval, connection=connection)
        else:
            hint = answer_hint(
                status.call_id,
                pending.response_schema,
                verified=status.require_verified,
                connection=connection,
            )
            rows.append(("answer with", hint))
        if status.require_verified:
            rows.append(("token from", "scope-tool token issue --for NAME (or the inbox)"))
    for number, answer in enumerate(status.answers, start=1):
        answer_fields = answer.to_json_dict()
        text = (
            f"({answer.omitted_response_bytes} bytes; scope-tool history {status.call_id} shows it)"
            if answer.omitted_response_bytes
            else json.dumps(answer_fields["response"])
        )
        rows.append(
            (
                f"answer {number}",
                f"{text} by {escaped_controls(answer_fields['answered_by'] or '-')}"
                + (" (verified)" if answer.verified else "")
                + (f" through {escaped_controls(answer.channel)}" if answer.channel else "")
                + (f" (votes of {', '.join(answer.voters)})" if answer.voters else "")
                + (f" ({answer.reason})" if answer.reason else "")
                + (f" [rules: {answer.rule_verdict}]" if answer.rule_verdict else ""),
            )
        )
    if status.outcome is not None:
        rows += _outcome_rows(status.outcome)
    width = max(len(label) for label, _ in rows)
    lines = []
    for label, value in rows:
        if label == _ARGUMENTS_LABEL:  # indented JSON: continuation lines under the first
            value = value.replace("\n", "\n" + " " * (width + 2))
        lines.append(f"{label.ljust(width)}  {value}")
    # Whatever a caller or a tool put in (a prompt, a refusal message): never raw ESC or CR.
    return escaped_controls("\n".join(lines), keep_layout=True)


def _decision_rows(
    status: CallStatus, approval: ApprovalQuestion, *, connection: str = ""
) -> list[tuple[str, str]]:
    """One ``to DECISION`` row a decision, with the command that answers it."""
    token = " --token TOKEN" if status.require_verified else ""
    return [
        (f"to {decision}", f"scope-tool answer {status.call_id} '{example}'{token}{connection}")
        for decision, example in zip(approval.decisions, approval.answer_examples(), strict=True)
    ]


def schema_refusal_details(status: CallStatus, *, connection: str = "") -> str:
    """What to show under an answer the schema refused: how a right answer looks.

    An approval question gets its decisions as commands (its schema is long and says the same
    thing less plainly); any other question gets its JSON Schema.
    """
    pending = status.pending
    if pending is None:
        return ""
    approval = read_approval(pending.prompt, pending.response_schema)
    if approval is None:
        return f"the answer must satisfy this JSON Schema:\n{schema_text(pending.response_schema)}"
    rows = _decision_rows(status, approval, connection=connection)
    width = max(len(label) for label, _ in rows)
    lines = [f"{label.ljust(width)}  {value}" for label, value in rows]
    return "an answer is one of these decisions:\n" + "\n".join(lines)


def _outcome_rows(outcome: CallOutcome) -> list[tuple[str, str]]:
    rows = [("output", output_text(outcome.output) or "(empty)")]
    if outcome.failure_kind is not None:
        rows.append(("failure", str(outcome.failure_kind)))
    if outcome.message:
        rows.append(("message", outcome.message))
    rows.append(("rounds", str(outcome.rounds)))
    return rows


def render_outcome(call_id: str, outcome: CallOutcome) -> str:
    """A finished call: its phase on the first line, then the output a model would see."""
    lines = [f"call {call_id}: {outcome.phase}"]
    width = 7
    lines += [f"{label.ljust(width)}  {value}" for label, value in _outcome_rows(outcome)]
    return "\n".join(lines)


def refusal_line(error: AnswerRejectedError) -> str:
    """A refused answer in one line, from its reason and detail (never from its wording).

    The same fields give the inbox's sentence next to the form, so both say the same thing.
    """
    detail = error.detail
    reason = error.reason.value
    if reason == "invalid_json":
        line = f"the answer is not valid JSON ({detail.problem})"
        if detail.suggestion is not None:
            line += f"; to answer the text, quote it: '{detail.suggestion}'"
        return line
    if reason == "schema" and detail.schema_path is not None:
        return f"answer refused (schema): at {detail.schema_path or '(root)'}: {detail.problem}"
    if reason in ("finished", "not_waiting") and detail.phase is not None:
        return (
            f"answer refused ({reason}): call {error.call_id} is not waiting for input"
            f" (phase {detail.phase})"
        )
    if reason in ("not_verified", "token_expired"):
        return f"answer refused ({reason}): {error.message}"
    if reason == "not_allowed":
        return (
            f"answer refused (not_allowed): you may not answer call {error.call_id};"
            f" allowed: {', '.join(detail.allowed_answerers)}"
        )
    return f"answer refused ({reason}): {error.message}"


def _policy_text(policy: ApprovalPolicy, source: str | None) -> str:
    """One line: what the policy asks, and whose it is ("policy from the tool")."""
    parts: list[str] = []
    if policy.is_quorum:
        named = f" of {', '.join(policy.eligible)}" if policy.eligible else ""
        parts.append(f"quorum {policy.quorum}{named}")
    if policy.rules:
        parts.append(f"{len(policy.rules)} rule(s){' in shadow mode' if policy.shadow else ''}")
    if policy.reminders:
        parts.append(f"{len(policy.reminders)} reminder(s)")
    if policy.escalate_to:
        parts.append(f"escalation to {', '.join(policy.escalate_to)}")
    if policy.max_extension is not None:
        parts.append(f"extensions up to {policy.max_extension:g} s")
    if policy.expiry_answer is not None:
        parts.append("an answer at expiry")
    whose = {"tool": "policy from the tool", "call": "policy from the call"}.get(source or "", "")
    text = "; ".join(parts) or "one answer decides"
    return f"{text} ({whose})" if whose else text
