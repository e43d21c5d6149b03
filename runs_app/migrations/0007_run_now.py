"""`runs_app_run_now(tenant, run_id)`: the run as committed now, for a refused compare-and-set.

A compare-and-set is one statement (`RunStateStore._update_explained`); when
its conditional UPDATE matches nothing, the same statement says why from this
function. Declared VOLATILE, it is not inlined and takes a fresh snapshot
(READ COMMITTED): after an UPDATE that waited for another writer's commit, it
sees that writer's row, which the statement's own snapshot predates. So the
refusal explains itself, races included, in one round trip. SECURITY
INVOKER (the default): the caller's row-level security policy applies.
"""

from django.db import migrations

FORWARD = """
CREATE FUNCTION runs_app_run_now(p_tenant bigint, p_run_id text)
RETURNS TABLE (version bigint, status varchar, content_fenced_at timestamptz,
               claimed_by varchar, claim_until timestamptz)
LANGUAGE sql VOLATILE
AS $$
    SELECT version, status, content_fenced_at, claimed_by, claim_until
    FROM runs_app_run WHERE tenant_id = p_tenant AND run_id = p_run_id
$$;
"""

BACKWARD = "DROP FUNCTION runs_app_run_now(bigint, text);"


class Migration(migrations.Migration):
    dependencies = [("runs_app", "0006_run_content_fence")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
