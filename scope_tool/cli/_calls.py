"""The commands that drive calls: ``call``, ``status``, ``answer``, ``pending``, ``result``, ``cancel``.

Each takes the parsed arguments and returns the process exit code; anything the user got wrong is
raised as :class:`~scope_tool.serving._errors.CommandError` (one line, no traceback). ``answer``
goes through the facade's one answer path and renders the call's verdict (reason and detail).
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
import sys
import time
import uuid
from datetime import timedelta
from typing import TYPE_CHECKING

from scope_tool.cli._identity import parse_principal
from scope_tool.cli._render import (
    answer_hint,
    outcome_to_json,
    pending_to_json,
    prompt_text,
    refusal_line,
    render_outcome,
    render_status,
    render_table,
    schema_refusal_details,
    status_to_json,
)
from scope_tool.cli._tools import require_admissible_arguments, require_served
from scope_tool.serving._connection import connect, connection_flags, settings_from_args
from scope_tool.serving._errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CommandError

if TYPE_CHECKING:
    from scope_tool import ApprovalPolicy
    from scope_tool.client import CallOutcome, CallStatus, ToolCallHandle, ToolCalls, WorkerWait

__all__ = [
    "run_answer",
    "run_call",
    "run_cancel",
    "run_pending",
    "run_reevaluate",
    "run_result",
    "run_status",
    "run_withdraw",
]

_FIRST_POLL_SECONDS = 0.1
_MAX_POLL_SECONDS = 1.0


def _print(text: str) -> None:
    print(text, flush=True)


def _parse_json(text: str, what: str) -> bytes:
    """Check that ``text`` is one JSON document and return it as bytes, byte-exact."""
    from scope_tool import check_ijson

    try:
        raw = text.encode("utf-8")
        # The protocol's own I-JSON check: iterative for deep documents (never a
        # RecursionError), and it refuses duplicate keys and lone surrogates too.
        check_ijson(raw)
    except ValueError as error:
        shown = text if len(text) <= 200 else text[:200] + "..."
        raise CommandError(
            f"{what} is not valid JSON ({error}): {shown!r}", exit_code=EXIT_USAGE
        ) from None
    return raw


def _text_argument(text: str, what: str) -> str:
    """The argument itself, or standard input when it is ``-`` (JSON too long or awkward to quote).

    A document past the protocol's input limit is refused here, with its size, before
    anything is sent; it is counted, not kept, so a mistaken pipe cannot fill the memory.
    """
    if text != "-":
        return text
    from scope_tool import MAX_INPUT_BYTES

    stream = sys.stdin.buffer
    raw = stream.read(MAX_INPUT_BYTES + 1)
    if len(raw) > MAX_INPUT_BYTES:
        size = len(raw) + sum(len(chunk) for chunk in iter(lambda: stream.read(1 << 16), b""))
        raise CommandError(
            f"{what} from standard input is {size} bytes; the limit is {MAX_INPUT_BYTES}",
            exit_code=EXIT_USAGE,
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CommandError(
            f"{what} from standard input is not UTF-8 ({error.reason} at byte {error.start})",
            exit_code=EXIT_USAGE,
        ) from None


async def _status(handle: ToolCallHandle, call_id: str) -> CallStatus:
    from scope_tool.client import CallNotFoundError

    try:
        return await handle.status()
    except CallNotFoundError:
        raise CommandError(f"no call with id {call_id!r}") from None
    except Exception as error:
        raise CommandError(f"cannot read the status of call {call_id!r}: {error}") from None


def _is_terminal(status: CallStatus) -> bool:
    return status.phase.is_terminal


def _outcome_exit_code(outcome: CallOutcome) -> int:
    from scope_tool.client import Phase

    return EXIT_OK if outcome.phase == Phase.COMPLETED else EXIT_FAILED


async def run_call(args: argparse.Namespace) -> int:
    """Start a call (start-or-attach by id); with ``--wait`` follow it to its end."""
    from scope_tool import Request
    from scope_tool.client import CallConflictError

    arguments = _text_argument(args.arguments, "ARGS").strip()
    if arguments:
        _parse_json(arguments, "ARGS")
    if args.timeout is not None and not args.wait:
        raise CommandError(
            "--timeout bounds --wait (how long to follow the call); add --wait, or drop"
            " --timeout (the call itself runs until it ends: see --answer-timeout)",
            exit_code=EXIT_USAGE,
        )
    if args.timeout is not None and args.timeout <= 0:
        raise CommandError(f"--timeout must be positive, got {args.timeout}", exit_code=EXIT_USAGE)
    call_id: str = args.id or f"{args.name}-{uuid.uuid4().hex[:12]}"
    principal = parse_principal(args.acting_for) if args.acting_for else None
    policy = _policy_argument(args.policy) if args.policy else None
    calls = await connect(settings_from_args(args))
    await require_served(calls, args.name)  # before anything starts
    await require_admissible_arguments(calls, args.name, arguments)
    try:
        from datetime import timedelta

        handle = await calls.start(
            Request(name=args.name, arguments=arguments),
            call_id=call_id,
            answer_timeout=(
                timedelta(seconds=args.answer_timeout) if args.answer_timeout else None
            ),
            allowed_answerers=tuple(args.allow),
            notify_url=args.notify_url,
            principal=principal,
            require_verified=args.require_verified,
            channels=tuple(args.channel),
            policy=policy,
        )
    except CallConflictError as error:  # a refusal (exit 1): the command line itself is fine
        raise CommandError(str(error)) from None
    except ValueError as error:
        raise CommandError(
            f"cannot start call {call_id!r}: {error}", exit_code=EXIT_USAGE
        ) from None
    except Exception as error:
        raise CommandError(
            f"cannot start call {call_id!r} of tool {args.name!r}: {error}"
        ) from None
    if handle.attached:
        _print(f"attached to the existing call {call_id} (tool {args.name})")
    else:
        _print(f"started call {call_id} (tool {args.name})")
    if not args.wait:
        _print(f"follow it with: scope-tool status {call_id}   (or: scope-tool result {call_id})")
        return EXIT_OK
    return await _follow(
        handle, call_id, give_up_after=args.timeout, connection=connection_flags(args)
    )


async def _follow(
    handle: ToolCallHandle, call_id: str, *, give_up_after: float | None, connection: str = ""
) -> int:
    """Print every phase change and pending question until the call ends or time runs out."""
    deadline = None if give_up_after is None else time.monotonic() + give_up_after
    last_seen: tuple[str, str] | None = None
    pause = _FIRST_POLL_SECONDS
    while True:
        status = await _status(handle, call_id)
        request_id = status.pending.request_id if status.pending else ""
        if (str(status.phase), request_id) != last_seen:
            last_seen = (str(status.phase), request_id)
            pause = _FIRST_POLL_SECONDS
            if status.pending is not None:
                _print(
                    f"[{status.phase}] waiting for input: {prompt_text(status.pending.prompt, status.pending.response_schema)}"
                    f" — answer with: {answer_hint(call_id, status.pending.response_schema, verified=status.require_verified, connection=connection)}"
                )
            else:
                _print(f"[{status.phase}] round {status.round}")
        if _is_terminal(status) and status.outcome is not None:
            _print(render_outcome(call_id, status.outcome))
            return _outcome_exit_code(status.outcome)
        if deadline is not None and time.monotonic() >= deadline:
            raise CommandError(
                f"gave up waiting after {give_up_after:g}s: call {call_id} is still {status.phase} "
                f"(it keeps running; see: scope-tool status {call_id})"
            )
        await asyncio.sleep(pause)
        pause = min(pause * 1.5, _MAX_POLL_SECONDS)


async def run_status(args: argparse.Namespace) -> int:
    """Show one call's status as a table or JSON."""
    calls = await connect(settings_from_args(args))
    status = await _status(calls.get(args.call_id), args.call_id)
    if args.json:
        _print(json.dumps(status_to_json(status), indent=2, ensure_ascii=False))
    else:
        _print(render_status(status, connection=connection_flags(args)))
    return EXIT_OK


