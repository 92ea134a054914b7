"""Building Go template expressions for the rewrites: a condition grouped or passed as an argument, `and` of several,
and an expression read from the chart's root where `with` or `range` rebinds the dot.
"""

from __future__ import annotations

import json
import re


def grouped(cond: str) -> str:
    return cond if " " not in cond or cond.startswith("(") else f"({cond})"


def from_root(expr: str) -> str:
    """`expr` read from the chart's root where `.` is rebound (inside `with`): `.Values` -> `$.Values`."""
    return re.sub(r"(?<![\w$)\]])\.Values\b", "$.Values", expr)


def whole_root(expr: str) -> str:
    """`expr` read from the chart's root where `.` is rebound (`with`, `range`): `.Values` -> `$.Values`, and the
    dot itself (`include "x.gpuResource" .`) -> `$`."""
    return re.sub(r"(?<![\w$)\]])\.(?![\w])", "$", from_root(expr))


def as_arg(expr: str) -> str:
    """An expression as a function argument: parenthesised unless it is one term or already one group (a
    maintainer reads `((include "x.dra" .))` as a slip)."""
    return expr if re.fullmatch(r"[\w.$]+", expr) or unparenthesized(expr) != expr else f"({expr})"


def and_all(*parts: str) -> str:
    parts = tuple(dict.fromkeys(p for p in parts if p))  # `if gt (int $gpu) 0` around the key and the count's gate
    return parts[0] if len(parts) == 1 else "and " + " ".join(parts)


def unparenthesized(cond: str) -> str:
    """A condition as an action's whole argument: `(eq .Values.gpu.type "amd")` -> `eq .Values.gpu.type "amd"`."""
    if not (cond.startswith("(") and cond.endswith(")")):
        return cond
    depth, plain = 0, re.sub(r'"(?:[^"\\]|\\.)*"|`[^`]*`', '""', cond)  # a quoted ")" is no parenthesis
    for k, ch in enumerate(plain):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0 and k < len(plain) - 1:
            return cond  # `(a) (b)`: two terms
    return cond[1:-1]


def values_expr(path: tuple[str | int, ...]) -> str:
    """The Go template expression of a values key (`.Values.a.b`, or `index` for keys that are not identifiers)."""
    if all(isinstance(p, str) and re.fullmatch(r"[A-Za-z_]\w*", p) for p in path):
        return ".Values." + ".".join(str(p) for p in path)
    return "(index .Values " + " ".join(json.dumps(p) if isinstance(p, str) else str(p) for p in path) + ")"
