"""`BaseTool`: a function with an argument schema taken from its signature, and validation.

`Tool` (in `tools`) adds `invoke` / `ainvoke`, which run the recovery pipeline; the
pipeline itself only needs what is here, so it imports this module, never `tools`.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    Generic,
    NotRequired,
    ParamSpec,
    TypeVar,
    cast,
    get_args,
    get_origin,
    get_type_hints,
)

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined
from typing_extensions import TypedDict

from pytest_agentfaults._redact import redact_text
from pytest_agentfaults.errors import InvalidArgsError, UsageError
from pytest_agentfaults.runtime.models.base import ToolSpec
from pytest_agentfaults.runtime.policy import require_on_error

if TYPE_CHECKING:
    from pytest_agentfaults.runtime.policy import OnError

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["BaseTool"]

P = ParamSpec("P")
R = TypeVar("R")


class BaseTool(Generic[P, R]):
    """A function with its argument schema, validation and recovery policy (see `Tool`).

    What the tool-call pipeline needs of a tool; `Tool` adds `invoke` and `ainvoke`.
    """

    def __init__(
        self,
        function: Callable[P, R],
        *,
        name: str | None = None,
        description: str | None = None,
        on_error: OnError | None = None,
        namespace: Mapping[str, Any] | None = None,
        idempotent: bool = True,
    ) -> None:
        if not callable(function):
            raise UsageError(f"@tool needs a function, got {function!r}")
        if not isinstance(idempotent, bool):
            raise UsageError(f"@tool(idempotent={idempotent!r}): give True or False")
        self.idempotent = idempotent
        self.function = function
        self.name: str = name or str(getattr(function, "__name__", ""))
        if not self.name or not self.name.replace("_", "a").replace("-", "a").isalnum():
            raise UsageError(
                f"tool name {self.name!r} is not usable; give a name of letters, digits, "
                "'_' or '-' with @tool(name=...)"
            )
        doc = inspect.getdoc(function) or ""
        self.description = description if description is not None else doc.strip()
        self.on_error = require_on_error(on_error, "@af.tool(on_error=...)")
        self.is_async = inspect.iscoroutinefunction(function)
        self._args_model, self._field_names = _arguments_model(function, self.name, namespace)
        self._field_defaults = _field_defaults(function)
        # what the model sends under another name (a `Field(alias=...)`) -> the parameter
        self._renames = {
            str(info.alias): self._field_names[internal]
            for internal, info in self._args_model.model_fields.items()
            if info.alias != self._field_names[internal]
        }
        # The validator itself: model_validate_json's wrapper costs a third of a good check.
        validator = self._args_model.__pydantic_validator__
        self._validate_json = validator.validate_json
        self._validate_python = validator.validate_python
        self._quick: Any = None  # the happy-path validator, made on the first quick_check
        self.parameters = _clean_schema(self._args_model.model_json_schema(by_alias=True))
        self._spec = ToolSpec(
            name=self.name, description=self.description, parameters=self.parameters
        )
        self.__doc__ = getattr(function, "__doc__", None)
        self.__name__ = str(getattr(function, "__name__", self.name))
        self.__qualname__ = str(getattr(function, "__qualname__", self.__name__))
        self.__module__ = str(getattr(function, "__module__", __name__))
        self.__wrapped__ = function

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Call the plain function, bypassing validation and recovery."""
        return self.function(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<Tool {self.name!r}>"

    @property
    def spec(self) -> ToolSpec:
        """What the model is told about this tool."""
        return self._spec

    def validate(self, arguments: str | Mapping[str, Any] | None) -> dict[str, Any]:
        """Check ``arguments`` against the schema; return keyword arguments for the function.

        Raises `InvalidArgsError` (naming the tool and every problem) when they do not fit.
        """
        checked = self.check_arguments(arguments)
        if isinstance(checked, InvalidArgsError):
            raise checked
        return checked

    def check_arguments(
        self, arguments: str | Mapping[str, Any] | None
    ) -> dict[str, Any] | InvalidArgsError:
        """Like `validate`, but returns the `InvalidArgsError` instead of raising it.

        The agent loop uses this: an exception raised through its generator frames would
        cost more than the whole check.
        """
        raw = arguments if isinstance(arguments, str) else None
        try:
            if raw is not None:
                text = raw.strip()
                if not text and not self._field_names:
                    text = "{}"  # models often send "" for a tool without parameters
                parsed = self._validate_json(text)
            else:
                parsed = self._validate_python(dict(arguments or {}))  # type: ignore[arg-type]
        except ValidationError as exc:
            shown = raw if raw is not None else _safe_json(arguments)
            errors = exc.errors(include_url=False, include_input=False, include_context=False)
            invalid = InvalidArgsError(
                _describe_invalid(self.name, errors, shown), tool=self.name, raw_arguments=shown
            )
            # Keep pydantic's error as the cause (`errors` reads it), without its traceback:
            # that would hold this frame, and this frame holds `invalid`, a cycle on every bad
            # call.
            invalid.__cause__ = exc.with_traceback(None)
            return invalid
        values = parsed.__dict__
        return {public: values[internal] for internal, public in self._field_names.items()}

    def quick_check(self, arguments: str | Mapping[str, Any] | None) -> dict[str, Any] | None:
        """Keyword arguments for the function when ``arguments`` pass; None otherwise.

        The happy path of `invoke`: the same types and constraints as `check_arguments`,
        validated into a dict keyed by the parameter names (no model instance to unpack),
        and no error built. Parameters left out are left to the function's defaults. None
        says only "not quickly": `check_arguments` then says what is wrong.
        """
        quick = self._quick
        if quick is None:
            quick = self._quick = _quick_validator(self._args_model)
        if quick is False:
            return None
        try:
            if isinstance(arguments, str):
                checked: dict[str, Any] = quick.validate_json(arguments)
            else:
                given: Any = arguments if type(arguments) is dict else dict(arguments or {})
                checked = quick.validate_python(given)
        except ValidationError:
            return None
        if self._renames:
            renames = self._renames
            checked = {renames.get(key, key): value for key, value in checked.items()}
        for name, info in self._field_defaults.items():
            if name not in checked:  # the function's own default is a FieldInfo: not that
                checked[name] = info.get_default(call_default_factory=True)
        return checked


# --------------------------------------------------------------------------- internals


def _arguments_model(
    function: Callable[..., Any], tool_name: str, namespace: Mapping[str, Any] | None = None
) -> tuple[type[BaseModel], dict[str, str]]:
    """A pydantic model of the function's parameters.

    Fields get neutral internal names with the real parameter name as alias, so a parameter
    called ``json``, ``schema`` or ``copy`` never shadows a BaseModel attribute.
    """
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"tool {tool_name!r}: cannot read the signature of {function!r}") from exc
    try:
        hints = get_type_hints(function, localns=dict(namespace or {}), include_extras=True)
    except Exception as exc:
        raise UsageError(
            f"tool {tool_name!r}: its type hints cannot be resolved ({exc}); "
            "import the names they use at module level"
        ) from exc
    fields: dict[str, Any] = {}
    names: dict[str, str] = {}
    wires: dict[str, str] = {}
    for index, (param_name, param) in enumerate(signature.parameters.items()):
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise UsageError(
                f"tool {tool_name!r}: *{param_name} / **{param_name} cannot be described to a "
                "model; list the parameters explicitly"
            )
        if param.kind is param.POSITIONAL_ONLY:
            raise UsageError(
                f"tool {tool_name!r}: parameter {param_name!r} is positional-only; the model "
                "passes arguments by name, so remove the '/'"
            )
        if param_name not in hints:
            raise UsageError(
                f"tool {tool_name!r}: parameter {param_name!r} has no type hint; annotate it "
                f"(for example `{param_name}: str`) so its schema can be built"
            )
        internal = f"p{index}"
        wire = _wire_name(tool_name, param, hints[param_name])
        clash = next((name for key, name in names.items() if wires[key] == wire), None)
        if clash is not None:
            raise UsageError(
                f"tool {tool_name!r}: parameters {clash!r} and {param_name!r} are both sent as "
                f"{wire!r}; give them different names or Field(alias=...) values"
            )
        fields[internal] = (hints[param_name], _field(param, wire))
        names[internal] = param_name
        wires[internal] = wire
    model_name = "".join(part.capitalize() for part in tool_name.replace("-", "_").split("_"))
    try:
        model = create_model(
            f"{model_name or 'Tool'}Arguments",
            __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=False),
            **fields,
        )
    except Exception as exc:
        raise UsageError(
            f"tool {tool_name!r}: pydantic cannot build a schema from its type hints ({exc}); "
            "use JSON-friendly types (str, int, float, bool, lists, dicts, pydantic models)"
        ) from exc
    return model, names


