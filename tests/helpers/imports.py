"""Running code in a fresh interpreter: which modules it loads, or with packages hidden.

An optional extra (the inbox's web stack, Pydantic AI) is installed for the test run; to show
what a user without it sees, the child process refuses to find those top-level packages.
What a piece of code imports can only be seen in an interpreter that has imported nothing else.
"""

from __future__ import annotations

import ast
import subprocess
import sys

__all__ = ["modules_loaded_by", "without_packages"]


def modules_loaded_by(code: str, candidates: tuple[str, ...]) -> set[str]:
    """The ``candidates`` (module names) that ``code`` leaves in ``sys.modules`` when a fresh
    interpreter runs it.

    The child leaves through ``os._exit``, as the CLI's ``main()`` does: a temporalio client can
    crash an interpreter's normal exit (sdk-python issue 300).
    """
    probe = (
        f"{code}\n"
        "import os, sys\n"
        f"print(sorted(m for m in {candidates!r} if m in sys.modules), flush=True)\n"
        "os._exit(0)\n"
    )
    ran = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    assert ran.returncode == 0, ran.stderr
    return set(ast.literal_eval(ran.stdout.strip().splitlines()[-1]))


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
