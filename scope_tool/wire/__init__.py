"""The public wire contract between the client, the workflow and the workers.

One input and one result type per workflow, activity, update and signal, with stable names.
Task-queue names are part of the contract too: the workflow runs on the main task queue, and
each round of a tool runs on that tool's queue (:func:`tool_queue`, round 1) or on the queue of
the tool's contract the call started with (:func:`contract_queue`, later rounds), so a round only
ever reaches a worker that has the tool, and a re-entry only one that has the same contract.
A routed round is first offered on the main task queue itself (:data:`CALL_TOOL_HERE_ACTIVITY`,
which Temporal can hand to the worker that just ran the workflow task without a round trip
through the server): a worker that does not serve the tool or contract refuses it with
:data:`NOT_SERVED_HERE` before running anything, and the round goes to its own queue.
The activity's result is a tagged union on ``kind``: a tool's outcome (even an error) crosses
the activity boundary as a value, never as an exception, so the workflow decides the phase with
one exhaustive ``match``. Fields added later must get defaults so recorded histories decode;
a field dropped later is ignored when an older history carries it (the converter skips unknown
members), which is how the unused ``retry_safe`` / ``contract_digest`` of round results went.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Literal

from temporalio.common import SearchAttributeKey

from scope_tool import ApprovalPolicy, FailureKind, Output, Principal, Rule
from scope_tool.wire._prompt import json_value

__all__ = [
    "ANNOUNCE_WORKFLOW",
    "ANSWER",
    "ASSIGNEE_KEY",
    "CALL_TOOL_ACTIVITY",
    "CALL_TOOL_HERE_ACTIVITY",
    "CATALOG",
    "CATALOG_MEMO",
    "CATALOG_WORKFLOW_NAME",
    "CHANNELS",
    "CHECK_ANSWER_ACTIVITY",
    "CONTRACT_QUEUE_DIGEST_CHARS",
    "DELEGATE_QUESTION",
    "EXTEND_DEADLINE",
    "FIRST_STOP",
    "NOTIFY_ACTIVITY",
    "NOTIFY_WORKFLOW",
    "NOT_SERVED_HERE",
    "PHASE_KEY",
    "POST_SLACK_ACTIVITY",
    "PUBLISH",
    "REEVALUATE_RULES",
    "RELEASE_ROUND_ACTIVITY",
    "ROUND_ACTIVITIES",
    "ROUND_RUNNING",
    "ROUND_RUNNING_AFTER_SECONDS",
    "SEND_EMAIL_ACTIVITY",
    "STAGE_ABOVE_BYTES",
    "STAGE_ANSWER",
    "STATUS",
    "TASK_CHECK_BYTES",
    "TOOL_KEY",
    "WITHDRAW",
    "WITHDRAW_QUESTION",
    "WORKFLOW_NAME",
    "AnnounceInput",
    "AnswerInput",
    "AnswerReceipt",
    "CallToolInput",
    "CatalogInput",
    "CatalogTool",
    "CheckAnswerInput",
    "CheckAnswerResult",
    "DelegateInput",
    "ExtendInput",
    "ExtendReceipt",
    "NotifyDelivery",
    "NotifyInput",
    "ReevaluateInput",
    "ReevaluateReceipt",
    "ReleaseInput",
    "RoundCancelled",
    "RoundCompleted",
    "RoundErrored",
    "RoundFailed",
    "RoundInputRequested",
    "RoundInvalid",
    "RoundResult",
    "StagedAnswer",
    "ToolCallInput",
    "ToolStartedHeartbeat",
    "WithdrawInput",
    "WithdrawReceipt",
    "WorkerCatalog",
    "catalog_workflow_id",
    "contract_queue",
    "first_stop_update_id",
    "process_queue",
    "request_digest",
    "tool_queue",
    "update_id_digest",
]

WORKFLOW_NAME: Final = "scope_tool.ToolCall"
CALL_TOOL_ACTIVITY: Final = "scope_tool.call_tool"
RELEASE_ROUND_ACTIVITY: Final = "scope_tool.release_round"
"""Tells the worker process a pinned question was left unanswered for good (the call ended
withdrawn, expired or cancelled), so the tool lets go of what it held for the answer. Runs on
that process's own queue (:func:`process_queue`); takes a :class:`ReleaseInput`."""
CALL_TOOL_HERE_ACTIVITY: Final = "scope_tool.call_tool_here"
"""A round offered on the main task queue: run by a worker serving its tool and contract, refused
(:data:`NOT_SERVED_HERE`) by any other. Its own name, so a worker that predates it fails it as
not registered (also before running anything) instead of answering "unknown tool"."""
ROUND_ACTIVITIES: Final = frozenset({CALL_TOOL_ACTIVITY, CALL_TOOL_HERE_ACTIVITY})
"""The activity types that run a round of a tool (for readers of histories and telemetry)."""
NOT_SERVED_HERE: Final = "NotServedHere"
"""The application error type of a round refused on the main queue: nothing ran; the workflow
sends the round to its tool or contract queue."""
NOTIFY_ACTIVITY: Final = "scope_tool.notify"
CHECK_ANSWER_ACTIVITY: Final = "scope_tool.check_answer"
NOTIFY_WORKFLOW: Final = "scope_tool.Notify"
ANNOUNCE_WORKFLOW: Final = "scope_tool.Announce"
SEND_EMAIL_ACTIVITY: Final = "scope_tool.send_email"
POST_SLACK_ACTIVITY: Final = "scope_tool.post_slack"
CHANNELS: Final = ("email", "slack")
"""The channels a call can ask a waiting question to be sent through (``ToolCallInput.channels``)."""
ANSWER: Final = "answer"
STAGE_ANSWER: Final = "stage_answer"
"""Signal carrying an answer's text ahead of its update (:class:`StagedAnswer`); see
:data:`STAGE_ABOVE_BYTES`."""
STAGE_ABOVE_BYTES: Final = 64 * 1024
"""Answers longer than this travel by signal ``stage_answer``, their update carrying the digest.

Temporal echoes an update's input in the worker's reply that accepts or rejects it, and the
server hands a call every waiting update in one workflow task, whose reply gRPC caps at 4 MiB:
a few answers near ``MAX_INPUT_BYTES`` sent together made that reply too large, and the server
ended the call. A signal is not echoed; the update stays small."""
ROUND_RUNNING: Final = "round_running"
"""Signal (one int, the round) a re-entry round sends once it has run for
:data:`ROUND_RUNNING_AFTER_SECONDS`: the call then shows ``ScopeToolPhase`` RUNNING."""
ROUND_RUNNING_AFTER_SECONDS: Final = 2.0
"""How long a round that follows an answer runs before the call's search attribute says RUNNING.

Until then the attribute keeps AWAITING_INPUT (the status query says RUNNING at once): most such
rounds end sooner, and then one search-attribute write per answer is saved (an event and a
visibility update, the largest part of what an answer cost beyond bare Temporal)."""
WITHDRAW_QUESTION: Final = "withdraw_question"
DELEGATE_QUESTION: Final = "delegate_question"
"""The update by which an assignee hands the pending question to others (:class:`DelegateInput`)."""
EXTEND_DEADLINE: Final = "extend_deadline"
"""The update that extends the pending question's deadline (:class:`ExtendInput`)."""
"""Update (:class:`WithdrawInput`): the caller or an operator withdraws the pending question; the
call ends WITHDRAWN (not a denial) and takes no more answers."""
REEVALUATE_RULES: Final = "reevaluate_rules"
"""Update (:class:`ReevaluateInput`): an operator applies changed rules to a waiting call; an
``allow`` or ``deny`` decides its approval question, recorded with the operator's name."""
FIRST_STOP: Final = "first_stop"
"""Update with no argument: completes with the ``status`` value once the call is not RUNNING."""
STATUS: Final = "status"
CATALOG_WORKFLOW_NAME: Final = "scope_tool.Catalog"
PUBLISH: Final = "publish"
WITHDRAW: Final = "withdraw"
CATALOG: Final = "catalog"
CATALOG_MEMO: Final = "catalog"
"""The catalog workflow's memo key holding its :class:`CatalogInput` (read by a describe)."""