def may_answer_now(status: CallStatus, name: str) -> bool:
    """Whether ``name`` may answer the call's pending question now: allowed (after any
    escalation), a voter the policy names, and not a voter who has already voted on it."""
    allowed = status.allowed_answerers
    if allowed and name not in allowed:
        return False
    policy = status.policy
    if policy is not None and policy.is_quorum:
        if policy.eligible and name not in policy.eligible:
            return False
        if any(vote.voter == name and not vote.superseded for vote in status.votes):
            return False
    return True


async def run_pending(args: argparse.Namespace) -> int:
    """List the calls waiting for a person, oldest question first.

    A call whose status cannot be read (its worker is gone, so nothing answers the query) is
    still listed, with the reason, rather than hiding it or failing the whole list. Calls that
    were answered but wait for a worker with their tool and contract are listed after them.
    With ``--for NAME``, only the questions NAME may answer now (see :func:`may_answer_now`);
    a call whose status cannot be read is still listed, since it cannot be told.
    """
    from scope_tool.client import CallSummary, Phase
    from scope_tool.client._closed import assignee_clause

    calls = await connect(settings_from_args(args))
    try:
        # With --for, the ScopeToolAssignee attribute leaves out the calls named for others
        # (a name a query cannot carry reads every waiting call's status instead).
        searchable = args.for_name is not None and assignee_clause(args.for_name) is not None
        summaries = await calls.list(
            phase=Phase.AWAITING_INPUT,
            tool=args.tool,
            assignee=args.for_name if searchable else None,
            limit=args.limit,
        )
    except Exception as error:
        raise CommandError(f"cannot list waiting calls: {error}") from None

    async def read(summary: CallSummary) -> CallStatus | str:
        try:
            return await _status(calls.get(summary.call_id), summary.call_id)
        except CommandError as error:
            return error.message

    found = await asyncio.gather(*(read(summary) for summary in summaries))
    stuck = await _waiting_for_worker(calls, tool=args.tool, limit=args.limit)
    waiting = sorted(
        (
            (status, status.pending)
            for status in found
            if not isinstance(status, str)
            and status.pending is not None
            and (args.for_name is None or may_answer_now(status, args.for_name))
        ),
        key=lambda pair: pair[1].asked_at,
    )
    if args.for_name is not None:
        stuck = []  # answered already: nobody's to answer
    unreadable = [
        (summary, problem)
        for summary, problem in zip(summaries, found, strict=True)
        if isinstance(problem, str)
    ]
    if args.json:
        listed: list[dict[str, object]] = [
            {
                "call_id": status.call_id,
                "tool": status.tool,
                "round": status.round,
                "pending": pending_to_json(pending),
            }
            for status, pending in waiting
        ]
        listed += [
            {"call_id": summary.call_id, "tool": summary.tool, "error": problem}
            for summary, problem in unreadable
        ]
        listed += [
            {
                "call_id": status.call_id,
                "tool": status.tool,
                "round": status.round,
                "pending": None,
                "waiting_for_worker": wait.to_json_dict(),
            }
            for status, wait in stuck
        ]
        _print(json.dumps(listed, indent=2, ensure_ascii=False))
        return EXIT_OK
    if stuck:
        _print(
            render_table(
                ("CALL ID", "TOOL", "SINCE", "WAITING FOR A WORKER"),
                [
                    (
                        status.call_id,
                        status.tool,
                        wait.waiting_since.isoformat(timespec="seconds"),
                        wait.message,
                    )
                    for status, wait in stuck
                ],
            )
        )
        _print("start a worker with that tool and contract, or end a call: scope-tool cancel ID\n")
    if not waiting and not unreadable:
        _print("no calls are waiting for input")
        return EXIT_OK
    rows = [
        (
            status.call_id,
            status.tool,
            pending.asked_at.isoformat(timespec="seconds"),
            _shorten(prompt_text(pending.prompt, pending.response_schema), 70),
        )
        for status, pending in waiting
    ]
    rows += [
        (summary.call_id, summary.tool, "?", _shorten(f"(unreadable: {problem})", 70))
        for summary, problem in unreadable
    ]
    _print(render_table(("CALL ID", "TOOL", "ASKED AT", "PROMPT"), rows))
    flags = connection_flags(args)
    _print(
        f"answer with: scope-tool answer CALL_ID JSON{flags}"
        f"   (see the schema: scope-tool status CALL_ID{flags})"
    )
    return EXIT_OK


