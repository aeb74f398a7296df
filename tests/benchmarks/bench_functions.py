"""The plain functions both sides of every benchmark run.

The engine wraps them as scope-tool tools (``bench_tools``) and the bare-Temporal baseline calls
them from ordinary activities (``bare_workflows``). Keeping the work identical and trivial means
the figures measure what each side adds around a tool call, not the tool itself.

This module imports nothing but the standard library so the workflow sandbox can load it.
"""

from __future__ import annotations

__all__ = ["approval_outcome", "approval_prompt", "echo_text"]


def echo_text(text: str) -> str:
    """Return ``text`` unchanged: a tool that completes at once."""
    return text


def approval_outcome(text: str, *, approved: bool) -> str:
    """The text a person's decision on ``text`` produces; unique per call, so results are checkable."""
    return f"{'approved' if approved else 'declined'}: {text}"


def approval_prompt(text: str) -> str:
    """The question a person is asked about ``text`` (the first round of an approval)."""
    return f"Approve {text!r}?"
