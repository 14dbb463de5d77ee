"""The HTTP routes' arguments against the stored functions they call, and the OpenAPI document against the routes.

Each route declares its body or query fields as ``Argument`` tuples (memsub.http_api). A function that gains an
argument must gain the field too, or the route must say here why it does not expose it; and the OpenAPI
document must describe exactly those fields.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from memsub import http_api
from memsub.http_api import Argument
from memsub.http_openapi import openapi_document


@dataclass(frozen=True)
class RouteCall:
    """What one route calls: the stored function, the body or query fields, and the path segments it passes."""

    function: str
    arguments: Sequence[Argument]
    path: dict[str, str] = field(default_factory=dict)  # path segment -> the function's argument (without p_)
    renamed: dict[str, str] = field(default_factory=dict)  # field -> the function's argument (without p_)
    not_exposed: dict[str, str] = field(default_factory=dict)  # the function's argument -> why the route omits it


CALLS: dict[tuple[str, str], RouteCall] = {
    ("POST", "/api/v1/memory/packet"): RouteCall(
        "write_packet", (), not_exposed={"envelope": "the whole body is the envelope",
                                         "vectors": "a JSON body carries its vectors inside the envelope"}),
    ("POST", "/api/v1/memory/packets"): RouteCall(
        "write_packets", (), not_exposed={"envelopes": "the whole body is the array of envelopes",
                                          "vectors": "a JSON body carries its vectors inside the envelopes"}),
    ("GET", "/api/v1/memory/packet/{packet_id}"): RouteCall(
        "get_packet", http_api.GET_PACKET_ARGUMENTS, path={"packet_id": "packet_id"}),
    ("GET", "/api/v1/memory/packet/{packet_id}/lineage"): RouteCall(
        "get_lineage", http_api.LINEAGE_ARGUMENTS, path={"packet_id": "packet_id"}),
    ("GET", "/api/v1/memory/thread/{thread_id}"): RouteCall(
        "get_thread", http_api.THREAD_ARGUMENTS, path={"thread_id": "thread_id"},
        renamed={"after": "after_cursor"}),
    ("POST", "/api/v1/search/semantic"): RouteCall("semantic_search", http_api.SEMANTIC_ARGUMENTS),
    ("POST", "/api/v1/search/hybrid"): RouteCall("hybrid_search", http_api.HYBRID_ARGUMENTS),
    ("GET", "/api/v1/graph/traverse"): RouteCall("traverse_graph", http_api.TRAVERSE_ARGUMENTS),
    ("GET", "/api/v1/memory/namespace/{namespace}/keys"): RouteCall(
        "memory_list", http_api.MEMORY_LIST_ARGUMENTS, path={"namespace": "namespace_prefix"}),
    ("GET", "/api/v1/memory/namespace/{namespace}/keys/{key}"): RouteCall(
        "memory_get", (), path={"namespace": "namespace", "key": "key"}),
    ("PUT", "/api/v1/memory/namespace/{namespace}/keys/{key}"): RouteCall(
        "memory_write", http_api.MEMORY_WRITE_ARGUMENTS, path={"namespace": "namespace", "key": "key"}),
}
NO_FUNCTION = {("GET", "/api/v1/health"), ("GET", "/api/v1/ready"), ("GET", "/api/v1/openapi.json")}


def test_every_route_is_described_here():
    assert {(endpoint.method, endpoint.template) for endpoint in http_api.ROUTES} == set(CALLS) | NO_FUNCTION


@pytest.mark.parametrize("endpoint", http_api.ROUTES, ids=lambda endpoint: f"{endpoint.method} {endpoint.template}")
def test_a_route_takes_the_documented_query_parameters_only(endpoint):
    """The query parameters a route takes (any other is refused) are the ones its handler reads, for a GET route
    the fields it passes to its function, and those the OpenAPI document lists; a route whose fields are in the
    body takes none. The document also says which routes need no key."""
    operation = openapi_document()["paths"][endpoint.template][endpoint.method.lower()]
    assert (operation.get("security") == []) == endpoint.public
    documented = [p["name"] for p in operation.get("parameters", []) if p["in"] == "query"]
    assert documented == [argument.name for argument in endpoint.query]
    call = CALLS.get((endpoint.method, endpoint.template))
    if call is not None:
        assert tuple(endpoint.query) == (tuple(call.arguments) if endpoint.method == "GET" else ())


def function_arguments(conn: Any, function: str) -> dict[str, str]:
    """The argument names (without p_) and types of memsub.<function>, which has exactly one overload."""
    rows = conn.execute(
        "select p.proargnames, array(select pg_catalog.format_type(t, null) from unnest(p.proargtypes) t)"
        "  from pg_catalog.pg_proc p where p.pronamespace = 'memsub'::regnamespace and p.proname = %s",
        [function]).fetchall()
    assert len(rows) == 1, f"memsub.{function} has {len(rows)} overloads"
    names, types = rows[0]
    assert all(name.startswith("p_") for name in names[:len(types)])
    return {name[2:]: type_ for name, type_ in zip(names, types, strict=False)}


def sql_type(conn: Any, cast: str) -> str:
    return str(conn.execute("select pg_catalog.format_type(pg_catalog.to_regtype(%s), null)", [cast]).fetchone()[0])


@pytest.mark.parametrize("route", sorted(CALLS), ids=lambda route: f"{route[0]} {route[1]}")
def test_route_arguments_are_the_functions_arguments(db, route):
    call = CALLS[route]
    with db.connect("app") as conn:
        expected = function_arguments(conn, call.function)
        offered: dict[str, str] = {}
        for argument in call.arguments:
            offered[call.renamed.get(argument.name, argument.name)] = sql_type(conn, argument.cast)
    for segment, name in call.path.items():
        assert name in expected, f"{route}: path segment {segment} feeds no argument of {call.function}"
        offered[name] = expected[name]
    for name in call.not_exposed:
        assert name in expected, f"{route}: {name} is not an argument of {call.function}"
        offered[name] = expected[name]
    missing = sorted(set(expected) - set(offered))
    unknown = sorted(set(offered) - set(expected))
    assert (missing, unknown) == ([], []), f"{route}: fields missing {missing}, fields the function lacks {unknown}"
    assert offered == expected, f"{route}: SQL types differ from memsub.{call.function}'s"


@pytest.mark.parametrize("route", sorted(CALLS), ids=lambda route: f"{route[0]} {route[1]}")
def test_the_openapi_document_describes_the_route_arguments(route):
    call = CALLS[route]
    method, path = route
    operation = openapi_document()["paths"][path][method.lower()]
    parameters = operation.get("parameters", [])
    assert {p["name"] for p in parameters if p["in"] == "path"} == set(call.path)
    names = [argument.name for argument in call.arguments]
    required = sorted(argument.name for argument in call.arguments if argument.required)
    if method == "GET":
        query = [p for p in parameters if p["in"] == "query"]
        assert [p["name"] for p in query] == names
        assert sorted(p["name"] for p in query if p["required"]) == required
    elif call.arguments:
        body = operation["requestBody"]["content"]["application/json"]["schema"]
        assert list(body["properties"]) == names
        assert sorted(body.get("required", [])) == required
        assert body["additionalProperties"] is False


def test_a_vector_field_is_checked_number_by_number():
    """A vector field is sent as a vector of finite numbers that a 4-byte float holds; an element that is not one
    is refused with 422 naming it (field[i]), and the whole field when it is no array or an empty one."""
    assert http_api.vector([1, 0.5, -2, 1e-7], "query").to_list() == pytest.approx([1.0, 0.5, -2.0, 1e-7])
    assert http_api.vector(["0.25", 3], "query").to_list() == [0.25, 3.0]  # numbers as text convert
    assert http_api.vector([3.4e38, -3.4e38], "query").to_list() == pytest.approx([3.4e38, -3.4e38])
    assert len(http_api.vector([0.5] * 16000, "query").to_list()) == 16000  # pgvector's most; one more is 422
    for value, field_named in (([1, True], "query[1]"), ([0.5, float("nan")], "query[1]"),
                               ([float("inf"), 1], "query[0]"), ([1, "x"], "query[1]"), ([1, None], "query[1]"),
                               ([1, [2]], "query[1]"), ([0.5, 1e39], "query[1]"), ([-1e300], "query[0]"),
                               (["1e39"], "query[0]"), ([1, 10**400], "query[1]"), ([1, "2", 10**400], "query[2]"),
                               ([], "query"), ("1,2", "query"), (None, "query"), ([0.5] * 16001, "query")):
        with pytest.raises(http_api.Problem) as refused:
            http_api.vector(value, "query")
        assert (refused.value.status, refused.value.field) == (422, field_named), value


def test_a_number_field_refuses_an_integer_no_double_holds():
    """JSON integers have no size limit and Python reads them exactly: one too large for a double is 422 naming
    the field, as an infinite number is, not an OverflowError."""
    assert http_api.number(2**1000, "min_importance") == float(2**1000)
    for value in (10**400, -(10**400), "1e400"):
        with pytest.raises(http_api.Problem) as refused:
            http_api.number(value, "min_importance")
        assert (refused.value.status, refused.value.field) == (422, "min_importance"), value