CONTRACT_QUEUE_DIGEST_CHARS: Final = 16
"""Hex characters of a contract digest in its queue name (64 bits: collisions are not a risk)."""

_FIRST_STOP_PREFIX: Final = f"{FIRST_STOP}:"


def request_digest(tool: str, arguments: str | bytes) -> str:
    """A short digest of a call's request (tool and exact argument bytes)."""
    raw = arguments.encode("utf-8", "surrogatepass") if isinstance(arguments, str) else arguments
    return hashlib.sha256(tool.encode("utf-8", "surrogatepass") + b"\0" + raw).hexdigest()[:32]


def first_stop_update_id(tool: str, arguments: str | bytes, *, nonce: str) -> str:
    """The id of one ``first_stop`` update: ``first_stop:{request digest}:{nonce}``.

    The update takes no argument; its id carries the request it was sent for, so the validator
    refuses it on a call of another request (the conflict ``start`` finds from history) with no
    extra round trip. The nonce keeps each wait its own update: a reused id would be answered
    with the first, by now stale, status.
    """
    return f"{_FIRST_STOP_PREFIX}{request_digest(tool, arguments)}:{nonce}"


def update_id_digest(update_id: str) -> str | None:
    """The request digest a ``first_stop`` update id carries; ``None`` for any other id."""
    if not update_id.startswith(_FIRST_STOP_PREFIX):
        return None
    digest, _, _ = update_id.removeprefix(_FIRST_STOP_PREFIX).partition(":")
    return digest


