"""The JSON API: ``GET /api/pending``, ``GET /api/calls/{id}``, ``POST /api/calls/{id}/answer``.

Scripts and the pages' own refresh use it. An answer is ``{"response": <JSON>, "request_id":
optional}``, sent through the facade's one answer path (which pins the pending question when no
request id is given, so a retried answer is still idempotent). Only ``application/json`` bodies
are taken: a browser never sends one cross-site without a CORS preflight, which the inbox never
grants. Errors are ``{"error", "reason"}``; a refused answer adds ``"detail"``
(:meth:`scope_tool.client.RefusalDetail.to_json_dict`).
"""

from __future__ import annotations

import json

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from scope_tool.client import AnswerRejectedError, CallNotFoundError, ToolCallsError
from scope_tool.inbox.csrf import foreign_origin
from scope_tool.inbox.reading import REFUSAL_HTTP_STATUS, CallReader, json_text, refusal_text
from scope_tool.inbox.views import call_json, call_path, pending_fingerprint, pending_json

__all__ = ["InboxApi"]

_MAX_API_BODY_BYTES = 2 << 20
"""Twice the protocol's MAX_INPUT_BYTES: room for the envelope, a cap for everything else."""


def _api_error(message: str, reason: str, code: int) -> JSONResponse:
    return JSONResponse({"error": message, "reason": reason}, status_code=code)


def _api_refusal(error: AnswerRejectedError) -> JSONResponse:
    return JSONResponse(
        {
            "error": refusal_text(error),
            "reason": error.reason.value,
            "detail": error.detail.to_json_dict(),
        },
        status_code=REFUSAL_HTTP_STATUS.get(error.reason, 422),
    )


class InboxApi:
    """The API's endpoints; each takes the request and the caller's identity."""

    def __init__(self, reader: CallReader) -> None:
        self._reader = reader

    async def pending(self, request: Request, identity: str) -> Response:
        """Calls waiting for an answer, with their question, schema and times."""
        try:
            waiting, unreadable = await self._reader.waiting()
        except ToolCallsError as error:
            return _api_error(str(error), "unavailable", 502)
        entries = [pending_json(s, s.pending) for s in waiting if s.pending is not None]
        return JSONResponse(
            {
                "identity": identity,
                "calls": entries,
                "unreadable": [
                    {
                        "call_id": summary.call_id,
                        "tool": summary.tool,
                        "started_at": summary.started_at.isoformat(),
                        "url": call_path(summary.call_id),
                    }
                    for summary in unreadable
                ],
                "fingerprint": pending_fingerprint([entry["request_id"] for entry in entries]),
            }
        )

    async def call(self, request: Request, identity: str) -> Response:
        """One call: phase, round, pending question, answers, outcome."""
        try:
            status = await self._reader.status(request.path_params["call_id"])
        except CallNotFoundError as error:
            return _api_error(str(error), "not_found", 404)
        except (ToolCallsError, TimeoutError) as error:
            return _api_error(str(error) or "status timed out", "unavailable", 502)
        return JSONResponse(call_json(status))

    async def answer(self, request: Request, identity: str) -> Response:
        """Answer the pending question as ``identity`` (the validated update)."""
        call_id = request.path_params["call_id"]
        foreign = foreign_origin(request)
        if foreign is not None:
            return _api_error(f"cross-site request from {foreign} refused", "forbidden", 403)
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return _api_error("send the answer as application/json", "bad_request", 415)
        raw = bytearray()
        async for chunk in request.stream():
            raw.extend(chunk)
            if len(raw) > _MAX_API_BODY_BYTES:
                message = f"the body is larger than {_MAX_API_BODY_BYTES} bytes"
                return _api_error(message, "too_large", 413)
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError) as error:
            return _api_error(f"the body is not JSON ({error})", "bad_request", 400)
        if not isinstance(body, dict) or "response" not in body:
            return _api_error(
                'the body must be {"response": ..., "request_id": ...}', "bad_request", 400
            )
        request_id = body.get("request_id")
        if request_id is not None and not isinstance(request_id, str):
            return _api_error("request_id must be a string", "bad_request", 400)
        try:
            receipt = await self._reader.answer(
                call_id, json_text(body["response"]), request_id=request_id, identity=identity
            )
        except AnswerRejectedError as error:
            return _api_refusal(error)
        except CallNotFoundError as error:
            return _api_error(str(error), "not_found", 404)
        except (ToolCallsError, TimeoutError) as error:
            return _api_error(str(error) or "timed out", "unavailable", 502)
        return JSONResponse(
            {
                "accepted": True,
                "call_id": call_id,
                "request_id": receipt.request_id,
                "round": receipt.round,
                "duplicate": receipt.duplicate,
                "answered_by": identity,
            }
        )
