"""The package's public face, and what importing it loads."""

from __future__ import annotations

import subprocess
import sys

import scope_tool_agents

# The public names in `__all__`'s order: types, then functions, each group sorted.
PUBLIC_NAMES = """
    AgentsError ModelResult ModelToolCall StrictModeError StrictProblem Turn TurnCall TurnError
    anthropic_tools call_id_for mcp_tools model_result openai_strict_problems openai_tools
    run_turn start_and_wait wait_for_stop
""".split()  # noqa: SIM905 (a word list reads better than one name per line)


def test_all_is_pinned_and_documented():
    assert scope_tool_agents.__all__ == PUBLIC_NAMES
    for name in PUBLIC_NAMES:
        assert getattr(scope_tool_agents, name).__doc__, name


def test_importing_the_package_loads_no_agent_framework_and_no_workflow_code():
    code = (
        "import sys, scope_tool_agents;"
        " print(sorted(m for m in sys.modules if m.startswith(('pydantic_ai', 'workflows._workflow'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"
