"""The HTML pages: the waiting list, one call's page, and the form answer that goes through it.

A form answer is converted (:mod:`.form_values`) and sent with ``handle.answer`` and the pending
``request_id``, so the workflow's validator is the judge: a refusal (schema, stale question, not
an allowed answerer) comes back onto the same page next to the form, with every value kept.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from urllib.parse import quote

import jinja2
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.templating import Jinja2Templates

from scope_tool.client import (
    AnswerRecord,
    AnswerRejectedError,
    BatchItem,
    BatchProblem,
    BatchRefusedError,
    CallNotFoundError,
    ToolCallsError,
    json_value,
    read_approval,
    read_prompt,
)
from scope_tool.client.history import CallHistory
from scope_tool.inbox.approval_form import answer_from_approval
from scope_tool.inbox.csrf import FormTokens, foreign_origin
from scope_tool.inbox.display import (
    DisplayField,
    clock_time,
    display_fields,
    display_value,
    duration_text,
    value_fields,
    web_ui_call_url,
)
from scope_tool.inbox.form_values import (
    ANSWER_JSON_KEY,
    VIA_JSON,
    VIA_KEY,
    AnswerFormError,
    FieldProblem,
    answer_from_form,
)
from scope_tool.inbox.forms import FormKind, build_answer_form
from scope_tool.inbox.reading import REFUSAL_HTTP_STATUS, CallReader, json_text, refusal_text
from scope_tool.inbox.trail import trail_entries
from scope_tool.inbox.views import (
    call_fingerprint,
    call_path,
    pending_fingerprint,
    prompt_view,
    relative_time,
)

__all__ = ["InboxPages"]

_TEMPLATES = Path(__file__).parent / "templates"
_CSRF_KEY = "_csrf"
_SELECT_KEY = "_select"
_BATCH_DECISION_KEY = "_batch_decision"
_BATCH_REASON_KEY = "_batch_reason"
_REQUEST_ID_KEY = "_request_id"
_FORM_KEY = "_form"


_FINISHED_LIMIT = 50
_HISTORY_CATCH_UP_TRIES = 10
_HISTORY_CATCH_UP_SECONDS = 0.2


class InboxPages:
    """The pages' endpoints; each takes the request and the person's identity.

    Args:
        reader: Reads calls through the facade.
        form_tokens: Signs the per-person form token (CSRF).
        refresh_ms: How often open pages poll the API for changes.
    """

    def __init__(
        self,
        reader: CallReader,
        *,
        form_tokens: FormTokens,
        refresh_ms: int,
        web_ui_url: str | None = None,
    ) -> None:
        self._reader = reader
        self._form_tokens = form_tokens
        self._refresh_ms = refresh_ms
        self._web_ui_url = web_ui_url
        environment = jinja2.Environment(
            loader=jinja2.FileSystemLoader(_TEMPLATES),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
        )
        environment.globals["relative_time"] = relative_time
        environment.globals["call_path"] = call_path
        environment.globals["clock_time"] = clock_time
        environment.globals["duration_text"] = duration_text
        self._templates = Jinja2Templates(env=environment)

    @property
    def templates(self) -> Jinja2Templates:
        """The inbox's templates (other page makers share them)."""
        return self._templates

    def unauthorized(self, request: Request, message: str) -> Response:
        """The sign-in page (401) saying what was missing or wrong."""
        return self._templates.TemplateResponse(
            request, "unauthorized.html", {"message": message}, status_code=401
        )

    def _problem(self, request: Request, identity: str, message: str, code: int) -> Response:
        return self._templates.TemplateResponse(
            request, "problem.html", {"identity": identity, "message": message}, status_code=code
        )

    async def waiting_list(
        self,
        request: Request,
        identity: str,
        *,
        batch_refusal: str = "",
        batch_problems: tuple[BatchProblem, ...] = (),
        selected: frozenset[str] = frozenset(),
        status_code: int = 200,
    ) -> Response:
        """``/``: the calls waiting for an answer, oldest question first, each approval
        question with a box to select it for one batch decision."""
        try:
            waiting, unreadable = await self._reader.waiting()
            problem = ""
        except ToolCallsError as error:
            waiting, unreadable, problem = [], [], str(error)
        rows = [
            {
                "status": s,
                "pending": s.pending,
                "prompt": prompt_view(s.pending.prompt),
                "approval": read_approval(s.pending.prompt, s.pending.response_schema) is not None,
                "selected": s.pending.request_id in selected,
            }
            for s in waiting
            if s.pending is not None
        ]
        fingerprint = pending_fingerprint(
            [s.pending.request_id for s in waiting if s.pending is not None]
        )
        return self._templates.TemplateResponse(
            request,
            "list.html",
            {
                "identity": identity,
                "rows": rows,
                "unreadable": unreadable,
                "problem": problem,
                "poll_url": "/api/pending",
                "page_url": "/",
                "fingerprint": fingerprint,
                "refresh_ms": self._refresh_ms,
                "csrf": self._form_tokens.token(identity),
                "decided": request.query_params.get("decided", ""),
                "batch_refusal": batch_refusal,
                "batch_problems": batch_problems,
            },
            status_code=status_code,
        )

    async def batch(self, request: Request, identity: str) -> Response:
        """``POST /batch``: approve or deny the selected approval questions as one batch.

        The batch is checked as a whole first (``ToolCalls.answer_batch``): if any selected call
        is stale or not this person's to decide, nothing is sent and the list shows which.
        """
        async with request.form(max_files=0, max_fields=2000) as form_data:
            values: dict[str, list[str]] = {}
            for key, item in form_data.multi_items():
                if isinstance(item, str):
                    values.setdefault(key, []).append(item)
        selected = frozenset(values.get(_SELECT_KEY, []))

        def again(
            refusal: str, code: int, problems: tuple[BatchProblem, ...] = ()
        ) -> Awaitable[Response]:
            return self.waiting_list(
                request,
                identity,
                batch_refusal=refusal,
                batch_problems=problems,
                selected=selected,
                status_code=code,
            )

        foreign = foreign_origin(request)
        if foreign is not None:
            return await again(f"refused: this form was posted from another site ({foreign})", 403)
        if not self._form_tokens.valid(identity, (values.get(_CSRF_KEY) or [""])[0]):
            return await again("the form's security token is stale; select and send again", 403)
        decision = (values.get(_BATCH_DECISION_KEY) or [""])[0]
        reason = (values.get(_BATCH_REASON_KEY) or [""])[0].strip()
        if decision not in ("approve", "deny"):
            return await again("choose Approve selected or Deny selected", 422)
        if decision == "deny" and not reason:
            return await again("a denial needs a reason (the model sees it)", 422)
        if not selected:
            return await again("select at least one call", 422)
        answer = (
            {"decision": "approve"}
            if decision == "approve"
            else {"decision": "deny", "reason": reason}
        )
        items = [
            BatchItem(call_id=request_id.rpartition("/")[0], request_id=request_id)
            for request_id in sorted(selected)
        ]
        try:
            receipt = await self._reader.answer_batch(items, json_text(answer), identity=identity)
        except BatchRefusedError as refused:
            return await again(
                f"nothing was sent: {len(refused.problems)} of the {len(items)} selected calls"
                " failed the check",
                409,
                refused.problems,
            )
        except (ToolCallsError, ValueError) as error:
            return await again(f"the batch could not be sent: {error}", 502)
        return RedirectResponse(f"/?decided={len(receipt.receipts)}", status_code=303)

    async def call(
        self,
        request: Request,
        identity: str,
        *,
        values: dict[str, list[str]] | None = None,
        refusal: str = "",
        problems: tuple[FieldProblem, ...] = (),
        status_code: int = 200,
    ) -> Response:
        """``/calls/{id}``: the question, its form, the answers so far, the outcome."""
        call_id = request.path_params["call_id"]
        read_status, read_history = await asyncio.gather(
            self._reader.status(call_id), self._reader.history(call_id), return_exceptions=True
        )
        if isinstance(read_status, CallNotFoundError):
            return self._problem(request, identity, str(read_status), 404)
        if isinstance(read_status, ToolCallsError | TimeoutError):
            message = (
                str(read_status)
                or "the call's status did not come back in time (is a worker running?)"
            )
            return self._problem(request, identity, message, 502)
        if isinstance(read_status, BaseException):
            raise read_status
        status = read_status
        history: CallHistory | None = None
        history_problem = ""
        if isinstance(read_history, CallHistory):
            history = read_history
            for _ in range(_HISTORY_CATCH_UP_TRIES):
                if not status.phase.is_terminal or history.ended_at is not None:
                    break
                # The query saw the call end a moment before its history records it.
                await asyncio.sleep(_HISTORY_CATCH_UP_SECONDS)
                try:
                    history = await self._reader.history(call_id)
                except (ToolCallsError, TimeoutError, ValueError):
                    break
        elif isinstance(read_history, ToolCallsError | TimeoutError | ValueError):
            history_problem = str(read_history) or "reading the call's history timed out"
        elif isinstance(read_history, BaseException):
            raise read_history
        pending = status.pending
        approval = (
            read_approval(pending.prompt, pending.response_schema) if pending is not None else None
        )
        if approval is not None and not approval.has_arguments and history is not None:
            # The gate shows the call's own arguments when its prompt does not carry them.
            approval = replace(
                approval, arguments=json_value(history.arguments), has_arguments=True
            )
        form = build_answer_form(pending.response_schema) if pending is not None else None
        policy = status.policy
        # On a quorum call the policy's voters are who may answer, once each.
        voters = policy.eligible if policy is not None and policy.is_quorum else ()
        allowed = status.allowed_answerers or voters
        voted = {vote.voter for vote in status.votes if not vote.superseded}
        kept = values or {}
        prompt = read_prompt(pending.prompt) if pending is not None else None
        return self._templates.TemplateResponse(
            request,
            "call.html",
            {
                "identity": identity,
                "status": status,
                "pending": pending,
                "prompt": prompt,
                "prompt_fields": value_fields(prompt.details) if prompt is not None else (),
                "approval": approval,
                "approval_fields": value_fields(approval.arguments) if approval else (),
                "form": form,
                "values": kept,
                "submitted": kept.get(_FORM_KEY) == ["fields"],
                "problems": {problem.name: problem.message for problem in problems},
                "problem_list": problems,
                "refusal": refusal,
                "answered": request.query_params.get("answered", ""),
                "allowed": allowed,
                "may_answer": (not allowed or identity in allowed) and identity not in voted,
                "voted": identity in voted,
                "csrf": self._form_tokens.token(identity),
                "answer_url": call_path(call_id) + "/answer",
                "poll_url": "/api" + call_path(call_id),
                # A refresh keeps the "your answer was accepted" line (a GET: nothing re-posts).
                "page_url": call_path(call_id)
                + (
                    f"?answered={quote(answered, safe='')}"
                    if (answered := request.query_params.get("answered", ""))
                    else ""
                ),
                "fingerprint": call_fingerprint(status),
                "refresh_ms": self._refresh_ms,
                "outcome_text": status.outcome.output.text() if status.outcome else None,
                "answer_shown": {a.request_id: _answer_shown(a) for a in status.answers},
                "history": history,
                "history_problem": history_problem,
                "arguments": display_fields(history.arguments) if history is not None else (),
                "trail": trail_entries(history) if history is not None else (),
                "web_ui": web_ui_call_url(
                    self._web_ui_url, namespace=self._reader.calls.client.namespace, call_id=call_id
                ),
            },
            status_code=status_code,
        )

    async def finished(self, request: Request, identity: str) -> Response:
        """``/finished``: the calls that ended most recently, with who answered them."""
        try:
            rows = await self._reader.finished(limit=_FINISHED_LIMIT)
            problem = ""
        except ToolCallsError as error:
            rows, problem = [], str(error)
        return self._templates.TemplateResponse(
            request,
            "finished.html",
            {"identity": identity, "rows": rows, "problem": problem},
        )

    async def answer(self, request: Request, identity: str) -> Response:
        """``POST /calls/{id}/answer``: convert, send, and redirect, or show the refusal."""
        call_id = request.path_params["call_id"]
        async with request.form(max_files=0, max_fields=2000) as form_data:
            values: dict[str, list[str]] = {}
            for key, item in form_data.multi_items():
                if isinstance(item, str):
                    values.setdefault(key, []).append(item)

        def again(
            refusal: str, code: int, problems: tuple[FieldProblem, ...] = ()
        ) -> Awaitable[Response]:
            return self.call(
                request,
                identity,
                values=values,
                refusal=refusal,
                problems=problems,
                status_code=code,
            )

        foreign = foreign_origin(request)
        if foreign is not None:
            return await again(f"refused: this form was posted from another site ({foreign})", 403)
        if not self._form_tokens.valid(identity, (values.get(_CSRF_KEY) or [""])[0]):
            return await again(
                "the form's security token is stale (the inbox restarted or you signed in as "
                "someone else); check the values and send again",
                403,
            )
        request_id = (values.get(_REQUEST_ID_KEY) or [""])[0]
        try:
            status = await self._reader.status(call_id)
        except CallNotFoundError as error:
            return self._problem(request, identity, str(error), 404)
        except (ToolCallsError, TimeoutError) as error:
            return await again(f"could not read the call: {error or 'timed out'}", 502)
        if status.pending is None or status.pending.request_id != request_id:
            # The form answered a question that is no longer the pending one. The workflow is
            # the judge of that as of every answer (a request id that is not pending is refused
            # before history, stale_request / not_waiting / finished, each a 409 here), so the
            # answer goes with its request id; its value cannot be read against a schema the
            # person never saw, and it cannot be accepted, so it is sent as null.
            return await self._send(request, identity, call_id, b"null", request_id, again)
        approval = read_approval(status.pending.prompt, status.pending.response_schema)
        form = build_answer_form(status.pending.response_schema)
        try:
            if approval is not None and values.get(VIA_KEY) != [VIA_JSON]:
                answer = answer_from_approval(approval, values)
            else:
                answer = answer_from_form(form, values)
        except AnswerFormError as error:
            return await again("some values need fixing; nothing was sent", 422, error.problems)
        payload: bytes = json_text(answer)  # made here: the handle does not parse it again
        if form.kind is FormKind.JSON or values.get(VIA_KEY) == [VIA_JSON]:
            # Sent as written: the workflow sees the person's exact JSON text.
            payload = (values.get(ANSWER_JSON_KEY) or [""])[0].encode("utf-8")
        return await self._send(request, identity, call_id, payload, request_id, again)

    async def _send(
        self,
        request: Request,
        identity: str,
        call_id: str,
        payload: bytes,
        request_id: str,
        again: Callable[[str, int], Awaitable[Response]],
    ) -> Response:
        """Send the answer; the workflow's refusal is shown with its HTTP status."""
        try:
            await self._reader.answer(call_id, payload, request_id=request_id, identity=identity)
        except AnswerRejectedError as error:
            return await again(refusal_text(error), REFUSAL_HTTP_STATUS.get(error.reason, 422))
        except CallNotFoundError as error:
            return self._problem(request, identity, str(error), 404)
        except ToolCallsError as error:
            return await again(f"the answer could not be delivered: {error}", 502)
        target = f"{call_path(call_id)}?answered={quote(request_id, safe='')}"
        return RedirectResponse(target, status_code=303)


def _answer_shown(answer: AnswerRecord) -> DisplayField:
    """An answer's text for the page; one the status left out (too long) by its size."""
    if answer.omitted_response_bytes:
        return display_value(
            f"({answer.omitted_response_bytes} bytes; the call's trail below has the text)"
        )
    return display_value(json_value(answer.response))
