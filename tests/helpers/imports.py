"""Running code in a fresh interpreter where some installed packages look uninstalled.

An optional extra (the inbox's web stack, Pydantic AI) is installed for the test run; to show
what a user without it sees, the child process refuses to find those top-level packages.
"""

from __future__ import annotations

__all__ = ["without_packages"]


def without_packages(*names: str) -> str:
    """Python source that makes importing any of ``names`` (top-level) raise ``ModuleNotFoundError``.

    Put it before the code ``python -c`` runs.
    """
    return f"""
import sys

class _Uninstalled:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {names!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, _Uninstalled())
"""
