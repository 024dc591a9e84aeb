"""`ToolFailure`: a failure a tool returns instead of raising.

Below the error taxonomy (`errors.classify` reads it) and the runtime (tools return it),
so neither imports the other for it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["ToolFailure"]


class ToolFailure(BaseModel):
    """An expected business failure, returned (not raised) by a tool.

    ```python
    @af.tool
    def read(path: str) -> str | af.ToolFailure:
        if not os.path.exists(path):
            return af.ToolFailure(error="File not found", recommendations=["List the dir first"])
        ...
    ```

    It is recorded as a ``tool.error`` event of kind ``"logical"``, fed back to the model,
    and never retried.
    """

    model_config = ConfigDict(frozen=True)

    error: str
    recommendations: list[str] = Field(default_factory=list)

    def __str__(self) -> str:
        return self.error
