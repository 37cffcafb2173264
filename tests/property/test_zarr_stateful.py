"""zarr's own stateful tests, against a store over a writable session: the hierarchy machine
(arrays and groups created, written, resized, deleted, listed, compared with zarr's
MemoryStore) and the key-value store machine."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test
from zarr.testing.stateful import ZarrHierarchyStateMachine, ZarrStoreStateMachine

import zarrlake

# the machine draws data types zarr itself flags as not yet specified
pytestmark = pytest.mark.filterwarnings(
    "ignore::zarr.core.dtype.common.UnstableSpecificationWarning"
)

SETTINGS = settings(
    max_examples=10,
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def test_zarr_hierarchy_state_machine(tmp_path: Path) -> None:
    repo = zarrlake.Repo.create(tmp_path / "lake")
    run_state_machine_as_test(
        lambda: ZarrHierarchyStateMachine(repo.writable_session().store), settings=SETTINGS
    )


def test_zarr_store_state_machine(tmp_path: Path) -> None:
    # arbitrary bytes under any key, zarr.json included: an opaque (non-strict) repo
    repo = zarrlake.Repo.create(tmp_path / "lake", strict_metadata=False)
    run_state_machine_as_test(
        lambda: ZarrStoreStateMachine(repo.writable_session().store), settings=SETTINGS
    )
