"""Conversations as chat: OpenAI Responses items and LangChain messages on the timeline, the
approval page and the Markdown transcript; raw JSON one click away; everything escaped."""

import json

from console_app.chat import as_chat, chat_text
from sessions_app.store import SessionStore
from tenancy_app.scoping import in_tenant
from tests.conftest import login
from tests.console.conftest import RUNTIME
from tests.console.fixtures import make_pending

OPENAI_ITEMS = [
    (
        "user",
        "message",
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "Refund order <A-1042>"}],
        },
    ),
    (
        "assistant",
        "reasoning",
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Check the order"}],
        },
    ),
    (
        "assistant",
        "function_call",
        {
            "type": "function_call",
            "name": "lookup_order",
            "call_id": "call_7",
            "arguments": json.dumps({"order_id": "A-1042", "deep": True}),
        },
    ),
    (
        "tool",
        "function_call_output",
        {
            "type": "function_call_output",
            "call_id": "call_7",
            "output": json.dumps({"status": "paid", "amount": 1200}),
        },
    ),
    (
        "assistant",
        "message",
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "It was paid."}],
        },
    ),
]


def append(tenant, session_id: str, items) -> None:
    with in_tenant(tenant):
        SessionStore(tenant, RUNTIME).append_items(
            session_id=session_id,
            items=[{"role": r, "item_type": t, "payload": p} for r, t, p in items],
        )


def test_openai_items_read_as_chat():
    user, reasoning, call, output, answer = (as_chat(*item) for item in OPENAI_ITEMS)
    assert (user.role, user.kind, user.text) == ("user", "message", "Refund order <A-1042>")
    assert (reasoning.kind, reasoning.reasoning) == ("reasoning", "Check the order")
    assert call.kind == "tool_call"
    assert [(c.name, c.arguments, c.call_id) for c in call.tool_calls] == [
        ("lookup_order", {"order_id": "A-1042", "deep": True}, "call_7")
    ]
    assert (output.kind, output.call_id, output.output) == (
        "tool_result",
        "call_7",
        {"status": "paid", "amount": 1200},
    )
    assert (answer.role, answer.text) == ("assistant", "It was paid.")


def test_langchain_messages_read_as_chat():
    ai = as_chat(
        "assistant",
        "ai",
        {
            "type": "ai",
            "content": "",
            "tool_calls": [{"name": "search", "args": {"q": "refund policy"}, "id": "tc_1"}],
        },
    )
    tool = as_chat(
        "tool",
        "tool",
        {"type": "tool", "content": "30 days", "tool_call_id": "tc_1", "name": "search"},
    )
    human = as_chat(
        "user",
        "human",
        {
            "lc": 1,
            "type": "constructor",
            "id": ["langchain", "schema", "messages", "HumanMessage"],
            "kwargs": {"content": [{"type": "text", "text": "How long?"}]},
        },
    )
    assert (ai.kind, ai.source, ai.tool_calls[0].name, ai.tool_calls[0].arguments) == (
        "tool_call",
        "langchain",
        "search",
        {"q": "refund policy"},
    )
    assert (tool.role, tool.kind, tool.call_id, tool.output) == (
        "tool",
        "tool_result",
        "tc_1",
        "30 days",
    )
    assert (human.role, human.text) == ("user", "How long?")
    assert as_chat("user", "blob", {"x": [1]}).kind == "raw"


def test_timeline_renders_an_openai_conversation_as_chat(make_session, tenant_a, support_a):
    make_session("s-1")
    append(tenant_a, "s-1", OPENAI_ITEMS)
    page = login(support_a).get("/t/acme/sessions/s-1/").content.decode()
    assert page.count('data-testid="chat"') == 5
    assert 'data-testid="chat-text">Refund order &lt;A-1042&gt;</div>' in page
    assert 'data-testid="chat-tool-name">lookup_order</code>' in page
    assert '<dt class="mono">order_id</dt><dd><span class="argval">A-1042</span></dd>' in page
    assert '<dt class="mono">status</dt><dd><span class="argval">paid</span></dd>' in page
    assert '<summary class="small muted">Reasoning</summary>' in page
    assert page.count("Raw JSON</summary>") == 5
    assert "<A-1042>" not in page


