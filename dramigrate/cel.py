"""Evaluate DRA device selectors (CEL) the way Kubernetes does, using cel-python.

Kubernetes evaluates ``DeviceSelector.cel.expression`` against a variable
``device`` (kubernetes/dynamic-resource-allocation ``cel/compile.go``):

* ``device.driver`` -- the driver name,
* ``device.attributes[domain][name]`` -- int, bool, string or version values;
  versions are exposed as :class:`Semver` objects,
* ``device.capacity[domain][name]`` -- :class:`Quantity` objects,
* ``device.allowMultipleAllocations`` -- bool (DRAConsumableCapacity).

Looking up an unknown *domain* yields an empty map; looking up an unknown name
inside a domain map is an evaluation error, which in Kubernetes aborts the
allocation.  Here every evaluation error is raised as :class:`CelError`.

Emulated on top of cel-python's standard library: the Quantity and Semver
libraries (``k8s.io/apiserver/pkg/cel/library/{quantity,semverlib}.go``; Quantity
parsing is a port of ``resource.ParseQuantity`` with exact arithmetic, including
its rounding to 1n, the BinarySI cap and which values ``isInteger()`` accepts),
the cel-go strings extension v2 (``charAt``, ``indexOf``, ``lastIndexOf``,
``lowerAscii``, ``upperAscii``, ``replace``, ``split``, ``substring``, ``trim``,
``join``), ``find``/``findAll``, list ``indexOf``/``lastIndexOf``, DRA's
``includes``, ``cel.bind``, heterogeneous equality and cross-type numeric
comparisons, and the 10 KiB expression and 250-level nesting limits.  Calls to functions Kubernetes does
not declare and unknown ``device`` fields are rejected when compiling.

Not emulated: the rest of the static type check (other type errors surface at
evaluation, and may be hidden by ``&&``/``||`` short-circuiting), cost estimation
and the runtime cost limit (stood in for by EVAL_TIMEOUT and MAX_VALUE_SIZE),
compatibility-version gating of libraries, the URL, IP/CIDR, format, sets, authz and lists-v3 libraries, optional types,
``strings.quote``, Quantity ``mul``/``div``/``divInt``, and Go's in-place
conversion of Quantity operands to ``inf.Dec``.  Quantities with a decimal
exponent above 4096 raise CelError instead of being evaluated.  List-valued
attributes are exposed as lists (as with DRAListTypeAttributes enabled).
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Iterable, Mapping
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import celpy
import lark
import re2
from celpy import celtypes
from celpy.evaluation import CELEvalError, Evaluator

from dramigrate.inventory import VersionValue

if TYPE_CHECKING:
    from dramigrate.inventory import Device

__all__ = [
    "MAX_EXPRESSION_LENGTH",
    "CelError",
    "CompiledSelector",
    "Quantity",
    "Semver",
    "compile_selector",
    "device_matches",
]

#: ``CELSelectorExpressionMaxLength`` (k8s.io/api resource/v1 types.go).  Like the
#: apiserver (Go ``len``), the limit is applied to the UTF-8 encoded length.
MAX_EXPRESSION_LENGTH = 10 * 1024

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
_UINT64_MAX = 2**64 - 1

#: Largest decimal exponent this emulation materialises.  Kubernetes would accept
#: ``1e5000`` (and then compute with enormous numbers); we refuse such values
#: with a CelError instead of allocating huge integers.
_MAX_DECIMAL_EXPONENT = 4096


#: Kubernetes stops a selector at its runtime cost limit (CELSelectorExpressionMaxCost, 1,000,000, about 0.1 s in
#: Go), where building or reading a string or list costs about a tenth of its length. cel-python tracks no cost: a
#: rule pack's `'a'.replace('a', 'aaaaaaaaaa')...` took gigabytes and `[..].all(a, [..].all(b, ...))` minutes, per
#: device. An evaluation here stops after EVAL_TIMEOUT seconds of CPU time (then the selector is not evaluated
#: again), and a string or list longer than MAX_VALUE_SIZE, which alone costs Kubernetes its whole budget, is refused
#: before it is built.
EVAL_TIMEOUT = 2.0
MAX_VALUE_SIZE = 10_000_000


class CelError(Exception):
    """A selector could not be compiled or evaluated."""


class _OverBudget(CelError):
    """An evaluation past EVAL_TIMEOUT or MAX_VALUE_SIZE (Kubernetes' runtime cost limit would stop it)."""


def _check_size(size: int, what: str) -> None:
    if size > MAX_VALUE_SIZE:
        raise _OverBudget(
            f"{what} of {size:,} characters or items: past Kubernetes' runtime cost limit for a selector "
            f"(CELSelectorExpressionMaxCost, 1,000,000), where the allocation fails"
        )


class QuantityTooLarge(ValueError):
    """A valid quantity whose magnitude this emulation refuses to materialise."""


# --------------------------------------------------------------------------
# Quantity -- port of k8s.io/apimachinery/pkg/api/resource ParseQuantity
# --------------------------------------------------------------------------

_FORMAT_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
_NUMERIC = "unable to parse numeric part of quantity"
_SUFFIX = "unable to parse quantity's suffix"

_DIGITS = "0123456789"
_SUFFIX_CHARS = "eEinumkKMGTP"
_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_NANO = -9
_TOO_LARGE = f"quantity exponent above {_MAX_DECIMAL_EXPONENT} is not supported by this emulation"


def _in_int64(value: int) -> bool:
    return _INT64_MIN <= value <= _INT64_MAX


def _wrap_int32(value: int) -> int:
    return (value + 2**31) % 2**32 - 2**31


def _scan_quantity(text: str) -> tuple[bool, str, str, str, str]:
    """Port of ``parseQuantityString``: returns (positive, value, num, denom, suffix)."""
    positive = True
    pos = 0
    end = len(text)
    if pos < end and text[0] in "+-":
        positive = text[0] == "+"
        pos += 1

    # strip leading zeros
    while True:
        if pos >= end:
            return positive, "0", "0", "", ""
        if text[pos] != "0":
            break
        pos += 1

    # numerator
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos >= end:
        return positive, text, text[start:], "", ""
    num = text[start:pos] or "0"

    # denominator
    denom = ""
    if text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        if pos >= end:
            return positive, text, num, text[start:], ""
        denom = text[start:pos]
    value = text[:pos]

    # suffix: letters, an optional sign, then digits up to the end
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise ValueError(_FORMAT_WRONG)
    return positive, value, num, denom, text[suffix_start:]


def _interpret_suffix(suffix: str) -> tuple[int, int, str]:
    """Return (base, exponent, format) for a quantity suffix (``suffixHandler.interpret``)."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], "DecimalSI"
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], "BinarySI"
    if len(suffix) > 1 and suffix[0] in "eE":
        digits = suffix[1:]
        body = digits[1:] if digits[:1] in ("+", "-") else digits
        if body and all(c in _DIGITS for c in body):
            exponent = int(digits)
            if _in_int64(exponent):  # strconv.ParseInt(..., 10, 64), then int32()
                return 10, _wrap_int32(exponent), "DecimalExponent"
    raise ValueError(_SUFFIX)


def _parse_decimal_string(value: str) -> tuple[int, int]:
    """Port of ``inf.Dec.SetString``: returns (unscaled, scale), value = unscaled * 10**-scale."""
    body = value[1:] if value[:1] in ("+", "-") else value
    whole, dot, fraction = body.partition(".")
    digits = whole + fraction
    if not digits or "." in fraction or any(c not in _DIGITS for c in digits):
        raise ValueError(_NUMERIC)
    unscaled = int(digits)
    return (-unscaled if value.startswith("-") else unscaled), len(fraction) if dot else 0


def _round_up_to_nano(unscaled: int, scale: int) -> tuple[int, int]:
    """``inf.Dec.Round(x, 9, inf.RoundUp)`` for a positive ``unscaled``."""
    if scale <= 9:
        if 9 - scale > _MAX_DECIMAL_EXPONENT:
            raise QuantityTooLarge(_TOO_LARGE)
        return unscaled * 10 ** (9 - scale), 9
    shift = scale - 9
    if shift > len(str(unscaled)):
        return 1, 9  # any non-zero value below 1n rounds up to 1n
    quotient, remainder = divmod(unscaled, 10**shift)
    return quotient + (1 if remainder else 0), 9


class Quantity:
    """A Kubernetes ``resource.Quantity`` as exposed to CEL.

    The value is ``unscaled * 10**exponent`` and is kept exactly.  ``fast``
    records whether Kubernetes holds the value in its ``int64Amount`` form (as
    opposed to ``inf.Dec``), which decides what ``isInteger()``/``asInteger()``
    return; ``unscaled``/``exponent`` mirror Go's representation so that
    ``asApproximateFloat()`` performs the same float64 operations.
    """

    __slots__ = ("_exponent", "_fast", "_unscaled", "_value")

    def __init__(self, unscaled: int, exponent: int, *, fast: bool) -> None:
        if unscaled == 0 and exponent > 0:
            exponent = 0  # 0 * 10**k behaves alike for every k >= 0 (and k may be huge: "0e2147483647")
        if exponent > _MAX_DECIMAL_EXPONENT:
            raise QuantityTooLarge(_TOO_LARGE)
        self._unscaled = unscaled
        self._exponent = exponent
        self._fast = fast
        self._value = Fraction(unscaled) * Fraction(10) ** exponent if unscaled else Fraction(0)

    # -- construction -----------------------------------------------------
    @classmethod
    def parse(cls, text: str) -> Quantity:
        """Parse Kubernetes quantity syntax exactly like ``resource.ParseQuantity``.

        Raises ValueError with the Kubernetes error message for invalid input.
        """
        if not isinstance(text, str):
            raise ValueError(f"quantity must be a string, not {type(text).__name__}")
        if text == "":
            raise ValueError(_FORMAT_WRONG)
        if text == "0":
            return cls(0, 0, fast=True)
        positive, value, num, denom, suffix = _scan_quantity(text)
        base, exponent, fmt = _interpret_suffix(suffix)

        # Fast path: the value fits an int64Amount.
        precision, scale, mantissa = 0, 0, 1
        if fmt in ("DecimalExponent", "DecimalSI"):
            scale = exponent
            precision = 18 - (len(num) + len(denom))
        elif exponent >= 0 and not denom:
            mantissa = 1 << exponent
            precision = 15 - len(num) - exponent * 3 // 10 - 1
        else:
            precision = -1
        if precision >= 0:
            scale -= len(denom)
            if scale >= _NANO:
                shifted = int(num + denom)
                if not _in_int64(shifted):
                    raise ValueError(_NUMERIC)
                result = shifted * mantissa
                if _in_int64(result):
                    return cls(result if positive else -result, scale, fast=True)

        # Slow path: inf.Dec arithmetic.
        unscaled, dec_scale = _parse_decimal_string(value)
        if base == 10:
            dec_scale -= exponent
            if -dec_scale > _MAX_DECIMAL_EXPONENT:
                raise QuantityTooLarge(_TOO_LARGE)
        else:
            unscaled <<= exponent
        negative = unscaled < 0
        unscaled = abs(unscaled)
        if unscaled:
            # Non-zero values are rounded up (away from zero) to a multiple of 1n.
            unscaled, dec_scale = _round_up_to_nano(unscaled, dec_scale)
        else:
            dec_scale = 0  # zero: the scale is irrelevant (and may be huge, as in "0e-2147483648")
        if fmt == "BinarySI" and unscaled and Fraction(unscaled, 10**dec_scale) > _INT64_MAX:
            unscaled, dec_scale = _INT64_MAX, 0  # BinarySI values are capped at 2^63-1
        return cls(-unscaled if negative else unscaled, -dec_scale, fast=False)

    @classmethod
    def from_int(cls, value: int) -> Quantity:
        """``resource.NewQuantity(value, DecimalExponent)``."""
        return cls(value, 0, fast=True)

    # -- value access -------------------------------------------------------
    @property
    def value(self) -> Fraction:
        """The exact value."""
        return self._value

    def compare(self, other: Quantity) -> int:
        return (self._value > other._value) - (self._value < other._value)

    def sign(self) -> int:
        return (self._unscaled > 0) - (self._unscaled < 0)

    def as_int64(self) -> int | None:
        """``Quantity.AsInt64``: the value if Kubernetes can convert it without loss."""
        if not self._fast or self._exponent < 0:
            return None
        result = self._unscaled * 10**self._exponent
        return result if _in_int64(result) else None

    def approximate_float(self) -> float:
        """``Quantity.AsApproximateFloat64`` (same float64 operations as Go)."""
        try:
            base = float(self._unscaled)
        except OverflowError:
            base = math.copysign(math.inf, self._unscaled)
        if self._exponent == 0:
            return base
        return base * _go_pow10(self._exponent)

    # -- arithmetic (Quantity.Add / Quantity.Sub) ----------------------------
    def add(self, other: Quantity) -> Quantity:
        if self._fast and other._fast:
            fast = _int64_amount_add(self._unscaled, self._exponent, other._unscaled, other._exponent)
            if fast is not None:
                return Quantity(fast[0], fast[1], fast=True)
        exponent = min(self._exponent, other._exponent)
        unscaled = self._unscaled * 10 ** (self._exponent - exponent) + other._unscaled * 10 ** (
            other._exponent - exponent
        )
        return Quantity(unscaled, exponent, fast=False)

    def sub(self, other: Quantity) -> Quantity:
        return self.add(Quantity(-other._unscaled, other._exponent, fast=other._fast))

    # -- Python protocol ----------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self._value == other._value

    def __hash__(self) -> int:
        return hash(("Quantity", self._value))

    def __repr__(self) -> str:
        return f"Quantity({self})"

    def __str__(self) -> str:
        value = self._value
        if value.denominator == 1:
            return str(value.numerator)
        return f"{self._unscaled}e{self._exponent}"


def _int64_amount_add(a: int, a_scale: int, b: int, b_scale: int) -> tuple[int, int] | None:
    """``int64Amount.Add``: None when the result does not fit the int64 form."""
    if b == 0:
        return a, a_scale
    if a == 0:
        return b, b_scale
    if a_scale == b_scale:
        total, scale = a + b, a_scale
    elif a_scale > b_scale:
        shifted = a * 10 ** (a_scale - b_scale)
        if not _in_int64(shifted):
            return None
        total, scale = shifted + b, b_scale
    else:
        shifted = b * 10 ** (b_scale - a_scale)
        if not _in_int64(shifted):
            return None
        total, scale = a + shifted, a_scale
    return (total, scale) if _in_int64(total) else None


_POW10 = [float(f"1e{i}") for i in range(32)]
_POW10_POS32 = [float(f"1e{32 * i}") for i in range(10)]
_POW10_NEG32 = [float(f"1e-{32 * i}") for i in range(11)]


def _go_pow10(n: int) -> float:
    """Go's ``math.Pow10`` (table based, so results match Go bit for bit)."""
    if 0 <= n <= 308:
        return _POW10_POS32[n // 32] * _POW10[n % 32]
    if -323 <= n <= 0:
        return _POW10_NEG32[-n // 32] / _POW10[-n % 32]
    return math.inf if n > 0 else 0.0


# --------------------------------------------------------------------------
# Semver -- port of github.com/blang/semver/v4 as used by the semver library
# --------------------------------------------------------------------------

_ALPHANUM = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-" + _DIGITS)


def _numeric_part(part: str, what: str) -> int:
    if not part or any(c not in _DIGITS for c in part):
        raise ValueError(f"Invalid character(s) found in {what} number {part!r}")
    if len(part) > 1 and part[0] == "0":
        raise ValueError(f"{what.capitalize()} number must not contain leading zeroes {part!r}")
    value = int(part)
    if value > _UINT64_MAX:
        raise ValueError(f"{what} number {part!r} out of range")
    return value


class Semver:
    """A semantic version (blang/semver ``Version``) as exposed to CEL."""

    __slots__ = ("build", "major", "minor", "patch", "pre")

    def __init__(
        self, major: int, minor: int, patch: int, pre: tuple[int | str, ...] = (), build: tuple[str, ...] = ()
    ) -> None:
        self.major = major
        self.minor = minor
        self.patch = patch
        self.pre = pre
        self.build = build

    @classmethod
    def parse(cls, text: str, normalize: bool = False) -> Semver:
        """Strict semver 2.0 (``semver.Parse``); with ``normalize`` like ``normalizeAndParse``."""
        if not isinstance(text, str):
            raise ValueError(f"version must be a string, not {type(text).__name__}")
        if normalize:
            text = _normalize_version(text)
        if not text:
            raise ValueError("Version string empty")
        parts = text.split(".", 2)
        if len(parts) != 3:
            raise ValueError("No Major.Minor.Patch elements found")
        major = _numeric_part(parts[0], "major")
        minor = _numeric_part(parts[1], "minor")
        rest, _, build_text = parts[2].partition("+")
        build: tuple[str, ...] = ()
        if "+" in parts[2]:
            build = tuple(build_text.split("."))
            for item in build:
                if not item:
                    raise ValueError("Build meta data is empty")
                if not set(item) <= _ALPHANUM:
                    raise ValueError(f"Invalid character(s) found in build meta data {item!r}")
        patch_text, dash, pre_text = rest.partition("-")
        patch = _numeric_part(patch_text, "patch")
        pre: list[int | str] = []
        if dash:
            for item in pre_text.split("."):
                if not item:
                    raise ValueError("Prerelease is empty")
                if all(c in _DIGITS for c in item):
                    if len(item) > 1 and item[0] == "0":
                        raise ValueError(f"Numeric PreRelease version must not contain leading zeroes {item!r}")
                    pre.append(int(item))
                elif set(item) <= _ALPHANUM:
                    pre.append(item)
                else:
                    raise ValueError(f"Invalid character(s) found in prerelease {item!r}")
        return cls(major, minor, patch, tuple(pre), build)

    def compare(self, other: Semver) -> int:
        """``Version.Compare``: build metadata is ignored."""
        for mine, theirs in ((self.major, other.major), (self.minor, other.minor), (self.patch, other.patch)):
            if mine != theirs:
                return 1 if mine > theirs else -1
        if not self.pre or not other.pre:
            return (not self.pre) - (not other.pre)
        for mine_pre, theirs_pre in zip(self.pre, other.pre, strict=False):
            result = _compare_prerelease(mine_pre, theirs_pre)
            if result:
                return result
        return (len(self.pre) > len(other.pre)) - (len(self.pre) < len(other.pre))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Semver):
            return NotImplemented
        return self.compare(other) == 0

    def __hash__(self) -> int:
        return hash(("Semver", self.major, self.minor, self.patch, self.pre))

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            text += "-" + ".".join(str(p) for p in self.pre)
        if self.build:
            text += "+" + ".".join(self.build)
        return text

    def __repr__(self) -> str:
        return f"Semver({self})"


def _compare_prerelease(a: int | str, b: int | str) -> int:
    if isinstance(a, int) and isinstance(b, int):
        return (a > b) - (a < b)
    if isinstance(a, int):
        return -1
    if isinstance(b, int):
        return 1
    return (a > b) - (a < b)


def _normalize_version(text: str) -> str:
    """Port of ``normalizeAndParse`` (apiserver semverlib.go) up to the final parse."""
    text = text.removeprefix("v")
    parts = text.split(".", 2)
    for i, part in enumerate(parts):
        if len(part) > 1:
            part = part.lstrip("0")
            if not part or part[0] not in _DIGITS:
                part = "0" + part
            parts[i] = part
    if len(parts) < 3:
        if any(c in "+-" for c in parts[-1]):
            raise ValueError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return ".".join(parts)


def _go_int64(value: int) -> int:
    """``int64(uint64)`` as Go converts it."""
    return value - 2**64 if value > _INT64_MAX else value


# --------------------------------------------------------------------------
# CEL function library
# --------------------------------------------------------------------------


def _error(message: str) -> CELEvalError:
    return CELEvalError(message)


_CEL_TYPE_NAMES = {
    celtypes.BoolType: "bool",
    celtypes.IntType: "int",
    celtypes.UintType: "uint",
    celtypes.DoubleType: "double",
    celtypes.StringType: "string",
    celtypes.BytesType: "bytes",
    celtypes.ListType: "list",
    celtypes.MapType: "map",
}


def _cel_type_name(value: Any) -> str:
    if isinstance(value, Quantity):
        return "kubernetes.Quantity"
    if isinstance(value, Semver):
        return "kubernetes.Semver"
    for cls, name in _CEL_TYPE_NAMES.items():
        if isinstance(value, cls):
            return name
    return type(value).__name__


def _no_overload(name: str, *args: Any) -> TypeError:
    types = ", ".join(_cel_type_name(a) for a in args)
    return TypeError(f"found no matching overload for '{name}' applied to '({types})'")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, (bool, celtypes.BoolType, celtypes.UintType))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, (bool, celtypes.BoolType))


