"""Stateroom benchmarks: `make bench` (or `python -m bench --help`). See bench/README.md."""
