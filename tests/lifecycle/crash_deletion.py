"""Run a deletion job in this process and SIGKILL it inside batch N's transaction.

Used by tests/lifecycle/test_worker.py as a subprocess:
`python -m tests.lifecycle.crash_deletion <tenant_id> <deletion_id> <batch_size> <kill_in_batch>`.
"""

import os
import signal
import sys

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stateroom.test_settings")
django.setup()

from lifecycle_app.deletion import DeletionStore  # noqa: E402
from stateroom.actor import Actor  # noqa: E402
from tenancy_app.models import Tenant  # noqa: E402
from tenancy_app.scoping import in_tenant  # noqa: E402


def main(tenant_id: int, deletion_id: str, batch_size: int, kill_in_batch: int) -> None:
    tenant = Tenant.objects.get(pk=tenant_id)
    batches = 0

    def die_mid_batch(deletion) -> None:
        nonlocal batches
        batches += 1
        if batches == kill_in_batch:
            # Rows of this batch are deleted and counted but not committed.
            os.kill(os.getpid(), signal.SIGKILL)

    with in_tenant(tenant, atomic=False):
        DeletionStore(tenant, Actor.system("deletion")).run(
            deletion_id=deletion_id, batch_size=batch_size, on_batch=die_mid_batch
        )


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
