"""A tool that carries a secret through every payload: arguments, prompt, state, answer, output."""

from __future__ import annotations

import json

from scope_tool import Definition, InputRequest, Invocation, Output, Registry, Result

_ANSWER_SCHEMA = json.dumps(
    {
        "type": "object",
        "properties": {"approve": {"type": "boolean"}, "comment": {"type": "string"}},
        "required": ["approve", "comment"],
        "additionalProperties": False,
    }
)


class SecretNote:
    """Round 1 asks about ``note`` (prompt and state hold it); round 2 echoes the comment."""

    def definition(self) -> Definition:
        return Definition(
            name="secret_note",
            description="ask a person about a confidential note",
            input_schema={
                "type": "object",
                "properties": {"note": {"type": "string"}},
                "required": ["note"],
                "additionalProperties": False,
            },
        )

    async def call(self, invocation: Invocation) -> Result:
        note = json.loads(invocation.arguments)["note"]
        continuation = invocation.continuation
        if continuation is None:
            return Result(
                input_request=InputRequest(
                    prompt=json.dumps({"question": "file this note?", "note": note}),
                    response_schema=_ANSWER_SCHEMA,
                    state=json.dumps({"note": note}),
                )
            )
        answer = json.loads(continuation.response)
        kept = json.loads(continuation.state)["note"]
        verdict = "filed" if answer["approve"] else "dropped"
        return Result(output=Output.text_output(f"{verdict} {kept}: {answer['comment']}"))


REGISTRY = Registry(SecretNote())
