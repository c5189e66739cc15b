"""Client pieces that need no server: error mapping, search attribute types, connect failures."""

from __future__ import annotations

import grpc
import pytest

from _cw_fakes import FakeRpcError

from spindle.api import service_pb2 as svc
from spindle.client import Client
from spindle.client._namespaces import search_attribute_type_name as _sa_type_name
from spindle.client._namespaces import search_attribute_type_value as _sa_type_value
from spindle.client._rpc import map_rpc_error
from spindle.exceptions import NamespaceNotFoundError, RPCError, WorkflowNotFoundError


def test_error_mapping() -> None:
    assert isinstance(map_rpc_error(FakeRpcError(grpc.StatusCode.NOT_FOUND, "workflow x not found")),
                      WorkflowNotFoundError)
    assert isinstance(map_rpc_error(FakeRpcError(grpc.StatusCode.NOT_FOUND, "namespace 'n' not found")),
                      NamespaceNotFoundError)
    e = map_rpc_error(FakeRpcError(grpc.StatusCode.NOT_FOUND, "task token stale"), not_found="rpc")
    assert type(e) is RPCError and e.status == "NOT_FOUND"
    e = map_rpc_error(FakeRpcError(grpc.StatusCode.INVALID_ARGUMENT, "bad field"))
    assert type(e) is RPCError and e.status == "INVALID_ARGUMENT" and e.message == "bad field"


@pytest.mark.parametrize("name", ["Keyword", "KEYWORD", "keyword", "SEARCH_ATTRIBUTE_TYPE_KEYWORD"])
def test_search_attribute_type_spellings(name: str) -> None:
    assert _sa_type_value(name) == svc.SEARCH_ATTRIBUTE_TYPE_KEYWORD


def test_search_attribute_type_names_round_trip() -> None:
    for v in svc.SearchAttributeType.values():
        if v:
            assert _sa_type_value(_sa_type_name(v)) == v
    assert _sa_type_name(svc.SEARCH_ATTRIBUTE_TYPE_KEYWORD_LIST) == "KeywordList"
    assert _sa_type_value("keyword_list") == svc.SEARCH_ATTRIBUTE_TYPE_KEYWORD_LIST
    with pytest.raises(ValueError, match="Keyword"):
        _sa_type_value("Blob")


async def test_connect_to_nothing_fails_with_rpc_error() -> None:
    with pytest.raises(RPCError) as ei:
        await Client.connect("127.0.0.1:1")
    assert ei.value.status in ("UNAVAILABLE", "DEADLINE_EXCEEDED")
