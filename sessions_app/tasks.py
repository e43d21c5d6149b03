"""Celery tasks of the sessions domain (the worker finds them here).

`index_items`: the search indexer (`sessions_app.search_index`), woken by beat
every `STATEROOM_SEARCH_INDEX_INTERVAL` seconds.
"""

from __future__ import annotations

from celery import shared_task

from tenancy_app.jobs import for_each_tenant

from .search_index import index_pending

INDEX_ITEMS = "sessions_app.tasks.index_items"


@shared_task(name=INDEX_ITEMS, acks_late=True, ignore_result=True)
def index_items(tenant_id: int | None = None) -> dict:
    """Index what waits, tenant by tenant (or one), one short transaction per batch.

    Idempotent: two at once share the work (one batch per tenant at a time,
    migration 0009), and one that dies leaves the marks where they were.
    Per tenant: how many sessions' marks it moved.
    """
    # limit=1: a batch that moved any session's mark may have left more; one that moved
    # none ends the tenant.
    return for_each_tenant(
        lambda tenant: index_pending().sessions, limit=1, tenant_id=tenant_id, name="index_items"
    ).as_dict()
