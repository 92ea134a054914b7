"""Device requests a chart renders only on a cluster, or only at some install: a device in a block whose condition
reads what `helm template` cannot know (`lookup`, empty outside a cluster; `.Capabilities`, the API versions and
Kubernetes version of the cluster; `.Release.IsUpgrade`, `.Release.Revision`; the clock and random numbers, which
differ from one render to the next). dramigrate renders the chart as `helm template` does, so such a branch is never
rendered and the request had no finding: lint exited 0 on a chart whose `helm install` gives a pod a GPU
(`{{- if lookup "v1" "Namespace" "" "kube-system" }}` holds on every cluster).

What a branch of such a block can write is read from the chart's text, since no render here takes it: its own lines,
the defines it includes (and those they include, in the chart, its unpacked and its packed subcharts), and the values
its lines and those defines read (`toYaml .Values.gpuResources`, `tpl .Values.extra .`). A condition reads the
cluster also through a variable set from such a read (`$ns := lookup ...`, then `if $ns`) or a define whose text
reads it (`if include "chart.onCluster" .`). Each device name so reached in a branch no rendered finding covers is a
legacy-device-request of its own, at the line that reaches it, that fix does not migrate. A name a template builds
from pieces (`printf "%s/%s" "nvidia.com" "gpu"`) is not read this way."""

from __future__ import annotations

import bisect
import contextlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from dramigrate.findings import RULES, Finding
from dramigrate.helm.helper import Block, blocks
from dramigrate.helm.rewrite import _actions
from dramigrate.rules import RuleSet

_CLUSTER = re.compile(
    r"(?<![\w.-])lookup(?![\w.-])|\.Capabilities\b|\.Release\.(?:IsUpgrade|IsInstall|Revision|Name|Namespace)\b"
    r"|\bnow\b|\bunixEpoch\b|\brand(?:Int|Alpha|AlphaNum|Numeric|Ascii|Bytes)\b|\buuidv4\b|\bshuffle\b"
)
_MAX_TEMPLATE = 1 << 20
_CONTROL = ("if", "else", "end", "with", "range")
_MAX_PACKED = 5 << 20  # bytes of one packed subchart's members read, as the sandbox bounds them
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9.\-_]*/[A-Za-z0-9.\-_]+")
_INCLUDE = re.compile(r"""\b(?:include|template)\s+"([^"]+)"|\bblock\s+"([^"]+)\"""")
_VALUES = re.compile(r"\.Values((?:\.[\w-]+)*)")
_VARIABLE = re.compile(r"\$\w+")
_ASSIGN = re.compile(r"(\$\w+)\s*:?=(?!=)")


@dataclass
class _Source:
    rel: str  # as a finding names the file: chart-relative (`charts/sub-0.1.0.tgz/sub/templates/x.yaml` for packed)
    text: str
    values: list[Any]  # the values its `.Values` reads: its chart's values.yaml, and what the parent gives it
    lines: list[str] | None = None
    blocks: list[Block] | None = None

    def parsed(self) -> tuple[list[str], list[Block]]:
        if self.lines is None or self.blocks is None:
            self.lines, self.blocks = self.text.splitlines(), blocks(self.text)
        return self.lines, self.blocks


# Whether a branch runs when the chart renders here: given a template (relative path) and the text of a copy of it
# whose branch fails at its start, True when that render failed there, False when it rendered, None when unknown
Runs = Callable[[str, str], "bool | None"]
_MARK = "dramigrate-gated-branch"
_MAX_TRIES = 6  # renders asked for, at most, per chart: the places past them count as not rendered


