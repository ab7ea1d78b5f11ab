"""What read data may not do to a user's terminal and reports: drive the terminal, or
show a secret.

Names (runs, sources, metrics) and messages come from files and URLs someone else
may have written. Before any output they lose their control characters (`printable`:
ESC sequences such as `ESC[2J`, OSC 8 links and OSC 0 titles go whole, C0/C1 controls
but newline and tab), and URLs in them lose their credentials (`mask_url`: a password
in `user:password@` dropped, credential-looking query values such as `X-Amz-Signature`,
`token`, `secret`). `shown` does both; discovery applies it to names as runs are built,
`diagnostics.warn` to warnings and the CLI to error lines, so every renderer (terminal,
markdown, JSON, HTML, datasets, `ls`, `check`) receives clean text.
"""
from __future__ import annotations

import re

MASK = "***"

_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]?"  # CSI: ESC[2J, colours, cursor moves
    r"|\x1b\][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"  # OSC: titles (0), links (8), clipboard (52)
    r"|\x1b[PX^_][^\x1b\x9c]*(?:\x1b\\|\x9c)?"  # DCS, SOS, PM, APC strings
    r"|\x9b[0-?]*[ -/]*[@-~]?"  # 8-bit CSI
    r"|\x9d[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"  # 8-bit OSC
    r"|\x1b[@-_]?"  # any other escape
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"  # C0 (not tab, newline), DEL, C1, bidi overrides
)
_ESCAPES_ONE_LINE = re.compile(_ESCAPES.pattern + r"|\n")

SECRET_KEYS = re.compile(
    r"^(?:x-amz-(?:signature|credential|security-token)|x-goog-(?:signature|credential)|sig|signature|"
    r"token|access_token|id_token|refresh_token|auth|authorization|key|api_key|apikey|access_key|"
    r"secret|secret_key|client_secret|password|passwd|pwd|sas)$", re.I)
"""Query parameters whose values are credentials (AWS, GCS and Azure presigned URLs, API tokens)."""
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>]+")
_USERINFO = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*://)([^/@\s]*)@")
_QUERY_PAIR = re.compile(r"([?&;])([^=&;#\s]+)=([^&;#\s]*)")


def printable(text: str, *, newlines: bool = True) -> str:
    """`text` without terminal escape sequences and control characters (tab kept; newline
    kept unless `newlines` is False, then a space)."""
    if not isinstance(text, str):
        text = str(text)
    if text.isprintable() and "\x1b" not in text:
        return text
    pattern = _ESCAPES if newlines else _ESCAPES_ONE_LINE
    return pattern.sub(lambda m: " " if m.group(0) == "\n" else "", text)


def mask_url(url: str) -> str:
    """The URL with the password of its userinfo dropped (`http://alice@host`) and its
    credential query values masked (`?X-Amz-Signature=***`); other parts as they were."""
    def userinfo(m: re.Match) -> str:
        user, sep, _ = m.group(2).partition(":")
        return f"{m.group(1)}{user}@" if sep else m.group(0)

    out = _USERINFO.sub(userinfo, url, count=1)
    if "?" in out or ";" in out:
        out = _QUERY_PAIR.sub(lambda m: f"{m.group(1)}{m.group(2)}={MASK}" if SECRET_KEYS.match(m.group(2))
                              else m.group(0), out)
    return out


def mask_urls(text: str) -> str:
    """Every URL inside a message masked (`mask_url`)."""
    if "://" not in text:
        return text
    return _URL.sub(lambda m: mask_url(m.group(0)), text)


def shown(text: str, *, newlines: bool = True) -> str:
    """Fit to print: credentials masked and control characters gone."""
    return printable(mask_urls(str(text)), newlines=newlines)