def _is_string(value: Any) -> bool:
    return isinstance(value, str)


def _require(name: str, check: Callable[[Any], bool], *args: Any) -> None:
    if not all(check(a) for a in args):
        raise _no_overload(name, *args)


# Quantity library (apiserver library/quantity.go)
def _quantity(text: Any) -> Any:
    _require("quantity", _is_string, text)
    try:
        return Quantity.parse(str(text))
    except ValueError as exc:
        return _error(str(exc))


def _is_quantity(text: Any) -> celtypes.BoolType:
    _require("isQuantity", _is_string, text)
    try:
        Quantity.parse(str(text))
    except QuantityTooLarge:
        return celtypes.BoolType(True)  # valid syntax; only its evaluation is unsupported here
    except ValueError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _quantity_operand(name: str, receiver: Any, other: Any) -> Quantity:
    if isinstance(receiver, Quantity) and isinstance(other, Quantity):
        return other
    if isinstance(receiver, Quantity) and _is_int(other):
        return Quantity.from_int(int(other))
    raise _no_overload(name, receiver, other)


def _add(receiver: Any, other: Any) -> Any:
    operand = _quantity_operand("add", receiver, other)
    try:
        return receiver.add(operand)
    except ValueError as exc:
        return _error(str(exc))


def _sub(receiver: Any, other: Any) -> Any:
    operand = _quantity_operand("sub", receiver, other)
    try:
        return receiver.sub(operand)
    except ValueError as exc:
        return _error(str(exc))


