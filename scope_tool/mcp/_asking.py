"""Which way to ask a person, given what the client declared, and what their reply means.

The ways, best first: a form elicitation when the question fits MCP's form mode; a URL
elicitation to the call's inbox page when it does not (and an inbox URL is configured); a form
with one JSON text field when there is no inbox; and no way at all when the client declared no
elicitation capability (the caller then returns "the call waits, id X").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from urllib.parse import quote

import mcp_types as types

from scope_tool.client import AnswerRejectedError, PendingInput, ToolCallHandle
from scope_tool.mcp._engine import refusal_reason
from scope_tool.mcp._forms import FormPlan, plan_form, prompt_message

__all__ = ["Question", "ReplyOutcome", "apply_reply", "question_for"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Question:
    """One pending question rendered for this client: the elicitation and how to read replies.

    ``plan`` is ``None`` for URL mode: the person answers on the inbox page, not in the reply.
    """

    request_id: str
    elicitation: types.ElicitRequest
    plan: FormPlan | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplyOutcome:
    """What applying one reply did: answered, refused (with the reason), or nothing."""

    answered: bool = False
    refusal: str | None = None
    reason: str | None = None
    declined: bool = False
    dismissed: bool = False


def question_for(
    pending: PendingInput,
    *,
    call_id: str,
    tool: str,
    capabilities: types.ClientCapabilities | None,
    inbox_url: str | None,
    refusal: str | None = None,
) -> Question | None:
    """The elicitation for ``pending`` that this client can show, or ``None`` if none."""
    elicitation = capabilities.elicitation if capabilities is not None else None
    if elicitation is None:
        return None
    # An empty elicitation capability means form mode (the spec's backwards-compatible reading).
    form_ok = elicitation.form is not None or elicitation.url is None
    url_ok = elicitation.url is not None and inbox_url is not None
    message = prompt_message(pending.prompt, call_id=call_id, tool=tool, refusal=refusal)
    plan = plan_form(pending.response_schema, allow_json_text=not url_ok) if form_ok else None
    if plan is not None:
        params: types.ElicitRequestParams = types.ElicitRequestFormParams(
            message=message, requested_schema=plan.requested_schema
        )
    elif url_ok and inbox_url is not None:
        params = types.ElicitRequestURLParams(
            message=f"{message}\n\nAnswer on the inbox page.",
            url=f"{inbox_url.rstrip('/')}/calls/{quote(call_id, safe='')}",
            elicitation_id=pending.request_id,
        )
    else:
        return None
    return Question(
        request_id=pending.request_id,
        elicitation=types.ElicitRequest(params=params),
        plan=plan,
    )


async def apply_reply(
    handle: ToolCallHandle,
    question: Question,
    reply: types.ElicitResult | dict[str, object],
    *,
    answered_by: str,
) -> ReplyOutcome:
    """Send the person's reply through the call's one validated answer path.

    A refusal (wrong shape, stale question, not allowed) changes nothing in the call and comes
    back as ``refusal`` / ``reason`` for the next ask to show.
    """
    parsed = (
        reply if isinstance(reply, types.ElicitResult) else types.ElicitResult.model_validate(reply)
    )
    if question.plan is None:
        return ReplyOutcome(
            declined=parsed.action == "decline", dismissed=parsed.action != "decline"
        )
    meaning = question.plan.reply(parsed.action, dict(parsed.content or {}))
    if not meaning.has_answer:
        return ReplyOutcome(declined=meaning.declined, dismissed=not meaning.declined)
    try:
        await handle.answer(
            json.dumps(meaning.answer, ensure_ascii=False),
            request_id=question.request_id,
            answered_by=answered_by,
        )
    except AnswerRejectedError as error:
        return ReplyOutcome(refusal=str(error), reason=refusal_reason(error))
    return ReplyOutcome(answered=True, declined=meaning.declined)