async def _waiting_for_worker(
    calls: ToolCalls, *, tool: str | None, limit: int
) -> list[tuple[CallStatus, WorkerWait]]:
    """Running calls whose next round no worker has taken (best effort; unreadable ones skipped)."""
    from scope_tool.client import Phase

    try:
        running = await calls.list(phase=Phase.RUNNING, tool=tool, limit=limit)
    except Exception:
        return []

    async def read(call_id: str) -> CallStatus | None:
        try:
            return await calls.get(call_id).status()
        except Exception:
            return None

    statuses = await asyncio.gather(*(read(summary.call_id) for summary in running))
    return sorted(
        (
            (status, status.waiting_for_worker)
            for status in statuses
            if status is not None and status.waiting_for_worker is not None
        ),
        key=lambda pair: pair[1].waiting_since,
    )


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


async def _answer_batch(args: argparse.Namespace, response: bytes) -> int:
    """``scope-tool answer ID ID... JSON``: one checked batch (see ``ToolCalls.answer_batch``)."""
    from scope_tool.client import BatchItem, BatchRefusedError

    pinned: dict[str, str] = {}
    for request_id in args.request_id:
        call_id = request_id.rpartition("/")[0]
        if call_id not in args.call_ids or call_id in pinned:
            raise CommandError(
                f"--request-id {request_id} names no call of the batch (or one named already);"
                " a request id is CALL_ID/rN",
                exit_code=EXIT_USAGE,
            )
        pinned[call_id] = request_id
    items = [BatchItem(call_id=each, request_id=pinned.get(each)) for each in args.call_ids]
    calls = await connect(settings_from_args(args))
    try:
        receipt = await calls.answer_batch(
            items,
            response,
            answered_by=args.by or (None if args.token else _default_identity()),
            identity_token=args.token,
        )
    except BatchRefusedError as refused:
        lines = [f"  {each.call_id}: {each.reason} ({each.message})" for each in refused.problems]
        raise CommandError(
            f"batch of {len(items)} refused, nothing was written;"
            f" {len(refused.problems)} call(s) failed the check:",
            details="\n".join(lines),
        ) from None
    except ValueError as error:
        raise CommandError(str(error), exit_code=EXIT_USAGE) from None
    for call_id, each in receipt.receipts:
        what = "vote recorded" if not each.decided else "answer accepted"
        _print(f"{what} by call {call_id} (request {each.request_id})")
    for problem in receipt.refused:
        _print(
            f"refused after the check by call {problem.call_id}: {problem.reason}"
            f" ({problem.message})"
        )
    _print(
        f"batch of {len(items)}: {len(receipt.receipts)} answered, {len(receipt.refused)} refused"
    )
    return EXIT_OK if not receipt.refused else EXIT_FAILED


