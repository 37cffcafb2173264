"""``RepoBrowser``: pick a branch, browse its commits, see a commit and its diff (with chunk
maps) against its parent or any other ref, and open the Dataset at the selected commit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import ipywidgets as w  # type: ignore[import-untyped]

from zarrlake.display import chunk_axes, commit_html, diff_html
from zarrlake.display._base import esc, fmt_time
from zarrlake.errors import InvalidInputError, ZarrlakeError
from zarrlake.types import redact_urls

if TYPE_CHECKING:
    import xarray as xr

    from zarrlake import CommitInfo, Repo

__all__ = ["RepoBrowser"]

MAX_COMMITS = 500  # commits listed per ref; older ones are reachable by typing a ref


def _label(c: CommitInfo) -> str:
    first = c.message.splitlines()[0] if c.message else ""
    return f"{c.id[:10]}  {fmt_time(c.created_at)[:16]}  {c.author}  {first[:60]}"


class RepoBrowser(w.VBox):  # type: ignore[misc]
    """Browse a repo's history in a notebook.

    Parameters
    ----------
    repo
        The repo.
    ref
        The branch (or tag, commit, ref expression) to start on; default ``main``.
    group
        The group :meth:`selected_dataset` opens first (default: the first group, in path
        order, that holds arrays at the selected commit).

    Notes
    -----
    The parts are attributes, so a test or a notebook can drive them: ``ref`` (Dropdown of
    branches and tags), ``commits`` (Select of commit ids), ``group`` (Dropdown of the groups
    holding arrays at the selected commit: what :meth:`selected_dataset` opens), ``compare``
    (Text: ref to diff against, empty = the parent), ``details`` and ``diff`` (HTML),
    ``message`` (errors).
    """

    def __init__(self, repo: Repo, ref: str | None = None, *, group: str | None = None) -> None:
        self.repo = repo
        self._wanted_group = group.strip("/") if group else None
        self.ref = w.Dropdown(description="ref", layout=w.Layout(width="320px"))
        self.group = w.Dropdown(description="group", layout=w.Layout(width="320px"))
        self.refresh_button = w.Button(description="refresh", icon="refresh", tooltip="reload")
        self.commits = w.Select(rows=10, layout=w.Layout(width="100%"))
        self.compare = w.Text(
            description="diff against",
            placeholder="parent (or a branch, tag, commit)",
            continuous_update=False,
            style={"description_width": "initial"},
            layout=w.Layout(width="420px"),
        )
        self.message = w.HTML()
        self.details = w.HTML()
        self.diff = w.HTML()
        super().__init__(
            [
                w.HBox([self.ref, self.refresh_button]),
                self.commits,
                self.message,
                self.group,
                self.details,
                self.compare,
                self.diff,
            ]
        )
        self.refresh_button.on_click(lambda _: self.refresh())
        self._quiet = False
        self.ref.observe(lambda _: None if self._quiet else self._load_log(), names="value")
        self.commits.observe(lambda _: self._show(), names="value")
        self.compare.observe(lambda _: self._show(), names="value")
        self.refresh(ref)

    @classmethod
    def for_dataset(cls, ds: xr.Dataset) -> RepoBrowser:
        """A browser on the repo, branch (or commit) and group a Dataset was read from."""
        from zarrlake.xarray import provenance

        prov = provenance(ds)
        return cls(prov.repo, prov.branch or prov.commit, group=prov.group)

    # -- state -------------------------------------------------------------------------------

    @property
    def selected_commit(self) -> str | None:
        """The id of the selected commit."""
        value = self.commits.value
        return str(value) if value else None

    def select(self, commit: str) -> None:
        """Select a commit of the list by id or ref."""
        cid = self.repo.resolve(commit)
        if cid not in {v for _, v in self.commits.options}:
            raise InvalidInputError(f"commit {cid[:10]} is not in the log of {self.ref.value!r}")
        self.commits.value = cid

    def selected_dataset(self, **kwargs: Any) -> xr.Dataset:
        """The Dataset at the selected commit (``zarrlake.open_dataset``; ``kwargs`` go to it)."""
        from zarrlake.xarray import open_dataset

        commit = self.selected_commit
        if commit is None:
            raise InvalidInputError("no commit is selected")
        return open_dataset(self.repo, commit, group=self.group.value or None, **kwargs)

    # -- loading -----------------------------------------------------------------------------

    def refresh(self, ref: str | None = None) -> None:
        """Reload branches, tags and the log (keeps the current ref unless ``ref`` is given)."""
        keep = ref or self.ref.value or "main"
        branches, tags = self.repo.branches(), self.repo.tags()
        options = [*sorted(branches), *sorted(tags)]
        if keep not in options:
            options.append(keep)  # a commit id or ref expression
        self._quiet = True  # setting options resets the value; load the log once, below
        try:
            self.ref.options = options
            self.ref.value = keep
        finally:
            self._quiet = False
        self._load_log()

    def _load_groups(self, commit: str) -> None:
        """The groups holding arrays at ``commit``; keep the chosen one if it is still there."""
        nodes = self.repo.readonly_session(commit=commit).nodes()
        groups = sorted({p.rpartition("/")[0] for p, kind in nodes.items() if kind == "array"})
        keep = self.group.value if self.group.options else self._wanted_group
        self.group.options = [(f"/{g}", g) for g in groups]
        if keep in groups:
            self.group.value = keep
        elif groups:
            self.group.value = groups[0]

    def _error(self, exc: ZarrlakeError) -> None:
        # the message as text, and never a credential of a URL it quotes
        text = esc(redact_urls(str(exc)))
        self.message.value = f'<span style="color:var(--jp-error-color1,#c62828)">{text}</span>'

    def _load_log(self) -> None:
        self.message.value = ""
        try:
            log = self.repo.log(self.ref.value, limit=MAX_COMMITS)
        except ZarrlakeError as exc:
            self._error(exc)
            self.commits.options = []
            return
        self.commits.options = [(_label(c), c.id) for c in log]
        self.commits.value = log[0].id if log else None
        self._show()

    def _show(self) -> None:
        commit = self.selected_commit
        if commit is None:
            self.details.value = self.diff.value = ""
            return
        self.message.value = ""
        try:
            info = self.repo.commit_info(commit)
            self._load_groups(commit)
            self.details.value = commit_html(info)
            against = self.compare.value.strip()
            base = against or (info.parents[0] if info.parents else None)
            if base is not None:
                d = self.repo.diff(base, commit)
                self.diff.value = diff_html(d, grids=chunk_axes(self.repo, d))
            else:
                self.diff.value = "<i>the first commit: no parent to compare with</i>"
        except ZarrlakeError as exc:
            self._error(exc)
            self.diff.value = ""