def cluster_gated(
    root: Path,
    display: str,
    findings: list[Finding],
    rules: RuleSet,
    values_files: tuple[Path, ...] = (),
    runs: Runs | None = None,
) -> list[Finding]:
    """A finding for each device name a branch of a cluster-read block of the chart (and of its subcharts) can write,
    when no finding falls inside that branch and the branch does not run here (`runs`: the chart rendered with the
    branch made to fail at its start; `if ne $checksum (lookup ...).data.checksum` holds outside a cluster, and what
    such a branch writes was read as any render is)."""
    sources = list(_sources(root, values_files))
    read: dict[int, bool] = {}  # values files (by id while sources holds them) with a string that reads the cluster
    if not any(_CLUSTER.search(s.text) for s in sources) and not _values_read_cluster(sources, read):
        return []
    defines = _defines(sources)
    tainted = _tainted_defines(defines)
    reach = _Reach(defines, rules)
    found: list[tuple[Finding, _Source, int, int]] = []
    for source in sources:
        covered = {
            where.line - 1 for f in findings for where in (f, *f.related) if where.file == f"{display}/{source.rel}"
        }
        lines, all_blocks = source.parsed()
        reads_values = _values_read_cluster([source], read)
        scopes: dict[int, set[str]] = {}
        scope_of = _scopes(all_blocks)
        after: list[int] | None = None
        for block in all_blocks:
            scope = scope_of(block)
            if scope.start not in scopes:
                scopes[scope.start] = _tainted_variables(_text_of(lines, scope), tainted)
            reads = _reads_cluster(_conditions(block), scopes[scope.start], tainted, reads_values)
            if reads is None or block.word == "define":
                continue
            for number, (start, end) in enumerate(_segments(block)):
                if any(start <= at <= end for at in covered):
                    continue
                if after is None:
                    after = _next_devices(lines, source, reach)
                hit = _first_device(source, lines, start, end, reach, after)
                if hit is None:
                    continue
                index, name = hit
                line = lines[index]
                finding = Finding(
                    "legacy-device-request",
                    RULES["legacy-device-request"][0],
                    f"{name} is a device-plugin request in a branch that renders only on a cluster or at some "
                    f"installs: its condition (line {block.start + 1}) reads `{reads}`, which `helm template` and "
                    "dramigrate cannot know, so no render here holds it and fix leaves it as it is; migrate it by "
                    "hand, or make the branch depend on values",
                    f"{display}/{source.rel}",
                    index + 1,
                    (line.find(name) + 1) or 1,
                    resource=name,
                )
                found.append((finding, source, start, number))
    if found and runs is not None:
        found = [item for n, item in enumerate(found) if n >= _MAX_TRIES or not _ran(item, runs)]
    return _once([f for f, *_ in found])


def _ran(item: tuple[Finding, _Source, int, int], runs: Runs) -> bool:
    """Whether the branch of a place runs when the chart renders here (a packed subchart's is not tried)."""
    _, source, start, number = item
    if ".tgz/" in source.rel:
        return False
    return runs(source.rel, failing_branch(source.text, start, number)) is True


def failing_branch(text: str, index: int, branch: int) -> str:
    """A template's text whose block opening on line index (0-based) fails right after its opening action (branch
    0) or its first `else` on that line (branch K): Helm's message then names _MARK when that branch runs."""
    lines = text.splitlines(keepends=True)
    if index >= len(lines):
        return text
    line = lines[index]
    words = ("else",) if branch else ("if", "with", "range")
    ends = [end for _, end, word in _actions(line) if word in words]
    if ends:
        lines[index] = line[: ends[0]] + f'{{{{ fail "{_MARK}" }}}}' + line[ends[0] :]
    return "".join(lines)


def _once(found: list[Finding]) -> list[Finding]:
    """One finding per place and device: nested blocks that both read the cluster reach the same line."""
    seen: set[tuple[str, int, str]] = set()
    out = []
    for f in found:
        if (f.file, f.line, f.resource) not in seen:
            seen.add((f.file, f.line, f.resource))
            out.append(f)
    return out


def _conditions(block: Block) -> str:
    """The condition of a block and of each `else if` of its chain."""
    return " ".join([block.cond, *(c or "" for _, c in block.branches)])


def _segments(block: Block) -> list[tuple[int, int]]:
    """The line ranges of a block's branches: its body up to the first `else`, each `else` up to the next, the last
    up to `end` (each range from its opening line, which may hold text after the action)."""
    marks = [block.start, *(line for line, _ in block.branches), block.end]
    return [(marks[i], marks[i + 1]) for i in range(len(marks) - 1)]


_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"|`[^`]*`')


