"""The Python samples in README.md and docs/ run as written."""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from examples.tools import registry as example_registry
from scope_tool import Request
from scope_tool.workers import build_worker

from ._markdown import ROOT, CodeBlock, doc_pages, read_page
from ._samples import assert_prints_match, compile_sample, run_sample


def _python_blocks(page: Path | None = None) -> list[CodeBlock]:
    pages = doc_pages() if page is None else [page]
    return [
        block for path in pages for block in read_page(path).blocks if block.language == "python"
    ]


def test_the_samples_are_found() -> None:
    assert len(_python_blocks()) >= 4


@pytest.mark.parametrize("block", _python_blocks(), ids=lambda block: block.where)
def test_every_python_sample_compiles(block: CodeBlock) -> None:
    compile_sample(block)


def _own_tool_block() -> CodeBlock:
    found = [b for b in _python_blocks(ROOT / "README.md") if b.text.startswith("# my_tools.py")]
    assert len(found) == 1, "README.md has no (or several) `# my_tools.py` samples"
    return found[0]


def test_your_own_tool_loads_as_the_worker_loads_it(tmp_path: Path) -> None:
    """Saved as my_tools.py where the command runs, ``--tools my_tools:registry`` finds it."""
    (tmp_path / "my_tools.py").write_text(_own_tool_block().text, encoding="utf-8")
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "from scope_tool.workers import load_registry\n"
            "registry = load_registry('my_tools:registry')\n"
            "print(sorted(d.name for d in registry.definitions()))",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip() == "['greet', 'refund']"


async def test_your_own_tool_behaves_as_the_readme_says() -> None:
    namespace: dict[str, Any] = {"__name__": "my_tools"}
    exec(compile_sample(_own_tool_block()), namespace)
    registry = namespace["registry"]

    greet = registry.resolve("greet")
    greeted = await greet.call(
        greet.contract.prepare(Request(name="greet", arguments='{"name": "Ada"}'))
    )
    assert greeted.output.text() == "Hello, Ada!"

    refund = registry.resolve("refund")
    request = Request(name="refund", arguments='{"order": "A-17"}')
    asked = await refund.call(refund.contract.prepare(request))
    assert asked.input_request is not None
    assert asked.input_request.prompt == b'"Refund order A-17?"'
    approved = asked.input_request.continuation(b"true")
    done = await refund.call(refund.contract.prepare(request, approved))
    assert done.output.text() == "refunded A-17"
    declined = asked.input_request.continuation(b"false")
    assert (await refund.call(refund.contract.prepare(request, declined))).output.text() == (
        "refund declined"
    )


@pytest.mark.parametrize(
    "block", _python_blocks(ROOT / "docs" / "protocol.md"), ids=lambda block: block.where
)
async def test_protocol_sample_runs(block: CodeBlock) -> None:
    printed = await run_sample(block)
    assert_prints_match(block, printed)


@pytest.mark.parametrize(
    "block", _python_blocks(ROOT / "docs" / "runtime.md"), ids=lambda block: block.where
)
async def test_runtime_sample_runs_against_a_server(
    block: CodeBlock, temporal_client: Any, temporal_address: str, task_queue: str
) -> None:
    """Run as written against the session's server, with a worker serving the example tools.

    Only where it connects and the call id change: the session server is not on 7233, each test
    has its own task queue, and call ids are unique per namespace.
    """
    call_id = f"deploy-{uuid.uuid4().hex[:8]}"
    source = block.text.replace('"localhost:7233"', repr(temporal_address))
    source = source.replace('task_queue="scope-tools"', f"task_queue={task_queue!r}")
    source = source.replace('"deploy-42"', repr(call_id))
    assert re.search(r"ToolCalls\.connect\(", source)
    async with build_worker(temporal_client, example_registry, task_queue=task_queue):
        printed = await run_sample(block, source)
    assert_prints_match(block, printed, source.replace("deploy-42", call_id))


@pytest.mark.timeout(240)
def test_the_testing_page_is_a_pytest_file_that_passes(tmp_path: Path) -> None:
    """docs/testing.md's test file and settings, run by pytest as a user's suite runs them."""
    blocks = read_page(ROOT / "docs" / "testing.md").blocks
    (settings,) = [block for block in blocks if block.language == "toml"]
    (test_file,) = _python_blocks(ROOT / "docs" / "testing.md")
    (tmp_path / "pyproject.toml").write_text(settings.text, encoding="utf-8")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_refund.py").write_text(test_file.text, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=220,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "3 passed" in done.stdout


def _pydantic_ai_reference_block() -> CodeBlock:
    found = [
        b for b in _python_blocks(ROOT / "docs" / "agents.md") if "async def first_turn" in b.text
    ]
    assert len(found) == 1, "docs/agents.md has no (or several) Pydantic AI reference samples"
    return found[0]


async def test_the_pydantic_ai_reference_runs_as_written_off_the_default_port(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    temporal_client: Any,
    temporal_address: str,
    task_queue: str,
) -> None:
    """Copied as written, with the address and task queue in SCOPE_TOOL_* settings (the session
    server is not on 7233), the three steps run offline with the model the page names."""
    pytest.importorskip("pydantic_ai")
    from examples.agent.tools import registry as agent_registry

    conversation = f"chat-{uuid.uuid4().hex[:8]}"
    source = _pydantic_ai_reference_block().text.replace('"chat-42"', repr(conversation))
    assert 'localhost:7233")' not in source, "the sample must not pin the default address"
    monkeypatch.setenv("SCOPE_TOOL_ADDRESS", temporal_address)
    monkeypatch.setenv("SCOPE_TOOL_TASK_QUEUE", task_queue)
    monkeypatch.setenv("SCOPE_TOOL_FILES_DIR", str(tmp_path / "files"))
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "pydantic_ai_reference"}
    exec(compile_sample(_pydantic_ai_reference_block(), source), namespace)
    async with build_worker(temporal_client, agent_registry, task_queue=task_queue):
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            await namespace["first_turn"]("test")
        call_ids = printed.getvalue().split()
        assert call_ids == [f"{conversation}:pyd_ai_tool_call_id__write_file"]
        await namespace["answer_from_code"](call_ids[0])
        output = await namespace["next_turn"]("test")
    assert isinstance(output, str), output
    assert "wrote 1 bytes to a" in output, output
