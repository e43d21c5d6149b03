import os

from celery import Celery
from celery.signals import beat_init, worker_init, worker_shutdown

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


@worker_init.connect
def _start_tracing(**kwargs) -> None:
    """Traces of the worker's tasks (stateroom.tracing): off without an OTLP endpoint.

    At the worker's start, before its pool forks: the SDK restarts its export
    thread in each child, and the task signals the instrumentation connects are
    inherited.
    """
    from stateroom import tracing

    tracing.setup(service_name="stateroom-worker")


@worker_shutdown.connect
def _flush_traces(**kwargs) -> None:
    from stateroom import tracing

    tracing.flush()