def _reads_cluster(condition: str, variables: set[str], tainted: set[str], reads_values: bool) -> str | None:
    """What of the cluster a condition reads (its text, a variable set from a read, a define that reads), or None."""
    if found := _CLUSTER.search(_STRING.sub('""', condition)):
        return found.group(0)
    if variables and (named := sorted(set(_VARIABLE.findall(condition)) & variables)):
        return named[0]
    for match in _INCLUDE.finditer(condition):
        if (match.group(1) or match.group(2)) in tainted:
            return f'include "{match.group(1) or match.group(2)}"'
    if reads_values and re.search(r"\btpl\b", condition):
        return "tpl"
    return None


def _scopes(all_blocks: list[Block]) -> Callable[[Block], Block]:
    """For a block, the define it is in (its variables are that define's), else the whole file. Defines do not nest."""
    defines = sorted((b for b in all_blocks if b.word == "define"), key=lambda b: b.start)
    starts = [b.start for b in defines]
    whole = Block("file", "", -1, 1 << 30)

    def scope(block: Block) -> Block:
        at = bisect.bisect_right(starts, block.start) - 1
        return defines[at] if at >= 0 and block.end <= defines[at].end else whole

    return scope


def _text_of(lines: list[str], block: Block) -> str:
    return "\n".join(lines[max(block.start, 0) : block.end + 1])


def _closure(direct: set[str], edges: dict[str, set[str]]) -> set[str]:
    """direct and every name whose edges (what it reads) reach one of them."""
    readers: dict[str, set[str]] = {}
    for name, reads in edges.items():
        for read in reads:
            readers.setdefault(read, set()).add(name)
    out, todo = set(direct), list(direct)
    while todo:
        for reader in readers.get(todo.pop(), ()):
            if reader not in out:
                out.add(reader)
                todo.append(reader)
    return out


def _tainted_variables(text: str, tainted: set[str]) -> set[str]:
    """The template variables whose value reads the cluster: set from a read, or from another such variable."""
    direct: set[str] = set()
    edges: dict[str, set[str]] = {}
    for action in re.findall(r"\{\{(.*?)\}\}", text, re.DOTALL):
        found = _ASSIGN.search(action)
        if not found:
            continue
        name, value = found.group(1), action[found.end() :]
        if _reads_cluster(value, set(), tainted, False) is not None:
            direct.add(name)
        edges.setdefault(name, set()).update(_VARIABLE.findall(value))
    return _closure(direct, edges)


def _defines(sources: list[_Source]) -> dict[str, list[tuple[_Source, Block]]]:
    out: dict[str, list[tuple[_Source, Block]]] = {}
    for source in sources:
        if "define" not in source.text:
            continue
        for block in source.parsed()[1]:
            name = re.fullmatch(r'"([^"]+)"', block.cond) if block.word == "define" else None
            if name:
                out.setdefault(name.group(1), []).append((source, block))
    return out


def _body(source: _Source, block: Block) -> str:
    return "\n".join(source.parsed()[0][block.start : block.end + 1])


def _tainted_defines(defines: dict[str, list[tuple[_Source, Block]]]) -> set[str]:
    """The defines whose text reads the cluster, themselves or through a define they include."""
    direct: set[str] = set()
    edges: dict[str, set[str]] = {}
    for name, bodies in defines.items():
        for source, block in bodies:
            body = _body(source, block)
            if _CLUSTER.search(_STRING.sub('""', body)):
                direct.add(name)
            edges.setdefault(name, set()).update(m.group(1) or m.group(2) for m in _INCLUDE.finditer(body))
    return _closure(direct, edges)


def _first_device(
    source: _Source, lines: list[str], start: int, end: int, reach: _Reach, after: list[int]
) -> tuple[int, str] | None:
    """The first line of a branch that writes a device name (its own text, a define it includes, a value it reads),
    and that name. The lines of blocks nested in the branch are its own: what they may write, the branch may; the
    branch's opening and closing lines only outside their control actions (the gate's condition).
    after: for each line, the first line from it on that writes one (_next_devices)."""
    if name := _outside_control(lines, start, source, reach):
        return start, name
    first = after[start + 1] if start + 1 < len(after) else len(lines)
    if first < end:
        return first, _line_device(lines[first], source, reach) or ""
    if end > start and (name := _outside_control(lines, end, source, reach)):
        return end, name
    return None


