"""Typed search attributes (``spindle.common``): keys, collections, checks and encoding."""

from __future__ import annotations

import datetime
import json

import pytest

from spindle.api import service_pb2 as svc
from spindle.common import (
    SearchAttributeIndexedValueType,
    SearchAttributeKey,
    SearchAttributePair,
    SearchAttributeUpdate,
    TypedSearchAttributes,
)
from spindle.common._search_attributes import search_attributes_to_payloads, typed_from_payloads, updates_to_mapping
from spindle.converter import DataConverter

UTC = datetime.timezone.utc
TAGS = SearchAttributeKey.for_keyword_list("Tags")
CUSTOMER = SearchAttributeKey.for_keyword("CustomerId")
AMOUNT = SearchAttributeKey.for_int("Amount")
SCORE = SearchAttributeKey.for_float("Score")
VIP = SearchAttributeKey.for_bool("Vip")
DUE = SearchAttributeKey.for_datetime("Due")
NOTE = SearchAttributeKey.for_text("Note")


def test_index_types_are_the_wire_numbers() -> None:
    assert SearchAttributeIndexedValueType.KEYWORD_LIST == svc.SEARCH_ATTRIBUTE_TYPE_KEYWORD_LIST
    assert SearchAttributeIndexedValueType.TEXT == svc.SEARCH_ATTRIBUTE_TYPE_TEXT
    assert TAGS.indexed_value_type.type_name == "KeywordList"


def test_keys_compare_by_name_and_type() -> None:
    assert SearchAttributeKey.for_keyword("A") == SearchAttributeKey.for_keyword("A")
    assert SearchAttributeKey.for_keyword("A") != SearchAttributeKey.for_text("A")
    assert SearchAttributeKey.from_type_name("Tags", "keyword_list") == TAGS
    assert SearchAttributeKey.from_type_name("Tags", "INDEXED_VALUE_TYPE_KEYWORD_LIST") == TAGS
    with pytest.raises(ValueError, match="unknown search attribute type 'Keywords' for 'Tags'"):
        SearchAttributeKey.from_type_name("Tags", "Keywords")
    with pytest.raises(ValueError, match="non-empty name"):
        SearchAttributeKey.for_keyword("")


def test_typed_collection_is_sorted_unique_and_looks_up_by_key() -> None:
    attrs = TypedSearchAttributes([SearchAttributePair(TAGS, ["a"]), SearchAttributePair(AMOUNT, 3)])
    assert [p.key.name for p in attrs] == ["Amount", "Tags"]
    assert len(attrs) == 2
    assert attrs[TAGS] == ["a"] and attrs.get(AMOUNT) == 3
    assert TAGS in attrs and SearchAttributeKey.for_keyword("Tags") not in attrs
    assert attrs.get(CUSTOMER) is None and attrs.get(CUSTOMER, "none") == "none"
    with pytest.raises(KeyError):
        attrs[CUSTOMER]
    updated = attrs.updated(SearchAttributePair(TAGS, ["b"]), SearchAttributePair(CUSTOMER, "c1"))
    assert updated[TAGS] == ["b"] and updated[CUSTOMER] == "c1" and attrs[TAGS] == ["a"]
    with pytest.raises(ValueError, match="'Tags' appears twice"):
        TypedSearchAttributes([SearchAttributePair(TAGS, ["a"]), SearchAttributePair(TAGS, ["b"])])
    with pytest.raises(TypeError, match="SearchAttributePair"):
        TypedSearchAttributes([("Tags", ["a"])])  # type: ignore[list-item]
    assert len(TypedSearchAttributes.empty) == 0


def test_typed_values_are_checked_and_tagged() -> None:
    due = datetime.datetime(2024, 5, 1, 12, tzinfo=UTC)
    attrs = TypedSearchAttributes([
        SearchAttributePair(TAGS, ("a", "b")), SearchAttributePair(CUSTOMER, "c1"), SearchAttributePair(AMOUNT, 3),
        SearchAttributePair(SCORE, 2), SearchAttributePair(VIP, True), SearchAttributePair(DUE, due),
        SearchAttributePair(NOTE, "free text"),
    ])
    payloads = search_attributes_to_payloads(attrs, DataConverter.default)
    assert json.loads(payloads["Tags"].data) == ["a", "b"]
    assert payloads["Tags"].metadata["type"] == b"KeywordList"
    assert json.loads(payloads["Score"].data) == 2.0
    assert json.loads(payloads["Due"].data) == "2024-05-01T12:00:00+00:00"
    # and come back with their types, tagged or not
    back = typed_from_payloads(payloads)
    assert back[TAGS] == ["a", "b"] and back[DUE] == due and back[NOTE] == "free text" and back[SCORE] == 2.0
    untagged = typed_from_payloads(search_attributes_to_payloads({"Tags": ["x"], "N": 1, "B": False, "S": "s"},
                                                                 DataConverter.default))
    assert untagged[TAGS] == ["x"]
    assert untagged[SearchAttributeKey.for_int("N")] == 1
    assert untagged[SearchAttributeKey.for_bool("B")] is False
    assert untagged[SearchAttributeKey.for_keyword("S")] == "s"


@pytest.mark.parametrize(("key", "value", "expected"), [
    (TAGS, "a", "'Tags' is KeywordList, got 'a' (str); expected a list of str"),
    (TAGS, ["a", 1], "expected a list of str, but 1 is a int"),
    (AMOUNT, True, "'Amount' is Int, got True (bool); expected an int"),
    (AMOUNT, 1.5, "expected an int"),
    (SCORE, "1", "expected a float"),
    (VIP, 1, "expected a bool"),
    (CUSTOMER, 5, "expected a str"),
    (DUE, "2024-01-01", "expected a datetime"),
])
def test_a_value_that_does_not_fit_its_key_is_refused(key: SearchAttributeKey, value: object, expected: str) -> None:
    attrs = TypedSearchAttributes([SearchAttributePair(key, value)])
    with pytest.raises(TypeError) as err:
        search_attributes_to_payloads(attrs, DataConverter.default)
    assert expected in str(err.value)
    assert str(err.value).startswith("search_attributes: ")


def test_naive_datetime_is_refused() -> None:
    attrs = TypedSearchAttributes([SearchAttributePair(DUE, datetime.datetime(2024, 1, 1))])
    with pytest.raises(ValueError, match="'Due': the datetime .* has no time zone"):
        search_attributes_to_payloads(attrs, DataConverter.default)


def test_neither_typed_nor_mapping_is_refused() -> None:
    with pytest.raises(TypeError, match="expected a TypedSearchAttributes or a mapping"):
        search_attributes_to_payloads([SearchAttributePair(TAGS, ["a"])], DataConverter.default)  # type: ignore[arg-type]


def test_updates_become_the_mapping_upsert_records() -> None:
    due = datetime.datetime(2024, 5, 1, tzinfo=UTC)
    assert updates_to_mapping([TAGS.value_set(["a"]), DUE.value_set(due), CUSTOMER.value_unset()]) == {
        "Tags": ["a"], "Due": "2024-05-01T00:00:00+00:00", "CustomerId": None}
    assert TAGS.value_set(["a"]) == SearchAttributeUpdate(TAGS, ["a"])
    with pytest.raises(ValueError, match="'Tags' is updated twice"):
        updates_to_mapping([TAGS.value_set(["a"]), TAGS.value_unset()])
    with pytest.raises(TypeError, match="expected SearchAttributeUpdate entries"):
        updates_to_mapping([("Tags", ["a"])])  # type: ignore[list-item]
