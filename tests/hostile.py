"""Hostile text for the escaping tests: what anyone with write access to a catalog, or anyone
who can send a link, may put where the dashboard, the widgets and the reprs show text.

Every tag a payload would create carries the attribute ``zlh``, and every script it would run
sets ``window.__xss``: so "an element was created from the text" is "an element with a
``zlh`` attribute exists" (or a tag named ``zlh``, or a link to a ``zlh`` address), whatever
the page's own markup is. Markdown mixtures (emphasis, links, headings, entities, math) are
caught by the other half of each test: the text must be shown as it was written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any

from hypothesis import strategies as st

PAYLOADS = [
    '<img zlh src=x onerror="window.__xss=1">',
    "<script zlh>window.__xss=2</script>",
    '"><svg zlh onload="window.__xss=3">',
    "'><details zlh open ontoggle='window.__xss=4'>",
    "[click](javascript:window.__xss=5)",
    '<a zlh href="javascript:window.__xss=6">link</a>',
    "javascript:window.__xss=7",
    "**bold** _em_ `code` # heading",
    "<zlh>",
    "http://zlh.example/x www.zlh.example",
    "&lt;b&gt; &amp; &#60;i&#62;",
    "$x^2$ $$y$$",
    "{{7*7}} ${7*7}",
    "<iframe zlh srcdoc='<script>window.__xss=8</script>'></iframe>",
    "- item\n1. one\n> quote\n---",
    "<!-- zlh -->",
]

_TAGS = ["img src=x", "svg", "details open", "video src=x", "iframe", "input autofocus", "b"]
_EVENTS = ["onerror", "onload", "ontoggle", "onfocus", "onmouseover", "onclick"]
# Printable text and a few letters from elsewhere; no control characters (names refuse them,
# and browsers and Python disagree about which of them are white space).
_TEXT = st.text(
    alphabet=st.sampled_from(list("abcXYZ019 <>&\"'`=/\\*_#[]()!:;.,-{}$|~\n") + list("éß中✓")),
    max_size=8,
)


@st.composite
def _tag(draw: st.DrawFn) -> str:
    tag = draw(st.sampled_from(_TAGS))
    event = draw(st.sampled_from(_EVENTS))
    quote = draw(st.sampled_from(['"', "'", ""]))
    close = draw(st.sampled_from([">", "/>", f"></{tag.split()[0]}>"]))
    return f"<{tag} zlh {event}={quote}window.__xss=9{quote}{close}"


def hostile_text(min_size: int = 1) -> st.SearchStrategy[str]:
    """Text mixing the payloads, generated tags and random printable characters."""
    piece = st.one_of(st.sampled_from(PAYLOADS), _tag(), _TEXT)
    return (
        st.lists(piece, min_size=min_size, max_size=4)
        .map("".join)
        .filter(lambda s: s.strip() != "")
    )


def hostile_name() -> st.SearchStrategy[str]:
    """A node name (group or array): anything but ``/``, ``\\``, newlines, ``.`` and ``..``."""
    return (
        hostile_text()
        .map(lambda s: s.replace("/", "|").replace("\\", "|").replace("\n", " "))
        .filter(lambda s: s.strip() not in ("", ".", ".."))
    )


# Ref names allow only letters, digits and _ . - /: what Markdown can still misread.
REF_NAMES = ["__bold__", "_em_", "a__b__c", "x.y/_z_", "v1.0-rc_1_", "a--b"]


@dataclass(frozen=True)
class Hostile:
    """One hostile value for every field a user can write."""

    message: str
    author: str
    meta_key: str
    meta_value: str
    attr_key: str
    attr_value: str
    group: str
    array: str
    dim: str
    branch: str
    tag: str
    session_author: str


@st.composite
def hostiles(draw: st.DrawFn) -> Hostile:
    text = hostile_text()
    name = hostile_name()
    group = draw(name)
    array = draw(name.filter(lambda s: s != group))
    branch = draw(st.sampled_from(REF_NAMES))
    tag = draw(st.sampled_from([r for r in REF_NAMES if r != branch]))
    return Hostile(
        message=draw(text),
        author=draw(text.map(lambda s: s.replace("\n", " "))),
        meta_key=draw(text),
        meta_value=draw(text),
        attr_key=draw(text),
        attr_value=draw(text),
        group=group,
        array=array,
        dim=draw(name.filter(lambda s: s not in ("y", "x"))),
        branch=branch,
        tag="t-" + tag,
        session_author=draw(text.map(lambda s: s.replace("\n", " "))),
    )


class _Scan(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("zlh", "script", "img", "iframe"):
            self.problems.append(f"<{tag}> element")
        for name, value in attrs:
            v = (value or "").strip().lower()
            if name == "zlh" or name.startswith("on"):
                self.problems.append(f"<{tag} {name}> attribute")
            if name in ("href", "src", "action", "formaction", "xlink:href") and (
                v.startswith("javascript:") or "zlh" in v
            ):
                self.problems.append(f"<{tag} {name}={value!r}>")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def scan_html(markup: str) -> tuple[list[str], str]:
    """(elements and attributes made from hostile text, the text the markup shows)."""
    p = _Scan()
    p.feed(markup)
    p.close()
    return p.problems, "".join(p.text)


def squash(text: str) -> str:
    """White space as a browser's text shows it: runs of it are one space."""
    return re.sub(r"\s+", " ", text)


