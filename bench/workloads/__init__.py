"""One module per workload; each exposes ``run(settings) -> list[Result]``."""
