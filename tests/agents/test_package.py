"""The package's public face, and what importing it loads."""

from __future__ import annotations

import subprocess
import sys

from helpers.imports import without_packages

import scope_tool.agents

# The public names in `__all__`'s order: types, then functions, each group sorted.
PUBLIC_NAMES = """
    AgentsError ModelResult ModelToolCall StrictModeError StrictProblem Turn TurnCall TurnError
    anthropic_tools call_id_for mcp_tools model_result openai_strict_problems openai_tools
    run_turn wait_for_stop
""".split()  # noqa: SIM905 (a word list reads better than one name per line)


def test_all_is_pinned_and_documented():
    assert scope_tool.agents.__all__ == PUBLIC_NAMES
    for name in PUBLIC_NAMES:
        assert getattr(scope_tool.agents, name).__doc__, name


def test_importing_the_package_loads_no_agent_framework_and_no_workflow_code():
    code = (
        "import sys, scope_tool.agents;"
        " print(sorted(m for m in sys.modules if m.startswith(('pydantic_ai', 'scope_tool.workflows._workflow'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"


# An interpreter where Pydantic AI is not installed (the core and a worker install without it).
_WITHOUT_PYDANTIC_AI = without_packages("pydantic_ai")


def _without_pydantic_ai(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _WITHOUT_PYDANTIC_AI + code],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_without_the_extra_the_toolset_module_says_how_to_install_it():
    done = _without_pydantic_ai(
        "try:\n"
        "    import scope_tool.agents.pydantic_ai\n"
        "except ImportError as error:\n"
        "    print(type(error).__name__, error.name, error, sep='|')\n"
    )
    assert done.returncode == 0, done.stderr
    kind, name, message = done.stdout.strip().split("|")
    assert (kind, name) == ("ImportError", "pydantic_ai")
    assert message.startswith("scope_tool.agents.pydantic_ai needs Pydantic AI")
    assert message.endswith("pip install 'scope-tool[pydantic-ai]'")


def test_without_the_extra_the_example_agent_says_how_to_install_it():
    done = _without_pydantic_ai(
        "sys.argv = ['agent', 'run', 'write hi to notes.txt']\n"
        "import runpy\n"
        "runpy.run_module('examples.agent.agent', run_name='__main__')\n"
    )
    assert done.returncode == 1, done
    assert "Traceback" not in done.stderr
    assert "this example needs Pydantic AI" in done.stderr
    assert "make setup" in done.stderr