@dataclass(frozen=True)
class Built:
    """What :func:`build` made: the commits and the session to point pages at."""

    h: Hostile
    base: str  # the first commit: message, author, metadata, the whole hierarchy
    head: str  # main after the conflicting change
    path: str  # the array's path
    session: str  # an open session by ``h.session_author``, with staged work


def build(repo: Any, h: Hostile) -> Built:
    """Put ``h`` in every field of ``repo`` a user can write, with a merge that conflicts on
    the array's chunk and the attribute, and an open session."""
    import zarr

    path = f"{h.group}/{h.array}"
    s = repo.writable_session("main", author=h.author)
    root = zarr.open_group(s.store, mode="w")
    root.attrs[h.attr_key] = h.attr_value
    arr = root.create_group(h.group).create_array(
        h.array, shape=(3, 4, 4), chunks=(1, 2, 2), dtype="f4", dimension_names=[h.dim, "y", "x"]
    )
    arr[:] = 1.0
    base = s.commit(h.message, metadata={h.meta_key: h.meta_value})
    repo.create_branch(h.branch, base)
    repo.create_tag(h.tag, base)
    head = base
    for branch, value in ((h.branch, 2.0), ("main", 3.0)):
        s = repo.writable_session(branch, author=h.author)
        zarr.open_array(s.store, path=path)[1, 0, 0] = value
        zarr.open_group(s.store).attrs[h.attr_key] = f"{h.attr_value}{value}"
        head = s.commit(f"{h.message} {value}", metadata={h.meta_key: h.meta_value})
    open_ = repo.writable_session("main", author=h.session_author)
    zarr.open_array(open_.store, path=path)[2, 0, 0] = 4.0
    return Built(h, base, head, path, str(open_.id))


# One fixed value for the tests that run on both catalogs without generating examples.
FIXED = Hostile(
    message=PAYLOADS[0] + " " + PAYLOADS[7] + "\n" + PAYLOADS[4],
    author=PAYLOADS[2] + " " + PAYLOADS[1],
    meta_key=PAYLOADS[3],
    meta_value=PAYLOADS[5] + PAYLOADS[10],
    attr_key=PAYLOADS[0],
    attr_value=PAYLOADS[13],
    group=PAYLOADS[2],
    array=PAYLOADS[0].replace("/", "|"),
    dim=PAYLOADS[8] + PAYLOADS[11],
    branch=REF_NAMES[0],
    tag="t-" + REF_NAMES[1],
    session_author=PAYLOADS[0] + PAYLOADS[9],
)
