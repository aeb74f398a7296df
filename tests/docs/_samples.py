"""Running a Markdown Python sample as written: top-level ``await`` allowed, prints compared.

A sample's ``print(...)  # expected`` comments are part of what it teaches, so they are checked:
each ``print`` must write exactly the text of its comment, unless the comment elides
(``...``).
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import io
from typing import Any

from ._markdown import CodeBlock


def compile_sample(block: CodeBlock, source: str | None = None) -> Any:
    return compile(
        block.text if source is None else source,
        block.where,
        "exec",
        flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
        dont_inherit=True,
    )


def expected_prints(source: str) -> list[str | None]:
    """For each ``print`` call, in source order, the text its comment promises (None: elided).

    Each print must run exactly once: samples print outside loops.
    """
    lines = source.splitlines()
    expected: list[str | None] = []
    calls = [
        node
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print"
    ]
    for call in sorted(calls, key=lambda node: node.lineno):
        line = lines[(call.end_lineno or call.lineno) - 1]
        _, hash_sign, comment = line.partition("  # ")
        text = comment.strip() if hash_sign else None
        expected.append(None if text is None or "..." in text else text)
    return expected


async def run_sample(block: CodeBlock, source: str | None = None) -> list[str]:
    """Execute the sample in a fresh namespace; return what it printed, line by line."""
    code = compile_sample(block, source)
    printed = io.StringIO()
    namespace: dict[str, Any] = {"__name__": f"sample_{block.line}"}
    with contextlib.redirect_stdout(printed):
        outcome = eval(code, namespace)
        if inspect.iscoroutine(outcome):
            await outcome
    return printed.getvalue().splitlines()


def assert_prints_match(block: CodeBlock, printed: list[str], source: str | None = None) -> None:
    expected = expected_prints(block.text if source is None else source)
    assert len(printed) == len(expected), (block.where, printed, expected)
    for line, promise in zip(printed, expected, strict=True):
        if promise is not None:
            assert line == promise, f"{block.where}: printed {line!r}, the comment says {promise!r}"
