"""What a person reads about a call in the Temporal Web UI: its summary and details (Markdown).

The Web UI shows a workflow's input and results as raw payloads, where a call's arguments are
a JSON string inside the input (escaped quotes) and a question's prompt is bytes inside an
activity result. Temporal's user metadata is shown as Markdown at the top of the workflow's
page instead, under "Summary & Details":

* the **static summary** and **static details**, set when the call starts
  (:func:`start_details`): the tool and its arguments, pretty-printed;
* the **current details**, which the workflow keeps current (:func:`waiting_details`,
  :func:`running_details`, :func:`finished_details`): the pending question as prose, its
  details, the answers it accepts (the approval gate's three decisions spelled out) and the
  command that answers it.

Text members are shown as text (a fenced ``text`` block), everything else as indented JSON.
Every function is pure, so the workflow stays deterministic; the output is bounded, because the
server refuses a start whose details exceed its user-metadata limit.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Final

from scope_tool.wire._approval_prompt import read_approval
from scope_tool.wire._prompt import json_value, read_prompt
from scope_tool.wire._status import PendingInput

__all__ = [
    "MAX_DETAILS_BYTES",
    "finished_details",
    "running_details",
    "start_details",
    "start_summary",
    "waiting_details",
]

MAX_DETAILS_BYTES: Final = 8000
"""Longest details text set (UTF-8); well under the server's limit on user-metadata details."""

_MAX_BLOCK_BYTES: Final = 3000
_MAX_NAMES: Final = 20
_SHORTENED: Final = "… (shortened; the whole value is in the workflow's payloads)"


def start_summary(tool: str) -> str:
    """The one-line summary of a call in the Web UI's workflow list."""
    return f"scope-tool call of {tool}"


def start_details(tool: str, arguments: str | bytes) -> str:
    """The call's fixed details: the tool and its arguments, member by member."""
    raw = arguments.encode("utf-8", "replace") if isinstance(arguments, str) else arguments
    parts = [f"**Tool** `{tool}`", "", "**Arguments**", "", *_value_blocks(json_value(raw))]
    return _bounded("\n".join(parts))


def waiting_details(
    *,
    tool: str,
    call_id: str,
    pending: PendingInput,
    tally: str = "",
    assignees: Sequence[str] = (),
    next_step: tuple[str, datetime] | None = None,
    escalate_to: Sequence[str] = (),
) -> str:
    """The current details while the call waits: the question, readable, and how to answer
    (and, under a quorum policy, where the vote stands).

    ``assignees`` are who may answer now (empty: anyone, or the policy's tally says who);
    ``next_step`` is the next deadline step of a policy with deadline steps, as ``(kind,
    moment)``: ``reminder``, ``escalation`` (to ``escalate_to``) or ``expiry``.
    """
    prompt, schema = pending.prompt, pending.response_schema
    approval = read_approval(prompt, schema)
    lines = [f"### {tool} waits for an answer", "", f"Request `{pending.request_id}`", ""]
    if assignees:
        lines += [f"**Who may answer now** {_names(assignees)}", ""]
    if tally:
        lines += [f"**Votes** {_plain(tally)}", ""]
    if next_step is not None:
        lines += [_next_step_line(*next_step, escalate_to), ""]
    elif pending.deadline is not None:
        lines += [f"**Deadline** {_moment(pending.deadline)}", ""]
    if approval is not None:
        lines += [f"**{approval.question}**", ""]
        if approval.description:
            lines += [approval.description, ""]
        if approval.refused_edit:
            lines += [f"The previous edit was not admitted: {approval.refused_edit}", ""]
        if approval.has_arguments:
            lines += ["**The call will run with**", "", *_value_blocks(approval.arguments)]
        lines += ["**Answers**", ""]
        lines += [f"* `{example}`" for example in approval.answer_examples()]
        lines.append("")
        example = approval.answer_examples()[0]
    else:
        read = read_prompt(prompt)
        if read.question:
            lines += [f"**{read.question}**", ""]
        if read.details is not None:
            lines += ["**Details**", "", *_value_blocks(read.details)]
        expected = json_value(schema)
        lines += ["**Answer schema**", "", *_fence("json", _pretty(expected))]
        example = _example(expected)
    lines.append(f"Answer in the inbox, or: `scope-tool answer {call_id} '{example}'`")
    return _bounded("\n".join(lines))


def _next_step_line(kind: str, moment: datetime, escalate_to: Sequence[str]) -> str:
    if kind == "reminder":
        return f"**Next reminder** {_moment(moment)}"
    if kind == "escalation":
        return f"**Escalation** to {_names(escalate_to)} at {_moment(moment)} unless answered"
    return f"**Deadline** {_moment(moment)} (then it expires)"


def _moment(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _names(names: Sequence[str]) -> str:
    shown = ", ".join(_code(each) for each in names[:_MAX_NAMES])
    return shown + (f" and {len(names) - _MAX_NAMES} more" if len(names) > _MAX_NAMES else "")


def _code(text: str) -> str:
    """``text`` as one Markdown code span, whatever backticks it holds (a longer fence)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    if longest == 0:
        return f"`{text}`"
    fence = "`" * (longest + 1)
    return f"{fence} {text} {fence}"


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]()<>#!|~])")


def _plain(text: str) -> str:
    """``text`` shown as written: Markdown's special characters escaped (names in a tally are
    whatever the call's starter chose; none may become a link, emphasis or markup)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def running_details(tool: str, round_number: int) -> str:
    """The current details while a round runs."""
    return f"**{tool}** running round {round_number}"


def finished_details(tool: str, phase: str, message: str) -> str:
    """The current details once the call has ended."""
    return f"**{tool}** {phase}" + (f": {message}" if message else "")


def _example(schema: Any) -> str:
    """An answer to show in the command: a value the simple schemas accept, else ``<JSON>``."""
    if not isinstance(schema, dict):
        return "<JSON>"
    if "const" in schema:
        return json.dumps(schema["const"], ensure_ascii=False)
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return json.dumps(schema["enum"][0], ensure_ascii=False)
    return {"boolean": "true", "string": '"..."', "integer": "0", "number": "0"}.get(
        str(schema.get("type")), "<JSON>"
    )


def _value_blocks(value: Any) -> list[str]:
    """An object member by member (text as text), any other value as one block."""
    if isinstance(value, dict) and value:
        lines: list[str] = []
        for name, item in value.items():
            lines += [f"`{name}`", "", *_one_block(item)]
        return lines
    return _one_block(value)


def _one_block(value: Any) -> list[str]:
    if isinstance(value, str):
        return _fence("text", value)
    return _fence("json", _pretty(value))


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def _fence(language: str, text: str) -> list[str]:
    text = _cut(text, _MAX_BLOCK_BYTES)
    fence = "```"
    while fence in text:
        fence += "`"
    return [f"{fence}{language}", text, fence, ""]


def _bounded(text: str) -> str:
    return _cut(text, MAX_DETAILS_BYTES)


def _cut(text: str, limit: int) -> str:
    """``text`` if it fits in ``limit`` UTF-8 bytes, else its start and a note that it was cut."""
    raw = text.encode("utf-8", "replace")
    if len(raw) <= limit:
        return text
    return raw[: limit - 100].decode("utf-8", "ignore") + "\n" + _SHORTENED