TOOL_KEY: Final = SearchAttributeKey.for_keyword("ScopeToolName")
PHASE_KEY: Final = SearchAttributeKey.for_keyword("ScopeToolPhase")
ASSIGNEE_KEY: Final = SearchAttributeKey.for_keyword_list("ScopeToolAssignee")
"""Who may answer a call's waiting question now (set by calls whose policy has reminders or
escalation, updated on escalation, unset once answered): ``ScopeToolAssignee = "alice"`` in
the Web UI finds the questions waiting for alice."""


UNSERVED_TOOL: Final = "(unserved)"
"""The ``tool`` label of metrics about calls whose tool no worker has run (yet).

A call names its tool itself, so counting an unknown tool under its own name would let any
client create a metrics series per name; until a worker serving the tool runs a round, the call
is counted under this one label.
"""


TASK_CHECK_BYTES: Final = 32 * 1024
"""Answer text one workflow task parses and checks in workflow code (``ToolCallInput.
task_check_bytes`` of new calls); past it, that task's checks go to the ``check_answer``
activity. Deeply nested JSON parses at ~2.3 us a byte on the 2-core build machine when quiet
(75 ms for 32 KiB), leaving a margin of over 25x under the SDK's two-second deadlock detector
for a loaded worker."""


def tool_queue(task_queue: str, tool: str) -> str:
    """The queue round 1 of a call of ``tool`` runs on: only workers serving ``tool`` poll it."""
    return f"{task_queue}@{tool}"


def contract_queue(task_queue: str, tool: str, contract_digest: str) -> str:
    """The queue later rounds run on: only workers with this contract of ``tool`` poll it."""
    return f"{task_queue}@{tool}@{contract_digest[:CONTRACT_QUEUE_DIGEST_CHARS]}"


def process_queue(task_queue: str, worker_id: str) -> str:
    """The queue only one worker process polls: pinned rounds (``RoundContext.pin_next_round``)."""
    return f"{task_queue}@@{worker_id}"


