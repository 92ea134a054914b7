"""Device counts exactly as Kubernetes reads them.

A manifest reaches the API server through sigs.k8s.io/yaml: go-yaml v2 resolves each plain scalar with YAML 1.1
rules (`010` is octal 8, `0x10` is 16, `1_000` is 1000, `yes` is a boolean, `1e3` is a float), the result is
encoded as JSON (a float as its shortest decimal), and `resource.Quantity` parses that text (`2000m`, `2.0`,
`1e3`, `1Ki`, leading zeros ignored, rounded up to nano). An extended resource must be a non-negative integer
(`MilliValue() % 1000 == 0`), and the scheduler and kubelet give the pod `Value()` devices (rounded up).

ruamel.yaml, which keeps the user's formatting, reads YAML 1.2 (`010` is 10), so a plain scalar is resolved
here again from its source text. Quoted and block scalars are strings in both readings.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_UP, Decimal, InvalidOperation, localcontext
from typing import Any

INT64_MAX = 2**63 - 1
UINT64_MAX = 2**64 - 1

# go-yaml v2 resolve.go: the map of special plain scalars, the first characters that may start a number,
# and the float syntax it accepts.
_BOOLS = {
    **dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), True),
    **dict.fromkeys(("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), False),
}
_NULLS = {"", "~", "null", "Null", "NULL"}
_SPECIAL_FLOATS = {
    **dict.fromkeys((".nan", ".NaN", ".NAN"), math.nan),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), math.inf),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), -math.inf),
}
_YAML_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_GO_FLOAT_DOT = re.compile(r"\.[0-9]+([eE][-+]?[0-9]+)?")
_GO_INT = {
    "0x": (16, "0123456789abcdefABCDEF"),
    "0X": (16, "0123456789abcdefABCDEF"),
    "0o": (8, "01234567"),
    "0O": (8, "01234567"),
    "0b": (2, "01"),
    "0B": (2, "01"),
}

# k8s.io/apimachinery resource/suffix.go
_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_SUFFIX_CHARS = set("eEinumkKMGTP")
_NANO = Decimal("1e-9")


class QuantityError(ValueError):
    """Text that resource.ParseQuantity refuses."""


@dataclass(frozen=True)
class Count:
    """The device count Kubernetes gives a container for one value, or why it would refuse the value."""

    value: int | None
    problem: str = ""  # "" when value is set
    kind: str = ""  # null, boolean, fraction, negative, too-large, not-a-number
    text: str = ""  # the value as written in the file

    @property
    def shown(self) -> str:
        """The value as written, with what Kubernetes makes of it when that is not the same digits."""
        if self.value is None or self.text.strip('"') in ("", str(self.value)):
            return str(self.value)
        return f"{self.text} (= {self.value} for Kubernetes)"

    @property
    def ok(self) -> bool:
        return self.value is not None


def go_parse_int(text: str, unsigned: bool = False) -> int | None:
    """strconv.ParseInt(text, 0, 64) (ParseUint when unsigned): sign, 0x/0o/0b or a leading 0 for octal."""
    s, sign = text, 1
    if s and s[0] in "+-":
        if unsigned:
            return None
        sign = -1 if s[0] == "-" else 1
        s = s[1:]
    base, digits = 10, "0123456789"
    if s[:2] in _GO_INT:
        base, digits = _GO_INT[s[:2]]
        s = s[2:]
    elif len(s) > 1 and s[0] == "0":
        base, digits = 8, "01234567"
        s = s[1:]
    if not s or any(c not in digits for c in s):
        return None
    value = sign * int(s, base)
    if unsigned:
        return value if value <= UINT64_MAX else None
    return value if -(2**63) <= value <= INT64_MAX else None


def resolve_yaml11(text: str) -> Any:
    """What go-yaml v2 (the decoder of sigs.k8s.io/yaml) makes of a plain scalar: None, bool, int, float or str."""
    first = text[:1]
    if text in _NULLS:
        return None
    if first and first not in "+-0123456789.yYnNtTfFoO~":
        return text
    if text in _BOOLS:
        return _BOOLS[text]
    if text in _SPECIAL_FLOATS:
        return _SPECIAL_FLOATS[text]
    if first == ".":
        return float(text) if _GO_FLOAT_DOT.fullmatch(text) else text
    if first in "+-0123456789":
        plain = text.replace("_", "")
        for unsigned in (False, True):
            value = go_parse_int(plain, unsigned)
            if value is not None:
                return value
        if _YAML_FLOAT.fullmatch(plain):
            value = float(plain)
            if not math.isinf(value):  # strconv.ParseFloat fails with ErrRange: the scalar stays a string
                return value
    return text


def parse_quantity(text: str) -> Decimal:
    """The exact value of resource.ParseQuantity(text): sign, digits, fraction, then a decimal or binary SI
    suffix or a decimal exponent; leading zeros ignored; rounded up to nano; binary values capped at int64."""
    if not text:
        raise QuantityError("empty quantity")
    pos, end = 0, len(text)
    negative = False
    if text[0] in "+-":
        negative = text[0] == "-"
        pos = 1
    start = pos
    while pos < end and text[pos].isascii() and text[pos].isdigit():
        pos += 1
    num = text[start:pos]
    denom = ""
    if pos < end and text[pos] == ".":
        pos += 1
        dstart = pos
        while pos < end and text[pos].isascii() and text[pos].isdigit():
            pos += 1
        denom = text[dstart:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    if not all(c.isascii() and c.isdigit() for c in text[pos:]):
        raise QuantityError("not a quantity")
    suffix = text[suffix_start:]
    if suffix in _DECIMAL_SUFFIXES:
        base, exponent = 10, _DECIMAL_SUFFIXES[suffix]
    elif suffix in _BINARY_SUFFIXES:
        base, exponent = 2, _BINARY_SUFFIXES[suffix]
    elif len(suffix) > 1 and suffix[0] in "eE" and re.fullmatch(r"[-+]?[0-9]+", suffix[1:]):
        base, exponent = 10, int(suffix[1:])
        if abs(exponent) > 2**31 - 1:  # Go truncates the exponent to int32; such a value is absurd anyway
            raise QuantityError("exponent out of range")
    else:
        raise QuantityError(f"unknown suffix {suffix!r}")
    if not num and not denom:
        if base == 10 and exponent < -9:  # only the exact fast path reads digit-less text (as 0)
            raise QuantityError("no digits")
        return Decimal(0)
    with localcontext() as ctx:
        ctx.prec = 10_000
        if base == 10 and abs(exponent) > 1000:
            mantissa = Decimal(f"{num or 0}.{denom or 0}")
            if mantissa == 0:
                return Decimal(0)
            # far beyond int64 one way, or rounded up to one nano the other way
            return Decimal(INT64_MAX) * 2 if exponent > 0 else (-_NANO if negative else _NANO)
        value = Decimal(f"{num or 0}.{denom or 0}") * (Decimal(base) ** exponent)
        if value != 0:
            value = value.quantize(_NANO, rounding=ROUND_UP)
        if base == 2 and value > INT64_MAX:
            value = Decimal(INT64_MAX)
    return -value if negative else value


def _number(value: int | float) -> Decimal:
    """A YAML number as the JSON text sigs.k8s.io/yaml hands to the quantity parser (Go's shortest float)."""
    if isinstance(value, float):
        return parse_quantity(repr(value).replace("e+", "e"))
    return Decimal(value)


def count_of(resolved: Any, shown: str) -> Count:
    """The count for a value as Go sees it after YAML decoding (None, bool, int, float or str)."""
    if resolved is None:
        return Count(None, "null is no value; set an integer device count, then run fix", "null")
    if isinstance(resolved, bool):
        return Count(
            None,
            f"{shown} is a boolean for Kubernetes (YAML 1.1 reads yes/no/on/off/y/n as booleans), not a count",
            "boolean",
        )
    if isinstance(resolved, float) and (math.isnan(resolved) or math.isinf(resolved)):
        return Count(None, f"{shown} is not a number Kubernetes accepts", "not-a-number")
    try:
        quantity = _number(resolved) if isinstance(resolved, int | float) else parse_quantity(str(resolved).strip())
    except (QuantityError, InvalidOperation, ValueError, OverflowError):
        return Count(
            None, f"{shown} is not an integer device count (a placeholder?); fix leaves this container alone", ""
        )
    if quantity < 0:
        return Count(None, f"{shown} is negative; Kubernetes refuses a negative device count", "negative")
    milli = (quantity * 1000).to_integral_value(rounding=ROUND_CEILING)
    if milli > INT64_MAX:
        return Count(
            None,
            f"{shown} is too large: Kubernetes checks a device count as int64 thousandths; fix leaves it alone",
            "too-large",
        )
    if milli % 1000:
        return Count(
            None, f"{shown} is a fraction; DRA claims whole devices; use a shared claim for a slice", "fraction"
        )
    return Count(int(milli // 1000), text=shown)


def _scalar_style(value: Any) -> str:
    """'plain' for a scalar ruamel read as a plain one, 'string' for quoted/block text, 'tagged' for !!tags.
    An anchored plain scalar that YAML 1.2 reads as text (`&n 0X3`, `&n yes`) comes back as a PlainScalarString
    (to keep its anchor): still plain, which go-yaml resolves as YAML 1.1."""
    from ruamel.yaml.comments import TaggedScalar
    from ruamel.yaml.scalarstring import PlainScalarString, ScalarString

    if isinstance(value, ScalarString) and not isinstance(value, PlainScalarString):
        return "string"
    if isinstance(value, TaggedScalar):
        return "tagged"
    return "plain"


_RESOLVED_TAGS = frozenset({"bool", "int", "float", "null", "timestamp"})  # go-yaml v2's resolvableTag, less str


def device_count(value: Any, source: str | None = None) -> Count:
    """The count Kubernetes gives for a value of `resources.limits`/`requests`: value is what ruamel loaded and
    source, when known, the plain scalar's own text in the file (see `plain_source`)."""
    if isinstance(value, bytes):  # `!!binary Mg==`: go-yaml decodes it to the string "2", which Kubernetes reads
        text = value.decode("utf-8", "replace")
        return count_of(text, repr(text).replace("'", '"'))
    style = _scalar_style(value)
    if style == "string":
        return count_of(str(value), repr(str(value)).replace("'", '"'))
    if style == "tagged":
        tag = str(getattr(value.tag, "value", value.tag) or "")
        text = str(value.value)
        if tag.removeprefix("tag:yaml.org,2002:").removeprefix("!!") not in _RESOLVED_TAGS or tag.endswith(":str"):
            # go-yaml v2 resolves only the core tags; any other (`!Ref 010`, a %TAG handle) keeps the text as a
            # string, which the quantity parser reads: `!Ref 010` is 10 devices, not YAML 1.1's octal 8
            return count_of(text, f"{tag} {text}" if tag.startswith("!") else f'"{text}"')
        return count_of(resolve_yaml11(text), text)
    if source is not None and source.startswith("! "):  # the non-specific tag: go-yaml keeps the text a string
        return count_of(source[2:], source)
    if value is None:
        return count_of(None, "null")
    if isinstance(value, bool):
        return count_of(value, source or str(value).lower())
    if source is None or (isinstance(value, str) and source != value):
        source = _reconstructed(value)  # a multi-line plain scalar: ruamel's folded text is what go-yaml sees too
    return count_of(resolve_yaml11(source), source)


def _reconstructed(value: Any) -> str:
    """Plain text for a value whose source is not at hand: ruamel keeps the width of zero-padded integers."""
    if isinstance(value, int) and not isinstance(value, bool):
        width = getattr(value, "_width", None)
        text = str(abs(int(value)))
        if width and width > len(text) and type(value).__name__ == "ScalarInt":
            text = text.zfill(width)
        return ("-" if value < 0 else "") + text
    if isinstance(value, float):
        return repr(float(value))
    return str(value)


_COMMENT = re.compile(r"[ \t]#")


def plain_source(body_lines: list[str], holder: Any, key: Any) -> str | None:
    """The source text of the plain scalar holder[key] in a document's lines (anchor and tag removed), or None."""
    owner = owner_of(holder, key)
    try:
        line, col = owner.lc.value(key)
    except (AttributeError, KeyError, TypeError):
        return None
    if not 0 <= line < len(body_lines):
        return None
    text = body_lines[line][col:]
    string = False  # under the non-specific tag `!`, which go-yaml reads as a string (ruamel as a plain scalar)
    while text[:1] in ("&", "!"):
        parts = text.split(None, 1)
        string = string or parts[0] == "!"
        text = parts[1] if len(parts) > 1 else ""
    if text[:1] in ("*", '"', "'", "|", ">", ""):
        return None
    m = _COMMENT.search(text)
    if m:
        text = text[: m.start()]
    flow = getattr(getattr(owner, "fa", None), "flow_style", lambda: False)()
    # a value read as a number, a boolean or a null never holds `,` `]` `}`: its text ends there, also where the
    # owner is a block mapping but the value an alias of a node anchored in a flow collection (`{cpu: &n 2}`)
    if flow or not isinstance(owner.get(key) if isinstance(owner, dict) else None, str):
        text = re.split(r"[,\]}]", text, maxsplit=1)[0]
    return ("! " if string else "") + text.strip()


def owner_of(mapping: Any, key: Any) -> Any:
    """The mapping that really holds key: mapping itself, or the map a merge key (`<<: *x`) brought it from."""
    own = getattr(mapping, "_ok", None)
    if own is None or key in own:
        return mapping
    for merged in getattr(mapping, "merge", None) or []:
        merged = merged[1] if isinstance(merged, tuple) else merged
        if key in merged:
            return owner_of(merged, key)
    return mapping
