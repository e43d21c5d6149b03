"""`stateroom.contract.LeanFields`: each serializer gets fields of its own, cheaply.

DRF deep-copies the declared fields per serializer; LeanFields copies leaf fields
shallowly and binds the copies. What must hold: no copy is the declared field
or another serializer's, each is bound to its own serializer (a nested one to
its own parent), validation and its errors are DRF's, and two serializers
validating at once in two threads do not see each other's data.
"""

from __future__ import annotations

import threading

from rest_framework import serializers

from stateroom.contract import GatedJSONField, StrictCharField, StrictSerializer, strings


class Inner(StrictSerializer):
    name = StrictCharField(max_length=5)
    tags = strings(3, required=False)


class Outer(StrictSerializer):
    title = StrictCharField(max_length=10)
    inner = Inner(many=True)
    extra = serializers.DictField(child=StrictCharField(max_length=2), required=False)
    value = GatedJSONField(allow_null=True)


def test_each_serializer_has_its_own_bound_fields():
    a, b = Outer(data={}), Outer(data={})
    declared = Outer._declared_fields
    for name in declared:
        assert a.fields[name] is not declared[name]
        assert a.fields[name] is not b.fields[name]
        assert a.fields[name].parent is a and b.fields[name].parent is b
        assert declared[name].parent is None  # the declared field stays unbound
    # A list or dict field's item field is copied with it and bound to the copy.
    assert a.fields["extra"].child is not b.fields["extra"].child
    assert a.fields["extra"].child.parent is a.fields["extra"]
    assert a.fields["extra"].child.root is a


def test_validation_and_errors_are_drfs():
    good = {
        "title": "t",
        "inner": [{"name": "n", "tags": ["abc"]}],
        "extra": {"k": "ab"},
        "value": {"any": [1, None, "x"]},
    }
    s = Outer(data=good)
    assert s.is_valid(), s.errors
    assert s.validated_data["value"] == {"any": [1, None, "x"]}
    assert s.validated_data["inner"] == [{"name": "n", "tags": ["abc"]}]

    bad = Outer(
        data={
            "title": "x" * 11,
            "inner": [{"name": "ok"}, {"name": "toolong", "tags": ["abcd"], "nope": 1}],
            "extra": {"k": "abc"},
            "value": None,
        }
    )
    assert not bad.is_valid()
    assert bad.errors["title"][0].code == "max_length"
    assert set(bad.errors["inner"]) == {1}  # by index: the first item passed
    assert set(bad.errors["inner"][1]) == {"nope"}  # unknown keys are refused first
    assert bad.errors["extra"]["k"][0].code == "max_length"
    again = Outer(data={"title": "t", "inner": [{"name": "toolong", "tags": ["abcd"]}]})
    assert not again.is_valid()
    assert again.errors["inner"][0]["name"][0].code == "max_length"
    assert again.errors["inner"][0]["tags"][0][0].code == "max_length"
    assert again.errors["value"][0].code == "required"


def test_two_threads_validate_apart():
    errors: list[str] = []
    start = threading.Barrier(2)

    def run(tag: str) -> None:
        start.wait()
        for n in range(300):
            title = f"{tag}{n}"[:10]
            s = Outer(data={"title": title, "inner": [{"name": tag}], "value": n})
            if not s.is_valid() or s.validated_data["title"] != title:
                errors.append(f"{tag}: {s.errors or s.validated_data}")
            elif s.validated_data["inner"][0]["name"] != tag or s.validated_data["value"] != n:
                errors.append(f"{tag}: {s.validated_data}")

    threads = [threading.Thread(target=run, args=(tag,)) for tag in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def test_leaf_fields_are_copied_not_rebuilt(monkeypatch):
    built: list[str] = []
    original = serializers.Field.__init__

    def counting(self, *args, **kwargs):
        built.append(type(self).__name__)
        original(self, *args, **kwargs)

    outer = Outer(data={})
    monkeypatch.setattr(serializers.Field, "__init__", counting)
    assert set(outer.fields) == {"title", "inner", "extra", "value"}
    # Only the nested serializer is built again (DRF's deep copy rebuilt all six fields).
    assert sorted(built) == ["Inner", "ListSerializer"]