def _policy_argument(text: str) -> ApprovalPolicy:
    """``--policy JSON`` as an ``ApprovalPolicy``, or the usage error naming what is wrong."""
    from scope_tool import ApprovalPolicy, InvalidPolicyError

    try:
        return ApprovalPolicy.from_json_dict(json.loads(_parse_json(text, "--policy")))
    except InvalidPolicyError as error:
        raise CommandError(f"--policy: {error}", exit_code=EXIT_USAGE) from None


async def run_answer(args: argparse.Namespace) -> int:
    """Send the answer through the facade and print its verdict.

    The call decides (the facade pins the pending question); this command only renders the
    refusal's reason and detail. Text that is not JSON is refused before connecting, by the
    facade's own encoder, as a usage error.
    """
    from scope_tool.client import (
        AnswerRejectedError,
        CallNotFoundError,
        RefusalReason,
        encode_answer,
    )

    args.call_id = args.call_ids[0]
    try:
        response = encode_answer(_text_argument(args.response, "JSON"), call_id=args.call_id)
    except AnswerRejectedError as refusal:
        raise CommandError(refusal_line(refusal), exit_code=EXIT_USAGE) from None
    if len(args.call_ids) > 1:
        return await _answer_batch(args, response)
    if len(args.request_id) > 1:
        raise CommandError(
            "one call takes one --request-id (several are for a batch of calls)",
            exit_code=EXIT_USAGE,
        )
    args.request_id = args.request_id[0] if args.request_id else None
    calls = await connect(settings_from_args(args))
    handle = calls.get(args.call_id)
    try:
        receipt = await handle.answer(
            response,
            request_id=args.request_id or None,
            # With a token its subject answers; --by then must match it (or is left out).
            answered_by=args.by or (None if args.token else _default_identity()),
            identity_token=args.token,
        )
    except AnswerRejectedError as refusal:
        details = ""
        if refusal.reason is RefusalReason.SCHEMA:
            details = await _schema_details(handle, connection=connection_flags(args))
        raise CommandError(refusal_line(refusal), details=details) from None
    except CallNotFoundError:
        raise CommandError(f"no call with id {args.call_id!r}") from None
    except Exception as error:
        raise CommandError(f"cannot answer call {args.call_id}: {error}") from None
    if not receipt.decided:
        _print(
            f"vote recorded by call {args.call_id} (request {receipt.request_id}): {receipt.tally}"
        )
    else:
        _print(f"answer accepted by call {args.call_id} (request {receipt.request_id})")
        if receipt.voters:
            _print(f"decided by the votes of {', '.join(receipt.voters)}")
    _print(f"see what happens next: scope-tool status {args.call_id}")
    return EXIT_OK


