"""Command-line flags generated from option dataclasses: ``--<prefix>-<option>`` for every field.

An options dataclass declares each option once: its type (``str``, ``int``,
``float``, ``bool``, or ``Optional`` of one, whose ``None`` default means "no
default"), its default, and in ``metadata`` its ``help`` text and, optionally,
its ``choices`` and ``metavar``. Everything else is generated here from that
declaration: the argparse flags (Hydra keys ``model.<prefix>_<option>``), the
defaults that architecture functions fill in, and reading the values back
typed and validated (conversion and choices here, in one place; then the
dataclass's own ``validate(prefix)``, where it has one, for the rest).

A locality method's prefix is its registered name and its dataclass its
``Options`` (a :class:`~.protocol.MethodOptions`): :func:`add_method_args`,
:func:`fill_method_defaults`, :func:`read_method_options`. MAN's layers use the
same functions with the prefix ``man`` (:class:`fairseq_localness.layers.man.MANOptions`).
"""

from __future__ import annotations

import argparse
import dataclasses
import typing
from typing import Any, Type, Union

from .errors import LocalityConfigError
from .protocol import LocalityMethod, MethodOptions

_KINDS = {"str": str, "int": int, "float": float, "bool": bool}


def parse_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected a boolean (true/false), got {value!r}")


def option_attr(prefix: str, option: str) -> str:
    """The argparse/Hydra attribute holding ``option`` of ``prefix`` (a method's name, or ``man``)."""
    return f"{prefix}_{option}"


def option_flag(prefix: str, option: str) -> str:
    """The command-line flag of ``option``: ``--<prefix>-<option>``, dashes for underscores."""
    return "--" + option_attr(prefix, option).replace("_", "-")


def _flag_type(fld: dataclasses.Field):
    kind = fld.type
    if isinstance(kind, str):  # annotations are strings under `from __future__ import annotations`
        if kind.startswith("Optional[") and kind.endswith("]"):
            kind = kind[len("Optional["):-1]
        kind = _KINDS[kind]
    elif typing.get_origin(kind) is Union:
        (kind,) = (arg for arg in typing.get_args(kind) if arg is not type(None))
    return parse_bool if kind is bool else kind


def add_option_args(parser: argparse.ArgumentParser, prefix: str, options: Type) -> None:
    """Add a flag ``--<prefix>-<field>`` for every field of the dataclass ``options``.

    No argparse defaults are set (fairseq suppresses them for model args), so
    architecture functions can fill in defaults; see :func:`fill_option_defaults`.
    """
    for fld in dataclasses.fields(options):
        text = fld.metadata.get("help", "")
        if fld.default is not None:
            text += f" (default: {fld.default})"
        kwargs = dict(type=_flag_type(fld), metavar=fld.metadata.get("metavar", fld.name.upper()), help=text)
        if "choices" in fld.metadata:
            kwargs["choices"] = fld.metadata["choices"]
        parser.add_argument(option_flag(prefix, fld.name), **kwargs)


def fill_option_defaults(args: Any, prefix: str, options: Type) -> None:
    """Set every missing option attribute of the dataclass ``options`` on ``args`` to its default."""
    for fld in dataclasses.fields(options):
        attr = option_attr(prefix, fld.name)
        if getattr(args, attr, None) is None:
            setattr(args, attr, fld.default)


def _read_field(args: Any, prefix: str, fld: dataclasses.Field) -> Any:
    value = getattr(args, option_attr(prefix, fld.name), None)
    if value is None:
        value = fld.default
    if value is None:  # an Optional option left unset
        return None
    flag = option_flag(prefix, fld.name)
    try:
        value = _flag_type(fld)(value)
    except (TypeError, ValueError, argparse.ArgumentTypeError) as err:
        raise LocalityConfigError(f"{flag}: {err}") from None
    choices = fld.metadata.get("choices")
    if choices is not None and value not in choices:
        raise LocalityConfigError(f"{flag}: {value!r} is not one of {', '.join(map(str, choices))}")
    return value


def read_option(args: Any, prefix: str, options: Type, name: str) -> Any:
    """One option of the dataclass ``options`` from ``args``: its type, its choices checked, its default if unset."""
    for fld in dataclasses.fields(options):
        if fld.name == name:
            return _read_field(args, prefix, fld)
    raise KeyError(f"{options.__name__} has no option {name!r}")


def read_options(args: Any, prefix: str, options: Type) -> Any:
    """Build and validate the dataclass ``options`` from ``args`` (argparse namespace, config or dict-like)."""
    values = {fld.name: _read_field(args, prefix, fld) for fld in dataclasses.fields(options)}
    result = options(**values)
    validate = getattr(result, "validate", None)
    if validate is not None:
        validate(prefix.replace("_", "-"))  # validate() spells flags: --<prefix>-<option>
    return result


def add_method_args(parser: argparse.ArgumentParser, cls: Type[LocalityMethod]) -> None:
    """Add ``--<name>-<option>`` flags for every option of the locality method ``cls``."""
    add_option_args(parser, cls.name, cls.Options)


def fill_method_defaults(args: Any, cls: Type[LocalityMethod]) -> None:
    """Set every missing option attribute of ``cls`` on ``args`` to its default."""
    fill_option_defaults(args, cls.name, cls.Options)


def read_method_options(args: Any, cls: Type[LocalityMethod]) -> MethodOptions:
    """Build and validate ``cls.Options`` from ``args`` (argparse namespace, config or dict-like)."""
    return read_options(args, cls.name, cls.Options)