def catalog_workflow_id(task_queue: str) -> str:
    """The id of the one catalog workflow per task queue (see :class:`WorkerCatalog`)."""
    return f"scope-tool-catalog:{task_queue}"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallInput:
    """The workflow's input: the untrusted request plus how this call is to be run."""

    call_id: str
    tool: str
    arguments: str | bytes = ""
    answer_timeout_seconds: float | None = None
    allowed_answerers: tuple[str, ...] = ()
    notify_url: str | None = None
    notify_initial_interval_seconds: float = 1.0
    heartbeat_timeout_seconds: float = 10.0
    tool_timeout_seconds: float = 24 * 3600.0
    max_attempts_if_retry_safe: int = 3
    # Who the agent acts for: given to the tool's Authorizer in every round (acting_for).
    principal: Principal | None = None
    # Answers must carry a valid identity token (scope_tool.wire.identity); its subject answers.
    require_verified: bool = False
    # How long round 1 may wait for a worker serving the tool before the call ends INVALID
    # "no worker serves tool X"; None (calls recorded before routing) waits without limit.
    unserved_timeout_seconds: float | None = None
    # Rounds run on the tool's and the contract's queues; False (calls started before routing
    # existed) runs them on the main queue, as those calls' histories recorded.
    routed: bool = False
    # A routed round is offered on the workflow's own queue first (eager dispatch). Recorded in
    # the input so the workflow needs no patch marker for it: a marker costs every call two
    # history events and a search-attribute write (TemporalChangeVersion). False (calls started
    # before this field) asks ``workflow.patched``, as those calls' histories recorded.
    eager_rounds: bool = False
    # An answer leaves the ScopeToolPhase attribute at AWAITING_INPUT until the round it starts
    # has run ROUND_RUNNING_AFTER_SECONDS (that round reports it by signal) or ends. False (calls
    # started before this field) writes RUNNING at the answer, as those histories recorded.
    running_shown_late: bool = False
    # Where a waiting question is also sent, each time the call starts waiting: "email" (one
    # message per allowed answerer, links per decision) and/or "slack" (a message with buttons).
    channels: tuple[str, ...] = ()
    # How each question is decided (scope_tool.ApprovalPolicy); None: by the first accepted
    # answer, as calls recorded before policies were.
    policy: ApprovalPolicy | None = None
    # While a question waits, the ScopeToolAssignee attribute lists who may answer it now (its
    # named answerers, or the policy's voters), written in the same upsert as ScopeToolPhase and
    # cleared with it, so it costs no history event. False (calls started before this field)
    # writes it only for calls with deadline steps or a delegation, as those histories recorded.
    assignee_attribute: bool = False
    # Answer text one workflow task may parse and check in workflow code before the rest of
    # that task's checks go to the check_answer activity (the SDK fails a task that runs past
    # two seconds, and a loaded worker parses deep JSON many times slower). None (calls started
    # before this field): 128 KiB, as those histories recorded.
    task_check_bytes: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AnswerInput:
    """An answer to the pending question (update ``answer`` and signal ``answer``)."""

    response: bytes
    """The answer as JSON text (empty when :attr:`response_digest` names a staged text)."""
    request_id: str | None = None
    """The question answered, ``"{call_id}/r{round}"``; ``None`` means the one pending now."""
    answered_by: str | None = None
    """Who answers, as the caller says (checked against the call's allowed answerers)."""
    identity_token: str | None = None
    """A signed identity token (:mod:`scope_tool.wire.identity`); when present, its subject is who
    answers, and a call started with ``require_verified`` takes no answer without one."""
    response_digest: str | None = None
    """The SHA-256 (hex) of an answer sent ahead by signal ``stage_answer``: the workflow reads
    the text it staged (see :data:`STAGE_ABOVE_BYTES`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WithdrawInput:
    """A withdrawal of the pending question (update ``withdraw_question``)."""

    reason: str
    """Why, in words (shown on every surface and to the model); 1 to 1000 characters."""
    withdrawn_by: str | None = None
    """Who withdraws (the agent, an operator), as the caller says."""
    request_id: str | None = None
    """The question withdrawn; ``None`` means the one pending now."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ReevaluateInput:
    """Rules an operator re-evaluates a waiting call's approval question with."""

    rules: tuple[Rule, ...]
    by: str | None = None
    """The operator, recorded in the verdict."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ReevaluateReceipt:
    """The re-evaluation's verdict on the pending question, and whether it decided it."""

    request_id: str
    verdict: str
    decided: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class DelegateInput:
    """A hand-over of the pending question (update ``delegate_question``, which returns the
    question's request id)."""

    to: tuple[str, ...]
    """Who may answer instead of the delegating assignee (1 to 32 names)."""
    delegated_by: str
    """The assignee handing it over: one of the call's named answerers now (with
    :attr:`identity_token`, the token's subject, which this must match)."""
    request_id: str | None = None
    """The question delegated; ``None`` means the one pending now."""
    identity_token: str | None = None
    """A signed identity token (:mod:`scope_tool.wire.identity`), verified as an answer's is:
    its subject delegates. A call started with ``require_verified`` takes no delegation
    without one."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ExtendInput:
    """An extension of the pending question's deadline (update ``extend_deadline``)."""

    seconds: float
    """How much later the deadline is, in seconds (positive)."""
    extended_by: str | None = None
    """Who extends: a person allowed to answer the question (when the call names them)."""
    request_id: str | None = None
    """The question extended; ``None`` means the one pending now."""
    identity_token: str | None = None
    """A signed identity token (:mod:`scope_tool.wire.identity`), verified as an answer's is:
    its subject extends. A call started with ``require_verified`` takes no extension without
    one."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ExtendReceipt:
    """What an accepted extension returns: the question and its new deadline."""

    request_id: str
    deadline: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class WithdrawReceipt:
    """What an accepted withdrawal returns: the question withdrawn."""

    request_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class StagedAnswer:
    """An answer's text sent ahead of its update (signal ``stage_answer``); it decides nothing."""

    response: bytes
    """The answer's JSON text; the update that follows names it by its SHA-256."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AnswerReceipt:
    """What an accepted answer returns: which question it answered, in which round."""

    request_id: str
    """The question the answer was taken for (``"{call_id}/r{round}"``)."""
    round: int
    """The round that asked it; the tool re-enters in the next one."""
    duplicate: bool = False
    """The answer repeated one already accepted (same question, same text): it was taken
    without effect, and no second round started."""
    decided: bool = True
    """False when the answer was recorded as a vote and the question still waits for more
    (a call with a quorum :class:`~scope_tool.ApprovalPolicy`)."""
    voters: tuple[str, ...] = ()
    """On a quorum call: the voters whose votes agree so far (the approvers), in order."""
    tally: str = ""
    """On a quorum call: where the vote stands, e.g. ``"1 of 2: alice; waiting for one of:
    bob, carol"``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CallToolInput:
    """One round of a call: the request and, from round 2 on, the committed question and answer."""

    call_id: str
    round: int
    """1 for the first round; each answer re-enters the tool in the next one."""
    tool: str
    arguments: str | bytes = ""
    """The request's arguments, exactly as the call was started with them (untrusted)."""
    input_request: bytes | None = None
    """From round 2: the question the previous round asked (``InputRequest.to_json()``)."""
    response: bytes | None = None
    """From round 2: the accepted answer's JSON text."""
    contract_digest: str | None = None
    """From round 2: the contract that asked; only a worker with that contract re-enters."""
    principal: Principal | None = None
    """Who the agent acts for, given to the tool's Authorizer in every round."""
    report_running: bool = False
    """Signal ``ROUND_RUNNING`` once this round has run ``ROUND_RUNNING_AFTER_SECONDS``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolStartedHeartbeat:
    """The details every heartbeat of a round carries.

    A retry-safe tool sends the first one before it runs; every round sends them periodically
    while its tool runs. If the worker is then lost, the heartbeat timeout carries the last of
    them back to the workflow, which re-runs the round only when they say ``retry_safe``.
    The tool's last report (``scope_tool._round``) rides along: a round lost with an
    ``idempotency_key`` ends "outcome unknown" naming it, and the progress is visible while the
    round runs.
    """

    retry_safe: bool
    idempotency_key: str | None = None
    progress: float | None = None
    total: float | None = None
    message: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ReleaseInput:
    """A pinned question's call ended without re-entering its tool (``RELEASE_ROUND_ACTIVITY``)."""

    call_id: str
    round: int
    """The round that asked the question."""
    reason: str
    """How the call ended: ``withdrawn``, ``expired`` or ``cancelled``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundCompleted:
    """The tool completed; ``output`` is model-visible."""

    kind: Literal["completed"] = "completed"
    output: Output = field(default_factory=Output)


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundInputRequested:
    """The tool asked for input, to be committed as the call's pending question."""

    kind: Literal["input_requested"] = "input_requested"
    input_request: bytes
    """The question: ``InputRequest.to_json()``."""
    contract_digest: str = ""
    """``Contract.digest`` of the tool that asked, recorded with the call's first question;
    later rounds refuse to resume under a tool whose definition changed since."""
    policy: ApprovalPolicy | None = None
    """The policy the tool carries (``Binding.approval_policy``: a gate's
    ``require_approval(..., policy=...)``), recorded with the question it decides; the
    workflow applies it when the call was started without a policy of its own. ``None``
    (rounds recorded before tools carried policies, and tools without one): none."""
    resume_queue: str | None = None
    """Set when the tool pinned the next round (``RoundContext.pin_next_round``): the queue
    only the asking worker process polls (:func:`process_queue`); the answer's round runs
    there or, after ``resume_within_seconds`` unserved, ends the call "outcome unknown".
    ``None``: any worker with the contract re-enters."""
    resume_within_seconds: float | None = None
    """How long the pinned round may wait for its process (the worker's setting)."""
    idempotency_key: str | None = None
    """The asking round's last reported key, named if the pinned round cannot run."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundFailed:
    """One definite unsuccessful outcome (``classify_failure``): FAILED or REJECTED."""

    kind: Literal["failure"] = "failure"
    failure_kind: FailureKind
    output: Output = field(default_factory=Output)
    """What the model sees: the failure's own output (``Failure.output``)."""
    message: str = ""
    """For operators, never the model: the cause's text, else ``tool: <kind>``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundInvalid:
    """The request was not admitted (unknown tool, ``Contract.prepare`` refused)."""

    kind: Literal["invalid"] = "invalid"
    message: str
    """What was refused and why, e.g. ``tool: unknown tool "x"``."""
    output: Output = field(default_factory=Output)
    """The same for the model, as ``error: ...`` text."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundErrored:
    """An ordinary error: the outcome is not definite. ``evidence`` never reaches the model."""

    kind: Literal["error"] = "error"
    message: str
    evidence: Output | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundCancelled:
    """The call was cancelled while the tool ran; ``message`` says what the tool did after it."""

    kind: Literal["cancelled"] = "cancelled"
    message: str = ""


