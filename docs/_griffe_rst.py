"""Griffe extension: show the reST roles of our numpydoc docstrings as Markdown code.

The docstrings are written for numpydoc (``:class:`Repo```, ``:meth:`commit```, a paragraph
ending in ``::`` before an example); mkdocstrings renders them as Markdown, where those would
show literally. This rewrites them at load time, for the site only.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

DOCTEST_SKIP = re.compile(r"\s*#\s*doctest:.*$")
ROLE = re.compile(r":(?:py:)?(?:class|meth|func|attr|exc|mod|data|obj|const):`~?([^`]+)`")
LITERAL_INTRO = re.compile(r"(?<=\S)::[ \t]*$", re.MULTILINE)


def fence_doctests(text: str) -> str:
    """Put ``>>>`` sessions in fenced code blocks (Markdown would read them as quotes)."""
    out: list[str] = []
    block: list[str] = []
    indent = ""

    def close() -> None:
        if block:
            out.extend([f"{indent}```pycon", *block, f"{indent}```"])
            block.clear()

    for line in text.splitlines():
        stripped = line.lstrip()
        if stripped.startswith((">>>", "... ")) or (stripped == "..." and block):
            if not block:
                indent = line[: len(line) - len(stripped)]
            block.append(indent + DOCTEST_SKIP.sub("", stripped))
        else:
            close()
            out.append(line)
    close()
    return "\n".join(out)


def rewrite(text: str) -> str:
    text = ROLE.sub(lambda m: f"`{m.group(1)}`", text)
    return fence_doctests(LITERAL_INTRO.sub(":", text))


class ReSTRoles(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        seen: set[int] = set()
        stack: list[Any] = [pkg]
        while stack:
            obj = stack.pop()
            if id(obj) in seen or obj.is_alias:
                continue
            seen.add(id(obj))
            if obj.docstring is not None:
                obj.docstring.value = rewrite(obj.docstring.value)
            stack.extend(obj.members.values())
