"""Limits checked before any work: only regular files are opened, their size comes from stat before reading,
and nesting depth and document count are bounded before a YAML parser sees the text.

A FIFO named `*.yaml` would block a read forever, a device would stream without end, a 100 MB file would be
read whole before a size check: each is refused here with a message, never read.
"""

from __future__ import annotations

import errno
import math
import os
import re
import stat
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dramigrate.findings import InputError

MAX_FILE_BYTES = 32 * 1024 * 1024
MAX_DEPTH = 100  # Kubernetes objects nest about 20 deep; ruamel's composer recurses per level
# A rendered platform (kustomize build, helm template) holds tens of thousands of small objects within the size cap
# (30 MB of 1.5 KB objects is 20,000): documents are bounded so that a file of empty ones costs no more than a real one
MAX_DOCUMENTS = 100_000
# A document fix rewrites is dumped about three times by ruamel, at some 3 s of CPU a MiB: a 20 MB workload ran past
# any CI limit. Kubernetes stores an object of at most 1.5 MiB (etcd's default request limit,
# https://etcd.io/docs/latest/dev-guide/limit/), so a workload's YAML over twice that size cannot be applied.
MAX_EDITED_DOCUMENT_BYTES = 4 * 1024 * 1024
# ruamel's parse and dumps of a rewritten document cost 0.2 ms a value, 0.8 ms where ruamel's own parser reads it
# (anchors, comments inside): 200,000 keys in a 2 MB flow mapping, or 20,000 anchors, ran past 60 s. The largest
# real pod specs hold a few thousand values.
MAX_EDITED_NODES = 20_000
# and lines: ruamel's scanner takes some 30-60 µs a comment or block-scalar line, which are no values (a pod with two
# million `#` lines, 4 MB, ran past 90 s in diff and again in fix). 100,000 lines of real YAML are past the 1.5 MiB
# Kubernetes stores; the largest real pod specs have a few thousand.
MAX_EDITED_LINES = 100_000
# Kustomizations stacked on one another in one graph (overlay on overlay on base): real ones stack 2 to 5; each
# build loads the whole stack below it, and fix proves every build, so 300 stacked ran for minutes.
MAX_KUSTOMIZE_DEPTH = 30
# Kustomizations one build loads, a base reached by two paths counted twice as kustomize loads it twice: real
# overlays load under 20; 16 levels of overlays each including both of the level below load some 100,000.
MAX_KUSTOMIZE_LOADS = 1_000


@dataclass(frozen=True)
class Limits:
    max_bytes: int = MAX_FILE_BYTES
    max_depth: int = MAX_DEPTH
    max_documents: int = MAX_DOCUMENTS
    bound: str = "limit (--max-file-size)"  # how a size message names the bound


DEFAULT = Limits()
# a config or a rule pack: tens of settings or rules (a pyproject.toml with every tool's settings is tens of KiB)
SETTINGS = Limits(max_bytes=1024 * 1024, bound="limit of a config or rule pack")


class NotRegular(OSError):
    """A path that is a FIFO, a device, a socket or a folder: never opened for reading; named as bad input."""

    def __init__(self, path: str, what: str) -> None:
        super().__init__(errno.EINVAL, f"{what}, not a regular file; skipped (never read)", path)
        self.what = what


