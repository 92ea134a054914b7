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
    r"(?<![\w.-])lookup(?![\w.-])|\.Capabilities\b|\.Release\.(?:IsUpgrade|IsInstall|Revision)\b"
    r"|\bnow\b|\bunixEpoch\b|\brand(?:Int|Alpha|AlphaNum|Numeric|Ascii|Bytes)\b|\buuidv4\b|\bshuffle\b"
)
_MAX_TEMPLATE = 1 << 20
_CONTROL = ("if", "else", "end", "with", "range")
_MAX_PACKED = 5 << 20  # bytes of one packed subchart's members read, as the sandbox bounds them
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9.\-_]*/[A-Za-z0-9.\-_]+")
_INCLUDE = re.compile(r"""\b(?:include|template)\s+"([^"]+)"|\bblock\s+"([^"]+)\"""")
_VALUES = re.compile(r"\.Values((?:\.[\w-]+)*)")
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
    if not any(_CLUSTER.search(s.text) for s in sources) and not _values_read_cluster(sources):
        return []
    defines = _defines(sources)
    tainted = _tainted_defines(defines)
    found: list[tuple[Finding, _Source, int, int]] = []
    for source in sources:
        covered = {
            where.line - 1 for f in findings for where in (f, *f.related) if where.file == f"{display}/{source.rel}"
        }
        lines, all_blocks = source.parsed()
        reads_values = _values_read_cluster([source])
        scopes: dict[int, set[str]] = {}
        for block in all_blocks:
            scope = _scope(block, all_blocks)
            if scope.start not in scopes:
                scopes[scope.start] = _tainted_variables(_text_of(lines, scope), tainted)
            reads = _reads_cluster(_conditions(block), scopes[scope.start], tainted, reads_values)
            if reads is None or block.word == "define":
                continue
            for number, (start, end) in enumerate(_segments(block)):
                if any(start <= at <= end for at in covered):
                    continue
                hit = _first_device(source, lines, start, end, defines, rules)
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
    for variable in variables:
        if re.search(re.escape(variable) + r"\b", condition):
            return variable
    for match in _INCLUDE.finditer(condition):
        if (match.group(1) or match.group(2)) in tainted:
            return f'include "{match.group(1) or match.group(2)}"'
    if reads_values and re.search(r"\btpl\b", condition):
        return "tpl"
    return None


def _scope(block: Block, all_blocks: list[Block]) -> Block:
    """The define a block is in (its variables are that define's), else the whole file."""
    inside = [b for b in all_blocks if b.word == "define" and b.start <= block.start and block.end <= b.end]
    return max(inside, key=lambda b: b.start) if inside else Block("file", "", -1, 1 << 30)


def _text_of(lines: list[str], block: Block) -> str:
    return "\n".join(lines[max(block.start, 0) : block.end + 1])


def _tainted_variables(text: str, tainted: set[str]) -> set[str]:
    """The template variables whose value reads the cluster: set from a read, or from another such variable."""
    assignments = []
    for action in re.findall(r"\{\{(.*?)\}\}", text, re.DOTALL):
        found = _ASSIGN.search(action)
        if found:
            assignments.append((found.group(1), action[found.end() :]))
    variables: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, value in assignments:
            if name not in variables and _reads_cluster(value, variables, tainted, False) is not None:
                variables.add(name)
                changed = True
    return variables


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
    tainted: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, bodies in defines.items():
            if name in tainted:
                continue
            for source, block in bodies:
                body = _body(source, block)
                if _reads_cluster(body, _tainted_variables(body, tainted), tainted, False):
                    tainted.add(name)
                    changed = True
                    break
    return tainted


def _first_device(
    source: _Source,
    lines: list[str],
    start: int,
    end: int,
    defines: dict[str, list[tuple[_Source, Block]]],
    rules: RuleSet,
) -> tuple[int, str] | None:
    """The first line of a branch that writes a device name (its own text, a define it includes, a value it reads),
    and that name. The lines of blocks nested in the branch are its own: what they may write, the branch may."""
    for index in range(start, min(end + 1, len(lines))):
        text = lines[index]
        if index in (start, end):  # the gate's own actions (its condition): only what stands outside them
            for begin, stop, _ in reversed([a for a in _actions(text) if a[2] in _CONTROL]):
                text = text[:begin] + " " + text[stop:]
        name = _device_in(text, rules) or _device_reached(text, source, defines, rules, set())
        if name:
            return index, name
    return None


def _device_in(text: str, rules: RuleSet) -> str | None:
    for name in _NAME.findall(text):
        if rules.is_device_candidate(name) and rules.lookup(name) is not None:
            return name
    return None


def _device_reached(
    text: str, source: _Source, defines: dict[str, list[tuple[_Source, Block]]], rules: RuleSet, seen: set[str]
) -> str | None:
    """A device name the values a text reads hold, or one that a define it includes writes."""
    for match in _VALUES.finditer(text):
        path = [p for p in match.group(1).split(".") if p]
        for values in source.values:
            name = _device_in(_dumped(_at(values, path)), rules)
            if name:
                return name
    for match in _INCLUDE.finditer(text):
        define = match.group(1) or match.group(2)
        if define in seen:
            continue
        seen.add(define)
        for holder, block in defines.get(define, []):
            body = _body(holder, block)
            name = _device_in(body, rules) or _device_reached(body, holder, defines, rules, seen)
            if name:
                return name
    return None


def _at(values: Any, path: list[str]) -> Any:
    for part in path:
        if not isinstance(values, dict):
            return None
        values = values.get(part)
    return values


def _dumped(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    with contextlib.suppress(Exception):
        return yaml.safe_dump(value, width=1 << 20)
    return ""


def _values_read_cluster(sources: list[_Source]) -> bool:
    """Whether a values string, which a template may run through `tpl`, reads the cluster."""
    return any(_CLUSTER.search(_dumped(v)) for s in sources for v in s.values)


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
