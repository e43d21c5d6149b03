import os

from celery import Celery
from celery.signals import beat_init, worker_init

from .metrics import connect_celery_signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stateroom.settings")

app = Celery("stateroom")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
connect_celery_signals()  # task results counted (stateroom.metrics)


@worker_init.connect
@beat_init.connect
def _refuse_an_undeclared_pooler(**kwargs) -> None:
    """A worker or beat behind an undeclared transaction pooler does not start.

    Celery logs and swallows an exception raised in a signal handler, so the
    refusal is a SystemExit with the reason.
    """
    from stateroom.postgres.route import UndeclaredPooler, verify_at_start

    try:
        verify_at_start()
    except UndeclaredPooler as exc:
        raise SystemExit(f"stateroom: {exc}") from exc
