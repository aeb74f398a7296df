"""The LangChain / LangGraph extra: what a user without it sees, and that nothing else loads it.

This module imports no framework itself, so it runs (and says what it checks) wherever the
extra is missing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers.imports import without_packages
from helpers.workers import REPOSITORY


def _without(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", without_packages("langchain", "langchain_core", "langgraph") + code],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=REPOSITORY,
    )


def test_without_the_extra_the_module_says_how_to_install_it_and_the_core_still_imports():
    done = _without(
        "import scope_tool, scope_tool.agents, scope_tool.workers, scope_tool.client\n"
        "try:\n"
        "    import scope_tool.agents.langchain\n"
        "except ImportError as error:\n"
        "    print(type(error).__name__, error.name, error, sep='|')\n"
        "print(sorted(m for m in sys.modules if m.startswith(('langchain', 'langgraph'))))\n"
    )
    assert done.returncode == 0, done.stderr
    failure, loaded = done.stdout.strip().splitlines()
    kind, name, message = failure.split("|")
    assert (kind, name) == ("ImportError", "langchain_core")
    assert message.startswith("scope_tool.agents.langchain needs LangChain and LangGraph")
    assert message.endswith("pip install 'scope-tool[langchain]'")
    assert loaded == "[]"


def test_importing_the_core_and_a_worker_loads_no_langchain():
    code = (
        "import sys, scope_tool, scope_tool.agents, scope_tool.workers;"
        " print(sorted(m for m in sys.modules if m.startswith(('langchain', 'langgraph'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"


def test_without_the_extra_the_example_says_how_to_install_it():
    done = _without(
        "sys.argv = ['agent', 'run', 'write hi to notes.txt']\n"
        "import runpy\n"
        "runpy.run_module('examples.agent_langgraph.agent', run_name='__main__')\n"
    )
    assert done.returncode == 1, done
    assert "Traceback" not in done.stderr
    assert "this example needs LangChain and LangGraph" in done.stderr


def test_the_example_says_clearly_what_is_wrong(tmp_path: Path):
    def example(*args: str) -> tuple[int, str]:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "examples.agent_langgraph.agent",
                *args,
                "--db",
                str(tmp_path / "g.sqlite"),
            ],
            cwd=REPOSITORY,
            env=dict(os.environ, SCOPE_TOOL_ADDRESS="localhost:1"),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert "Traceback" not in done.stderr, done.stderr
        return done.returncode, done.stdout + done.stderr

    code, output = example("run", "x", "--model", "nosuch:model")
    assert code == 2
    assert output.startswith("error: model 'nosuch:model': Unable to infer model provider")
    code, output = example("resume", "--decision", "[1]")
    assert (code, output.strip()) == (2, "error: --decision must be a JSON object, got [1]")
    code, output = example("run", "write a to b")
    assert code == 2
    assert output.startswith("error: cannot reach Temporal at localhost:1")
