"""Provider wire formats, in one place: OpenAI, Anthropic, Ollama and Gemini.

OpenAI's are chat completions and the Responses API. Everything the kit says or reads in a
provider's format comes from here: the answers (JSON bodies and SSE / NDJSON streams,
`render_response`), the error bodies (`error_body`, `error_payload`) and ``Retry-After``
headers, the broken answers faults serve (`truncated_body`, `malformed_body`), and the
requests read back (`provider_for`, `wants_stream`, `model_request`). The loopback
`LLMServer`, the in-process http faults, the fake data of `pytest_agentfaults.fakes` and
the model clients' tests all use it, so a format is fixed in one place.

```
_base       provider names, content types, JSON and SSE framing
_answers    bodies and streams of an answer; cut and malformed answers
_errors     error bodies, error types, Retry-After headers
_ids        request ids (x-request-id, request-id), counted per test
_requests   requests in: provider, stream, ModelRequest
_responses  the OpenAI Responses API: its answers, events and requests
_gemini     Gemini generateContent: its answers, stream and requests
_kinds      what the newer http= kinds answer (not_json, proxy_html, stall, quota ...)
```
"""

from __future__ import annotations

from pytest_agentfaults.testing._wire._answers import (
    malformed_body,
    render_response,
    truncated_body,
    truncated_events,
)
from pytest_agentfaults.testing._wire._base import (
    JSON_TYPE,
    NDJSON_TYPE,
    PROVIDERS,
    SSE_TYPE,
    Provider,
    content_type,
    encode,
    sse,
)
from pytest_agentfaults.testing._wire._errors import (
    error_body,
    error_payload,
    error_type,
    retry_after_headers,
    status_phrase,
)
from pytest_agentfaults.testing._wire._ids import RequestIds, draw_id, id_headers, request_ids
from pytest_agentfaults.testing._wire._kinds import (
    QUOTA_WAIT,
    RETRY_AFTER_FORMATS,
    STATUS_KINDS,
    Served,
    kind_served,
    retry_headers,
    status_served,
)
from pytest_agentfaults.testing._wire._requests import (
    model_name,
    model_request,
    parse_body,
    provider_for,
    wants_stream,
)

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "JSON_TYPE",
    "NDJSON_TYPE",
    "PROVIDERS",
    "QUOTA_WAIT",
    "RETRY_AFTER_FORMATS",
    "SSE_TYPE",
    "STATUS_KINDS",
    "Provider",
    "RequestIds",
    "Served",
    "content_type",
    "draw_id",
    "encode",
    "error_body",
    "error_payload",
    "error_type",
    "id_headers",
    "kind_served",
    "malformed_body",
    "model_name",
    "model_request",
    "parse_body",
    "provider_for",
    "render_response",
    "request_ids",
    "retry_after_headers",
    "retry_headers",
    "sse",
    "status_phrase",
    "status_served",
    "truncated_body",
    "truncated_events",
    "wants_stream",
]
