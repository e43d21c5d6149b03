"""Celery tasks of the runs domain (the worker finds them here)."""

from .webhooks import notify_run_control  # noqa: F401
