"""``scope-tool history ID [--json]``: a call's audit trail, read from its event history.

It needs no worker (``status`` of a finished call does, for its answers): the trail comes from
the history Temporal keeps for the namespace's retention period. See ``scope_tool.client.history``.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any, assert_never

from scope_tool._text import escaped_controls
from scope_tool.cli._commands import add_json_flag, call_command
from scope_tool.cli._render import prompt_text, render_outcome
from scope_tool.serving._connection import add_connection_arguments, connect, settings_from_args
from scope_tool.serving._errors import EXIT_OK, CommandError

if TYPE_CHECKING:
    from scope_tool.client.history import CallHistory, PolicyEvent

__all__ = ["add_history_parser", "render_history", "run_history"]


def add_history_parser(commands: Any) -> None:
    """Add the ``history`` sub-command to the CLI's sub-parsers."""
    history = call_command(
        commands,
        "history",
        "who started a call, each question, answer and refusal, the policy's votes, rule"
        " verdicts, deadline steps and withdrawal, the outcome",
    )
    add_json_flag(history)
    add_connection_arguments(history)


async def run_history(args: argparse.Namespace) -> int:
    """Print the audit trail of one call as text or JSON."""
    from scope_tool.client import CallNotFoundError

    calls = await connect(settings_from_args(args))
    try:
        trail = await calls.get(args.call_id).history()
    except CallNotFoundError:
        raise CommandError(f"no call with id {args.call_id!r}") from None
    except Exception as error:
        raise CommandError(f"cannot read the history of call {args.call_id!r}: {error}") from None
    if args.json:
        print(json.dumps(trail.to_json(), indent=2, ensure_ascii=False), flush=True)
    else:
        print(render_history(trail), flush=True)
    return EXIT_OK


def render_history(trail: CallHistory) -> str:
    """The trail as lines a person reads top to bottom, in the order things happened."""
    lines = [
        f"call {trail.call_id} (tool {trail.tool})",
        f"  started   {_time(trail.started_at)} by client {escaped_controls(trail.started_by or '?')}",
        f"  arguments {_compact(trail.arguments)}",
    ]
    if trail.principal is not None:
        from scope_tool.cli._identity import principal_text

        lines.append(f"  acting for {principal_text(trail.principal)}")
    if trail.allowed_answerers:
        lines.append(f"  answerers {', '.join(trail.allowed_answerers)}")
    if trail.require_verified:
        lines.append("  answers   verified identities only")
    moments: list[tuple[str, str]] = []
    for question in trail.questions:
        moments.append(
            (
                _time(question.asked_at),
                f"asked     {question.request_id}: {prompt_text(question.prompt, question.response_schema)}"
                f"\n            schema {_compact(question.response_schema)}",
            )
        )
    for event in trail.policy_events:
        moments.append((_time(event.at), _policy_line(event)))
    for answer in trail.answers:
        if not answer.decided:
            continue  # a vote that left the question waiting: its vote line says it
        repeat = " (repeat, no effect)" if answer.duplicate else ""
        verified = " (verified)" if answer.verified else ""
        channel = f" through {escaped_controls(answer.channel)}" if answer.channel else ""
        moments.append(
            (
                _time(answer.answered_at),
                f"answered  {answer.request_id} by {escaped_controls(answer.answered_by or 'anonymous')}{verified}"
                f" via {answer.via}{channel} from client {escaped_controls(answer.client_identity or '?')}{repeat}:"
                f" {_compact(answer.response)}",
            )
        )
    for refusal in trail.refusals:
        moments.append(
            (
                _time(refusal.refused_at),
                f"refused   {refusal.request_id or '(pending)'} from"
                f" {escaped_controls(refusal.answered_by or 'anonymous')} via {refusal.via} ({refusal.reason}):"
                f" {refusal.message}",
            )
        )
    for at, text in sorted(moments, key=lambda moment: moment[0]):
        lines.append(f"  {at}  {text}")
    if trail.outcome is not None:
        ended = _time(trail.ended_at) if trail.ended_at else "?"
        lines.append(f"  ended     {ended} after {trail.rounds} round(s)")
        lines.append(render_outcome(trail.call_id, trail.outcome))
    elif trail.execution_status != "RUNNING":
        lines.append(f"  ended     {trail.execution_status} without an outcome (by an operator?)")
    else:
        lines.append(f"  still running (round {trail.rounds})")
    return escaped_controls("\n".join(lines), keep_layout=True)


def _policy_line(event: PolicyEvent) -> str:
    """One line of the policy's trail: a vote, the rules' verdict, a deadline step, a
    withdrawal (see ``scope_tool.client.history.PolicyEvent``)."""
    from scope_tool.client.history import PolicyEventKind

    request = event.request_id
    by = escaped_controls(event.by or "anonymous")
    client = (
        f" from client {escaped_controls(event.client_identity)}" if event.client_identity else ""
    )
    deadline = _time(event.deadline) if event.deadline is not None else "none"
    match event.kind:
        case PolicyEventKind.VOTE:
            verified = " (verified)" if event.verified else ""
            channel = f" through {escaped_controls(event.channel)}" if event.channel else ""
            decides = ", which decides" if event.decided else ""
            return (
                f"vote      {request} by {by}{verified}{channel}{client}: {event.decision}"
                f" ({event.text}){decides}"
            )
        case PolicyEventKind.RULES:
            return f"rules     {request}: {event.text}"
        case PolicyEventKind.REEVALUATION:
            return f"rules     {request} re-evaluated by {by}{client}: {event.text}"
        case PolicyEventKind.REMINDER:
            before = _duration(event.before_seconds or 0)
            return f"reminder  {request} sent again, {before} before its deadline {deadline}"
        case PolicyEventKind.EXTENSION:
            return f"extended  {request} by {by}{client}: deadline now {deadline}"
        case PolicyEventKind.ESCALATION:
            return f"escalated {request} to {_names(event.assignees)}: deadline now {deadline}"
        case PolicyEventKind.DELEGATION:
            return f"delegated {request} by {by}{client} to {_names(event.assignees)}"
        case PolicyEventKind.WITHDRAWAL:
            who = escaped_controls(event.by or "the caller")
            return f"withdrawn {request} by {who}{client}: {event.text}"
        case _:
            assert_never(event.kind)


def _names(names: tuple[str, ...]) -> str:
    return escaped_controls(", ".join(names) or "anyone")


def _duration(seconds: float) -> str:
    """``90`` -> ``1m30s``, ``7200`` -> ``2h``."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [
        f"{hours}h" if hours else "",
        f"{minutes}m" if minutes else "",
        f"{secs}s" if secs else "",
    ]
    return "".join(parts) or "0s"


def _time(moment: Any) -> str:
    return str(moment.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z")


SHOWN_CHARACTERS = 500
"""How much of one answer or schema the text trail prints; ``--json`` has all of it."""


def _compact(raw: bytes) -> str:
    """``raw`` JSON on one line, cut at :data:`SHOWN_CHARACTERS` with its size said."""
    try:
        text = json.dumps(json.loads(raw), ensure_ascii=False, separators=(",", ":"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        text = raw.decode("utf-8", "replace")
    if len(text) <= SHOWN_CHARACTERS:
        return text
    return f"{text[:SHOWN_CHARACTERS]}... ({len(raw)} bytes; --json shows all of it)"