def _quantity_method(name: str, fn: Callable[[Quantity], Any]) -> Callable[[Any], Any]:
    def method(receiver: Any) -> Any:
        _require(name, lambda v: isinstance(v, Quantity), receiver)
        return fn(receiver)

    method.__name__ = name
    return method


def _as_integer(quantity: Quantity) -> Any:
    value = quantity.as_int64()
    if value is None:
        return _error("cannot convert value to integer")
    return celtypes.IntType(value)


# Semver library (apiserver library/semverlib.go, SemverVersion(1))
def _semver(text: Any, normalize: Any = False) -> Any:
    _require("semver", _is_string, text)
    _require("semver", lambda v: isinstance(v, (bool, celtypes.BoolType)), normalize)
    try:
        return Semver.parse(str(text), normalize=bool(normalize))
    except ValueError as exc:
        return _error(str(exc))


def _is_semver(text: Any, normalize: Any = False) -> celtypes.BoolType:
    _require("isSemver", _is_string, text)
    _require("isSemver", lambda v: isinstance(v, (bool, celtypes.BoolType)), normalize)
    try:
        Semver.parse(str(text), normalize=bool(normalize))
    except ValueError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _semver_method(name: str, field: str) -> Callable[[Any], Any]:
    def method(receiver: Any) -> Any:
        _require(name, lambda v: isinstance(v, Semver), receiver)
        return celtypes.IntType(_go_int64(getattr(receiver, field)))

    method.__name__ = name
    return method


