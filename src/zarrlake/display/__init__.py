"""HTML and text reprs of zarrlake's public objects, for notebooks, widgets and the terminal.

A leaf: nothing here imports zarrlake at runtime but ``_loading``, which imports nothing
(the objects are read by duck typing, see ``_protocols``), so the engine, the widgets and
the command line may all call it; ``urls`` is the one redaction of catalog and storage URLs
that every output uses. The HTML follows xarray's repr: collapsible sections without JavaScript, colours from Jupyter's theme
variables, every user string escaped.
"""

from typing import TYPE_CHECKING

from zarrlake._loading import lazy_names

if TYPE_CHECKING:
    from zarrlake.display._base import count as count
    from zarrlake.display._base import esc as esc
    from zarrlake.display.chunkmap import ChunkAxes as ChunkAxes
    from zarrlake.display.chunkmap import chunk_axes as chunk_axes
    from zarrlake.display.chunkmap import chunk_map_svg as chunk_map_svg
    from zarrlake.display.chunkmap import chunk_map_text as chunk_map_text
    from zarrlake.display.commits import commit_html as commit_html
    from zarrlake.display.commits import commit_text as commit_text
    from zarrlake.display.commits import log_table_html as log_table_html
    from zarrlake.display.commits import plain_metadata as plain_metadata
    from zarrlake.display.commits import repo_html as repo_html
    from zarrlake.display.commits import repo_text as repo_text
    from zarrlake.display.commits import review_lines as review_lines
    from zarrlake.display.conflicts import conflict_error_html as conflict_error_html
    from zarrlake.display.conflicts import conflict_error_text as conflict_error_text
    from zarrlake.display.conflicts import conflict_html as conflict_html
    from zarrlake.display.conflicts import conflict_text as conflict_text
    from zarrlake.display.diffs import chunk_grids as chunk_grids
    from zarrlake.display.diffs import diff_html as diff_html
    from zarrlake.display.diffs import diff_text as diff_text
    from zarrlake.display.reports import report_fields as report_fields
    from zarrlake.display.reports import report_html as report_html
    from zarrlake.display.reports import report_text as report_text
    from zarrlake.display.sessions import expiry_text as expiry_text
    from zarrlake.display.sessions import session_html as session_html
    from zarrlake.display.sessions import session_info_html as session_info_html
    from zarrlake.display.sessions import session_info_text as session_info_text
    from zarrlake.display.sessions import session_state as session_state
    from zarrlake.display.sessions import session_text as session_text
    from zarrlake.display.sessions import staged_counts as staged_counts
    from zarrlake.display.sessions import staged_words as staged_words

__all__ = [
    "ChunkAxes",
    "chunk_axes",
    "chunk_grids",
    "chunk_map_svg",
    "chunk_map_text",
    "commit_html",
    "commit_text",
    "conflict_error_html",
    "conflict_error_text",
    "conflict_html",
    "conflict_text",
    "count",
    "diff_html",
    "diff_text",
    "esc",
    "expiry_text",
    "log_table_html",
    "plain_metadata",
    "repo_html",
    "repo_text",
    "report_fields",
    "report_html",
    "report_text",
    "review_lines",
    "session_html",
    "session_info_html",
    "session_info_text",
    "session_state",
    "session_text",
    "staged_counts",
    "staged_words",
]

# Each name loads its module on first use, so importing one submodule loads none of the others
# (the engine imports ``display.urls`` to redact URLs; the reprs load on first display).
__getattr__, __dir__ = lazy_names(
    __name__,
    {
        "zarrlake.display._base": ("count", "esc"),
        "zarrlake.display.chunkmap": ("ChunkAxes", "chunk_axes", "chunk_map_svg", "chunk_map_text"),
        "zarrlake.display.commits": (
            "commit_html",
            "commit_text",
            "log_table_html",
            "plain_metadata",
            "repo_html",
            "repo_text",
            "review_lines",
        ),
        "zarrlake.display.conflicts": (
            "conflict_error_html",
            "conflict_error_text",
            "conflict_html",
            "conflict_text",
        ),
        "zarrlake.display.diffs": ("chunk_grids", "diff_html", "diff_text"),
        "zarrlake.display.reports": ("report_fields", "report_html", "report_text"),
        "zarrlake.display.sessions": (
            "expiry_text",
            "session_html",
            "session_info_html",
            "session_info_text",
            "session_state",
            "session_text",
            "staged_counts",
            "staged_words",
        ),
    },
)
