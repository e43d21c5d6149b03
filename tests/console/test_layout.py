"""Page layout of the data pages: their stylesheet in <head>, list tables that fold on phones."""

import re

import pytest

from tests.conftest import login


@pytest.mark.parametrize(
    "path",
    [
        "sessions/{w.session_id}/",
        "runs/{w.run_id}/",
        "tasks/{w.task_id}/",
        "tasks/{w.task_id}/diff?a={w.checkpoint_ids[0]}&b={w.checkpoint_ids[1]}",
    ],
)
def test_data_stylesheet_is_in_head_once(world, support_a, path):
    body = login(support_a).get("/t/acme/" + path.format(w=world)).content.decode()
    head, _, rest = body.partition("</head>")
    link = re.compile(r'<link rel="stylesheet" href="[^"]*/css/data\.css">')
    assert len(link.findall(head)) == 1
    assert link.findall(rest) == []


@pytest.mark.parametrize("path", ["sessions/", "runs/", "tasks/"])
def test_list_tables_fold_into_cards_on_narrow_screens(world, support_a, path):
    body = login(support_a).get("/t/acme/" + path).content.decode()
    assert body.count('<table class="responsive">') == 1
    assert 'data-label="Status"' in body
