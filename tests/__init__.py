"""The tests, laid out like bot/ (core, config, runtime, adapters by edge, wiring) plus what
spans the whole: end_to_end, docs, architecture, bench. What a test needs beyond Python
(a Redis, a browser, a Prometheus, other processes, a local server) is its marker, given in
tests/conftest.py; `make unit` runs the tests that need none."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the repository