def _wire_name(tool_name: str, param: inspect.Parameter, hint: Any) -> str:
    """The name the model sees and sends for ``param``: its ``Field(alias=...)``, or its own.

    The alias may be given as the default (``x: int = Field(alias="from")``) or in the hint
    (``x: Annotated[int, Field(alias="from")]``), as pydantic models and pydantic-ai read it.
    """
    infos = []
    if get_origin(hint) is Annotated:
        infos = [item for item in get_args(hint)[1:] if isinstance(item, FieldInfo)]
    if isinstance(param.default, FieldInfo):
        infos.append(param.default)
    wire = param.name
    for info in infos:
        for other in ("validation_alias", "serialization_alias"):
            value = getattr(info, other)
            if value is not None and value != (info.alias or param.name):
                shown = value if isinstance(value, str) else "<the name the model sends>"
                raise UsageError(
                    f"tool {tool_name!r}: parameter {param.name!r} sets {other}={value!r}; "
                    f"a tool's argument has one name, the one the model sends: use "
                    f"Field(alias={shown!r})"
                )
        if info.alias is not None:
            wire = info.alias
    return wire


def _field(param: inspect.Parameter, wire: str) -> FieldInfo:
    """The parameter's field: its default, or its constraints when it is ``= Field(...)``.

    ``x: int = Field(gt=0)`` is a constraint (and no default) as in a pydantic model, not
    a default value of a FieldInfo. Its alias is ``wire``: the name the model sends.
    """
    if isinstance(param.default, FieldInfo):
        named: FieldInfo = Field(alias=wire, title=wire)
        return FieldInfo.merge_field_infos(param.default, named)
    default = PydanticUndefined if param.default is param.empty else param.default
    return cast("FieldInfo", Field(default, alias=wire, title=wire))


