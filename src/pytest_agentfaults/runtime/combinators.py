"""Model combinators: `first_of` (failover) and `speculative` (first valid of n samples).

```python
model = af.first_of(af.OpenAIModel("gpt-4o-mini"), af.AnthropicModel("claude-haiku-4-5"))
model = af.speculative(model, 3)
```

Both are ordinary `Model` objects, so everything that takes a model takes them.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

from pytest_agentfaults.errors import (
    NEVER_RECOVERED,
    BudgetExceededError,
    MalformedResponseError,
    UsageError,
)
from pytest_agentfaults.runtime._components import as_model
from pytest_agentfaults.runtime.events import ErrorRecord
from pytest_agentfaults.runtime.models.base import Model, ModelRequest, ModelResponse
from pytest_agentfaults.runtime.output import soft_failure, unfence

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["FirstOf", "Speculative", "first_of", "speculative"]


def _name(model: object) -> str:
    return str(getattr(model, "name", type(model).__name__))


def _check_models(models: tuple[Any, ...], where: str) -> tuple[Model, ...]:
    if not models:
        raise UsageError(f"{where} needs at least one model")
    return tuple(as_model(m) for m in models)


class FirstOf:
    """Try each model in order; the first answer wins. If all fail, the first error is raised.

    Each move to the next model is a ``fallback`` event in the run's trace.
    """

    def __init__(self, *models: Model | str) -> None:
        self.models = _check_models(models, "first_of()")

    @property
    def name(self) -> str:
        """``first_of(a, b, ...)``."""
        return f"first_of({', '.join(_name(m) for m in self.models)})"

    def request(self, request: ModelRequest) -> ModelResponse:
        """Ask each model in turn until one answers."""
        first: Exception | None = None
        for index, model in enumerate(self.models):
            if index:
                request.count_call()  # the run counted the first; a cap may refuse this one
            try:
                return model.request(request)
            except NEVER_RECOVERED:  # never papered over by another model
                raise
            except Exception as exc:
                first = first or exc
                self._moving_on(request, index, exc)
        assert first is not None
        raise first

    async def arequest(self, request: ModelRequest) -> ModelResponse:
        """Ask each model in turn until one answers, asynchronously."""
        first: Exception | None = None
        for index, model in enumerate(self.models):
            if index:
                request.count_call()
            try:
                return await model.arequest(request)
            except NEVER_RECOVERED:  # never papered over by another model
                raise
            except Exception as exc:
                first = first or exc
                self._moving_on(request, index, exc)
        assert first is not None
        raise first

    def _moving_on(self, request: ModelRequest, index: int, exc: Exception) -> None:
        _failed(request, self.models[index], exc)
        if index + 1 < len(self.models):
            request.emit(
                "fallback",
                detail=f"{_name(self.models[index])} -> {_name(self.models[index + 1])}",
                error=ErrorRecord.from_exception(exc),
            )


def first_of(*models: Model | str) -> FirstOf:
    """A model that fails over: the first of ``models`` that answers wins."""
    return FirstOf(*models)


class Speculative:
    """Sample ``model`` up to ``n`` times and keep the first valid answer.

    Valid: no error, not empty or blocked, and JSON when the request asks for structured
    output. Sync requests sample one after another and stop at the first valid answer;
    async requests sample concurrently and cancel the rest once one is valid.
    """

    def __init__(self, model: Model | str, n: int) -> None:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise UsageError(f"speculative(model, n={n!r}): n must be an int >= 1")
        (self.model,) = _check_models((model,), "speculative()")
        self.n = n

    @property
    def name(self) -> str:
        """``speculative(model, n)``."""
        return f"speculative({_name(self.model)}, {self.n})"

    def request(self, request: ModelRequest) -> ModelResponse:
        """Sample until one answer is valid."""
        first: Exception | None = None
        for index in range(self.n):
            if index:
                request.count_call()  # the run counted the first; a cap may refuse this one
            try:
                return self._valid(self.model.request(request), request)
            except NEVER_RECOVERED:  # never papered over by another model
                raise
            except Exception as exc:
                first = first or exc
                _failed(request, self.model, exc)
        assert first is not None
        raise first

    async def arequest(self, request: ModelRequest) -> ModelResponse:
        """Sample concurrently; the first valid answer wins, the rest are cancelled.

        Only as many samples start as the run's budget has calls for.
        """

        async def sample() -> ModelResponse:
            return self._valid(await self.model.arequest(request), request)

        tasks = [asyncio.ensure_future(sample())]
        for _ in range(self.n - 1):
            try:
                request.count_call()
            except BudgetExceededError:
                break  # no call left for another sample: those started may still answer
            tasks.append(asyncio.ensure_future(sample()))
        first: BaseException | None = None
        winner: ModelResponse | None = None
        try:
            for done in asyncio.as_completed(tasks):
                try:
                    winner = await done
                except NEVER_RECOVERED:  # never papered over by another model
                    raise
                except Exception as exc:
                    first = first or exc
                    _failed(request, self.model, exc)
                else:
                    return winner
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            _count_losers(request, tasks, winner)
        assert first is not None
        raise first

    def _valid(self, response: ModelResponse, request: ModelRequest) -> ModelResponse:
        problem = soft_failure(response, _name(self.model))
        if (
            problem is None
            and request.output_schema is not None
            and not response.message.tool_calls
        ):
            try:
                json.loads(unfence(response.message.content))
            except ValueError as exc:
                problem = MalformedResponseError(
                    "speculative sample is not JSON", body=response.message.content
                )
                problem.__cause__ = exc
        if problem is not None:
            request.count_unused(response)  # an invalid sample's tokens were spent all the same
            raise problem
        return response


def _failed(request: ModelRequest, model: Model, exc: Exception) -> None:
    """The ``llm.error`` of one model a combinator asked, naming it.

    Once per failure: a combinator asked by another recorded its models' failures, and the
    run learns what was recorded, so the error raised on to it is no second failure.
    """
    if any(exc is done for done in request.recorded):
        return
    request.emit("llm.error", model=_name(model), error=ErrorRecord.from_exception(exc))
    request.recorded = (*request.recorded, exc)


def _count_losers(
    request: ModelRequest, tasks: Sequence[asyncio.Future[ModelResponse]], winner: object
) -> None:
    """Count the tokens of the valid samples that answered but lost the race."""
    for task in tasks:
        if task.done() and not task.cancelled() and task.exception() is None:
            response = task.result()
            if response is not winner:
                request.count_unused(response)


def speculative(model: Model | str, n: int) -> Speculative:
    """A model that samples ``model`` up to ``n`` times and keeps the first valid answer."""
    return Speculative(model, n)
