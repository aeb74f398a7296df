"""Reading the project's Markdown the way a reader and GitHub do: pages, code blocks, anchors, links.

The docs tests check what a reader would follow: relative links and anchors (GitHub's heading
slugs), the Python samples, and the ``scope-tool`` command lines. Fenced code is kept apart from
prose, so a ``# comment`` in a code block is never taken for a heading.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Pages other engineers write on their own branches; README.md and docs/README.md link them
# already. Until they are merged a link to one of them may dangle (without an anchor); once a
# page exists, links to it and into it are checked like any other.
PAGES_FROM_OTHER_BRANCHES: frozenset[Path] = frozenset({ROOT / "docs" / "schemas.md"})


def doc_pages() -> list[Path]:
    """README.md and every page under docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@dataclass(frozen=True, slots=True, kw_only=True)
class CodeBlock:
    page: Path
    line: int  # 1-based line of the opening fence
    language: str
    text: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Page:
    path: Path
    prose: list[tuple[int, str]]  # (line number, text) outside fenced code
    blocks: list[CodeBlock]


_FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+-]*)")


def read_page(path: Path) -> Page:
    prose: list[tuple[int, str]] = []
    blocks: list[CodeBlock] = []
    fence: str | None = None
    language, start, body = "", 0, []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        opened = _FENCE.match(line)
        if fence is None and opened:
            fence, language, start, body = opened.group(2), opened.group(3), number, []
        elif fence is not None and line.strip().startswith(fence):
            blocks.append(
                CodeBlock(page=path, line=start, language=language, text="\n".join(body) + "\n")
            )
            fence = None
        elif fence is not None:
            body.append(line)
        else:
            prose.append((number, line))
    assert fence is None, f"{path}: the code block opened at line {start} is never closed"
    return Page(path=path, prose=prose, blocks=blocks)


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Page) -> set[str]:
    """Every heading anchor of ``page``, numbered the way GitHub numbers repeats."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for _, line in page.prose:
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not heading:
            continue
        slug = github_slug(heading.group(1))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


_INLINE_CODE = re.compile(r"`+[^`]*`+")
_LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def paragraphs(page: Page) -> list[tuple[int, str]]:
    """(first line, text) of each run of non-blank prose lines, joined: code spans may wrap."""
    found: list[tuple[int, str]] = []
    current: list[str] = []
    first = 0
    previous = -1
    for number, line in page.prose:
        if not line.strip() or number != previous + 1:
            if current:
                found.append((first, " ".join(current)))
            current = []
        if line.strip():
            if not current:
                first = number
            current.append(line.strip())
        previous = number
    if current:
        found.append((first, " ".join(current)))
    return found


def links(page: Page) -> list[tuple[int, str]]:
    """(line, target) of every Markdown link and image in the prose (not in code spans)."""
    found: list[tuple[int, str]] = []
    for number, text in paragraphs(page):
        for match in _LINK.finditer(_INLINE_CODE.sub("", text)):
            found.append((number, match.group(1)))
    return found


def inline_code(page: Page) -> list[tuple[int, str]]:
    """(line, text) of every inline code span in the prose."""
    found: list[tuple[int, str]] = []
    for number, text in paragraphs(page):
        for match in _INLINE_CODE.finditer(text):
            found.append((number, match.group(0).strip("`").strip()))
    return found
