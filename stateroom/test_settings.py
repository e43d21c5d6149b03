"""Settings for the test suite: the production module with test conveniences on.

The database is chosen as for the app (stateroom/database.py): DATABASE_URL when
set (CI), else the embedded PostgreSQL.
"""

import os

os.environ["STATEROOM_TESTING"] = "1"
os.environ.setdefault("CELERY_TASK_ALWAYS_EAGER", "1")

from .settings import *  # noqa: F403

# WhiteNoise scans every static file each time a handler is built, and the test
# client builds one per Client(): ~1.7 s each. Tests don't need it (the live
# server serves /static/ itself, and templates only need STATIC_URL).
MIDDLEWARE = [m for m in MIDDLEWARE if m != "whitenoise.middleware.WhiteNoiseMiddleware"]  # noqa: F405
INSTALLED_APPS = [a for a in INSTALLED_APPS if a != "whitenoise.runserver_nostatic"]  # noqa: F405
