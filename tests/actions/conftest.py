"""The approvals and runs helpers (a run waiting on an approval, a hand-moved clock)."""

from ..approvals.conftest import clock  # noqa: F401  (fixture)
