"""``python -m zarrlake.cli``: the same as the ``zarrlake`` script."""

import sys

from zarrlake.cli import main

sys.exit(main())
