"""Provider wire formats, in one place: OpenAI chat completions, Anthropic messages, Ollama chat.

Everything the kit says or reads in a provider's format comes from here: the answers (JSON
bodies and SSE / NDJSON streams, `render_response`), the error bodies (`error_body`,
`error_payload`) and ``Retry-After`` headers, the broken answers faults serve
(`truncated_body`, `malformed_body`), and the requests read back (`provider_for`,
`wants_stream`, `model_request`). The loopback `LLMServer`, the in-process http faults,
the fake data of `pytest_agentfaults.fakes` and the model clients' tests all use it, so a
format is fixed in one place.

```
_base       provider names, content types, JSON and SSE framing
_answers    bodies and streams of an answer; cut and malformed answers
_errors     error bodies, error types, Retry-After headers
_requests   requests in: provider, stream, ModelRequest
```
"""

from __future__ import annotations

from pytest_agentfaults.testing._wire._answers import (
    malformed_body,
    render_response,
    truncated_body,
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
from pytest_agentfaults.testing._wire._requests import (
    model_name,
    model_request,
    parse_body,
    provider_for,
    wants_stream,
)

__all__ = [
    "JSON_TYPE",
    "NDJSON_TYPE",
    "PROVIDERS",
    "SSE_TYPE",
    "Provider",
    "content_type",
    "encode",
    "error_body",
    "error_payload",
    "error_type",
    "malformed_body",
    "model_name",
    "model_request",
    "parse_body",
    "provider_for",
    "render_response",
    "retry_after_headers",
    "sse",
    "status_phrase",
    "truncated_body",
    "wants_stream",
]