async def _schema_details(handle: ToolCallHandle, *, connection: str) -> str:
    """How a right answer looks, shown under a schema refusal (best effort)."""
    try:
        status = await handle.status()
    except Exception:
        return ""
    return schema_refusal_details(status, connection=connection)


def _default_identity() -> str | None:
    try:
        return f"{getpass.getuser()} (cli)"
    except Exception:
        return None


async def run_result(args: argparse.Namespace) -> int:
    """Print a finished call's output; ``--wait`` blocks until it finishes."""
    calls = await connect(settings_from_args(args))
    handle = calls.get(args.call_id)
    status = await _status(handle, args.call_id)
    if not _is_terminal(status) or status.outcome is None:
        if not args.wait:
            hint = (
                "; answer it: "
                + answer_hint(
                    args.call_id, status.pending.response_schema, connection=connection_flags(args)
                )
                if status.pending
                else ""
            )
            raise CommandError(
                f"call {args.call_id} has not finished (phase {status.phase}){hint} — or use --wait"
            )
        try:
            outcome = await handle.result()
        except Exception as error:
            raise CommandError(f"cannot read the result of call {args.call_id}: {error}") from None
    else:
        outcome = status.outcome
    if args.json:
        _print(json.dumps({"call_id": args.call_id, **outcome_to_json(outcome)}, indent=2))
    else:
        _print(render_outcome(args.call_id, outcome))
    return _outcome_exit_code(outcome)


