"""README "Writing your own tool", followed literally, next to a running ``scope-tool dev``.

``my_tools.py`` is written to the current folder (its text read from README.md), ``scope-tool worker
--tools my_tools:registry`` starts there on dev's own task queue, next to dev's example worker:
calls of both workers' tools complete on the right one, ``scope-tool tools`` lists both
registries, a typo gets "did you mean", and a stopped worker's tools leave the listing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ._cli import DevProcess, assert_user_error, cli, start_dev

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_my_tools() -> str:
    """The README's ``my_tools.py``: the python block that starts with that file name."""
    text = README.read_text()
    start = text.index("```python\n# my_tools.py\n") + len("```python\n")
    return text[start : text.index("```", start)]


def _wait_for_ready(worker: subprocess.Popen[str]) -> str:
    assert worker.stderr is not None
    seen = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = worker.stderr.readline()
        if not line:
            break
        seen.append(line)
        if "worker ready" in line:
            return line
    raise AssertionError(f"the worker never got ready: {''.join(seen)}")


def test_own_tools_next_to_dev_following_the_readme(
    dev_session: DevProcess, tmp_path: Path
) -> None:
    (tmp_path / "my_tools.py").write_text(readme_my_tools())
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    environment["SCOPE_TOOL_ADDRESS"] = dev_session.address
    worker = subprocess.Popen(
        [str(Path(sys.executable).parent / "scope-tool"), "worker", "--tools", "my_tools:registry"],
        cwd=tmp_path,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert "greet, refund" in _wait_for_ready(worker)
        greeted = cli(dev_session, "call", "greet", '{"name": "Ada"}', "--wait", "--timeout", "60")
        assert greeted.code == 0, greeted
        assert "Hello, Ada!" in greeted.stdout
        added = cli(dev_session, "call", "add", '{"a": 2, "b": 3}', "--wait", "--timeout", "60")
        assert added.code == 0, added  # dev's example worker still serves its own tools

        refund = cli(dev_session, "call", "refund", '{"order": "A-17"}', "--id", "refund-a17")
        assert refund.code == 0, refund
        # A person reads the question before answering it (an answer to a call that has not
        # asked yet is refused "not waiting for input").
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            shown = json.loads(cli(dev_session, "status", "refund-a17", "--json").stdout)
            if shown["phase"] == "AWAITING_INPUT":
                break
            time.sleep(0.1)
        answered = cli(dev_session, "answer", "refund-a17", "true", "--by", "alice")
        assert answered.code == 0, answered
        result = cli(dev_session, "result", "refund-a17", "--wait")
        assert result.code == 0, result
        assert "refunded A-17" in result.stdout

        listed = cli(dev_session, "tools")
        assert listed.code == 0, listed
        for name in ("greet", "refund", "add", "write_file", "deploy_plan"):
            assert name in listed.stdout, listed.stdout
        as_json = json.loads(cli(dev_session, "tools", "--json").stdout)
        by_name = {tool["name"]: tool for tool in as_json}
        assert by_name["refund"]["description"] == "Refund an order after approval"
        assert by_name["refund"]["input_schema"]["required"] == ["order"]
        assert len(by_name["greet"]["contract_digests"]) == 1

        typo = cli(dev_session, "call", "gret", '{"name": "Ada"}', "--id", "typo-call")
        assert_user_error(typo, code=1, contains="no worker serves tool 'gret'")
        assert "did you mean 'greet'?" in typo.stderr
        never = cli(dev_session, "status", "typo-call")
        assert_user_error(never, code=1, contains="no call with id 'typo-call'")

        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=30) == 0
        after = cli(dev_session, "tools")
        assert "greet" not in after.stdout, after.stdout
        assert "add" in after.stdout, after.stdout
    finally:
        if worker.poll() is None:
            worker.kill()
        worker.communicate()  # reaps it and closes its stderr pipe


def test_dev_serves_own_tools_beside_the_users_own_workflows_and_workers_modules(
    tmp_path: Path,
) -> None:
    """A project with its own ``workflows.py`` and ``workers.py`` (Temporal's usual names)."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "my_tools.py").write_text(readme_my_tools())
    for name in ("workflows", "workers"):
        (project / f"{name}.py").write_text(
            f"raise RuntimeError('the user\\'s own {name}.py was imported by scope-tool')\n"
        )
    dev = start_dev(tmp_path / "data", "--tools", "my_tools:registry", cwd=project)
    try:
        greeted = cli(dev, "call", "greet", '{"name": "Ada"}', "--wait", "--timeout", "60")
        assert greeted.code == 0, (greeted, dev.text)
        assert "Hello, Ada!" in greeted.stdout
        assert "was imported by scope-tool" not in dev.text
    finally:
        dev.stop(signal.SIGINT)


def test_tools_named_by_a_moved_module_path_name_the_new_one(dev_session: DevProcess) -> None:
    moved = cli(dev_session, "worker", "--tools", "workers.examples:registry")
    assert moved.code != 0
    assert "use --tools examples.tools:registry" in moved.stderr, moved
