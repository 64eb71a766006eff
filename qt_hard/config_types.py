"""Config sections read through pydantic: the types a YAML value is read as, and one-line errors.

A config section is a plain ``@dataclass`` whose annotations say what each key holds. :func:`read_section`
validates a mapping against a pydantic model of the dataclass (built once per class by
:func:`section_model`) and returns the dataclass; a key it does not have, or a value that does not fit,
is a :class:`~qt_hard.errors.ConfigError` whose one line names the key path::

    train.lr: expected a number, got 'abc'

Each annotation is read as the config type of :func:`config_type`:

* ``float``: a number (an integer too, or text that parses as one: PyYAML reads ``1e-3`` as text), never
  true/false;
* ``int``: an integer (a float without a fraction too), never true/false;
* ``bool``: true or false, nothing else;
* ``str``: text; YAML 1.1's bare ``no`` / ``yes`` (read as booleans) stand for the words;
* ``Literal[...]``: one of its values (a bare ``no`` / ``yes`` as the words);
* ``list`` / ``list[X]``: a list, or text split at commas (``train.trackers=csv,tensorboard``);
* ``Optional[X]``: null or X; ``dict``: a mapping; a nested dataclass: its own model.
"""

from __future__ import annotations

import dataclasses
import functools
import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

from pydantic import BaseModel, BeforeValidator, ConfigDict, PlainValidator, Strict, ValidationError, create_model

from qt_hard.errors import ConfigError


def parse_number(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def _whole_number(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _yaml_word(value: Any) -> Any:
    return ("yes" if value else "no") if isinstance(value, bool) else value


def _one_of(choices: tuple) -> PlainValidator:
    def check(value: Any) -> Any:
        word = _yaml_word(value)
        if isinstance(word, str) and word in choices:
            return word
        raise ValueError(f"expected one of {', '.join(map(str, choices))}, got {value!r}")

    return PlainValidator(check)


def _comma_list(value: Any) -> Any:
    return [item for item in value.split(",") if item] if isinstance(value, str) else value


Number = Annotated[float, Strict(), BeforeValidator(parse_number)]
Integer = Annotated[int, Strict(), BeforeValidator(_whole_number)]
Flag = Annotated[bool, Strict()]
Text = Annotated[str, Strict(), BeforeValidator(_yaml_word)]
_SCALARS = {float: Number, int: Integer, bool: Flag, str: Text}


def config_type(tp: Any) -> Any:
    """The pydantic type that a config value annotated ``tp`` is read as (the module docstring)."""
    if tp in _SCALARS:
        return _SCALARS[tp]
    origin, args = get_origin(tp), get_args(tp)
    if origin is Literal:
        return Annotated[tp, _one_of(args)] if all(isinstance(a, str) for a in args) else tp
    if origin in (Union, types.UnionType):
        return Union[tuple(config_type(a) for a in args)]
    if tp is list or origin is list:
        item = config_type(args[0]) if args else Any
        return Annotated[list[item], BeforeValidator(_comma_list)]
    if tp is dict or origin is dict:
        return dict[str, Any]
    if dataclasses.is_dataclass(tp):
        return section_model(tp)
    return tp


@functools.cache
def section_model(cls: type) -> type[BaseModel]:
    """The pydantic model of config dataclass ``cls``: its fields, their config types, no other key.
    Defaults stay the dataclass's own (a key left out is not set)."""
    hints = get_type_hints(cls, include_extras=True)
    fields = {f.name: (config_type(hints[f.name]), None) for f in dataclasses.fields(cls) if f.init}
    model = create_model(f"{cls.__name__}Schema", __config__=ConfigDict(extra="forbid"), **fields)
    model.__config_dataclass__ = cls
    return model


def _to_dataclass(model: BaseModel) -> Any:
    values = {}
    for name in model.model_fields_set:
        value = getattr(model, name)
        values[name] = _to_dataclass(value) if isinstance(value, BaseModel) else value
    return model.__config_dataclass__(**values)


def check_keys(cls: type, data: Any, prefix: str) -> None:
    """``ConfigError`` unless ``data`` is a mapping whose keys are fields of ``cls``; the message names
    the first unknown key and lists the known ones."""
    if not isinstance(data, dict):
        raise ConfigError(f"config section {prefix!r} must be a mapping, got {data!r}")
    names = sorted(f.name for f in dataclasses.fields(cls) if f.init)
    unknown = sorted(str(key) for key in set(data) - set(names))
    if unknown:
        raise ConfigError(f"unknown config key '{prefix}.{unknown[0]}' in section {prefix!r}; known keys: {names}")


def read_section(cls: type, data: Any, prefix: str) -> Any:
    """Config dataclass ``cls`` from mapping ``data`` (None: the defaults), validated by its model;
    ``ConfigError`` naming ``prefix.key`` for an unknown key or a value of the wrong type."""
    data = {} if data is None else data
    check_keys(cls, data, prefix)
    try:
        model = section_model(cls).model_validate(data)
    except ValidationError as err:
        raise ConfigError(describe(err, prefix)) from None
    return _to_dataclass(model)


_EXPECTED = {
    "float_type": "a number",
    "float_parsing": "a number",
    "int_type": "an integer",
    "int_from_float": "an integer",
    "int_parsing": "an integer",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "string_type": "text",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
}


def describe(err: ValidationError, prefix: str, skip: int = 0) -> str:
    """One line for the first error of ``err``: the key path under ``prefix`` (the error's location
    less its first ``skip`` parts, a union's tag say), what was expected, what was given."""
    first = err.errors(include_url=False)[0]
    path = ".".join(str(part) for part in (prefix, *first["loc"][skip:]) if part != "")
    kind, ctx = first["type"], first.get("ctx") or {}
    if kind == "extra_forbidden":
        return f"unknown config key {path!r}"
    if kind == "value_error":
        return f"{path}: {ctx.get('error', first['msg'])}"
    if kind == "literal_error":
        return f"{path}: expected one of {ctx['expected']}, got {first['input']!r}"
    expected = _EXPECTED.get(kind)
    if expected is None:
        return f"{path}: {first['msg']}, got {first['input']!r}"
    return f"{path}: expected {expected}, got {first['input']!r}"


def load_yaml(text: str, where: str):
    """The YAML document ``text`` (of the file ``where``) as plain data, read as ``yaml.safe_load``
    reads it except that a mapping holding one key twice (a second ``train:`` section, say) is a
    :class:`~qt_hard.errors.ConfigError` naming the file and both lines: PyYAML would keep the last
    one and drop the first without a word."""
    import yaml

    class _Strict(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):
            seen: dict = {}
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                if isinstance(key, (str, int, float, bool)) and key in seen:
                    raise ConfigError(
                        f"{where}:{line}: key {key!r} is given twice (first on line {seen[key]}); keep one"
                    )
                seen.setdefault(key, line)
            return super().construct_mapping(node, deep=deep)

    return yaml.load(text, Loader=_Strict)  # noqa: S506 - a SafeLoader