async def run_cancel(args: argparse.Namespace) -> int:
    """Ask a running call to stop; it ends as CANCELLED."""
    calls = await connect(settings_from_args(args))
    handle = calls.get(args.call_id)
    status = await _status(handle, args.call_id)
    if _is_terminal(status):
        raise CommandError(f"call {args.call_id} already finished (phase {status.phase})")
    try:
        await handle.cancel()
    except Exception as error:
        raise CommandError(f"cannot cancel call {args.call_id}: {error}") from None
    _print(f"cancellation requested for call {args.call_id}")
    return EXIT_OK


async def run_withdraw(args: argparse.Namespace) -> int:
    """Withdraw the pending question of a call; it ends WITHDRAWN (not a denial)."""
    from scope_tool.client import CallNotFoundError, WithdrawalRefusedError

    reason = _text_argument(args.reason, "--reason")
    calls = await connect(settings_from_args(args))
    handle = calls.get(args.call_id)
    try:
        receipt = await handle.withdraw(
            reason, withdrawn_by=args.by or _default_identity(), request_id=args.request_id
        )
    except WithdrawalRefusedError as refusal:
        raise CommandError(f"withdrawal refused ({refusal.reason}): {refusal.message}") from None
    except ValueError as error:
        raise CommandError(str(error), exit_code=EXIT_USAGE) from None
    except CallNotFoundError:
        raise CommandError(f"no call with id {args.call_id!r}") from None
    _print(f"withdrew request {receipt.request_id} of call {args.call_id}: it ends WITHDRAWN")
    return EXIT_OK


async def run_delegate(args: argparse.Namespace) -> int:
    """Hand the pending question to others (see ``handle.delegate``)."""
    from scope_tool.client import CallNotFoundError, ToolCallsError

    calls = await connect(settings_from_args(args))
    handle = calls.get(args.call_id)
    try:
        request_id = await handle.delegate(
            args.to,
            delegated_by=args.by,
            request_id=args.request_id,
            identity_token=args.token,
        )
    except CallNotFoundError:
        raise CommandError(f"no call with id {args.call_id!r}") from None
    except ValueError as error:
        raise CommandError(str(error), exit_code=EXIT_USAGE) from None
    except ToolCallsError as error:
        raise CommandError(str(error)) from None
    _print(f"delegated request {request_id} of call {args.call_id} to {', '.join(args.to)}")
    return EXIT_OK


async def run_extend(args: argparse.Namespace) -> int:
    """Move the pending question's deadline later (see ``handle.extend``)."""
    from scope_tool.client import CallNotFoundError, ToolCallsError

    calls = await connect(settings_from_args(args))
    handle = calls.get(args.call_id)
    try:
        receipt = await handle.extend(
            timedelta(seconds=args.seconds),
            # With a token its subject extends; --by then must match it (or is left out).
            extended_by=args.by or (None if args.token else _default_identity()),
            request_id=args.request_id,
            identity_token=args.token,
        )
    except CallNotFoundError:
        raise CommandError(f"no call with id {args.call_id!r}") from None
    except ToolCallsError as error:
        raise CommandError(str(error)) from None
    _print(
        f"extended request {receipt.request_id} of call {args.call_id}: deadline"
        f" {receipt.deadline.isoformat(timespec='seconds')}"
    )
    return EXIT_OK


async def run_reevaluate(args: argparse.Namespace) -> int:
    """Apply ``--rules`` to each call's pending approval question (see ``handle.reevaluate``)."""
    from scope_tool.client import ToolCallsError

    policy = _policy_argument(args.rules)
    if not policy.rules:
        raise CommandError("--rules names no rules", exit_code=EXIT_USAGE)
    calls = await connect(settings_from_args(args))
    failed = False
    for call_id in args.call_ids:
        try:
            receipt = await calls.get(call_id).reevaluate(
                policy.rules, by=args.by or _default_identity()
            )
        except ToolCallsError as error:
            print(f"{call_id}: {error}", file=sys.stderr, flush=True)
            failed = True
            continue
        what = "decided" if receipt.decided else "still waiting"
        _print(f"{call_id} ({receipt.request_id}): {what}: {receipt.verdict}")
    return EXIT_FAILED if failed else EXIT_OK
