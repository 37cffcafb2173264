"""HTML and text reprs of zarrlake's public objects, for notebooks, widgets and the terminal.

A leaf: nothing here imports zarrlake at runtime (the objects are read by duck typing, see
``_protocols``), so the engine, the widgets and the command line may all call it; ``urls``
is the one redaction of catalog and storage URLs that every output uses. The HTML
follows xarray's repr: collapsible sections without JavaScript, colours from Jupyter's theme
variables, every user string escaped.
"""

from zarrlake.display._base import count, esc
from zarrlake.display.chunkmap import ChunkAxes, chunk_axes, chunk_map_svg, chunk_map_text
from zarrlake.display.commits import (
    commit_html,
    commit_text,
    log_table_html,
    plain_metadata,
    repo_html,
    repo_text,
    review_lines,
)
from zarrlake.display.conflicts import (
    conflict_error_html,
    conflict_error_text,
    conflict_html,
    conflict_text,
)
from zarrlake.display.diffs import chunk_grids, diff_html, diff_text
from zarrlake.display.reports import report_fields, report_html, report_text
from zarrlake.display.sessions import (
    expiry_text,
    session_html,
    session_info_html,
    session_info_text,
    session_state,
    session_text,
    staged_counts,
    staged_words,
)

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