def _outside_control(lines: list[str], index: int, source: _Source, reach: _Reach) -> str | None:
    text = lines[index] if index < len(lines) else ""
    for begin, stop, _ in reversed([a for a in _actions(text) if a[2] in _CONTROL]):
        text = text[:begin] + " " + text[stop:]
    return _line_device(text, source, reach)


def _line_device(line: str, source: _Source, reach: _Reach) -> str | None:
    return _device_in(line, reach.rules) or reach.text(line, source)


def _next_devices(lines: list[str], source: _Source, reach: _Reach) -> list[int]:
    """For each line, the first line from it on that writes a device name (len(lines) when none does)."""
    after = [len(lines)] * (len(lines) + 1)
    for index in range(len(lines) - 1, -1, -1):
        after[index] = index if _line_device(lines[index], source, reach) else after[index + 1]
    return after


def _device_in(text: str, rules: RuleSet) -> str | None:
    for name in _NAME.findall(text):
        if rules.is_device_candidate(name) and rules.lookup(name) is not None:
            return name
    return None


class _Reach:
    """The device name a text writes through the values it reads and the defines it includes (and they include),
    each define's and each values path's answer found once: a chain of 3,000 defines, or 10,000 lines reading one
    large values map, is read in time linear in the chart."""

    def __init__(self, defines: dict[str, list[tuple[_Source, Block]]], rules: RuleSet) -> None:
        self.defines, self.rules = defines, rules
        self.memo: dict[str, str] = {}
        self.values: dict[tuple[int, tuple[str, ...]], str] = {}

    def text(self, text: str, source: _Source) -> str | None:
        return self._values(text, source) or next(
            (found for m in _INCLUDE.finditer(text) if (found := self.define(m.group(1) or m.group(2)))), None
        )

    def _values(self, text: str, source: _Source) -> str:
        for match in _VALUES.finditer(text):
            path = tuple(p for p in match.group(1).split(".") if p)
            for values in source.values:
                key = (id(values), path)
                if key not in self.values:
                    self.values[key] = _holds_device(_at(values, list(path)), self.rules) or ""
                if self.values[key]:
                    return self.values[key]
        return ""

    def define(self, name: str) -> str:
        """The device a define writes, its own or an included define's; defines are walked without recursion (a
        define reached again while it is walked, one including itself, adds nothing)."""
        if name in self.memo:
            return self.memo[name]
        self.memo[name] = ""
        own = {name: self._own(name)}
        stack: list[tuple[str, list[str]]] = [(name, self._includes(name))]
        while stack:
            current, todo = stack[-1]
            if own[current] or not todo:
                self.memo[current] = own[current]
                stack.pop()
                if stack:
                    parent = stack[-1][0]
                    own[parent] = own[parent] or own[current]
                continue
            child = todo.pop()
            if child in self.memo:
                own[current] = self.memo[child]
                continue
            self.memo[child] = ""
            own[child] = self._own(child)
            stack.append((child, self._includes(child)))
        return self.memo[name]

    def _own(self, name: str) -> str:
        for holder, block in self.defines.get(name, []):
            body = _body(holder, block)
            if found := _device_in(body, self.rules) or self._values(body, holder):
                return found
        return ""

    def _includes(self, name: str) -> list[str]:
        bodies = self.defines.get(name, [])
        return [m.group(1) or m.group(2) for holder, block in bodies for m in _INCLUDE.finditer(_body(holder, block))]


def _at(values: Any, path: list[str]) -> Any:
    for part in path:
        if not isinstance(values, dict):
            return None
        values = values.get(part)
    return values


def _texts(value: Any) -> Iterator[str]:
    """The keys and strings of a values node, walked without recursion (a value too deep for the stack is data)."""
    todo = [value]
    while todo:
        node = todo.pop()
        if isinstance(node, str):
            yield node
        elif isinstance(node, dict):
            todo.extend(str(k) for k in node)
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)


def _holds_device(value: Any, rules: RuleSet) -> str | None:
    return next((found for text in _texts(value) if "/" in text and (found := _device_in(text, rules))), None)