def file_type(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISDIR, "a folder"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def is_regular(path: str | os.PathLike[str]) -> bool:
    """True for a regular file (through symlinks); False for anything else, missing or unreadable."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def size_message(size: int, limits: Limits) -> str:
    cap = limits.max_bytes
    shown = f"{cap / (1024 * 1024):g} MiB" if cap >= 1024 * 1024 else _size(cap)
    size_said = "" if size == cap + 1 else f" {_size(size)},"  # a stream is read one byte past the cap, no further
    return f"file is{size_said} larger than the {shown} {limits.bound}; not processed"


def _size(n: int) -> str:
    """A byte count as people read it: bytes below a KiB, else KiB or MiB with one decimal."""
    if n < 1024:
        return f"{n} bytes"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n / (1024 * 1024):.1f} MiB"


def env_number(name: str, default: float, least: float = 0.0) -> float:
    """A limit set in the environment: the number in variable name when it is finite and above least, else default
    (a typo, `inf` or `nan` never reaches a timer or a memory limit as an internal error)."""
    try:
        value = float(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if math.isfinite(value) and value > least else default


def read_regular(path: str, limits: Limits = DEFAULT) -> bytes:
    """The bytes of a regular file of at most limits.max_bytes, checked with stat before reading. Raises
    NotRegular for FIFOs, devices and sockets, InputError when it is too large, OSError when it cannot be read."""
    return read_regular_at(path, limits)[0]


def read_regular_at(path: str, limits: Limits = DEFAULT) -> tuple[bytes, str]:
    """read_regular, and the real path of the file it read as the kernel names it ("" where /proc does not say):
    a name swapped for a symlink after the walk is caught by comparing it with the path the walk resolved."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise NotRegular(path, file_type(st.st_mode))
    if st.st_size > limits.max_bytes:
        raise InputError(size_message(st.st_size, limits), path)
    # O_NONBLOCK: a FIFO swapped in after the stat must not block the open; fstat checks what was opened.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):
            raise NotRegular(path, file_type(opened.st_mode))
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, 1024 * 1024)
            if not chunk:
                break
            total += len(chunk)
            if total > limits.max_bytes:  # grew after the stat
                raise InputError(size_message(total, limits), path)
            chunks.append(chunk)
        try:
            opened_at = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            opened_at = ""
        return b"".join(chunks), opened_at
    finally:
        os.close(fd)


_BLOCK_SCALAR = re.compile(r"(?:^|[:\-]\s|^\s*)[|>][-+0-9]*\s*(?:#.*)?$")


def check_structure(path: str, text: str, limits: Limits = DEFAULT) -> None:
    """Refuse text nested deeper than limits.max_depth (block indentation levels plus open flow brackets) or
    holding more than limits.max_documents documents, before any parser recurses into it."""
    if _within_limits(text, limits):
        return
    documents = 0
    indents: list[tuple[int, int]] = []  # (indentation, levels it opens) of the lines that enclose this one
    flow = 0
    block: int | None = None  # inside a block scalar (`|`, `>`): lines indented deeper than this are text
    for number, line in enumerate(_lines(text), start=1):
        stripped = line.lstrip(" ")
        indent = len(line) - len(stripped)
        if block is not None:
            if not stripped.strip() or indent > block:
                continue
            block = None
        if line.startswith("---"):
            documents += 1
            if documents > limits.max_documents:
                raise InputError(
                    f"more than {limits.max_documents} YAML documents in one file; not processed", path, number
                )
            indents, flow = [], 0
            continue
        if not stripped or stripped.startswith("#"):
            continue
        if flow == 0:
            while indents and indents[-1][0] >= indent:
                indents.pop()
            dashes, rest = 0, stripped
            while rest.startswith("- ") or rest == "-":  # each `- ` opening an item on the line is a level
                dashes += 1
                rest = rest[2:].lstrip(" ")
            indents.append((indent, 1 + dashes))
        base = sum(weight for _, weight in indents)
        peak = flow
        if "[" in stripped or "{" in stripped or flow:
            flow, peak = _flow_depth(stripped, flow)
        if base + peak > limits.max_depth:
            raise InputError(
                f"nested more than {limits.max_depth} levels deep; not processed (limit on nesting)", path, number
            )
        if flow == 0 and _BLOCK_SCALAR.search(stripped):
            block = indent


_TWO_ITEMS = re.compile(r"\n *- +-(?: |\n|$)")  # a line opening two sequence levels (`- - x`)


