"""Help text that shows what was written.

Typer renders help through Rich markup, which takes every `[word]` for a style tag and
drops it: `[tool.spikelens.check]` and `[default: warning]` vanished from `check --help`.
Typer 0.29 also writes required arguments as `{paths}...` in the usage line and their type
as `<list[Path]>`. The command and group classes here escape every bracket that is not one
of the few style tags the help texts use, and name arguments the way click does
(`PATHS...`, `[NAME]`), and join the docstring's lines into paragraphs, so a command added later gets both without thinking about it.
"""
from __future__ import annotations

import re

import click
from typer.core import TyperArgument, TyperCommand, TyperGroup

from . import coercion

STYLE_TAGS = ("bold", "dim", "italic", "underline", "red", "green", "yellow", "cyan")
_MARKUP = re.compile(r"\[/?(?:%s)?\]" % "|".join(STYLE_TAGS))
_BRACKET = re.compile(r"(?<!\\)\[")


def escape_help(text: str | None) -> str | None:
    """Escape every `[` that does not open a style tag (`[bold]`, `[/]`, `[/dim]`...)."""
    if not text:
        return text
    out, pos = [], 0
    for tag in _MARKUP.finditer(text):
        out.append(_BRACKET.sub(r"\\[", text[pos:tag.start()]))
        out.append(tag.group())
        pos = tag.end()
    out.append(_BRACKET.sub(r"\\[", text[pos:]))
    return "".join(out)


def reflow(text: str | None) -> str | None:
    """Join the lines of each paragraph (Rich mode would keep the docstring's line breaks
    and wrap again around them); a paragraph with indented lines is code and stays as written."""
    if not text:
        return text
    paragraphs = text.split("\n\n")
    return "\n\n".join(p if any(line.startswith((" ", "\t")) for line in p.splitlines())
                       else " ".join(line.strip() for line in p.splitlines()) for p in paragraphs)


def plain_help(text: str | None) -> str:
    """The words a reader should see: style tags removed, escapes undone."""
    return _MARKUP.sub("", text or "").replace("\\[", "[")


class _Argument(TyperArgument):
    """A positional argument named as click does: `PATHS...` required, `[NAME]` optional;
    the name says what it holds, so no `<list[Path]>` type beside it."""

    def _usage_display_name(self) -> str:
        name = (self.metavar or self.name or "").upper()
        name = name if self.required else f"[{name}]"
        return name if self.nargs == 1 or name.endswith("...") else name + "..."

    @property
    def display_name_raw(self) -> str:
        return (self.metavar or self.name or "").upper()

    def display_type_rich(self, ctx: click.Context) -> str | None:
        return None

    def make_metavar(self, ctx: click.Context | None = None) -> str:
        return self._usage_display_name()


def _tidy(command: click.Command) -> None:
    command.help = escape_help(reflow(command.help))
    command.short_help = escape_help(command.short_help)
    command.epilog = escape_help(command.epilog)
    for param in command.params:
        if isinstance(param, TyperArgument) and not isinstance(param, _Argument):
            param.__class__ = _Argument  # typer builds its own argument objects; only naming changes
        if getattr(param, "help", None):
            param.help = escape_help(param.help)


class Command(TyperCommand):
    """Every spikelens command (see the module docstring)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        _tidy(self)

    def get_params(self, ctx: click.Context) -> list:
        return coercion.install(super().get_params(ctx))  # plain values without pydantic (see coercion)


class Group(TyperGroup):
    """The `spikelens` group itself: the same escaping for its help and options."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        _tidy(self)

    def get_params(self, ctx: click.Context) -> list:
        return coercion.install(super().get_params(ctx))
