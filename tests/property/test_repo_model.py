"""The repo against an in-memory model of what every ref and commit holds: sessions, writes,
commits with automatic rebase and conflicts, branches, resets, merges, garbage collection and
checkouts of past commits, driven by a hypothesis state machine.

Every write puts a value never used before, so "changed since" means "written since", and the
model can predict every conflict exactly.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import timedelta

import numpy as np
import zarr
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, invariant, rule

import zarrlake

N_CHUNKS = 4
CHUNK = 8
BRANCHES = st.sampled_from(["main", "dev", "exp"])
CHUNKS = st.integers(0, N_CHUNKS - 1)


@dataclass
class ModelCommit:
    data: tuple[int, ...]
    parents: tuple[str, ...]
    generation: int


@dataclass
class ModelSession:
    session: zarrlake.WritableSession
    branch: str
    base: str
    staged: dict[int, int] = field(default_factory=dict)
    closed: bool = False


class RepoModel(RuleBasedStateMachine):
    sessions = Bundle("sessions")

    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp()
        self.repo = zarrlake.Repo.create(f"{self.dir}/lake")
        self.commits: dict[str, ModelCommit] = {}
        self.branches: dict[str, str] = {}
        self.counter = 0

    def teardown(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def _value(self) -> int:
        self.counter += 1
        return self.counter

    def _read(self, ref: str) -> tuple[int, ...]:
        store = self.repo.readonly_session(ref).store
        arr = np.asarray(zarr.open_array(store, path="a", mode="r")[:])
        return tuple(int(v) for v in arr.reshape(N_CHUNKS, CHUNK)[:, 0])

    def _first_parent_ancestors(self, commit: str) -> set[str]:
        seen = set()
        c: str | None = commit
        while c is not None and c in self.commits:
            seen.add(c)
            parents = self.commits[c].parents
            c = parents[0] if parents else None
        return seen

    def _ancestors(self, commit: str) -> set[str]:
        seen: set[str] = set()
        todo = [commit]
        while todo:
            c = todo.pop()
            if c in seen or c not in self.commits:
                continue
            seen.add(c)
            todo.extend(self.commits[c].parents)
        return seen

    def _merge_base(self, a: str, b: str) -> str:
        common = self._ancestors(a) & self._ancestors(b)
        return max(common, key=lambda c: (self.commits[c].generation, c))

    # -- setup ---------------------------------------------------------------------------------

    @initialize()
    def create(self) -> None:
        s = self.repo.writable_session()
        zarr.open_group(s.store, mode="w").create_array(
            "a", shape=(N_CHUNKS * CHUNK,), chunks=(CHUNK,), dtype="i8", compressors=None
        )
        first = s.commit("create a")
        root = self.repo.log()[-1].id
        self.commits[root] = ModelCommit((), (), 0)
        self.commits[first] = ModelCommit((0,) * N_CHUNKS, (root,), 1)
        for b in ("main", "dev", "exp"):
            if b != "main":
                self.repo.create_branch(b, ref=first)
            self.branches[b] = first

    # -- sessions ------------------------------------------------------------------------------

    @rule(target=sessions, branch=BRANCHES)
    def open_session(self, branch: str) -> ModelSession:
        return ModelSession(self.repo.writable_session(branch), branch, self.branches[branch])

    @rule(ms=sessions, chunk=CHUNKS)
    def write(self, ms: ModelSession, chunk: int) -> None:
        if ms.closed:
            return
        value = self._value()
        arr = zarr.open_array(ms.session.store, path="a", mode="r+")
        arr[chunk * CHUNK : (chunk + 1) * CHUNK] = value
        ms.staged[chunk] = value
        assert int(arr[chunk * CHUNK]) == value  # read your writes

    @rule(ms=sessions)
    def commit(self, ms: ModelSession) -> None:
        if ms.closed or not ms.staged:
            return
        head = self.branches[ms.branch]
        base_data = self.commits[ms.base].data
        head_data = self.commits[head].data
        reset = ms.base not in self._first_parent_ancestors(head)
        clash = any(base_data[c] != head_data[c] for c in ms.staged)
        if reset or clash:
            try:
                ms.session.commit("model commit")
            except zarrlake.ConflictError:
                ms.session.abandon()
                ms.closed = True
                return
            raise AssertionError("the model predicted a conflict")
        new = ms.session.commit("model commit")
        data = list(head_data)
        for c, v in ms.staged.items():
            data[c] = v
        self.commits[new] = ModelCommit(tuple(data), (head,), self.commits[head].generation + 1)
        self.branches[ms.branch] = new
        ms.closed = True

    @rule(ms=sessions)
    def abandon(self, ms: ModelSession) -> None:
        if not ms.closed:
            ms.session.abandon()
            ms.closed = True

    # -- refs ----------------------------------------------------------------------------------

    @rule(branch=BRANCHES, data=st.data())
    def reset(self, branch: str, data: st.DataObject) -> None:
        target = data.draw(st.sampled_from(sorted(c for c in self.commits if self.commits[c].data)))
        self.repo.reset_branch(branch, target)
        self.branches[branch] = target

    @rule(source=BRANCHES, into=BRANCHES)
    def merge(self, source: str, into: str) -> None:
        target = into
        src, head = self.branches[source], self.branches[target]
        if src in self._ancestors(head):
            assert self.repo.merge(source, target) == head  # already merged
            return
        if head in self._ancestors(src):
            assert self.repo.merge(source, target) == src  # fast-forward
            self.branches[target] = src
            return
        base = self.commits[self._merge_base(head, src)].data
        ours, theirs = self.commits[head].data, self.commits[src].data
        clash = any(
            b != o and b != t and o != t for b, o, t in zip(base, ours, theirs, strict=True)
        )
        if clash:
            try:
                self.repo.merge(source, target)
            except zarrlake.ConflictError:
                assert self.repo.resolve(target) == head
                return
            raise AssertionError("the model predicted a merge conflict")
        new = self.repo.merge(source, target)
        data = tuple(t if t != b else o for b, o, t in zip(base, ours, theirs, strict=True))
        generation = max(self.commits[head].generation, self.commits[src].generation) + 1
        self.commits[new] = ModelCommit(data, (head, src), generation)
        self.branches[target] = new

    @rule()
    def gc(self) -> None:
        self.repo.gc(timedelta(0))

    @rule(data=st.data())
    def checkout_any_commit(self, data: st.DataObject) -> None:
        commit = data.draw(st.sampled_from(sorted(c for c in self.commits if self.commits[c].data)))
        assert self._read(commit) == self.commits[commit].data

    # -- invariants ----------------------------------------------------------------------------

    @invariant()
    def every_branch_holds_its_model_data(self) -> None:
        if not self.branches:
            return
        assert self.repo.branches() == self.branches
        for branch, commit in self.branches.items():
            assert self._read(branch) == self.commits[commit].data


RepoModel.TestCase.settings = settings(
    max_examples=8,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestRepoModel = RepoModel.TestCase
