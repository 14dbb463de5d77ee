"""Every route of the OpenAPI document driven with generated input (schemathesis): no answer is a server error."""

from __future__ import annotations

import httpx
import schemathesis
from hypothesis import HealthCheck, given, settings

EXAMPLES_PER_OPERATION = 10


def test_generated_requests_to_every_route_never_get_a_server_error(api):
    document = httpx.get(f"{api.url}/api/v1/openapi.json").json()  # the document the server serves
    schema = schemathesis.openapi.from_dict(document)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == 14
    headers = {"Authorization": f"Bearer {api.keys['a']['api_key']}"}
    answered: dict[str, set[int]] = {}
    for operation in operations:
        @settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(case=operation.as_strategy())
        def call(case: schemathesis.Case) -> None:
            label = case.operation.label
            case.headers = {**(case.headers or {}), **headers}  # a valid key, so requests reach the database
            response = case.call(base_url=api.url, timeout=30)
            assert response.status_code < 500, (case.as_curl_command(), response.text)
            if response.status_code >= 400:
                problem = ["application/problem+json"], "application/problem+json"
                assert response.headers["content-type"] in problem, response.text
            answered.setdefault(label, set()).add(response.status_code)

        call()
    assert set(answered) == {operation.label for operation in operations}
