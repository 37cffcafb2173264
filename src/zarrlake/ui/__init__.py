"""The browser side of zarrlake: the Panel dashboard (``ui.dashboard``) and the Jupyter
widgets (``ui.widgets``). Needs the ``ui`` extra; ``import zarrlake`` never imports this."""