# compareTo / isGreaterThan / isLessThan are shared by Quantity and Semver.
def _compare(name: str, receiver: Any, other: Any) -> int:
    if isinstance(receiver, Quantity) and isinstance(other, Quantity):
        return receiver.compare(other)
    if isinstance(receiver, Semver) and isinstance(other, Semver):
        return receiver.compare(other)
    raise _no_overload(name, receiver, other)


def _compare_to(receiver: Any, other: Any) -> celtypes.IntType:
    return celtypes.IntType(_compare("compareTo", receiver, other))


def _is_greater_than(receiver: Any, other: Any) -> celtypes.BoolType:
    return celtypes.BoolType(_compare("isGreaterThan", receiver, other) == 1)


def _is_less_than(receiver: Any, other: Any) -> celtypes.BoolType:
    return celtypes.BoolType(_compare("isLessThan", receiver, other) == -1)


# cel-go strings extension (ext.Strings, version 2)
_GO_SPACE = frozenset("\t\n\v\f\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000") | frozenset(
    chr(c) for c in range(0x2000, 0x200B)
)


def _char_at(text: Any, index: Any) -> Any:
    _require("charAt", _is_string, text)
    _require("charAt", _is_int, index)
    if index < 0 or index > len(text):
        return _error(f"index out of range: {index}")
    return celtypes.StringType(text[index : index + 1])


