"""Typed state: a chart's pydantic model validates every write, at the write."""

from __future__ import annotations

import typing
from typing import Annotated, Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from ._errors import StateValidationError
from ._values import to_bytes

__all__ = ["StateValidator"]


class StateValidator:
    """Validates writes to the fields of ``model`` (strict: no silent coercion)."""

    def __init__(self, model: type[BaseModel]) -> None:
        self.model = model
        self._extra = model.model_config.get("extra") == "allow"
        self._fields: dict[str, TypeAdapter[Any]] = {}
        self._items: dict[str, TypeAdapter[Any] | None] = {}
        self._required = {n for n, f in model.model_fields.items() if f.is_required()}
        for name, info in model.model_fields.items():
            annotation = info.annotation if info.annotation is not None else Any
            # The FieldInfo carries the constraints (gt=, max_length=, ...): validate them too.
            self._fields[name] = TypeAdapter(Annotated[annotation, info])  # type: ignore[arg-type]
            self._items[name] = self._item_adapter(info.annotation)

    @staticmethod
    def _item_adapter(annotation: Any) -> TypeAdapter[Any] | None:
        origin = typing.get_origin(annotation)
        if origin in (list, typing.List):  # noqa: UP006 - matching either spelling
            args = typing.get_args(annotation)
            return TypeAdapter(list[args[0]] if args else list)  # type: ignore[valid-type]
        return None

    def _adapter(self, key: str, stage_path: str) -> TypeAdapter[Any] | None:
        adapter = self._fields.get(key)
        if adapter is None and not self._extra:
            raise StateValidationError(
                f"stage {stage_path!r} wrote {key!r}, which is not a field of "
                f"{self.model.__name__} (fields: {', '.join(self._fields)}); add the field or "
                "fix the key (model_config extra='allow' permits any key)",
                key=key,
                stage_path=stage_path,
            )
        return adapter

    def _validate(self, adapter: TypeAdapter[Any], data: bytes, key: str, where: str) -> None:
        try:
            adapter.validate_json(data, strict=True)
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first["loc"])
            raise StateValidationError(
                f"stage {where!r} wrote {key!r} = {data[:80].decode(errors='replace')}, which "
                f"does not match {self.model.__name__}.{key}"
                f"{'[' + loc + ']' if loc else ''}: {first['msg']}",
                key=key,
                stage_path=where,
            ) from None

    def check_set(self, key: str, data: bytes, stage_path: str) -> None:
        adapter = self._adapter(key, stage_path)
        if adapter is not None:
            self._validate(adapter, data, key, stage_path)

    def check_append(self, key: str, data: bytes, stage_path: str) -> None:
        """Validate only the appended items (the list's item type), keeping appends O(change)."""
        if self._adapter(key, stage_path) is None:
            return
        items = self._items.get(key)
        if items is None:
            raise StateValidationError(
                f"stage {stage_path!r} appended to {key!r}, but {self.model.__name__}.{key} is "
                "not a list",
                key=key,
                stage_path=stage_path,
            )
        self._validate(items, data, key, stage_path)

    def check_merged(self, key: str, merged: Any, stage_path: str) -> None:
        adapter = self._adapter(key, stage_path)
        if adapter is not None:
            self._validate(adapter, to_bytes(merged), key, stage_path)

    def check_delete(self, key: str, stage_path: str) -> None:
        if key in self._required:
            raise StateValidationError(
                f"stage {stage_path!r} deleted {key!r}, a required field of "
                f"{self.model.__name__}; write a new value instead",
                key=key,
                stage_path=stage_path,
            )

    def check_input(self, key: str, data: bytes) -> None:
        self.check_set(key, data, "run input")