def _field_defaults(function: Callable[..., Any]) -> dict[str, FieldInfo]:
    """The parameters written ``= Field(default=...)``: their function default is a FieldInfo."""
    try:
        parameters = inspect.signature(function).parameters.items()
    except (TypeError, ValueError):  # pragma: no cover - read once already by the model
        return {}
    return {
        name: param.default
        for name, param in parameters
        if isinstance(param.default, FieldInfo) and not param.default.is_required()
    }


def _quick_validator(model: type[BaseModel]) -> Any:
    """A validator of the arguments into a plain dict keyed by parameter name (False if none).

    Built from the arguments model's fields, so types, constraints and ``extra="forbid"``
    are the same; a TypedDict has no attribute a parameter name could shadow.
    """
    fields: dict[str, Any] = {}
    for info in model.model_fields.values():
        hint: Any = info.annotation
        if info.metadata:
            hint = Annotated[(hint, *info.metadata)]
        fields[info.alias or ""] = hint if info.is_required() else NotRequired[hint]
    try:
        make: Any = TypedDict  # built from runtime names, which a type checker cannot follow
        shape: Any = make(f"{model.__name__}Dict", fields)
        shape.__pydantic_config__ = ConfigDict(extra="forbid")
        return TypeAdapter(shape).validator
    except Exception:  # pragma: no cover - the model was built from the same types
        return False


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
    return schema


def _safe_json(arguments: object) -> str:
    try:
        return json.dumps(arguments, default=repr)
    except (TypeError, ValueError):
        return repr(arguments)


def _describe_invalid(tool_name: str, errors: list[Any], raw: str) -> str:
    problems = []
    for error in errors:
        if error["type"] == "json_invalid":
            problems.append(f"arguments are not valid JSON ({error['msg']})")
            continue
        if error["type"] in ("model_type", "model_attributes_type"):
            problems.append("arguments must be a JSON object")
            continue
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        problems.append(f"{where}: {error['msg']}")
    raw = redact_text(raw)  # before it is cut: a key cut short no longer looks like one
    shown = raw if len(raw) <= 200 else raw[:200] + "..."
    return f"invalid arguments for tool {tool_name!r}: {'; '.join(problems)} (got {shown})"
