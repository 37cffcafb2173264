"""zarrlake benchmarks (see README.md)."""
