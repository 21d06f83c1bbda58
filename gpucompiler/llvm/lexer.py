"""Tokenizer: one compiled regex splits a line into token strings."""

from __future__ import annotations

import re

_TOKEN = re.compile(
    r"""[-+]?\d+\.\d+[eE][-+]?\d+          # 1.000000e+00
      | [%@!$#]?c?"[^"]*"                  # "s", c"..", %"a b", !"md", @"x"
      | [%@!$#]?[-\w.$\\]+                 # words, numbers, %x, @g, !12, !dbg, #0, $c, ...
      | ;.*                                # comment
      | \S""",
    re.X,
)
_findall = _TOKEN.findall


def tokenize(line: str) -> list[str]:
    """Tokens of one line of IR, comments dropped."""
    toks = _findall(line)
    if ";" in line:
        for k, t in enumerate(toks):
            if t[0] == ";":
                del toks[k:]
                break
    return toks


def unquote(body: str) -> str:
    """The name inside ``"..."`` (with ``\\XX`` escapes) or the plain body."""
    if not body.startswith('"'):
        return body
    s = body[1:-1]
    if "\\" not in s:
        return s
    raw = re.sub(rb"\\([0-9A-Fa-f]{2})", lambda m: bytes((int(m.group(1), 16),)), s.encode("utf-8", "surrogateescape"))
    return raw.replace(b"\\\\", b"\\").decode("utf-8", "surrogateescape")
