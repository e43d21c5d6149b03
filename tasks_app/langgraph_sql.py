"""The hot statements of `GraphThreadStore` (tasks_app.langgraph_store): a put, a task's
writes and a page of checkpoints, each one statement (`hot_cursor(alone=True)`)."""

from stateroom.sql import columns

from .models import TERMINAL_TASK_STATUSES, GraphBlob, GraphCheckpoint, GraphWrite, Task

TASKS = Task._meta.db_table
CHECKPOINTS = GraphCheckpoint._meta.db_table
BLOBS = GraphBlob._meta.db_table
WRITES = GraphWrite._meta.db_table
TERMINAL = sorted(TERMINAL_TASK_STATUSES)
EMPTY_TYPE = "empty"  # the channel had no value at this version
# The thread a task keeps: LangGraph's id as given, or the task id when it was one.
THREAD_OF = "COALESCE(thread_id, task_id)"


# The statements of `list_checkpoints`, `put` and `put_writes` (see there).
# A page of checkpoints, newest first. The page's rows carry their channel values and
# pending writes; the row past the page, read only to know whether another page follows,
# carries neither (for a one-checkpoint read, `get_tuple`, building and sending a second
# ~10 KB value nobody reads was a third of the statement's time).
_LIST_VALUES = (
    "(SELECT jsonb_agg(jsonb_build_object('channel', b.channel, 'version', v.value,"
    " 'type', b.type, 'value', b.value, 'data', translate(encode(b.data, 'base64'),"
    " E'\\n', '')) ORDER BY b.channel)"
    " FROM jsonb_each_text(c.checkpoint -> 'channel_versions') AS v"
    f" JOIN {BLOBS} b ON b.tenant_id = c.tenant_id AND b.task_id = c.task_id"
    " AND b.checkpoint_ns = c.checkpoint_ns AND b.channel = v.key AND b.version = v.value"
    f" WHERE b.type <> '{EMPTY_TYPE}')"
)
_LIST_WRITES = (
    "(SELECT jsonb_agg(jsonb_build_object('task_id', w.graph_task_id,"
    " 'task_path', w.graph_task_path, 'idx', w.idx, 'channel', w.channel,"
    " 'type', w.type, 'value', w.value, 'data', translate(encode(w.data, 'base64'),"
    " E'\\n', '')) ORDER BY w.graph_task_path, w.graph_task_id, w.idx)"
    f" FROM {WRITES} w WHERE w.tenant_id = c.tenant_id AND w.task_id = c.task_id"
    " AND w.checkpoint_ns = c.checkpoint_ns AND w.checkpoint_id = c.checkpoint_id)"
)


def list_sql(where: str) -> str:
    """Parameters: the page size twice, those of `where`, the page size + 1."""
    return (
        "SELECT c.id, c.checkpoint_ns, c.checkpoint_id, c.parent_checkpoint_id,"
        " c.checkpoint, c.metadata, c.created_at,"
        f" CASE WHEN c.n <= %s THEN {_LIST_VALUES} END,"
        f" CASE WHEN c.n <= %s THEN {_LIST_WRITES} END,"
        f" (SELECT {THREAD_OF} FROM {TASKS} t WHERE t.id = c.task_id)"
        " FROM (SELECT c.*,"
        " row_number() OVER (ORDER BY c.checkpoint_id DESC, c.id DESC) AS n"
        f" FROM {CHECKPOINTS} c WHERE {where}"
        " ORDER BY c.checkpoint_id DESC, c.id DESC LIMIT %s) c ORDER BY c.n"
    )


PUT = (
    f"WITH t AS (SELECT id FROM {TASKS} WHERE tenant_id = %s AND task_id = %s"
    f" AND {THREAD_OF} = %s AND status NOT IN (%s, %s, %s)"
    " AND content_fenced_at IS NULL),"
    f" b AS (INSERT INTO {BLOBS} (tenant_id, task_id, checkpoint_ns, channel, version,"
    " type, value, data, size_bytes)"
    " SELECT %s, t.id, %s, x.channel, x.version #>> '{}', x.type, x.value,"
    " decode(x.data, 'base64'), x.size FROM t, jsonb_to_recordset(%s::jsonb)"
    " AS x(channel text, version jsonb, type text, value jsonb, data text, size int)"
    " ON CONFLICT (tenant_id, task_id, checkpoint_ns, channel, version) DO NOTHING),"
    f" c AS (INSERT INTO {CHECKPOINTS} (tenant_id, task_id, checkpoint_ns, checkpoint_id,"
    " parent_checkpoint_id, checkpoint, metadata, run_id, size_bytes, created_at)"
    " SELECT %s, t.id, %s, %s, %s, %s::jsonb, %s::jsonb, %s, %s, %s FROM t"
    " ON CONFLICT (tenant_id, task_id, checkpoint_ns, checkpoint_id) DO UPDATE SET"
    " parent_checkpoint_id = EXCLUDED.parent_checkpoint_id,"
    " checkpoint = EXCLUDED.checkpoint, metadata = EXCLUDED.metadata,"
    " run_id = EXCLUDED.run_id, size_bytes = EXCLUDED.size_bytes"
    " RETURNING (xmax = 0))"
    " SELECT c.* FROM c"
)

PUT_WRITES = (
    f"WITH t AS (SELECT id FROM {TASKS} WHERE tenant_id = %s AND task_id = %s"
    f" AND {THREAD_OF} = %s AND status NOT IN (%s, %s, %s)"
    " AND content_fenced_at IS NULL),"
    f" w AS (INSERT INTO {WRITES} (tenant_id, task_id, checkpoint_ns, checkpoint_id,"
    " graph_task_id, graph_task_path, idx, channel, type, value, data, size_bytes,"
    " created_at)"
    " SELECT %s, t.id, %s, %s, %s, %s, x.idx, x.channel, x.type, x.value,"
    " decode(x.data, 'base64'), x.size, %s FROM t, jsonb_to_recordset(%s::jsonb)"
    " AS x(idx int, channel text, type text, value jsonb, data text, size int)"
    " ON CONFLICT (tenant_id, task_id, checkpoint_ns, checkpoint_id, graph_task_id, idx)"
    " DO UPDATE SET channel = EXCLUDED.channel, type = EXCLUDED.type,"
    " value = EXCLUDED.value, data = EXCLUDED.data, size_bytes = EXCLUDED.size_bytes,"
    " graph_task_path = EXCLUDED.graph_task_path, created_at = EXCLUDED.created_at"
    " WHERE EXCLUDED.idx < 0 RETURNING 1)"
    " SELECT (SELECT count(*) FROM t), (SELECT count(*) FROM w)"
)

# A new thread's task (`ensure_thread`): its columns, values and parameters from
# `stateroom.sql.insert_from`; nothing when a task already has the id.
NEW_TASK = (
    f"INSERT INTO {TASKS} ({{names}}) VALUES ({{values}})"
    " ON CONFLICT (tenant_id, task_id) DO NOTHING RETURNING id"
)


# A thread's task by its task id (`GraphThreadStore._find`).
FIND_TASK = f"SELECT {columns(Task)} FROM {TASKS} WHERE tenant_id = %s AND task_id = %s"