def check_edited_document(path: str, text: str, line: int, data: Any, counted: int = -1) -> None:
    """Refuse to rewrite a document larger than any object Kubernetes stores, or of more nodes than fix rewrites in
    time, before ruamel sees it. counted: data's values as the fast parse counted them (-1: not counted), which
    spares the walk of every value (a twelfth of a lint worker's time on a device file)."""
    if len(text) > MAX_EDITED_DOCUMENT_BYTES:  # characters: at least as many bytes
        raise InputError(
            f"this document is {_size(len(text.encode('utf-8', 'surrogatepass')))}, larger than any object Kubernetes"
            f" stores (1.5 MiB in etcd by default); not rewritten (the limit is {_size(MAX_EDITED_DOCUMENT_BYTES)})",
            path,
            line,
        )
    if not 0 <= counted <= MAX_EDITED_NODES and not expands_within(data, MAX_EDITED_NODES):
        raise InputError(
            f"this document holds more than {MAX_EDITED_NODES:,} values (real workloads hold a few thousand); "
            "not rewritten (limit on nodes)",
            path,
            line,
        )
    if text.count("\n") > MAX_EDITED_LINES:
        raise InputError(
            f"this document has more than {MAX_EDITED_LINES:,} lines (real workloads have a few thousand); "
            "not rewritten (limit on lines)",
            path,
            line,
        )


def check_values_file(path: str, shown: str) -> None:
    """Refuse a chart's values file of more values than fix rewrites in time, before any render: every probe renders
    the chart's values again and fix reads them round-trip (50,000 keys took 30 s, 300,000 past 60 s). The largest
    real values files hold under a thousand values. shown: the file's name in messages."""
    try:
        text = read_regular(path)
    except (OSError, InputError):  # not a regular file, too large, unreadable: the render names it
        return
    check_values_text(text, shown)


def nodes_and_recursive_alias(text: str, limit: int) -> tuple[int, tuple[str, int] | None]:
    """nodes_upto(text, limit), and from the same pass of libyaml's events the (anchor, 0-based line) of the first
    alias inside the very node its anchor names (`m: &m {<<: *m}`), None when there is none or the count passed
    limit. Kubernetes' reader refuses such a document (go-yaml: anchor value contains itself), and ruamel's merge of
    one ended the run on that file with an internal error. A text without `*` has no alias: only counted."""
    import yaml

    if "*" not in text:
        return nodes_upto(text, limit), None
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    open_anchors: list[str | None] = []  # the anchor of each mapping or sequence being read, innermost last
    count = 0
    start, end = (yaml.MappingStartEvent, yaml.SequenceStartEvent), (yaml.MappingEndEvent, yaml.SequenceEndEvent)
    try:
        for event in yaml.parse(text, Loader=loader):
            kind = type(event)
            if kind in start:
                open_anchors.append(event.anchor)
            elif kind in end:
                open_anchors.pop()
                continue
            elif kind is yaml.AliasEvent:
                if event.anchor in open_anchors:
                    return count + 1, (event.anchor, event.start_mark.line)
            elif kind is not yaml.ScalarEvent:
                continue
            count += 1
            if count > limit:
                return count, None
    except yaml.YAMLError:  # the parser words the error
        pass
    return count, None


def nodes_upto(text: str | bytes, limit: int) -> int:
    """The nodes of text (scalars, collections, aliases) as libyaml's events give them, counted up to limit + 1, at
    some 0.5 µs a node where building them in Python takes 20 µs (a 6 MB flow list of 3 million took a minute and
    2.8 GB); what was counted when libyaml refuses the text (its reader then words the error); 0 without libyaml."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", None)
    if loader is None:
        return 0
    nodes = (yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent, yaml.AliasEvent)
    count = 0
    try:
        for event in yaml.parse(text, Loader=loader):
            if type(event) in nodes:
                count += 1
                if count > limit:
                    break
    except yaml.YAMLError:
        pass
    return count


def repeated_key(root: Any) -> Any:
    """The second of a key written twice in one mapping of a composed YAML node (a PyYAML ScalarNode, by tag and
    text), at any depth, each node once (aliases not followed again); None when no key repeats. PyYAML keeps the
    last silently, where fix's round-trip parser refuses the repeat."""
    import yaml

    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            keys: set[tuple[str, str]] = set()
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                    if (key.tag, key.value) in keys:
                        return key
                    keys.add((key.tag, key.value))
                stack += [key, value]
        elif isinstance(node, yaml.SequenceNode):
            stack += node.value
    return None


