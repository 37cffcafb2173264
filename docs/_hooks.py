"""MkDocs hook: render the tutorial notebooks of ``notebooks/`` in the site, when there are any.

The notebooks live at the top of the repository (the test suite executes them there), not
under ``docs/``. This hook adds every ``notebooks/*.ipynb`` that exists to the site's files
(before mkdocs-jupyter turns them into pages) and to the navigation under "Tutorials", and
fills the list on ``docs/tutorials.md``. No folder, or an empty one, is not an error: the
site then has no notebook pages and says so.

``ZARRLAKE_DOCS_NOTEBOOKS`` names another folder (the tests use it).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files

MOUNT = "notebooks"
MARKER = "<!-- notebooks: list -->"


def _folder(config: Any) -> Path:
    override = os.environ.get("ZARRLAKE_DOCS_NOTEBOOKS")
    if override:
        return Path(override).resolve()
    return Path(config["config_file_path"]).resolve().parent / MOUNT


def _notebooks(config: Any) -> list[Path]:
    folder = _folder(config)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.ipynb") if not p.name.startswith("."))


def _title(path: Path) -> str:
    # "03_dask_writes.ipynb" -> "Dask writes"; the page itself shows the notebook's own title.
    stem = path.stem
    head, _, rest = stem.partition("_")
    words = (rest if head.isdigit() and rest else stem).replace("_", " ").replace("-", " ")
    return words[:1].upper() + words[1:]


def _uri(path: Path) -> str:
    return f"{MOUNT}/{path.name}"


def on_config(config: Any) -> Any:
    notebooks = _notebooks(config)
    if not notebooks or not config.get("nav"):
        return config
    pages = [{_title(p): _uri(p)} for p in notebooks]
    for entry in config["nav"]:
        if isinstance(entry, dict) and isinstance(entry.get("Tutorials"), list):
            entry["Tutorials"].extend(pages)
            break
    else:
        config["nav"].append({"Tutorials": pages})
    return config


@event_priority(100)  # before mkdocs-jupyter's on_files, which turns .ipynb files into pages
def on_files(files: Files, config: Any) -> Files:
    for path in _notebooks(config):
        if files.get_file_from_path(_uri(path)) is not None:
            continue  # a docs/notebooks/ copy wins
        file = File(_uri(path), str(path.parent.parent), config["site_dir"], config["use_directory_urls"])
        file.abs_src_path = str(path)
        files.append(file)
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    if MARKER not in markdown:
        return markdown
    notebooks = _notebooks(config)
    if not notebooks:
        text = "No tutorial notebook is in this build (the `notebooks/` folder is empty or absent)."
    else:
        text = "\n".join(f"- [{_title(p)}]({_uri(p)})" for p in notebooks)
    return markdown.replace(MARKER, text)
