"""Tokenizer: a line (or a function body's lines at once) split into token strings.

A function body's lines without quotes take a fast path: LLVM's punctuation is
spaced out with ``str.replace`` over their joined text and each line split at
whitespace (both in C). Other lines go through one compiled regular expression.
The two agree on every line of the corpus and of libdevice
(``tests/llvm/test_parse_shapes.py``).
"""

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
_COMMENT = re.compile(r";[^\n]*")
#: punctuation that is a token of its own, and sigils, which start one (``a%b`` is ``a``, ``%b``)
_PUNCT = (*((c, f" {c} ") for c in ",()[]{}<>=:*"), *((c, f" {c}") for c in "%@!#"))
#: characters the regular expression makes tokens of their own, which whitespace would not split off
_LONE = tuple("^|&~?'/`")


def tokenize(line: str) -> list[str]:
    """Tokens of one line of IR, comments dropped (the regular expression: for one line, cheaper than
    the fast path's fixed cost)."""
    toks = _findall(line)
    if ";" in line:
        for k, t in enumerate(toks):
            if t[0] == ";":
                del toks[k:]
                break
    return toks


def tokenize_lines(lines: list[str]) -> list[list[str]]:
    """``[tokenize(line) for line in lines]``, with the fast path run once over the joined text of
    the lines without quotes."""
    text = "\n".join(lines)
    quoted = '"' in text
    if quoted:
        text = "\n".join(["" if '"' in line else line for line in lines])
    if ";" in text:
        text = _COMMENT.sub("", text)
    spaced = _spaced(text)
    if not _plain(spaced):
        return [tokenize(line) for line in lines]
    out = [line.split() for line in spaced.split("\n")]
    if quoted:
        for k, line in enumerate(lines):
            if '"' in line:
                out[k] = tokenize(line)
    return out


def _spaced(text: str) -> str:
    for c, spaced in _PUNCT:
        if c in text:
            text = text.replace(c, spaced)
    return text


def _plain(text: str) -> bool:
    """Whether splitting the spaced ``text`` at whitespace gives the regular expression's tokens: no
    lone character that whitespace would leave attached, ``+`` only in a float's exponent."""
    for c in _LONE:
        if c in text:
            return False
    n = text.count("+")
    return not n or n == text.count("e+") + text.count("E+")


def unquote(body: str) -> str:
    """The name inside ``"..."`` (with ``\\XX`` escapes) or the plain body."""
    if not body.startswith('"'):
        return body
    s = body[1:-1]
    if "\\" not in s:
        return s
    raw = re.sub(rb"\\([0-9A-Fa-f]{2})", lambda m: bytes((int(m.group(1), 16),)), s.encode("utf-8", "surrogateescape"))
    return raw.replace(b"\\\\", b"\\").decode("utf-8", "surrogateescape")