def check_values_text(text: bytes, shown: str, what: str = "this values file", line: int = 1) -> None:
    """check_values_file's bound on a values file's bytes (what: how the message names the file, in the file or
    chart named by shown, at line)."""
    from yaml import CSafeLoader, YAMLError, load_all

    if len(text) > MAX_EDITED_DOCUMENT_BYTES:
        raise InputError(
            f"{what} is {_size(len(text))}; not rendered (the limit is {_size(MAX_EDITED_DOCUMENT_BYTES)})",
            shown,
            line,
        )
    try:  # counted before they are built: 4 MiB of `[1,1,...]` is two million values
        documents = (
            list(load_all(text, Loader=CSafeLoader)) if nodes_upto(text, MAX_EDITED_NODES) <= MAX_EDITED_NODES else None
        )
    except YAMLError as exc:  # Helm names the error with its line, but not a character YAML refuses (a NUL)
        if getattr(exc, "reason", None) != "control characters are not allowed":
            return
        from dramigrate.documents import unacceptable_character

        bad = unacceptable_character(text.decode("utf-8", "surrogateescape"), exc)
        at, column = (bad[1], bad[2]) if bad is not None and line else (0, 0)
        raise InputError(
            f"{what} holds the control character U+{getattr(exc, 'character', 0):04X}, which YAML does not allow "
            "(Helm refuses it too); not rendered",
            shown,
            at,
            column,
        ) from exc
    if documents is None or not expands_within(documents, MAX_EDITED_NODES):
        raise InputError(
            f"{what} holds more than {MAX_EDITED_NODES:,} values (real charts hold under a thousand); "
            "not rendered (limit on nodes)",
            shown,
            line,
        )


def _within_limits(text: str, limits: Limits) -> bool:
    """A bound check_structure's line walk cannot exceed, from whole-text searches (C speed): its depth is at most
    the enclosing lines (strictly increasing indentation, so at most the deepest indentation plus one), each
    opening at most two levels when no line opens two sequence items, plus every flow bracket in the text; its
    documents are at most the lines starting with `---`. False: walk the lines."""
    if text.count("\n---") + 1 > limits.max_documents:
        return False
    room = limits.max_depth - text.count("[") - text.count("{")
    lined = "\n" + text  # patterns start at a newline: `^` in multiline mode is several times slower
    if room < 2 or _TWO_ITEMS.search(lined):
        return False
    return re.search(f"\n {{{room // 2},}}", lined) is None  # every indentation below room // 2


def _lines(text: str) -> Iterator[str]:
    """text.split("\n"), a megabyte at a time: a 30 MB file's million lines are never in memory all at once."""
    start, size = 0, len(text)
    while start < size:
        end = text.find("\n", min(start + (1 << 20), size))
        if end < 0:
            end = size
        yield from text[start:end].split("\n")
        start = end + 1


def _flow_depth(line: str, depth: int) -> tuple[int, int]:
    """Open flow brackets after this line and the most open on it, outside quotes and comments (errs high)."""
    quote = ""
    peak = depth
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
            continue
        if ch in "\"'" and (i == 0 or line[i - 1] in " [{,:"):
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            break
        elif ch in "[{":
            depth += 1
            peak = max(peak, depth)
        elif ch in "]}":
            depth = max(depth - 1, 0)
    return depth, peak


def expands_within(data: Any, budget: int) -> bool:
    """Whether data (as a YAML loader built it: an alias is the same object again) has at most budget values
    once its aliases are expanded, as anything that walks it or prints it would expand them (YAML bombs)."""
    stack = [data]
    while stack:
        node = stack.pop()
        budget -= 1
        if budget < 0:
            return False
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return True