def _values_read_cluster(sources: list[_Source], memo: dict[int, bool]) -> bool:
    """Whether a values string, which a template may run through `tpl`, reads the cluster (each values file once)."""
    for source in sources:
        for values in source.values:
            if id(values) not in memo:
                memo[id(values)] = any(_CLUSTER.search(t) for t in _texts(values) if "{{" in t)
            if memo[id(values)]:
                return True
    return False


def _load_values(text: str) -> Any:
    with contextlib.suppress(Exception):
        return yaml.safe_load(text)
    return None


def _sources(root: Path, values_files: tuple[Path, ...]) -> Iterator[_Source]:
    """The template files of the chart and of its subcharts (unpacked, at any depth, and packed one level down),
    each with the values its `.Values` reads."""
    given = [_load_values(_read(p)) for p in values_files]
    yield from _folder_sources(root, "", [*given, _load_values(_read(root / "values.yaml"))])


def _folder_sources(chart: Path, prefix: str, values: list[Any]) -> Iterator[_Source]:
    if chart.is_symlink() or not chart.is_dir():
        return
    for path in sorted((chart / "templates").rglob("*")) if (chart / "templates").is_dir() else ():
        if path.is_symlink() or not path.is_file() or path.stat().st_size > _MAX_TEMPLATE:
            continue
        rel = f"{prefix}{path.relative_to(chart).as_posix()}"
        yield _Source(rel, path.read_text(encoding="utf-8", errors="replace"), values)
    sub = chart / "charts"
    if not sub.is_dir() or sub.is_symlink():
        return
    for child in sorted(sub.iterdir()):
        if child.is_dir() and not child.is_symlink():
            own = _load_values(_read(child / "values.yaml"))
            yield from _folder_sources(child, f"{prefix}charts/{child.name}/", [*_under(values, child.name), own])
        elif child.suffix == ".tgz" and child.is_file() and not child.is_symlink():
            yield from _packed_sources(child, f"{prefix}charts/{child.name}/", values)


def _under(values: list[Any], key: str) -> list[Any]:
    return [v[key] for v in values if isinstance(v, dict) and isinstance(v.get(key), dict)]


def _packed_sources(archive: Path, prefix: str, values: list[Any]) -> Iterator[_Source]:
    """A packed subchart's template files (not those of archives packed inside it), read within the sandbox's bounds."""
    import tarfile
    import zlib

    from dramigrate.helm.sandbox import MAX_MEMBERS
    from dramigrate.helm.tararchive import open_packed

    templates: list[tuple[str, str]] = []
    own: dict[str, Any] = {}
    top = ""
    try:
        with open_packed(archive) as tar:
            for count, member in enumerate(tar):
                if count >= MAX_MEMBERS or member.offset_data + member.size > _MAX_PACKED:
                    break
                parts = member.name.split("/")
                if not member.isfile() or member.size > _MAX_TEMPLATE or len(parts) < 2:
                    continue
                handle = tar.extractfile(member)
                text = (handle.read() if handle else b"").decode("utf-8", "replace")
                if parts[1:] == ["values.yaml"]:
                    own[parts[0]] = _load_values(text)
                elif len(parts) > 2 and parts[1] == "templates":
                    templates.append((member.name, text))
                top = top or parts[0]
    except (OSError, EOFError, tarfile.TarError, zlib.error):
        return
    for name, text in templates:
        folder = name.split("/", 1)[0]
        yield _Source(f"{prefix}{name}", text, [*_under(values, folder), own.get(folder)])


def _read(path: Path) -> str:
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > _MAX_TEMPLATE:
            return ""
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def branch_runs(root: Path, options: Any, work: Path, rel: str, text: str) -> bool | None:
    """Whether a copy of the chart (made under work) whose template rel reads text fails with _MARK (the branch made to
    fail ran); None when the copy cannot be made."""
    from dramigrate.helm.render import HelmError, render_chart
    from dramigrate.helm.sandbox import private_copy

    folder = work / f"gated-{len(list(work.glob('gated-*')))}"
    folder.mkdir()
    copy = private_copy(root, folder / (root.resolve().name or "chart"))
    path = copy / rel
    if not path.is_file() or path.is_symlink():
        return None
    path.write_text(text, encoding="utf-8")
    try:
        render_chart(copy, options)
    except HelmError as exc:
        return _MARK in str(exc)
    return False