RoundResult = (
    RoundCompleted
    | RoundInputRequested
    | RoundFailed
    | RoundInvalid
    | RoundErrored
    | RoundCancelled
)
"""The activity's result: exactly one of these, told apart by ``kind``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class NotifyInput:
    """A webhook notification (POSTed as JSON to ``url``)."""

    url: str
    event: Literal["awaiting_input", "finished", "reminder", "escalated", "delegated"]
    call_id: str
    tool: str
    phase: str
    request_id: str | None = None
    prompt: str | None = None

    def to_json_dict(self) -> dict[str, Any]:
        """The webhook's body: ``{event, call_id, tool, phase, request_id, prompt}``.

        Same conventions as the status values' ``to_json_dict`` (the prompt as a JSON value).
        """
        return {
            "event": self.event,
            "call_id": self.call_id,
            "tool": self.tool,
            "phase": self.phase,
            "request_id": self.request_id,
            "prompt": json_value(self.prompt.encode("utf-8")) if self.prompt is not None else None,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class AnnounceInput:
    """A waiting question to send through the call's channels (workflow ``scope_tool.Announce``).

    The request id is what makes each message once-only: one message per request and recipient.
    """

    call_id: str
    tool: str
    request_id: str
    arguments: str | bytes
    prompt: bytes
    response_schema: bytes
    allowed_answerers: tuple[str, ...] = ()
    channels: tuple[str, ...] = ()
    deadline: datetime | None = None
    occasion: int = 0
    """0 for the first announcement of the question; n for the n-th reminder of it. Each
    occasion is its own once-only message per recipient (ledger entry and Message-ID)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CatalogTool:
    """One tool a worker serves, as the model sees it, with its contract digest.

    ``newest`` is true when this worker serves the tool's own queue (new calls) with this
    version; an older version a worker keeps only for calls that started on it is ``False``.
    """

    name: str
    description: str
    input_schema: bytes
    contract_digest: str
    newest: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerCatalog:
    """What one worker process serves (signal ``publish``; ``withdraw`` carries ``worker_id``)."""

    worker_id: str
    tools: tuple[CatalogTool, ...] = ()
    published_at: datetime | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CatalogInput:
    """The catalog workflow's input, and its state carried across continue-as-new."""

    task_queue: str
    workers: tuple[WorkerCatalog, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class NotifyDelivery:
    """The input of ``scope_tool.Notify``: one notice and its retry schedule.

    A call starts one such child workflow per notice and abandons it, so a slow or dead
    receiver never holds the call's outcome back.
    """

    notice: NotifyInput
    initial_interval_seconds: float = 1.0
    attempts: int = 5
    metric_tool: str | None = None
    """The ``tool`` label of its failure metric: :data:`UNSERVED_TOOL` when no worker ever ran
    the call's tool (``None``, from older calls: the notice's tool)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckAnswerInput:
    """An answer whose schema check ran over the workflow's budget, to finish in an activity.

    ``response`` has already passed the size and I-JSON checks in the workflow.
    """

    response_schema: bytes
    response: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckAnswerResult:
    """The unbudgeted verdict: accepted, or refused with the facts.

    ``reason`` is ``invalid_json`` (``detail`` is the I-JSON error) or ``schema`` (``detail``
    is the refusal text ``jsonschema: validate value: <pointer>: <reason>``, ``path`` the JSON
    pointer, "" for the root, and ``violation`` the reason alone).
    """

    accepted: bool
    reason: Literal["schema", "invalid_json"] = "schema"
    detail: str = ""
    path: str | None = None
    violation: str | None = None
