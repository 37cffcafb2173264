"""``python -m zarrlake``: the command line (the same as the ``zarrlake`` command)."""

from zarrlake.cli import main

raise SystemExit(main())
