"""Settings for the test suite: the production module with test conveniences on.

DATABASE_URL still decides the database (SQLite by default, PostgreSQL in CI).
"""

import os

os.environ["STATEROOM_TESTING"] = "1"
os.environ.setdefault("CELERY_TASK_ALWAYS_EAGER", "1")

from .settings import *  # noqa: F403