def same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def folder_id(path: Path) -> tuple[int, int]:
    st = os.stat(path)
    return (st.st_dev, st.st_ino)


MAX_RESOURCE_NAME = 317  # a qualified name: a 253-character DNS prefix, "/", a 63-character name
REGEX_TIMEOUT = 0.5  # seconds a rule-pack regex of the user's may take on one resource name
# A name is matched in microseconds; a match slower than REGEX_SLOW (of CPU time) is backtracking, and one regex may
# spend REGEX_BUDGET seconds in such matches over a run: `acme\.example/(a|aa)+x` took 0.2 to 0.45 s on each of 100 pods
# asking for `acme.example/aaa...` (28 a's), each just under the timeout, and lint ran 53 s (300 pods: minutes).
REGEX_SLOW = 0.01
REGEX_BUDGET = 2.0


class BoundedRegex:
    """A regex from a user's rule pack, matched with a time limit. regex_problem refuses the usual catastrophic
    shapes when the pack loads, but no static check catches them all (`(a|aa)+x`, `a*a*a*a*b`): the matching runs
    in the `regex` module, whose matcher gives up after REGEX_TIMEOUT, and the file being checked gets a bad-input
    error naming the pattern (a name it timed out on fails at once from then on). Shipped packs use `re`."""

    def __init__(self, pattern: str, origin: str) -> None:
        import regex

        self.pattern = pattern
        self.origin = origin
        self._compiled = regex.compile(pattern)
        self.groupindex = dict(self._compiled.groupindex)
        self._failed: set[str] = set()
        self._slow = 0.0  # seconds spent in matches slower than REGEX_SLOW

    def fullmatch(self, text: str) -> Any:
        return self._bounded(self._compiled.fullmatch, text)

    def search(self, text: str) -> Any:
        return self._bounded(self._compiled.search, text)

    def _bounded(self, match: Callable[..., Any], text: str) -> Any:
        if self._slow > REGEX_BUDGET:
            raise InputError(  # only a name the regex may match gets here (ruleindex.py), not every later file's
                f"the rule-pack regex {self.pattern!r} of {self.origin} took more than {REGEX_BUDGET:g} s in all on "
                f"this run's resource names (catastrophic backtracking), and it must be tried on {text!r}: this file "
                "is not checked; fix the pack"
            )
        if text not in self._failed:
            # CPU time of this thread: by the wall clock, a microsecond match counted the time a loaded machine kept
            # the process waiting for a core, and a pack of plain regexes was called catastrophic (7 files of 100)
            start = time.thread_time()
            try:
                return match(text, timeout=REGEX_TIMEOUT)
            except TimeoutError:
                self._failed.add(text)
            finally:
                if (spent := time.thread_time() - start) > REGEX_SLOW:
                    self._slow += spent
        raise InputError(
            f"the rule-pack regex {self.pattern!r} of {self.origin} took more than {REGEX_TIMEOUT:g} s on "
            f"{text!r} (catastrophic backtracking): this file is not checked; fix the pack"
        )


EXPONENTIAL = "; it could take exponential time on a name"