def _index_of(receiver: Any, item: Any, offset: Any = None) -> Any:
    if isinstance(receiver, list) and offset is None:
        for i, element in enumerate(receiver):
            if _equals_or_false(element, item):
                return celtypes.IntType(i)
        return celtypes.IntType(-1)
    _require("indexOf", _is_string, receiver, item)
    start = 0 if offset is None else offset
    _require("indexOf", _is_int, start)
    if item == "":
        return celtypes.IntType(start)
    if start < 0 or start > len(receiver):
        return _error(f"index out of range: {start}")
    return celtypes.IntType(receiver.find(item, start))


def _last_index_of(receiver: Any, item: Any, offset: Any = None) -> Any:
    if isinstance(receiver, list) and offset is None:
        for i in range(len(receiver) - 1, -1, -1):
            if _equals_or_false(receiver[i], item):
                return celtypes.IntType(i)
        return celtypes.IntType(-1)
    _require("lastIndexOf", _is_string, receiver, item)
    if offset is None:
        return celtypes.IntType(len(receiver) if item == "" else receiver.rfind(item))
    _require("lastIndexOf", _is_int, offset)
    if item == "":
        return celtypes.IntType(offset)
    if offset < 0 or offset >= len(receiver):
        return _error(f"index out of range: {offset}")
    return celtypes.IntType(receiver.rfind(item, 0, offset + len(item)))


def _ascii_case(name: str, table: dict[int, int]) -> Callable[[Any], Any]:
    def method(text: Any) -> Any:
        _require(name, _is_string, text)
        return celtypes.StringType(text.translate(table))

    method.__name__ = name
    return method


_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}
_UPPER = {c: c - 32 for c in range(ord("a"), ord("z") + 1)}


def _replace(text: Any, old: Any, new: Any, count: Any = -1) -> Any:
    _require("replace", _is_string, text, old, new)
    _require("replace", _is_int, count)
    found = text.count(old) if count < 0 else min(count, text.count(old))
    _check_size(len(text) + found * (len(new) - len(old)), "replace() would build a string")
    return celtypes.StringType(text.replace(old, new, count if count >= 0 else -1))


def _split(text: Any, separator: Any, limit: Any = -1) -> Any:
    _require("split", _is_string, text, separator)
    _require("split", _is_int, limit)
    if limit == 0:
        return celtypes.ListType([])
    if separator == "":  # Go explodes into characters; the last one holds the rest
        chars = list(text)
        if 0 < limit < len(chars):
            chars = chars[: limit - 1] + ["".join(chars[limit - 1 :])]
        parts = chars
    else:
        parts = text.split(separator, limit - 1 if limit > 0 else -1)
    return celtypes.ListType([celtypes.StringType(p) for p in parts])


def _substring(text: Any, start: Any, end: Any = None) -> Any:
    _require("substring", _is_string, text)
    stop = len(text) if end is None else end
    _require("substring", _is_int, start, stop)
    if start < 0 or start > len(text):
        return _error(f"index out of range: {start}")
    if stop < start or stop > len(text):
        return _error(f"invalid substring range. start: {start}, end: {stop}")
    return celtypes.StringType(text[start:stop])


def _trim(text: Any) -> Any:
    _require("trim", _is_string, text)
    start, stop = 0, len(text)
    while start < stop and text[start] in _GO_SPACE:
        start += 1
    while stop > start and text[stop - 1] in _GO_SPACE:
        stop -= 1
    return celtypes.StringType(text[start:stop])


def _join(items: Any, separator: Any = "") -> Any:
    _require("join", lambda v: isinstance(v, list), items)
    _require("join", _is_string, separator, *items)
    _check_size(sum(map(len, items)) + len(separator) * max(len(items) - 1, 0), "join() would build a string")
    return celtypes.StringType(separator.join(items))


# Kubernetes regex library (library/regex.go)
def _find(text: Any, pattern: Any) -> Any:
    _require("find", _is_string, text, pattern)
    try:
        match = re2.search(pattern, text)
    except re2.error as exc:
        return _error(f"invalid regex: {exc}")
    return celtypes.StringType(match.group(0) if match else "")


def _find_all(text: Any, pattern: Any, limit: Any = -1) -> Any:
    _require("findAll", _is_string, text, pattern)
    _require("findAll", _is_int, limit)
    try:
        matches = [m.group(0) for m in re2.finditer(pattern, text)]
    except re2.error as exc:
        return _error(f"invalid regex: {exc}")
    if limit >= 0:
        matches = matches[:limit]
    return celtypes.ListType([celtypes.StringType(m) for m in matches])


# DRA's includes() (DRAListTypeAttributes)
def _includes(target: Any, item: Any) -> celtypes.BoolType:
    if isinstance(target, list):
        return celtypes.BoolType(any(_equals_or_false(element, item) for element in target))
    return celtypes.BoolType(_equals_or_false(target, item))


# --------------------------------------------------------------------------
# Equality and ordering with Kubernetes (cel-go) semantics
# --------------------------------------------------------------------------


def _numbers_compare(a: Any, b: Any) -> int | None:
    """Cross-type numeric comparison (Python compares int and float exactly); None for NaN."""
    x = float(a) if isinstance(a, float) else int(a)
    y = float(b) if isinstance(b, float) else int(b)
    if x != x or y != y:
        return None
    return (x > y) - (x < y)


