"""How a command names its lake (``--lake/-C``, ``$ZARRLAKE_LAKE``, ``./my-lake``, the older
first-word form where it is unambiguous), and the words of its errors: in-process, as the
user reads them on stderr."""

from __future__ import annotations

from pathlib import Path

import pytest

import zarrlake
from zarrlake.cli import main


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory holding the default lake ``my-lake`` with a tag ``v1.0``."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ZARRLAKE_LAKE", raising=False)
    repo = zarrlake.Repo.create(tmp_path / "my-lake")
    repo.create_tag("v1.0")
    return tmp_path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_two_refs_are_two_refs_of_the_default_lake(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, "diff", "v1.0", "main", "--json")
    assert (code, err) == (0, "")
    assert '"before": "' in out
    code, _, err = _run(capsys, "diff", "v1.1", "main")
    assert code == 1
    assert err == (
        "zarrlake: no branch, tag or commit 'v1.1' in repo 'default'; did you mean 'v1.0'? "
        "(branches: main; tags: v1.0)\n"
    )


def test_the_lake_option_the_environment_and_the_older_first_word(
    here: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (here / "my-lake").rename(here / "other")
    for argv in (
        ["log", "-C", "other", "-n", "1"],
        ["log", "--lake", "other", "v1.0"],
        ["log", "other"],  # a directory holding a lake: the older form
        ["diff", "other", "v1.0", "main"],  # one word more than diff takes
    ):
        code, out, err = _run(capsys, *argv)
        assert (code, err) == (0, ""), argv
    monkeypatch.setenv("ZARRLAKE_LAKE", "other")
    code, out, _ = _run(capsys, "tag")
    assert (code, out.split("\t")[0]) == (0, "v1.0")


def test_a_missing_default_lake_says_how_to_make_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ZARRLAKE_LAKE", raising=False)
    code, _, err = _run(capsys, "log")
    assert code == 1
    assert err == (
        "zarrlake: no lake at my-lake: create one with `zarrlake init`, or name another with "
        "--lake PATH (or $ZARRLAKE_LAKE)\n"
    )


def test_a_lake_named_twice_is_refused(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as ex:
        main(["log", "-C", "my-lake", "--catalog", "sqlite://"])
    assert ex.value.code == 2
    assert "--lake and --catalog both name the lake: give one of them" in capsys.readouterr().err
    code, _, err = _run(capsys, "catalog", "upgrade", "my-lake", "--lake", "my-lake")
    assert code == 2
    assert err == "zarrlake: the lake is named twice (LAKE, --lake, --catalog): name it once\n"


def test_unknown_commands_and_branches_get_a_did_you_mean(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(capsys, "lgo")
    assert code == 2
    assert err.endswith(
        "zarrlake: unknown command 'lgo'; did you mean 'log'? (zarrlake --help lists them)\n"
    )
    code, _, err = _run(capsys, "reset", "mian", "main", "--yes")
    assert code == 1
    assert err == "zarrlake: no branch 'mian'; did you mean 'main'? (branches: main)\n"
    code, _, err = _run(capsys, "tag", "-d", "v2.0", "--yes")
    assert err == "zarrlake: no tag 'v2.0'; did you mean 'v1.0'? (tags: v1.0)\n"


def test_init_names_the_next_step_and_refuses_an_existing_lake(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "init", "-C", "new-lake")
    assert code == 0
    assert out == (
        "created a lake in new-lake (catalog and chunks inside it)\n"
        "next: open it from Python with zarrlake.Repo.open('new-lake')\n"
    )
    code, _, err = _run(capsys, "init")
    assert code == 2
    assert err == (
        "zarrlake: my-lake already holds a lake: use it (zarrlake log --lake my-lake), or pick "
        "another directory\n"
    )


def test_export_onto_a_non_empty_target_names_the_flag(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import numpy as np
    import zarr

    repo = zarrlake.Repo.open(here / "my-lake")
    s = repo.writable_session()
    zarr.open_group(s.store, mode="w").create_array("a", shape=(4,), chunks=(2,), dtype="f8")[:] = (
        np.arange(4.0)
    )
    s.commit("a")
    assert _run(capsys, "export", "main", "copy")[0] == 0
    code, _, err = _run(capsys, "export", "main", "copy")
    assert code == 2
    assert err == (
        "zarrlake: export target copy is not empty: choose another target, or add --overwrite "
        "to clear it first\n"
    )
    assert "overwrite=True" not in err


def test_reports_speak_in_words_and_units(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "gc", "--dry-run")
    assert code == 0
    assert out.splitlines()[0] == "garbage collection (dry run: nothing changed)"
    assert "  bytes freed         0 B" in out.splitlines()
    assert "Report" not in out
    code, out, _ = _run(capsys, "fsck")
    assert out.splitlines()[:2] == ["fsck: ok", "  commits checked  1"]


def test_ui_on_a_missing_lake_exits_with_the_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, "ui", str(tmp_path / "nope"), "--port", "0")
    assert code == 1
    assert out == ""
    assert err.startswith(f"zarrlake: no lake at {tmp_path / 'nope'}: create one with")


def test_a_merge_conflict_names_the_solver_flag(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import zarr

    repo = zarrlake.Repo.open(here / "my-lake")
    s = repo.writable_session()
    zarr.open_group(s.store, mode="w").create_array("a", shape=(4,), chunks=(2,), dtype="f8")
    base = s.commit("a")
    repo.create_branch("dev", base)
    for branch, value in (("main", 1.0), ("dev", 2.0)):
        s = repo.writable_session(branch)
        zarr.open_array(s.store, path="a")[0:2] = value
        s.commit(f"{branch} writes")
    code, _, err = _run(capsys, "merge", "dev")
    assert code == 3
    assert err.startswith(
        "zarrlake: cannot merge 'dev' into 'main': both changed the same data. Add --solver ours "
        "(keep 'main') or --solver theirs (take 'dev'), or change one side first\n  - chunk "
        "conflict at a chunk (0,)"
    )
    assert "solver=" not in err
