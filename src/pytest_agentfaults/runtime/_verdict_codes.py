"""The codes the resilience verdict reports (see `verdict`), and the advice given for each."""

from __future__ import annotations

import sys
from typing import Final

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["ADVICE", "CODES", "advice_for"]

CODES: Final = (
    "retry_after_ignored",
    "retried_non_retryable",
    "no_backoff",
    "retry_storm",
    "gave_up_early",
    "truncated_stream_accepted",
    "retried_non_idempotent",
    "malformed_body_accepted",
)

ADVICE: Final[dict[str, str]] = {
    "malformed_body_accepted": (
        "treat a 2xx answer that is not the provider's JSON (a proxy's HTML page, an empty "
        "stream) as a failure: check what came back, and request the answer again, with "
        "backoff"
    ),
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
        "with backoff: an official SDK does it with its max_retries (2 by default), "
        "a plain client needs a retry loop (tenacity, stamina), an af.Agent run "
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


# The advice for a client (issue 21.6): what to change, named for the client that sent the
# requests. ``{cls}`` is the SDK class the user-agent names (``OpenAI``, ``AsyncAnthropic``).
_SDK_ADVICE: Final[dict[str, str]] = {
    "gave_up_early": (
        "{name} ({pkg}.{cls}) retries 408/409/429/5xx, timeouts and dropped connections "
        "by itself, with backoff, max_retries times (2 by default); this request had one "
        "attempt, so max_retries was 0 for it: build the client with "
        "{pkg}.{cls}(max_retries=2), or call client.with_options(max_retries=2)"
    ),
    "stream": (
        "no SDK re-issues a stream that has started, whatever max_retries says: catch "
        "{pkg}.APIError (and httpx errors) while iterating the stream from {pkg}.{cls}, "
        "and request the answer again, with backoff; never use the partial text"
    ),
    "retry_storm": (
        "{name} ({pkg}.{cls}) already retries max_retries times with backoff: lower "
        "max_retries on {pkg}.{cls}(...), and do not wrap it in a retry loop of your own "
        "(each of your retries multiplies its attempts)"
    ),
    "retried_non_retryable": (
        "{pkg}.{cls} does not retry these by itself: the repeat came from code around it; "
        "catch {pkg}.APIStatusError and retry only when e.status_code is 408/409/429/5xx"
    ),
    "no_backoff": (
        "{pkg}.{cls} backs off by itself (0.5 s, 1 s, 2 s ... up to 8 s, less up to 25 % "
        "jitter): the quick repeat came from code around it; leave retrying to its "
        "max_retries"
    ),
    "malformed_body_accepted": (
        "{pkg}.{cls} does not raise on a 2xx body that is not JSON: it returns the text (an "
        "HTML page) as a str where a completion was expected, and a stream of no events as "
        "an empty stream; check isinstance(result, str) and that a stream gave its final "
        "event, and request the answer again, with backoff"
    ),
    "retry_after_ignored": (
        "{pkg}.{cls} waits a Retry-After by itself: the early repeat came from code "
        "around it; leave retrying to its max_retries, or wait the header's time"
    ),
    "via_pydantic_ai": (
        "pydantic-ai raises UnexpectedModelBehavior for a completion that is not JSON (the "
        "{pkg} SDK hands it over as text) and does not request it again: catch "
        "pydantic_ai.exceptions.UnexpectedModelBehavior around the run and run again, with "
        "backoff"
    ),
    "via_openai_agents": (
        "the OpenAI Agents SDK's OpenAI models raise AttributeError for a completion that is "
        "not JSON (the {pkg} SDK hands it over as text), and none of agents.retry_policies "
        "requests it again: give the agent model_settings=agents.ModelSettings(retry="
        "agents.ModelRetrySettings(max_retries=2, policy=lambda ctx: isinstance(ctx.error, "
        "AttributeError))) (the runner asks again, with backoff), or catch AttributeError "
        "around Runner.run and run again, with backoff"
    ),
    "via_langchain": (
        "langchain-openai's ChatOpenAI raises ValueError for a completion that is not JSON "
        "(the {pkg} SDK hands it over as text), and max_retries does not request it again: "
        "wrap the model in .with_retry(...) (it retries any exception, with backoff), or "
        "catch ValueError and invoke again, with backoff"
    ),
    "not_json": (
        "{pkg}.{cls} does not retry a 2xx answer whose JSON it cannot parse, and raises "
        "json.JSONDecodeError (a ValueError, not {pkg}.APIError) for it: catch "
        "json.JSONDecodeError around the call and request the answer again, with backoff"
    ),
}

_RUNTIME_ADVICE: Final[dict[str, str]] = {
    "malformed_body_accepted": (
        "this runtime raises MalformedResponseError for it: let the run retry the model "
        "call (on_llm_error=lambda e, n: af.LlmErrorDecision.retry(max_attempts=3)) instead "
        "of catching the error and going on"
    ),
    "gave_up_early": (
        "this runtime's model clients retry 408/429/5xx and dropped connections with "
        "transport_retry=af.TransportRetry(max_attempts=3) (the default; transport_retry="
        "False turns it off); timeouts and longer Retry-Afters go to the run: add "
        "on_llm_error=lambda e, n: af.LlmErrorDecision.retry(max_attempts=3)"
    ),
    "stream": (
        "the runtime does not repeat a stream that has started: let the run retry the model "
        "call (on_llm_error=lambda e, n: af.LlmErrorDecision.retry(max_attempts=3))"
    ),
    "retry_storm": (
        "lower the model's transport_retry=af.TransportRetry(max_attempts=...) (3 in all "
        "is the default), and keep on_llm_error's max_attempts small: the two multiply"
    ),
    "no_backoff": (
        "give the model a transport_retry=af.TransportRetry(initial_backoff=0.25) above 0 "
        "(its waits grow by multiplier= each time)"
    ),
}

# google-genai: retries only with HttpOptions(retry_options=...), never reads Retry-After
_GENAI_ADVICE: Final[dict[str, str]] = {
    "gave_up_early": (
        "the google-genai SDK retries nothing by default: build the client with "
        "genai.Client(http_options=types.HttpOptions(retry_options=types.HttpRetryOptions("
        "attempts=3))), and it retries 408/429/500/502/503/504, timeouts and failed "
        "connects with backoff; a connection dropped after the request was sent it never "
        "retries: catch httpx errors around the call and request again, with backoff"
    ),
    "stream": (
        "the google-genai SDK never re-issues a stream that has started, retry_options or "
        "not: catch google.genai.errors.APIError and httpx errors while iterating "
        "generate_content_stream(...), and request the answer again, with backoff; never "
        "use the partial text"
    ),
    "retry_after_ignored": (
        "the google-genai SDK's retry_options wait their own backoff (initial_delay=1 s, "
        "doubling, plus up to 1 s of jitter) and never read Retry-After or the 429's "
        "RetryInfo: raise types.HttpRetryOptions(initial_delay=...) to the server's wait, "
        "or catch google.genai.errors.ClientError with code 429 and wait its retryDelay "
        "before asking again"
    ),
    "no_backoff": (
        "the google-genai SDK backs off by itself once given retry_options (initial_delay=1 "
        "s, doubling): the quick repeat came from code around it, or from "
        "HttpRetryOptions(initial_delay=0); leave retrying to its retry_options"
    ),
    "retry_storm": (
        "lower types.HttpRetryOptions(attempts=...) (5 when not given), and do not wrap "
        "generate_content in a retry loop of your own (each of your retries multiplies its "
        "attempts)"
    ),
    "retried_non_retryable": (
        "the google-genai SDK does not retry these by itself: the repeat came from code "
        "around it; catch google.genai.errors.APIError and retry only when e.code is "
        "408/429/5xx"
    ),
    "gave_up_early_raised": (
        "the google-genai SDK raises json.JSONDecodeError (a ValueError, not "
        "google.genai.errors.APIError) on a 2xx answer that is not JSON, and its "
        "retry_options do not retry it: catch json.JSONDecodeError around the call and "
        "request the answer again, with backoff"
    ),
}

_HTTPX_ADVICE: Final[dict[str, str]] = {
    "gave_up_early": (
        "{name} does not retry HTTP errors by itself: wrap the call in a retry loop with "
        "backoff and jitter (tenacity, stamina), retrying 408/409/429/5xx, timeouts and "
        "dropped connections, or use an SDK that retries (openai.OpenAI, anthropic.Anthropic)"
    ),
    "no_backoff": (
        "wait before retrying: {name} has no retry of its own, so the loop around it must "
        "wait, growing the wait each time (exponential backoff with jitter: tenacity's "
        "wait_random_exponential, or stamina)"
    ),
    "stream": (
        "{name} does not retry: treat a stream that ends without its terminal event as a "
        "failure and request the answer again, with backoff"
    ),
}


def advice_for(
    code: str, kind: str, client: object, *, stream: bool = False, topic: str = ""
) -> str:
    """The advice for ``code`` fitted to the client (``kind`` from its `ClientRules`).

    ``topic`` names a more precise advice of the client's, when it has one (``not_json``).
    """
    key = topic or ("stream" if stream else code)
    default = "Anthropic" if kind == "anthropic" else "OpenAI"
    cls = client.split(".", 1)[1] if isinstance(client, str) and "." in client else default
    if kind in ("openai", "anthropic"):
        name = f"the official {kind} SDK"
        text = _SDK_ADVICE.get(key)
        if not text:
            return ADVICE[code]
        return text.format(name=name, pkg=kind, cls=cls) + _through_langchain(key, kind)
    if kind == "agentfaults":
        return _RUNTIME_ADVICE.get(key) or ADVICE[code]
    if kind == "genai":
        key = "gave_up_early_raised" if topic == "not_json" else key
        return _GENAI_ADVICE.get(key) or ADVICE[code]
    if kind == "httpx":
        text = _HTTPX_ADVICE.get(key)
        return text.format(name=f"plain {client}") if text else ADVICE[code]
    if stream:
        return ADVICE["truncated_stream_accepted"]
    return ADVICE[code]


#: LangChain's chat model over each SDK, by the package that holds it: its users set
#: max_retries there, and it passes it to the SDK client it builds
_LANGCHAIN: Final = {
    "openai": ("langchain_openai", "ChatOpenAI"),
    "anthropic": ("langchain_anthropic", "ChatAnthropic"),
}
#: the advice that names a max_retries to set, and the value each suggests
_MAX_RETRIES_ADVICE: Final = {"gave_up_early": "2", "retry_storm": "..."}


def _through_langchain(key: str, kind: str) -> str:
    """Where a LangChain user sets the SDK's max_retries, when the test imported LangChain.

    The request is the SDK's alone (its user-agent, its headers): whether LangChain sent
    it is not in it. The advice names LangChain's setting when its package is loaded, as
    a user of it reads "openai.OpenAI(max_retries=2)" and looks for a client they never
    built.
    """
    value = _MAX_RETRIES_ADVICE.get(key)
    package, model = _LANGCHAIN[kind]
    if value is None or package not in sys.modules:
        return ""
    return f" (through LangChain: {model}(max_retries={value}))"
