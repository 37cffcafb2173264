"""``zarrlake catalog upgrade``: the explicit schema upgrade (opening never upgrades)."""

from __future__ import annotations

import argparse

from zarrlake.cli._common import add_repo_args, remember_url_secrets
from zarrlake.cli._output import emit_json

__all__ = ["register"]


def _cmd_upgrade(args: argparse.Namespace) -> int:
    import zarrlake

    if args.catalog:
        remember_url_secrets(args.catalog)
        done = zarrlake.upgrade_catalog(catalog=args.catalog)
    else:
        done = zarrlake.upgrade_catalog(args.path)
    if args.json:
        emit_json(
            {
                "catalog": done.url,
                "from_version": done.before,
                "to_version": done.after,
                "applied": done.applied,
            }
        )
    elif not done.applied:
        print(f"catalog {done.url} is already at schema version {done.after}: nothing to do")
    else:
        steps = ", ".join(str(v) for v in done.applied)
        print(
            f"upgraded catalog {done.url} from schema version {done.before} to {done.after} "
            f"(applied {steps})"
        )
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sp = sub.add_parser(
        "catalog",
        help="the catalog's schema: upgrade it to this release's version",
        description="Opening a lake never changes its catalog's schema: a catalog made by an "
        "earlier zarrlake is refused until it is upgraded here.",
    )
    actions = sp.add_subparsers(dest="action", required=True, metavar="ACTION")
    up = actions.add_parser(
        "upgrade",
        help="upgrade the catalog's schema to this release's version (one transaction)",
        description="Upgrade the catalog's schema to this release's version, in one "
        "transaction. Earlier releases refuse an upgraded catalog: upgrade once every client "
        "of a shared catalog runs this release.",
    )
    add_repo_args(up)
    up.add_argument("--json", action="store_true", help="print JSON (see docs/cli.md)")
    up.set_defaults(func=_cmd_upgrade)
