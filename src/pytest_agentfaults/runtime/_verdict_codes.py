"""The codes the resilience verdict reports (see `verdict`), and the advice given for each."""

from __future__ import annotations

from typing import Final

__all__ = ["ADVICE", "CODES"]

CODES: Final = (
    "retry_after_ignored",
    "retried_non_retryable",
    "no_backoff",
    "retry_storm",
    "gave_up_early",
    "truncated_stream_accepted",
    "retried_non_idempotent",
)

ADVICE: Final[dict[str, str]] = {
    "retry_after_ignored": (
        "wait at least as long as the server's Retry-After (or retry-after-ms) before "
        "retrying; a retry that comes sooner is refused again and spends the rate limit"
    ),
    "retried_non_retryable": (
        "do not retry 400/401/403/404/422 or errors classified as not retryable: the same "
        "request fails the same way; fix the request or the credentials, or feed the error "
        "back (af.feed_back()) instead of af.retry()"
    ),
    "no_backoff": (
        "wait before retrying, growing the wait each time (exponential backoff with "
        "jitter, e.g. af.ResilienceConfig(strategy='exponential_jitter', base_delay=0.5))"
    ),
    "retry_storm": (
        "cap the attempts (3 in all is usual) and back off between them; a storm of "
        "retries keeps an overloaded server down"
    ),
    "gave_up_early": (
        "retry transient failures (429, 5xx, timeouts, dropped connections) at least once "
        "with backoff: keep the SDK's max_retries above 0, or use "
        "on_llm_error=lambda e, n: af.LlmErrorDecision.retry(max_attempts=3)"
    ),
    "truncated_stream_accepted": (
        "treat a stream that ends without its terminal event ([DONE], message_stop, "
        '"done": true) or with a read error as a failure, and request the answer again'
    ),
    "retried_non_idempotent": (
        "do not re-run a tool that must not run twice after a timeout or a broken "
        "connection: its effect may have happened. Give the failure back to the model so it "
        "checks the state first (the default policy does), or make the call safe to repeat "
        "(an idempotency key) and only then opt in with af.retry(..., "
        "allow_non_idempotent=True)"
    ),
}
