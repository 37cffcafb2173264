"""A lake at real size for the dashboard's browser tests and screenshots: the demo lake's
data and sessions, then 10^4 commits over 7 branches with regular merges into main."""

from __future__ import annotations

from pathlib import Path

import zarrlake

AUTHORS = ("ana", "ben", "chen", "dora", "eli")
FEATURES = ("ingest", "calibration", "qc-flags", "regrid", "backfill", "docs")
WORDS = (
    "Ingest station batch",
    "Recalibrate sensor drift for",
    "Flag outliers in",
    "Regrid tile",
    "Backfill missing days of",
    "Document attributes of",
)


def build_big_lake(path: Path, commits: int = 10_000, merge_every: int = 240) -> zarrlake.Repo:
    """The demo lake plus ``commits`` empty commits: main and six feature branches (7 in
    all), each feature merged into main every ``merge_every`` commits and kept going."""
    from zarrlake.demo import build_demo

    repo = build_demo(path)
    for name in FEATURES:
        repo.create_branch(name, "main")
    made = 0
    while made < commits:
        i = made
        k = i % (len(FEATURES) + 1)
        branch = "main" if k == len(FEATURES) else FEATURES[k]
        words = "Nightly summary" if branch == "main" else WORDS[k]
        s = repo.writable_session(branch, author=AUTHORS[i % len(AUTHORS)])
        s.commit(f"{words} {i // (len(FEATURES) + 1)}", allow_empty=True)
        made += 1
        if made % merge_every == 0 and made < commits:
            feature = FEATURES[(made // merge_every) % len(FEATURES)]
            repo.merge(feature, "main", author="ci", message=f"Merge {feature} into main")
            made += 1
    return repo