def _equals(a: Any, b: Any) -> bool:
    """CEL heterogeneous equality.  Raises TypeError where cel-go returns an error."""
    if isinstance(a, (Quantity, Semver)):
        if type(a) is type(b):
            return a.compare(b) == 0
        raise _no_overload("_==_", a, b)
    if isinstance(b, (Quantity, Semver)):
        return False
    if _is_number(a) and _is_number(b):
        return _numbers_compare(a, b) == 0
    a_bool = isinstance(a, (bool, celtypes.BoolType))
    if a_bool or isinstance(b, (bool, celtypes.BoolType)):
        return a_bool == isinstance(b, (bool, celtypes.BoolType)) and bool(a) == bool(b)
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and str(a) == str(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equals(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        if len(a) != len(b):
            return False
        for key, value in a.items():
            match = [k for k in b if _equals_or_false(k, key)]
            if not match or not _equals(value, b[match[0]]):
                return False
        return True
    if type(a) is not type(b) and not (isinstance(a, type(b)) or isinstance(b, type(a))):
        return False
    return bool(a == b)


def _equals_or_false(a: Any, b: Any) -> bool:
    try:
        return _equals(a, b)
    except TypeError:
        return False


def _error_of(a: Any, b: Any) -> CELEvalError | None:
    """The first of an operator's two operands that is an evaluation error (the operator's result), else None."""
    return a if isinstance(a, CELEvalError) else b if isinstance(b, CELEvalError) else None


def _cel_eq(a: Any, b: Any) -> Any:
    if (error := _error_of(a, b)) is not None:
        return error
    return celtypes.BoolType(_equals(a, b))


def _cel_ne(a: Any, b: Any) -> Any:
    if (error := _error_of(a, b)) is not None:
        return error
    return celtypes.BoolType(not _equals(a, b))


def _ordering(name: str, test: Callable[[int], bool]) -> Callable[[Any, Any], Any]:
    def compare(a: Any, b: Any) -> Any:
        if (error := _error_of(a, b)) is not None:
            return error
        if _is_number(a) and _is_number(b):
            result = _numbers_compare(a, b)
            return celtypes.BoolType(result is not None and test(result))
        if isinstance(a, (Quantity, Semver)) or isinstance(b, (Quantity, Semver)) or type(a) is not type(b):
            raise _no_overload(name, a, b)
        return celtypes.BoolType(test((a > b) - (a < b)))

    compare.__name__ = name
    return compare


def _cel_in(item: Any, container: Any) -> Any:
    if (error := _error_of(item, container)) is not None:
        return error
    if isinstance(container, Mapping):
        return celtypes.BoolType(any(_equals_or_false(key, item) for key in container))
    if not isinstance(container, list):
        raise _no_overload("@in", item, container)
    first_error: Any = None
    for element in container:
        try:
            if _equals(element, item):
                return celtypes.BoolType(True)
        except TypeError as exc:
            first_error = first_error or _error(str(exc))
    return first_error if first_error is not None else celtypes.BoolType(False)


_FUNCTIONS: dict[str, Callable[..., Any]] = {
    # operators
    "_==_": _cel_eq,
    "_!=_": _cel_ne,
    "_<_": _ordering("_<_", lambda c: c < 0),
    "_<=_": _ordering("_<=_", lambda c: c <= 0),
    "_>_": _ordering("_>_", lambda c: c > 0),
    "_>=_": _ordering("_>=_", lambda c: c >= 0),
    "_in_": _cel_in,
    # Quantity
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "sign": _quantity_method("sign", lambda q: celtypes.IntType(q.sign())),
    "isInteger": _quantity_method("isInteger", lambda q: celtypes.BoolType(q.as_int64() is not None)),
    "asInteger": _quantity_method("asInteger", _as_integer),
    "asApproximateFloat": _quantity_method("asApproximateFloat", lambda q: celtypes.DoubleType(q.approximate_float())),
    "add": _add,
    "sub": _sub,
    # Semver
    "semver": _semver,
    "isSemver": _is_semver,
    "major": _semver_method("major", "major"),
    "minor": _semver_method("minor", "minor"),
    "patch": _semver_method("patch", "patch"),
    # shared by Quantity and Semver
    "compareTo": _compare_to,
    "isGreaterThan": _is_greater_than,
    "isLessThan": _is_less_than,
    # strings extension
    "charAt": _char_at,
    "indexOf": _index_of,
    "lastIndexOf": _last_index_of,
    "lowerAscii": _ascii_case("lowerAscii", _LOWER),
    "upperAscii": _ascii_case("upperAscii", _UPPER),
    "replace": _replace,
    "split": _split,
    "substring": _substring,
    "trim": _trim,
    "join": _join,
    # regex library
    "find": _find,
    "findAll": _find_all,
    # DRA
    "includes": _includes,
}

#: Macros and functions cel-python evaluates itself that Kubernetes also has.
_BUILTIN_NAMES = frozenset(
    {"has", "dyn", "all", "exists", "exists_one", "map", "filter", "min"}
    | {name for name in celpy.base_functions if name[:1] != "_" and name[-1:] != "_"}
)
_KNOWN_FUNCTIONS = _BUILTIN_NAMES | {name for name in _FUNCTIONS if not name.startswith("_")}
_DEVICE_FIELDS = frozenset({"driver", "attributes", "capacity", "allowMultipleAllocations"})


# --------------------------------------------------------------------------
# Evaluator with cel.bind
# --------------------------------------------------------------------------


_WRAPPER_RULES = frozenset(
    {"expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication", "unary", "member"}
    | {"primary", "paren_expr"}
)


def _ident_name(tree: Any) -> str | None:
    """The identifier if ``tree`` is a bare (possibly parenthesised) identifier, else None."""
    while isinstance(tree, lark.Tree) and tree.data in _WRAPPER_RULES:
        if len(tree.children) != 1:
            return None
        tree = tree.children[0]
    if isinstance(tree, lark.Tree) and tree.data == "ident":
        return str(tree.children[0])
    return None


def _is_cel_bind(tree: lark.Tree) -> bool:
    return len(tree.children) >= 2 and str(tree.children[1]) == "bind" and _ident_name(tree.children[0]) == "cel"


_SIZED = (celtypes.StringType, celtypes.BytesType, celtypes.ListType, celtypes.MapType)


class _Budget:
    """The deadline of one evaluation and its steps, shared by the sub-evaluators of its macros (each iteration's
    own count would never reach a check)."""

    __slots__ = ("deadline", "steps")

    def __init__(self) -> None:
        # CPU time: by the wall clock, a light selector was cut off (and never evaluated again) for the time a loaded
        # machine kept the process waiting for a core
        self.deadline = time.thread_time() + EVAL_TIMEOUT
        self.steps = 0


class _DraEvaluator(Evaluator):
    """cel-python's interpreter plus the ``cel.bind(name, init, expr)`` macro, within EVAL_TIMEOUT and
    MAX_VALUE_SIZE."""

    budget: _Budget | None = None

    def sub_evaluator(self, ast: lark.Tree) -> Evaluator:
        sub = _DraEvaluator(ast, activation=self.activation)
        sub.budget = self.budget
        return sub

    def _visit_tree(self, tree: lark.Tree) -> Any:
        budget = self.budget
        if budget is not None:
            budget.steps += 1
            if not budget.steps % 256 and time.thread_time() > budget.deadline:
                raise _OverBudget(
                    f"still running after {EVAL_TIMEOUT:g} s, past what Kubernetes' runtime cost limit for a "
                    "selector allows (CELSelectorExpressionMaxCost, 1,000,000, about 0.1 s); not evaluated further"
                )
        value = super()._visit_tree(tree)
        if isinstance(value, _SIZED):
            _check_size(len(value), "a value")
        return value

    def member_dot_arg(self, tree: lark.Tree) -> Any:
        if not _is_cel_bind(tree):
            return super().member_dot_arg(tree)
        name_tree, init_tree, body_tree = tree.children[2].children
        value = self.visit(init_tree)
        if isinstance(value, CELEvalError):
            return value
        try:
            return self.sub_evaluator(body_tree).evaluate({_ident_name(name_tree): value})
        except CELEvalError as exc:
            return exc


class _DraRunner(celpy.InterpretedRunner):
    def evaluate(self, context: Any) -> Any:
        evaluator = _DraEvaluator(ast=self.ast, activation=self.new_activation())
        evaluator.budget = _Budget()
        return evaluator.evaluate(context)


_ENVIRONMENT: celpy.Environment | None = None


def _environment() -> celpy.Environment:
    global _ENVIRONMENT
    if _ENVIRONMENT is None:
        _ENVIRONMENT = celpy.Environment(runner_class=_DraRunner)
    return _ENVIRONMENT


# cel-go's parser, which the API server compiles selectors with, stops at its default maxRecursionDepth: no rule may
# nest in itself more than this (a sub-expression in parentheses, a list or call argument), nor may the ternaries,
# comparisons, arithmetic, member reads, calls and indexes on one path of the expression (its visitor's count).
MAX_NESTING = 250
# the celpy grammar's nodes each of which cel-go's visitor counts once on the way down (`!` and `-` chains, `&&` and
# `||` chains are one rule there, balanced, and count nothing)
_VISITOR_STEPS = frozenset(
    {"relation_lt", "relation_le", "relation_gt", "relation_ge", "relation_eq", "relation_ne", "relation_in"}
    | {"addition_add", "addition_sub", "multiplication_mul", "multiplication_div", "multiplication_mod"}
    | {"member_dot", "member_dot_arg", "member_index"}
)


def _check_nesting(ast: lark.Tree) -> None:
    """Refuse an expression nested deeper than the API server's parser takes (MAX_NESTING): a claim or DeviceClass
    carrying it would never be stored. Walked without recursion."""
    stack: list[tuple[lark.Tree, int, int]] = [(ast, 0, 0)]
    while stack:
        node, exprs, steps = stack.pop()
        if node.data == "expr":
            exprs += 1
            steps += len([c for c in node.children if c is not None]) == 3  # a ternary
        elif node.data in _VISITOR_STEPS:
            steps += 1
        if exprs > MAX_NESTING or steps > MAX_NESTING:
            raise CelError(
                f"expression nested more than {MAX_NESTING} deep, which the API server's CEL parser refuses "
                "(expression recursion limit exceeded)"
            )
        stack.extend((child, exprs, steps) for child in node.children if isinstance(child, lark.Tree))


def _check_ast(ast: lark.Tree) -> None:
    """Reject what the Kubernetes type checker rejects and cel-python would only notice late."""
    _check_nesting(ast)
    for node in ast.iter_subtrees():
        if node.data == "ident_arg":
            name = str(node.children[0])
            if name not in _KNOWN_FUNCTIONS:
                raise CelError(f"undeclared reference to '{name}'")
        elif node.data == "member_dot_arg":
            name = str(node.children[1])
            if _is_cel_bind(node):
                args = node.children[2].children if len(node.children) > 2 else []
                if len(args) != 3 or _ident_name(args[0]) is None:
                    raise CelError("cel.bind() requires an identifier, an init expression and a result expression")
            elif name not in _KNOWN_FUNCTIONS:
                raise CelError(f"undeclared reference to '{name}'")
        elif node.data == "member_dot" and _ident_name(node.children[0]) == "device":
            field = str(node.children[1])
            if field not in _DEVICE_FIELDS:
                raise CelError(f"undefined field '{field}' of type 'kubernetes.DRADevice'")


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------


def _cel_string_map(items: Iterable[tuple[str, Any]], factory: type = celtypes.MapType) -> Any:
    return factory({celtypes.StringType(key): value for key, value in items})


class _DefaultMap(celtypes.MapType):
    """``newStringInterfaceMapWithDefault``: an unknown domain yields an empty map."""

    def __missing__(self, key: Any) -> celtypes.MapType:
        return celtypes.MapType()


def _attribute_value(value: Any) -> Any:
    if isinstance(value, Mapping) and len(value) == 1:  # API form {"string": ...}
        kind, inner = next(iter(value.items()))
        if kind == "version":
            return Semver.parse(str(inner))
        if kind in ("string", "int", "bool"):
            return _attribute_value(inner)
        if kind in ("strings", "ints", "bools", "versions"):
            items = inner if isinstance(inner, list) else [inner]
            return celtypes.ListType(_attribute_value({kind[:-1]: item}) for item in items)
    if isinstance(value, Semver):
        return value
    if isinstance(value, bool):
        return celtypes.BoolType(value)
    if isinstance(value, int):
        if not _in_int64(value):
            raise ValueError(f"int value {value} out of int64 range")
        return celtypes.IntType(value)
    if isinstance(value, VersionValue):
        return Semver.parse(str(value))
    if isinstance(value, str):
        return celtypes.StringType(value)
    if isinstance(value, list):
        return celtypes.ListType(_attribute_value(item) for item in value)
    raise ValueError(f"unsupported attribute value {value!r}")


def _capacity_value(value: Any) -> Quantity:
    if isinstance(value, Quantity):
        return value
    if isinstance(value, Mapping) and "value" in value:
        value = value["value"]
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    return Quantity.parse(value)


def _convert_domains(
    what: str, domains: Mapping[str, Mapping[str, object]], convert: Callable[[object], object]
) -> list[tuple[str, celtypes.MapType]]:
    """domain -> name -> value, each value converted for CEL; a bad value names its domain and name."""
    out = []
    for domain, values in domains.items():
        items = []
        for name, value in values.items():
            try:
                items.append((name, convert(value)))
            except ValueError as exc:
                raise CelError(f"{what} {domain}/{name}: {exc}") from exc
        out.append((domain, _cel_string_map(items)))
    return out


def _device_variable(
    driver: str,
    attributes: Mapping[str, Mapping[str, object]],
    capacity: Mapping[str, Mapping[str, object]],
    allow_multiple_allocations: bool,
) -> celtypes.MapType:
    converted_attributes = _convert_domains("attribute", attributes, _attribute_value)
    converted_capacity = _convert_domains("capacity", capacity, _capacity_value)
    return _cel_string_map(
        [
            ("driver", celtypes.StringType(driver)),
            ("allowMultipleAllocations", celtypes.BoolType(allow_multiple_allocations)),
            ("attributes", _cel_string_map(converted_attributes, _DefaultMap)),
            ("capacity", _cel_string_map(converted_capacity, _DefaultMap)),
        ]
    )


def _describe(error: BaseException) -> str:
    """A readable message for a cel-python evaluation error."""
    if not isinstance(error, CELEvalError):
        return str(error) or type(error).__name__
    cause = error.__cause__
    if isinstance(cause, TypeError) and str(cause).startswith("found no matching overload for '"):
        return str(cause)
    message = str(error.args[0]) if error.args else "evaluation error"
    message = message.split(" (in activation", 1)[0]
    details = error.args[2] if len(error.args) > 2 else None
    if message in ("no such overload", "no such key") and isinstance(details, tuple) and details:
        message = f"{message}: {details[0]}"
    return message


class CompiledSelector:
    """A compiled DRA device selector."""

    def __init__(self, expression: str, runner: celpy.Runner) -> None:
        self.expression = expression
        self._runner = runner
        self._over_budget = ""  # why an evaluation was stopped: the next devices fail at once, not after as long

    def matches(
        self,
        driver: str,
        attributes: Mapping[str, Mapping[str, object]],
        capacity: Mapping[str, Mapping[str, object]],
        allow_multiple_allocations: bool = False,
    ) -> bool:
        """Evaluate the selector for one device.

        ``attributes`` maps domain -> name -> value (bool, int, str, a version
        marked as such, :class:`Semver`, or the API form ``{"version": "1.0.0"}``);
        ``capacity`` maps domain -> name -> quantity string.  Raises CelError where
        Kubernetes would fail the allocation.
        """
        if self._over_budget:
            raise CelError(self._over_budget)
        device = _device_variable(driver, attributes, capacity, allow_multiple_allocations)
        try:
            result = self._runner.evaluate({"device": device})
        except _OverBudget as exc:
            self._over_budget = f"evaluating {self.expression!r}: {exc}"
            raise CelError(self._over_budget) from None
        except CELEvalError as exc:
            raise CelError(f"evaluating {self.expression!r}: {_describe(exc)}") from exc
        except RecursionError as exc:
            raise CelError(f"evaluating {self.expression!r}: expression nested too deeply") from exc
        except Exception as exc:  # cel-python raises plain exceptions for some misuse
            raise CelError(f"evaluating {self.expression!r}: {_describe(exc)}") from exc
        if not isinstance(result, (bool, celtypes.BoolType)):
            raise CelError(
                f"evaluating {self.expression!r}: CEL result of type {type(result).__name__} "
                "could not be converted to bool"
            )
        return bool(result)

    def __repr__(self) -> str:
        return f"CompiledSelector({self.expression!r})"


def compile_selector(expression: str) -> CompiledSelector:
    """Compile a selector expression; raises CelError on any problem.

    Compiled selectors are immutable and cached by expression text.
    """
    if not isinstance(expression, str):
        raise CelError(f"expression must be a string, not {type(expression).__name__}")
    return _compile(expression)


@functools.lru_cache(maxsize=512)
def _compile(expression: str) -> CompiledSelector:
    size = len(expression.encode("utf-8"))
    if size > MAX_EXPRESSION_LENGTH:
        raise CelError(f"expression is too long: {size} bytes, the limit is {MAX_EXPRESSION_LENGTH}")
    if not expression.strip():
        raise CelError("expression is empty")
    environment = _environment()
    try:
        ast = environment.compile(expression)
    except celpy.CELParseError as exc:
        where = f"line {exc.line}, column {exc.column}" if getattr(exc, "line", None) else "unknown position"
        raise CelError(f"compilation failed: syntax error at {where}:\n{str(exc).rstrip()}") from exc
    except RecursionError as exc:
        raise CelError("compilation failed: expression nested too deeply") from exc
    _check_ast(ast)
    try:
        runner = environment.program(ast, functions=_FUNCTIONS)
    except Exception as exc:  # pragma: no cover - cel-python internal error
        raise CelError(f"compilation failed: {exc}") from exc
    return CompiledSelector(expression, runner)


def device_matches(expression: str, device: Device) -> bool:
    """Compile ``expression`` and evaluate it for one inventory device."""
    return compile_selector(expression).matches(device.driver, device.attributes, device.capacity)
