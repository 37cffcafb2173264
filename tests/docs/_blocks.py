"""Find the code blocks of a Markdown page that the docs tests run, and the markers around them.

Markers are HTML comments, so the site does not show them and a reviewer sees them in the source:

``<!-- docs-test: skip REASON -->``
    on the line right before a fence: the block is not run. The reason is required.
``<!-- docs-test: setup`` ... ``-->``
    hidden Python run at that place, before the blocks after it (e.g. a lake with some
    history for a page that shows only the diff).

Fenced blocks tagged ``python``/``py`` run as Python, ``sh``/``bash`` as bash; all the blocks of
one page run in order, in one interpreter (later blocks see earlier names).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

PYTHON = {"python", "py"}
SHELL = {"sh", "bash"}
FENCE = re.compile(r"^(?P<indent>\s*)(?P<ticks>`{3,}|~{3,})\s*(?P<lang>[\w+-]*)")
SKIP = re.compile(r"<!--\s*docs-test:\s*skip\b(?P<reason>.*?)-->")
SETUP_START = re.compile(r"^\s*<!--\s*docs-test:\s*setup\s*$")


@dataclass(frozen=True)
class Block:
    page: str
    line: int  # 1-based line of the opening fence (or of the setup comment)
    kind: str  # "python", "shell" or "setup" (hidden Python)
    code: str
    skip: str | None = None  # the reason, when marked as not runnable


def blocks(path: Path, root: Path) -> list[Block]:
    """Every runnable (or marked) block of one page, in order."""
    page = path.relative_to(root).as_posix()
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0
    previous = ""
    while i < len(lines):
        line = lines[i]
        if SETUP_START.match(line):
            start = i
            body: list[str] = []
            i += 1
            while i < len(lines) and lines[i].strip() != "-->":
                body.append(lines[i])
                i += 1
            out.append(Block(page, start + 1, "setup", "\n".join(body) + "\n"))
            i += 1
            previous = ""
            continue
        m = FENCE.match(line)
        if m:
            indent, ticks, lang = m["indent"], m["ticks"], m["lang"].lower()
            start = i
            body = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(ticks):
                text = lines[i]
                body.append(text[len(indent) :] if text.startswith(indent) else text.lstrip())
                i += 1
            i += 1
            skip = SKIP.search(previous)
            kind = "python" if lang in PYTHON else "shell" if lang in SHELL else None
            if kind:
                reason = skip["reason"].strip() if skip else None
                out.append(Block(page, start + 1, kind, "\n".join(body) + "\n", reason))
            previous = ""
            continue
        if line.strip():
            previous = line
        i += 1
    return out


def pages(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.md") if not p.name.startswith("_"))
