"""Cooperative writes from dask: one session, many worker processes, one commit.

``ds.lake.commit(...)`` on a dask-backed Dataset already writes from the workers (see
:mod:`zarrlake.xarray`). This module is for tasks written by hand: ship
:func:`durable_store` to them and write with zarr as usual::

    s = repo.writable_session()
    store = durable_store(s)                        # pickles as configuration

    def write_part(store, i):
        zarr.open_array(store, path="temp", mode="r+")[i * 100 : (i + 1) * 100] = compute(i)

    client.gather(client.map(write_part, [store] * 10, range(10)))
    s.commit("ten parts")                           # sees every part

Why a durable store: writes are staged write-behind, so a plain ``session.store`` could still
be holding a task's writes in the worker's memory when the task reports done, and the commit
(made elsewhere) would miss them. Through a durable store every write is in the catalog when
the call that made it returns, so a finished task's writes are in the session, whatever
happens to its worker afterwards. A task that dask retries (its worker died) rewrites the
same chunks with the same bytes: chunks are content-addressed, so the retry is idempotent.

Each task must write whole chunks: two tasks writing parts of one chunk would each write the
whole chunk, and one would replace the other. :func:`zarrlake.xarray.commit` checks this for
Datasets before any task runs; hand-written tasks must align their slices themselves.
"""

from __future__ import annotations

from zarrlake import InvalidInputError, LakeStore, Session

__all__ = ["durable_store"]


def durable_store(session: Session) -> LakeStore:
    """A store over an open writable ``session`` whose every write is durable in the catalog
    when the call that made it returns. It pickles as configuration, with that flag, so dask
    workers that unpickle it join the session and write durably too."""
    if session.id is None or session.read_only:
        raise InvalidInputError(
            "durable_store needs an open writable session: repo.writable_session(branch)"
        )
    return LakeStore(session.repo, session_id=session.id, durable=True)