def regex_problem(pattern: str) -> str:
    """Why a rule-pack regex could backtrack catastrophically ("" when it cannot): a repeated group that holds
    another unbounded repeat (`(a+)+`, `(.*x)*`), or a repeated alternation whose branches can start alike
    (`(x|xy)+`). Checked when a pack loads, so a hostile pack fails fast instead of hanging a lint; a possessive
    quantifier (`(a+)++`) cannot backtrack into its body and is accepted."""
    try:
        import re._parser as sre_parse  # Python 3.11+
    except ImportError:  # pragma: no cover - older Pythons
        import sre_parse  # type: ignore[import-not-found,no-redef]
    try:
        tree = sre_parse.parse(pattern)
    except re.error as exc:
        return f"does not compile: {exc}"
    except RecursionError:  # `((((...a))))` 1,000 deep: Python's regex parser recurses per group (internal error)
        return "groups nested too deeply to compile"
    repeats = {sre_parse.MAX_REPEAT, sre_parse.MIN_REPEAT}

    def unbounded(op: object, av: tuple[int, int, object]) -> bool:
        return op in repeats and av[1] > 1  # MAXREPEAT or any count above one

    def counted(av: tuple[int, int, object], scale: int) -> tuple[str, int]:
        """A counted repeat's problem ("" when none) and the scale its body runs at. The regex engine unrolls a
        count when it compiles (`y{1000000000}` took the memory of the machine and the run was killed); a name is
        at most MAX_RESOURCE_NAME characters, so no count past it, nested counts multiplied, is of any use."""
        count = av[0] if av[1] == sre_parse.MAXREPEAT else av[1]
        if count * scale > MAX_RESOURCE_NAME:
            return (
                f"a repeat count of {count * scale:,} (nested counts multiplied) past the {MAX_RESOURCE_NAME} "
                "characters of a resource name: the regex engine unrolls it in memory when it compiles",
                0,
            )
        return "", scale * max(count, 1)

    def walk(items: object, inside: bool, scale: int = 1) -> str:
        for op, av in items:  # type: ignore[attr-defined]
            if op == getattr(sre_parse, "ATOMIC_GROUP", None):
                found = walk(av, False, scale)
                if found:
                    return found
            elif op == getattr(sre_parse, "POSSESSIVE_REPEAT", None):
                found, inner = counted(av, scale)
                found = found or walk(av[2], False, inner)
                if found:
                    return found
            elif op in repeats:
                body = av[2]
                found, inner = counted(av, scale)
                if found:
                    return found
                if inside and av[1] > 1:
                    return f"a repeat inside a repeat (nested quantifiers){EXPONENTIAL}"
                if av[1] > 1 and _alternation_overlaps(body, sre_parse):
                    return f"a repeated alternation whose branches can match the same text{EXPONENTIAL}"
                found = walk(body, inside or unbounded(op, av), inner)
                if found:
                    return found
            elif op == sre_parse.SUBPATTERN:
                found = walk(av[-1], inside, scale)
                if found:
                    return found
            elif op == sre_parse.BRANCH:
                for branch in av[1]:
                    found = walk(branch, inside, scale)
                    if found:
                        return found
            elif op in (sre_parse.ASSERT, sre_parse.ASSERT_NOT):
                found = walk(av[1], inside, scale)
                if found:
                    return found
        return ""

    try:
        return walk(tree, False)
    except RecursionError:
        return "groups nested too deeply to compile"


def _alternation_overlaps(body: object, sre_parse: object) -> bool:
    """A branch list directly inside a repeat where two branches start with the same literal or a class/any."""
    for op, av in body:  # type: ignore[attr-defined]
        if op == sre_parse.SUBPATTERN:  # type: ignore[attr-defined]
            return _alternation_overlaps(av[-1], sre_parse)
        if op == sre_parse.BRANCH:  # type: ignore[attr-defined]
            firsts = []
            for branch in av[1]:
                if not branch:
                    return True
                first_op, first_av = branch[0]
                if first_op != sre_parse.LITERAL:  # type: ignore[attr-defined]
                    return True
                firsts.append(first_av)
            return len(firsts) != len(set(firsts))
        return False
    return False


class SlowBudget:
    """The time the slow runs of one kind (kustomize builds, the renders of a chart) may still take past the quick
    share of their limit each, shared by every run of that kind in dramigrate's run. Once it is spent, a run gets
    only the quick share: slow inputs each just under the limit held a run for the limit times their number."""

    def __init__(self, quick_share: float) -> None:
        self.quick_share = quick_share
        self._spent = 0.0
        self._lock = threading.Lock()

    def allows(self, limit: float) -> float:
        """Seconds a run starting now may take, at most the limit."""
        with self._lock:
            return min(limit, limit * self.quick_share + max(0.0, limit - self._spent))

    def charge(self, limit: float, seconds: float) -> None:
        with self._lock:
            self._spent += max(0.0, seconds - limit * self.quick_share)
