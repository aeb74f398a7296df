"""An ADK agent whose file writes wait for a person, and which survives its own crash meanwhile.

Run from the repository root, with a server and a worker for ``examples.agent.tools``::

    scope-tool dev --tools examples.agent.tools:registry              # terminal 1
    python -m examples.agent_adk.agent run "write hello to notes.txt"  # terminal 2
    scope-tool answer <call id> '{"decision": "approve"}'              # the person
    python -m examples.agent_adk.agent resume                          # the agent, later

``run`` asks the model; its ``write_file`` call waits for approval, so ADK emits its tool
confirmation request and the run ends (``--hold`` keeps the process alive, as an agent server
would be, so it can be killed to prove nothing is lost). The session lives in ADK's SQLite
session service (``--db``). ``resume`` reads the durable calls the person answered and resumes
the session with ADK's own confirmation message; with ``--wait`` it waits for the answer first,
and ``--confirm`` (or ``--deny REASON``) answers through ADK's confirmation instead, as ADK's
web UI would.

The model is scripted by default (offline, no key): it understands "write TEXT to FILE".
``--model gemini-2.5-flash`` (or any model name ADK resolves) uses a real model when its API
key is set (``GOOGLE_API_KEY``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import uuid
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

try:
    from google.adk.agents import LlmAgent
    from google.adk.models import BaseLlm, LlmRequest, LlmResponse
    from google.adk.runners import Runner
    from google.adk.sessions.sqlite_session_service import SqliteSessionService
    from google.adk.tools.tool_confirmation import ToolConfirmation
    from google.genai import types
except ImportError as missing:
    raise SystemExit(
        f"this example needs Google ADK ({missing}): run `make setup`,"
        " or pip install 'scope-tool[google-adk]'"
    ) from None

from examples.agent.tools import registry
from scope_tool.agents.google_adk import (
    CONFIRMATION_CALL,
    ScopeToolset,
    confirmation_responses,
    waiting_calls,
)
from scope_tool.client import ToolCalls

APP = "files"
_WRITE = re.compile(r"write (?P<content>.+?) (?:to|into) (?P<path>\S+)\s*$", re.IGNORECASE)
INSTRUCTIONS = "You manage files with the tools you have. Never overwrite; say what you did."


class ScriptedModel(BaseLlm):
    """A stand-in model: "write TEXT to FILE" becomes one write_file call, then a summary."""

    model: str = "scripted"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        yield LlmResponse(content=types.Content(role="model", parts=[self.reply(llm_request)]))

    @staticmethod
    def reply(llm_request: LlmRequest) -> types.Part:
        last = llm_request.contents[-1] if llm_request.contents else None
        for part in (last.parts or []) if last is not None else []:
            if part.function_response is not None:
                said = part.function_response.response or {}
                if "error" in said:
                    return types.Part(text=f"The tool failed: {said['error']}")
                result = str(said.get("result"))
                if "is waiting for approval" in result:  # the call waits for a person
                    return types.Part(text=f"Not yet: {result}")
                return types.Part(text=f"Done. The tool said: {result}")
            if part.text and (asked := _WRITE.search(part.text)):
                arguments = {"path": asked["path"], "content": asked["content"].strip("\"'")}
                return types.Part(
                    function_call=types.FunctionCall(name="write_file", args=arguments)
                )
        return types.Part(text='I only understand "write TEXT to FILE".')


def model(name: str) -> BaseLlm | str:
    return ScriptedModel() if name == "scripted" else name  # ADK resolves a model name


def build_runner(calls: ToolCalls, db: Path, model_name: str) -> Runner:
    db.parent.mkdir(parents=True, exist_ok=True)
    agent = LlmAgent(
        name="files_agent",
        model=model(model_name),
        instruction=INSTRUCTIONS,
        tools=[ScopeToolset(calls, registry)],  # the conversation id is the ADK session's
    )
    return Runner(app_name=APP, agent=agent, session_service=SqliteSessionService(str(db)))


async def run_once(runner: Runner, user: str, session_id: str, message: types.Content) -> bool:
    """Run one invocation, printing the model's text; True if a call waits for a person."""
    waiting = False
    async for event in runner.run_async(user_id=user, session_id=session_id, new_message=message):
        for call in event.get_function_calls():
            if call.name == CONFIRMATION_CALL:
                waiting = True
                report_waiting(call)
        if event.content and event.content.parts and event.author != "user":
            for part in event.content.parts:
                if part.text and not part.thought:
                    print(part.text, flush=True)
    return waiting


def report_waiting(call: types.FunctionCall) -> None:
    args = call.args or {}
    original = args.get("originalFunctionCall") or {}
    payload = (args.get("toolConfirmation") or {}).get("payload") or {}
    call_id = payload.get("call_id")
    print(f"waiting for approval: {original.get('name')} {json.dumps(original.get('args'))}")
    print(f"  call id: {call_id}")
    print(f'  approve: scope-tool answer {call_id} \'{{"decision": "approve"}}\'')
    print(f'  deny:    scope-tool answer {call_id} \'{{"decision": "deny", "reason": "..."}}\'')


