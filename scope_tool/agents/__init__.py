"""scope_tool.agents: what an agent needs from the durable tool engine, framework-neutral.

* Tool definitions a model provider accepts: :func:`openai_tools` (with
  :func:`openai_strict_problems`, what breaks OpenAI strict mode), :func:`anthropic_tools`,
  :func:`mcp_tools`.
* The text a model should see for a call: :func:`model_result`.
* Whole turns: :func:`run_turn` starts a model turn's tool calls together, with call ids derived
  from the turn and the model's tool-call ids, and returns when each has ended or waits for a
  person.

Framework integrations live in their own modules behind extras: ``scope_tool.agents.pydantic_ai``
(``pip install 'scope-tool[pydantic-ai]'``), ``.openai_agents`` (``[openai-agents]``),
``.langchain`` (``[langchain]``) and ``.google_adk`` (``[google-adk]``); importing this package
loads none of them.
"""

from scope_tool.agents._formats import (
    StrictProblem,
    anthropic_tools,
    mcp_tools,
    openai_strict_problems,
    openai_tools,
)
from scope_tool.agents._results import ModelResult, model_result
from scope_tool.agents._turns import (
    ModelToolCall,
    Turn,
    TurnCall,
    call_id_for,
    run_turn,
    wait_for_stop,
)
from scope_tool.agents.errors import AgentsError, StrictModeError, TurnError

__all__ = [
    "AgentsError",
    "ModelResult",
    "ModelToolCall",
    "StrictModeError",
    "StrictProblem",
    "Turn",
    "TurnCall",
    "TurnError",
    "anthropic_tools",
    "call_id_for",
    "mcp_tools",
    "model_result",
    "openai_strict_problems",
    "openai_tools",
    "run_turn",
    "wait_for_stop",
]
