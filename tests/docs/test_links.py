"""Every relative link and anchor in README.md and docs/*.md leads somewhere that exists."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

import pytest

from ._markdown import PAGES_FROM_OTHER_BRANCHES, ROOT, anchors, doc_pages, links, read_page

_EXTERNAL = ("http://", "https://", "mailto:")


def _targets() -> list[tuple[str, Path, str]]:
    found = []
    for path in doc_pages():
        for line, target in links(read_page(path)):
            found.append((f"{path.relative_to(ROOT)}:{line}", path, target))
    return found


def test_the_pages_have_links_to_check() -> None:
    """Guards the parser itself: a regression that finds no links would pass everything."""
    targets = _targets()
    assert len(targets) >= 40, targets
    assert any(target.endswith("docs/cli.md") for _, _, target in targets)
    assert any("#" in target for _, _, target in targets)


@pytest.mark.parametrize(("where", "page", "target"), _targets(), ids=lambda value: str(value))
def test_link_resolves(where: str, page: Path, target: str) -> None:
    if target.startswith(_EXTERNAL):
        return  # no network here; external links are not followed
    file_part, _, anchor = target.partition("#")
    destination = (page.parent / unquote(file_part)).resolve() if file_part else page
    assert destination.is_relative_to(ROOT), f"{where}: {target} leaves the repository"
    if not destination.exists():
        missing = (
            f"{where}: {target} points to {destination.relative_to(ROOT)}, which does not exist"
        )
        assert destination in PAGES_FROM_OTHER_BRANCHES, missing
        assert not anchor, f"{missing} (so its anchor cannot be checked)"
        return
    if anchor:
        assert destination.suffix == ".md", f"{where}: an anchor into a non-Markdown file"
        known = anchors(read_page(destination))
        assert anchor in known, (
            f"{where}: {target}: no heading with anchor #{anchor} in "
            f"{destination.relative_to(ROOT)} (anchors: {sorted(known)})"
        )