def test_approval_page_shows_the_conversation_as_chat(tenant_a, support_a):
    make_pending(tenant_a, approval_id="apr-1", items=0)
    append(tenant_a, "sess-1", OPENAI_ITEMS)
    page = login(support_a).get("/t/acme/approvals/apr-1/").content.decode()
    conversation = page.split('data-testid="conversation"', 1)[1].split("</ol>", 1)[0]
    assert conversation.count('data-testid="chat"') == 5
    assert 'data-kind="tool_call" data-source="openai"' in conversation


def test_markdown_transcript_reads_as_chat(make_session, tenant_a, support_a):
    make_session("s-1")
    append(tenant_a, "s-1", OPENAI_ITEMS)
    response = login(support_a).get("/t/acme/sessions/s-1/export.md")
    body = b"".join(response.streaming_content).decode()
    assert "```text\nRefund order <A-1042>\n```" in body
    assert '-> calls lookup_order({"order_id": "A-1042", "deep": true}) [call_7]' in body
    assert '<- result of call_7: {"status": "paid", "amount": 1200}' in body
    assert "(reasoning) Check the order" in body
    assert chat_text(as_chat("user", "x", {"odd": 1})) == ""  # raw: the JSON is fenced instead


# Chat Completions messages, as a runtime on that API stores its history.
COMPLETIONS_ITEMS = [
    ("system", "message", {"role": "system", "content": "You help with refunds."}),
    ("user", "message", {"role": "user", "content": "Refund order A-1042"}),
    (
        "assistant",
        "message",
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_9",
                    "type": "function",
                    "function": {"name": "lookup_order", "arguments": '{"order_id": "A-1042"}'},
                }
            ],
        },
    ),
    ("tool", "message", {"role": "tool", "tool_call_id": "call_9", "content": '{"paid": true}'}),
    ("assistant", "message", {"role": "assistant", "content": "It was paid."}),
]
# What the demo loads: Responses items stored without their `type` (the item_type says it).
DEMO_ITEMS = [
    ("user", "message", {"text": "Where is order 42?"}),
    ("assistant", "function_call", {"name": "lookup_order", "arguments": {"order": 42}}),
    ("tool", "function_call_output", {"output": {"order": 42, "status": "shipped"}}),
    ("assistant", "message", {"text": "It shipped."}),
]


def test_chat_completions_messages_read_as_chat():
    system, user, call, result, answer = (as_chat(*item) for item in COMPLETIONS_ITEMS)
    assert (system.role, system.kind, system.text) == (
        "system",
        "message",
        "You help with refunds.",
    )
    assert (user.role, user.text) == ("user", "Refund order A-1042")
    assert (call.role, call.kind, call.source) == ("assistant", "tool_call", "openai")
    assert [(c.name, c.arguments, c.call_id) for c in call.tool_calls] == [
        ("lookup_order", {"order_id": "A-1042"}, "call_9")
    ]
    assert (result.role, result.kind, result.call_id, result.output) == (
        "tool",
        "tool_result",
        "call_9",
        {"paid": True},
    )
    assert (answer.kind, answer.text) == ("message", "It was paid.")
    legacy = as_chat(
        "assistant",
        "message",
        {"role": "assistant", "function_call": {"name": "f", "arguments": "{}"}},
    )
    assert [(c.name, c.arguments) for c in legacy.tool_calls] == [("f", {})]


def test_items_stored_without_their_type_read_as_chat():
    user, call, output, answer = (as_chat(*item) for item in DEMO_ITEMS)
    assert (call.kind, [(c.name, c.arguments) for c in call.tool_calls]) == (
        "tool_call",
        [("lookup_order", {"order": 42})],
    )
    assert (output.kind, output.output) == ("tool_result", {"order": 42, "status": "shipped"})
    assert (user.text, answer.text) == ("Where is order 42?", "It shipped.")


def test_timeline_renders_every_stored_shape_as_chat_with_raw_json_a_click_away(
    make_session, tenant_a, support_a
):
    make_session("s-1")
    append(tenant_a, "s-1", [*COMPLETIONS_ITEMS, *DEMO_ITEMS])
    page = login(support_a).get("/t/acme/sessions/s-1/").content.decode()
    assert page.count('data-testid="chat"') == 9
    assert 'data-kind="raw"' not in page
    assert page.count('data-testid="chat-tool-name">lookup_order</code>') == 2
    assert page.count("Raw JSON</summary>") == 9
