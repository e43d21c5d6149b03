"""The SSO's clock (seconds since the epoch): tests replace `now` to move time."""

import time


def now() -> float:
    return time.time()
