from stateroom.jsonview import Change, diff, highlight_json


def test_diff_by_key_path():
    before = {"a": 1, "b": {"c": [1, 2]}, "gone": {"x": 1}}
    after = {"a": 2, "b": {"c": [1]}, "d": "<x>", "error": {"code": "e", "n": None}}
    assert diff(before, after) == [
        Change("a", "changed", old="1", new="2"),
        Change("b.c[1]", "removed", old="2"),
        Change("d", "added", new='"<x>"'),
        Change("error.code", "added", new='"e"'),
        Change("error.n", "added", new="null"),
        Change("gone.x", "removed", old="1"),
    ]


def test_diff_of_equal_values_is_empty_and_types_matter():
    assert diff({"a": [1, {"b": 2}]}, {"a": [1, {"b": 2}]}) == []
    assert diff({"a": 1}, {"a": True}) == [Change("a", "changed", old="1", new="true")]
    assert diff(None, 3) == [Change("(value)", "changed", old="null", new="3")]


def test_highlight_escapes_agent_text():
    html = highlight_json({"note": "<script>x</script>"})
    assert "<script>" not in html
    assert '<span class="s2">"&lt;script&gt;x&lt;/script&gt;"</span>' in html
