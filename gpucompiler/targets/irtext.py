"""Edits of printed LLVM IR that llvmlite's binding API cannot make.

llvmlite sets linkage and enum attributes but not calling conventions,
string attributes, fast-math flags or module flags. These helpers edit the
text LLVM itself printed (so its layout is canonical); the caller re-parses
the result, which verifies it.
"""

from __future__ import annotations

import re

_DEFINE = re.compile(r"^define\s", re.M)
_NAME = re.compile(r'@("(?:[^"\\]|\\.)*"|[-\w$.]+)\(')
#: tokens that may precede the calling convention in a ``define`` line
_PREFIX = {"private", "internal", "available_externally", "linkonce", "weak", "common",
           "appending", "extern_weak", "linkonce_odr", "weak_odr", "external", "dso_local",
           "dso_preemptable", "default", "hidden", "protected", "dllimport", "dllexport"}
_CALLING_CONVENTIONS = {"ccc", "fastcc", "coldcc", "ptx_kernel", "ptx_device"}
_AFTER_ARGS = re.compile(r"\s*(?:local_unnamed_addr|unnamed_addr|addrspace\(\d+\))")
_FLOAT_OPS = re.compile(r"(=\s*(?:fadd|fsub|fmul|fdiv|frem|fneg))\s(?!fast\b)")
_FLOAT_CALLS = re.compile(
    r"(=\s*(?:tail |musttail |notail )?call)\s(?!fast\b)(?=(?:float|double|half|<\d+ x (?:float|double|half)>)\s+@llvm\.)")


def _unquote(name: str) -> str:
    return name[1:-1] if name.startswith('"') else name


def _close_paren(line: str, start: int) -> int:
    depth = 0
    for i in range(start, len(line)):
        depth += {"(": 1, ")": -1}.get(line[i], 0)
        if depth == 0:
            return i
    raise ValueError(f"unbalanced parentheses in: {line}")


def edit_definitions(text: str, names, *, attributes: str = "", calling_convention: str = "") -> str:
    """Add inline function ``attributes`` and/or set ``calling_convention`` on the
    definitions of ``names`` (all definitions when ``names`` is None)."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if not _DEFINE.match(line):
            continue
        match = _NAME.search(line)
        if match is None or (names is not None and _unquote(match.group(1)) not in names):
            continue
        if attributes:
            end = _close_paren(line, match.end() - 1) + 1
            while (extra := _AFTER_ARGS.match(line, end)) is not None:
                end = extra.end()
            line = f"{line[:end]} {attributes}{line[end:]}"
        if calling_convention:
            head, rest = line[:match.start()], line[match.start():]
            tokens = head.split()
            keep = 1
            while keep < len(tokens) and tokens[keep] in _PREFIX:
                keep += 1
            if keep < len(tokens) and tokens[keep] in _CALLING_CONVENTIONS:
                tokens.pop(keep)
            tokens.insert(keep, calling_convention)
            line = " ".join(tokens) + " " + rest
        lines[i] = line
    return "\n".join(lines)


def add_fast_math_flags(text: str) -> str:
    """Mark every floating-point operation and intrinsic call ``fast``."""
    return _FLOAT_CALLS.sub(r"\1 fast ", _FLOAT_OPS.sub(r"\1 fast ", text))


def add_module_flag(text: str, behavior: int, key: str, value: str) -> str:
    """Add ``!{i32 behavior, !"key", value}`` to ``!llvm.module.flags`` unless ``key`` is set."""
    if f'!"{key}"' in text:
        return text
    ids = [int(n) for n in re.findall(r"^!(\d+) = ", text, re.M)]
    new = max(ids, default=-1) + 1
    node = f'!{new} = !{{i32 {behavior}, !"{key}", {value}}}'
    flags = re.search(r"^!llvm\.module\.flags = !\{(.*)\}$", text, re.M)
    if flags is None:
        return f"{text.rstrip()}\n\n!llvm.module.flags = !{{!{new}}}\n{node}\n"
    listed = f"{flags.group(1)}, !{new}" if flags.group(1).strip() else f"!{new}"
    text = text[:flags.start()] + f"!llvm.module.flags = !{{{listed}}}" + text[flags.end():]
    return f"{text.rstrip()}\n{node}\n"
