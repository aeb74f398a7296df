"""Where the stress scenarios record what they measured (the README quotes these figures)."""

from __future__ import annotations

import json
import os
from pathlib import Path

FIGURES_FILE = Path(
    os.environ.get("SCOPE_TOOL_STRESS_FIGURES", "test-artifacts/stress-figures.json")
)
"""Where each stress scenario records its measured figures (for the README)."""


def record_figures(scenario: str, figures: dict[str, object]) -> None:
    """Merge one scenario's figures into :data:`FIGURES_FILE` and print them."""
    FIGURES_FILE.parent.mkdir(parents=True, exist_ok=True)
    existing: dict[str, object] = {}
    if FIGURES_FILE.is_file():
        existing = json.loads(FIGURES_FILE.read_text())
    existing[scenario] = figures
    FIGURES_FILE.write_text(json.dumps(existing, indent=2, sort_keys=True) + "\n")
    print(f"\n[{scenario}] {json.dumps(figures, sort_keys=True)}")
