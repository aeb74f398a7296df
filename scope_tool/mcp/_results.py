"""What the model sees: a finished call's outcome, or a call that still waits, as an MCP result.

Only the model-visible :class:`~scope_tool.Output` of an outcome reaches the model. An ERRORED
call's evidence and operator message never do; the model reads that the outcome is unknown and
the call id to look it up by. Every phase but COMPLETED is ``isError``. JSON ``details`` also
travel as ``structuredContent`` when they are a JSON object (the shape every protocol revision
accepts).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import mcp_types as types

from scope_tool import MediaBlock, Output, TextBlock
from scope_tool.client import CallOutcome, Phase

__all__ = ["outcome_result", "waiting_result"]

_PHASE_TEXT = {
    Phase.FAILED: "the tool failed",
    Phase.REJECTED: "the tool refused the call",
    Phase.INVALID: "the arguments were refused",
    Phase.EXPIRED: "nobody answered the tool's question in time",
    Phase.CANCELLED: "the call was cancelled",
    Phase.WITHDRAWN: "the tool's question was withdrawn",
    Phase.ERRORED: "the call's outcome is unknown (it was stopped by an error)",
}


def outcome_result(outcome: CallOutcome, *, call_id: str) -> types.CallToolResult:
    """The MCP result of a finished call (``isError`` unless it COMPLETED)."""
    content = _content(outcome.output)
    structured = _structured(outcome.output)
    if outcome.phase is Phase.COMPLETED:
        if not content and structured is None:
            content = [types.TextContent(text="done (the tool returned no output)")]
        return types.CallToolResult(content=content, structured_content=structured)
    summary = f"{_PHASE_TEXT.get(outcome.phase, 'the call did not complete')} (call {call_id})"
    if outcome.phase is Phase.INVALID and outcome.message:
        summary = f"{summary}: {outcome.message}"
    if outcome.phase is Phase.ERRORED:
        content = []  # never the evidence, never the diagnostic
    return types.CallToolResult(
        content=[*content, types.TextContent(text=summary)],
        structured_content=structured if outcome.phase is not Phase.ERRORED else None,
        is_error=True,
    )


def waiting_result(
    *, call_id: str, tool: str, phase: Phase, note: str = "", status_tool: str
) -> types.CallToolResult:
    """A call that has not finished: say so, with the id a later status call finds it by."""
    doing = "waits for a person's answer" if phase is Phase.AWAITING_INPUT else "is still running"
    text = (
        f"not done yet: call {call_id} of {tool} {doing}."
        f"{(' ' + note) if note else ''}"
        f" Call the {status_tool} tool with this call_id later to get its result."
    )
    # Some clients (Pydantic AI's MCPToolset) show the model only ``structuredContent``, so the
    # instruction travels there too: what the model sees must say what to do next.
    return types.CallToolResult(
        content=[types.TextContent(text=text)],
        structured_content={
            "call_id": call_id,
            "tool": tool,
            "phase": phase.value,
            "next_step": text,
        },
    )


def _content(output: Output) -> list[types.ContentBlock]:
    blocks: list[types.ContentBlock] = []
    for block in output.content:
        if isinstance(block, TextBlock):
            blocks.append(types.TextContent(text=block.text))
        elif isinstance(block, MediaBlock):
            blocks.append(_media(block))
    if not output.content and output.details is not None:
        blocks.append(types.TextContent(text=output.details.decode("utf-8", "replace")))
    return blocks


def _media(block: MediaBlock) -> types.ContentBlock:
    if block.data is not None:
        data = base64.b64encode(block.data).decode("ascii")
        if block.mime_type.startswith("image/"):
            return types.ImageContent(data=data, mime_type=block.mime_type)
        if block.mime_type.startswith("audio/"):
            return types.AudioContent(data=data, mime_type=block.mime_type)
        return types.EmbeddedResource(
            resource=types.BlobResourceContents(
                uri=block.uri or "scope-tool:output", mime_type=block.mime_type, blob=data
            )
        )
    uri = block.uri or ""
    return types.ResourceLink(name=uri, uri=uri, mime_type=block.mime_type)


def _structured(output: Output) -> dict[str, Any] | None:
    if output.details is None:
        return None
    try:
        value = json.loads(output.details)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
