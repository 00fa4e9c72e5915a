"""Flag specs as data, and the frozen config dataclass made from them.

A spec is `(kind, name, default, help)` (kind: string, bool, integer, float,
list) or `("enum", name, default, help, values)`; `tfbert_cli.program.define`
turns specs into absl flags. `config_class` turns the same specs into a
dataclass with one field per flag, holding the flag's default, so a flag's
name, type and default are written once and the library (`tfbert.tasks`)
reads plain attributes. Plain Python: no absl.
"""

import dataclasses

_TYPES = {"string": str | None, "bool": bool | None, "integer": int | None,
          "float": float | None, "list": list | None, "enum": str | None}


def config_class(name, specs, module=None):
    """A frozen dataclass `name` (in `module`) with a field per spec,
    defaulting to the flag's default (a list default is copied per
    instance)."""
    fields = []
    for kind, field_name, default, *_ in specs:
        value = (dataclasses.field(default_factory=lambda d=default: list(d))
                 if isinstance(default, list)
                 else dataclasses.field(default=default))
        fields.append((field_name, _TYPES[kind], value))
    cls = dataclasses.make_dataclass(name, fields, frozen=True)
    if module:
        cls.__module__ = module
    return cls


def config_of(cls, values, names=None):
    """An instance of the config dataclass `cls` with the attributes of
    `values` (e.g. parsed flags) that are its fields (only `names`, when
    given; the other fields keep their defaults)."""
    if names is None:
        names = [field.name for field in dataclasses.fields(cls)]
    return cls(**{name: getattr(values, name) for name in names})