async def run(args: argparse.Namespace, calls: ToolCalls) -> int:
    runner = build_runner(calls, args.db, args.model)
    session = await runner.session_service.create_session(
        app_name=APP, user_id=args.user, session_id=args.session or f"chat-{uuid.uuid4().hex[:12]}"
    )
    prompt = types.Content(role="user", parts=[types.Part(text=args.prompt)])
    waiting = await run_once(runner, args.user, session.id, prompt)
    if waiting:
        print(
            f"session {session.id} saved in {args.db}; resume with: "
            f"python -m examples.agent_adk.agent resume --session {session.id}",
            flush=True,
        )
        if args.hold:
            print("holding (an agent server would keep running here)", flush=True)
            await asyncio.Event().wait()
    return 0


async def resume(args: argparse.Namespace, calls: ToolCalls) -> int:
    runner = build_runner(calls, args.db, args.model)
    service = runner.session_service
    session_id = args.session
    if session_id is None:
        listed = await service.list_sessions(app_name=APP, user_id=args.user)
        if not listed.sessions:
            print(f"error: no saved session in {args.db}", file=sys.stderr)
            return 2
        session_id = max(listed.sessions, key=lambda s: s.last_update_time).id
    session = await service.get_session(app_name=APP, user_id=args.user, session_id=session_id)
    if session is None:
        print(f"error: no session {session_id!r} in {args.db}", file=sys.stderr)
        return 2
    if not waiting_calls(session):
        print(f"nothing to resume: no call of session {session.id} waits", file=sys.stderr)
        return 3
    if args.confirm or args.deny is not None:
        message = adk_confirmation(session.events, deny=args.deny)
    else:
        message = await confirmation_responses(calls, session, wait=args.wait)
    if message is None:
        print("still waiting for a person; answer first, or resume with --wait", file=sys.stderr)
        return 3
    waiting = await run_once(runner, args.user, session.id, message)
    return 0 if not waiting else 3


def adk_confirmation(events: list[Any], *, deny: str | None) -> types.Content | None:
    """ADK's own confirmation for every open request, as ADK's web UI sends it."""
    answered = {r.id for e in events if e.author == "user" for r in e.get_function_responses()}
    payload = {"reason": deny} if deny else None
    confirmation = ToolConfirmation(confirmed=deny is None, payload=payload)
    parts = [
        types.Part(
            function_response=types.FunctionResponse(
                id=call.id,
                name=CONFIRMATION_CALL,
                response=confirmation.model_dump(by_alias=True, exclude_none=True),
            )
        )
        for event in events
        for call in event.get_function_calls()
        if call.name == CONFIRMATION_CALL and call.id not in answered
    ]
    return types.Content(role="user", parts=parts) if parts else None


def parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", type=Path, default=Path(".scope-tool/adk-sessions.db"))
    common.add_argument("--user", default="me")
    common.add_argument("--session", help="session id (default: a new one / the latest)")
    common.add_argument("--model", default=os.environ.get("SCOPE_TOOL_AGENT_MODEL", "scripted"))
    common.add_argument("--address", default=os.environ.get("SCOPE_TOOL_ADDRESS", "localhost:7233"))
    common.add_argument(
        "--task-queue", default=os.environ.get("SCOPE_TOOL_TASK_QUEUE", "scope-tools")
    )
    top = argparse.ArgumentParser(
        prog="python -m examples.agent_adk.agent",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = top.add_subparsers(dest="command", required=True)
    start = commands.add_parser("run", parents=[common], help="start a conversation")
    start.add_argument("prompt")
    start.add_argument("--hold", action="store_true", help="stay alive once a call waits")
    later = commands.add_parser("resume", parents=[common], help="continue a saved session")
    later.add_argument("--wait", action="store_true", help="wait for the person's answer")
    later.add_argument("--confirm", action="store_true", help="approve with ADK's confirmation")
    later.add_argument("--deny", metavar="REASON", help="deny with ADK's confirmation")
    return top


async def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        LlmAgent(name="check", model=model(args.model)).canonical_model  # noqa: B018
    except ValueError as error:
        print(f"error: model {args.model!r}: {error}", file=sys.stderr)
        return 2
    try:
        calls = await ToolCalls.connect(args.address, task_queue=args.task_queue)
    except RuntimeError as error:
        print(f"error: cannot reach Temporal at {args.address} ({error});"
              " start one with: scope-tool dev --tools examples.agent.tools:registry",
              file=sys.stderr)  # fmt: skip
        return 2
    return await (run(args, calls) if args.command == "run" else resume(args, calls))


if __name__ == "__main__":
    # No telemetry export from this example. Set here, not at import: a process importing the
    # module (a test, your app) keeps its own OpenTelemetry setup.
    os.environ.setdefault("OTEL_SDK_DISABLED", "true")
    code = asyncio.run(main())
    sys.stdout.flush()
    os._exit(code)  # temporalio clients can crash at interpreter exit (sdk-python issue 300)
