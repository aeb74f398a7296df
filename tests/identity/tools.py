"""Tools for the identity tests: a guarded tool that asks once, and the principals its policy saw.

``guarded_ask`` asks a yes/no question in round 1 and completes in round 2. Its ``Guard`` lets
only principals with the role ``deployer`` through and records, per ``tag`` argument, the
principal it saw in every round, so a test proves the principal reached the Authorizer each time.
"""

from __future__ import annotations

import json
from collections import defaultdict

from scope_tool import (
    Authorization,
    Definition,
    Guard,
    InputRequest,
    Invocation,
    Output,
    Principal,
    Registry,
    Result,
)

SEEN: defaultdict[str, list[Principal | None]] = defaultdict(list)


class _AskOnce:
    def definition(self) -> Definition:
        return Definition(
            name="guarded_ask",
            description="Ask for approval once, then complete with the answer.",
            input_schema={
                "type": "object",
                "properties": {"tag": {"type": "string"}},
                "required": ["tag"],
            },
        )

    async def call(self, invocation: Invocation) -> Result:
        if invocation.continuation is None:
            return Result(
                input_request=InputRequest(
                    prompt=b'"approve?"', response_schema=b'{"type":"boolean"}', state=b"{}"
                )
            )
        return Result(output=Output.json_output(invocation.continuation.response))


def _deployers_only(authorization: Authorization) -> bool:
    tag = json.loads(authorization.arguments)["tag"]
    SEEN[tag].append(authorization.principal)
    return authorization.principal is not None and authorization.principal.has_role("deployer")


REGISTRY = Registry(Guard(_AskOnce(), _deployers_only))
