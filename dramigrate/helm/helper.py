"""The idiomatic chart rewrite for pattern D: the device key is written by a named helper (a `define` in
`_helpers.tpl`) that the workload templates `include` with the values the count comes from.

Which helper line writes the device key is found by rendering, never by reading templates alone: a copy of the
chart gets a marker comment on each key-shaped line inside a `define`, and the rendered device key that carries
a marker names its line. The rewrite then stays inside the helper's `define` and at the call sites' pod specs,
the shape the vLLM production-stack maintainers chose for their helper (`gpuAllocation` per `modelSpec`,
PR #1086) and llm-d-modelservice for theirs (`accelerator.dra`, PR #185):

- the switch sits beside the count in the values the helper reads: `dra.enabled` in the object the helper
  gets (`servingEngineSpec.modelSpec[].dra.enabled`), or in values.yaml when the helper reads `.Values`;
  read with `dig`, so values that never mention it keep the chart's default (on; off with `--opt-in`);
- in the helper, the device key stays in the non-DRA branch and the DRA branch adds the container's `claims`;
  a new `<helper>.draCount` define gives the count the key would have had (0 when the helper writes no key);
- at each call site's pod spec, the pod's `resourceClaims` entry and the toleration the device plugin's
  admission used to add, guarded by the call site's own conditions and `gt <count> 0`; beside the workload
  document, its ResourceClaimTemplate, named after the workload plus a hash of its spec.

A helper that builds the resources map in variables (`dict`, `mergeOverwrite`) and writes it with toYaml (frigate's
`frigate.resources`) names no device key on any line: every line its toYaml writes gets the marker, the map is edited
before that line in the DRA branch (`omit` the device key, `set` the claim), and `<helper>.draCount` replays the
helper's control and assignment lines to read the count from the map. A helper that writes a map a variable holds
(`{{- $model.resources | toYaml | nindent 12 }}`, infaas-inference's model picked from `.Values.models` by
`.Values.deployedModel`) is edited the same way, in a copy of that map (`$draResources`): the values stay as they are.

What the DRA branch writes (claim and request names, device class, selectors, tolerations) comes from the
core's migration of the chart's render, so it cannot drift from `fix -`; run.py proves (L) and (D) on the chart as
written, its switch turned against the default where the values documentation says (`flipped`): a switch no value
reaches would leave a chart that can never be turned.
"""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dramigrate.helm.conventions import conventions
from dramigrate.helm.foldguards import folded
from dramigrate.helm.goexpr import and_all, as_arg, unparenthesized
from dramigrate.helm.idiomatic import OLD_CLUSTER, SERVED, _metadata_line, _name_text, _sentinel_yaml, fail_when
from dramigrate.helm.locate import _ACTION as _WHOLE_ACTION
from dramigrate.helm.model import PodDelta
from dramigrate.helm.namelookup import split_literal
from dramigrate.helm.patterns import _ACTION, NotIdiomatic, count_expression, untaken_message
from dramigrate.helm.poddelta import claim_delta, pod_groups
from dramigrate.helm.rewrite import Change, RewriteError, _actions
from dramigrate.helm.suitevalues import SuiteRender, changed_part, trimmed_case
from dramigrate.helm.switchname import OWN, build_beside, switch_key
from dramigrate.helm.templatelines import (
    action_body,
    bare,
    block_end,
    child_indent,
    emits_text,
    in_actions,
    is_control,
    is_key,
    line_indent,
    parent_line,
    section_of,
)
from dramigrate.helm.tolerationedits import _dump_list, given_tolerations, tolerated_define, untolerated_only
from dramigrate.helm.tolerationedits import _merge_tolerations as _merge_list
from dramigrate.helm.values import get_path
from dramigrate.lifetime import result
from dramigrate.rules import RuleSet

MARKER = "dramigrate-helper-line-"
# a line of a `define` that writes a map variable with toYaml (`{{ $resources | toYaml }}`,
# `{{- toYaml $limits | nindent 4 }}`): a helper that builds the resources map with dict/merge; or a map a variable
# holds (`{{- $model.resources | toYaml | nindent 12 }}`, `$model` picked from a values map by a values key)
_TOYAML_LINE = re.compile(
    r"^(?P<pad>\s*)\{\{(?P<trim>-?)\s*(?P<body>(?:toYaml\s+(?P<a>\$\w+(?:\.\w+)*)|(?P<b>\$\w+(?:\.\w+)*)\s*\|\s*toYaml)"
    r"(?:\s*\|\s*(?:nindent|indent)\s+\d+)?(?:\s*\|\s*trim)?)\s*-?\}\}\s*$"
)
# a toYaml of a values map or of the dot (`{{- toYaml . | nindent 4 }}` in `with .Values.resources`): how a library
# chart writes a container's resources map whole (packedlib.find_request marks these when no other line renders a key)
TOYAML_VALUES_LINE = re.compile(
    r"^(?P<pad>\s*)\{\{(?P<trim>-?)\s*(?P<body>(?:toYaml\s+(?P<a>\$?\w*(?:\.\w+)*|\.)|(?P<b>\$?\w*(?:\.\w+)+|\.)"
    r"\s*\|\s*toYaml)(?:\s*\|\s*(?:nindent|indent)\s+\d+)?(?:\s*\|\s*trim)?)\s*-?\}\}\s*$"
)
# the lines of a map written with toYaml that get the marker: a key alone or with a one-word value (a device count),
# never a line of a quoted or folded string toYaml wraps over lines (a `tpl` value the library parses again)
_MAP_KEY_LINE = r"""(?m)^([ ]*(?:- )?["']?[\w./-]+["']?:(?: [^\s'"#{}\[\]]+| "[^"\s]*"| '[^'\s]*')?)$"""
_KEY_LINE = re.compile(r"""^(\s*)(\{\{-?\s*[^{}]*?\s*-?\}\}|["']?[A-Za-z0-9][\w./-]*["']?)\s*:\s+(\S.*?)\s*$""")
_NUMBER = "\\\"' \\n"  # what `trimAll` strips from a rendered count: quotes and blanks


class NotHelper(RewriteError):
    """The device key is not written by one named helper in a shape this rewrite takes."""


@dataclass(frozen=True)
class KeyLine:
    """A line inside a `define` that, rendered, wrote a device key."""

    file: str  # chart-relative path of the template file
    index: int  # 0-based line
    define: str
    resource: str  # the device resource it rendered
    name_expr: str | None  # the Go expression of a templated key (`$gpuType`), None for a literal key
    count: str  # the Go expression of the count
    var: str | None = None  # a toYaml line: the map variable it writes (`$resources`)
    paths: tuple[tuple[str, ...], ...] = ()  # a toYaml line: where the device key sits in that map


@dataclass
class Block:
    word: str  # if, with, range, define, block
    cond: str
    start: int  # line of the opening action
    end: int  # line of its `end`
    branches: list[tuple[int, str | None]] = field(default_factory=list)  # `else if X` (line, X), `else` (line, None)
    chained_with: bool = False  # an `else with`: not taken


def _line_of(text: str) -> list[int]:
    starts, pos = [], 0
    for line in text.splitlines(keepends=True):
        starts.append(pos)
        pos += len(line)
    return starts


def blocks(text: str) -> list[Block]:
    """Every block action of a template with its lines (unbalanced templates give what balances)."""
    starts = _line_of(text)

    def line(offset: int) -> int:
        lo, hi = 0, len(starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo

    out: list[Block] = []
    stack: list[Block] = []
    for start, end, word in _actions(text):
        body = action_body(text[start:end])
        if word in ("if", "with", "range", "define", "block"):
            stack.append(Block(word, body[len(word) :].strip(), line(start), -1))
        elif word == "else" and stack:
            rest = body.strip()[len("else") :].strip()
            if not rest:
                stack[-1].branches.append((line(start), None))
            elif rest.startswith("if "):
                stack[-1].branches.append((line(start), rest[3:].strip()))
            else:
                stack[-1].chained_with = True
        elif word == "end" and stack:
            done = stack.pop()
            done.end = line(start)
            out.append(done)
    return out


def enclosing(all_blocks: list[Block], index: int) -> list[Block]:
    """The blocks around line `index`, outermost first."""
    inside = [b for b in all_blocks if b.start < index < b.end]
    return sorted(inside, key=lambda b: b.start)


def _defines(text: str) -> list[tuple[str, Block]]:
    out = []
    for b in blocks(text):
        if b.word == "define":
            m = re.fullmatch(r'"([^"]+)"', b.cond)
            if m:
                out.append((m.group(1), b))
    return out


# --- locating the helper line by rendering --------------------------------------------------------------------


def template_files(root: Path, within: str = "") -> list[Path]:
    """The chart's template files; with `within` (`charts/<folder>`), also those of that subchart, vendored unpacked
    (Helm's defines are one namespace across an umbrella: vLLM production-stack's `chart.resources` under one)."""
    folders = [root / "templates", *([root / within / "templates"] if within else [])]
    suffixes = (".tpl", ".yaml", ".yml", ".txt")
    return sorted(p for f in folders for p in f.rglob("*") if p.is_file() and p.suffix in suffixes)


def marked_copy(root: Path, dest: Path, within: str = "") -> dict[int, tuple[str, int, str]]:
    """A copy of the chart at `dest` with a marker comment on each key-shaped line inside a `define`;
    marker number -> (file, line, define name)."""
    from dramigrate.helm.sandbox import refuse_outside_links

    refuse_outside_links(root, str(root))
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(root, dest, symlinks=False)
    marks: dict[int, tuple[str, int, str]] = {}
    for path in template_files(dest, within):
        mark_defines(path, path.relative_to(dest).as_posix(), marks)
    return marks


def mark_defines(
    path: Path, rel: str, marks: dict[int, tuple[str, int, str]], maps: re.Pattern[str] = _TOYAML_LINE
) -> None:
    """A marker comment on each key-shaped line of each `define` of one template file (and on each line a toYaml of
    a map variable writes; `maps`: of a values map too, TOYAML_VALUES_LINE), numbered on from `marks`, which gets
    marker number -> (rel, line, define name)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return
    if "define" not in text:
        return
    lines = text.splitlines()
    inside = in_actions(lines)  # a marker there would be text inside an action: it breaks the parse
    changed = False
    for name, block in _defines(text):
        for i in range(block.start + 1, block.end):
            if i in inside:
                continue
            written = maps.match(lines[i])
            if written:  # every line the map writes carries the marker
                n = len(marks)
                marks[n] = (rel, i, name)
                body = written.group("body")
                mark = f'regexReplaceAll `{_MAP_KEY_LINE}` ({body}) "${{1}} # {MARKER}{n}"'
                lines[i] = f"{written.group('pad')}{{{{{written.group('trim')} {mark} }}}}"
                changed = True
                continue
            m = _KEY_LINE.match(lines[i])
            if not m or lines[i].rstrip().endswith(("|", ">", "|-", ">-")):
                continue
            n = len(marks)
            marks[n] = (rel, i, name)
            lines[i] = f"{lines[i]} # {MARKER}{n}"
            changed = True
    if changed:
        path.write_text("\n".join(lines) + ("\n" if text.endswith("\n") else ""), encoding="utf-8")


def marked_keys(stream: str, marks: dict[int, tuple[str, int, str]], rules: RuleSet) -> dict[int, str]:
    """Marker number -> the device resource of each rendered device key that carries a marker."""
    out: dict[int, str] = {}
    for line in stream.splitlines():
        m = re.search(rf"#\s*{MARKER}(\d+)\s*$", line)
        if not m or int(m.group(1)) not in marks:
            continue
        key = re.match(r"""^\s*(?:-\s+)?["']?([^"':]+)["']?\s*:""", line)
        if key and rules.is_device_candidate(key.group(1)) and rules.lookup(key.group(1)) is not None:
            out[int(m.group(1))] = key.group(1)
    return out


def marked_paths(stream: str, hits: dict[int, str]) -> dict[int, list[tuple[str, ...]]]:
    """Marker number -> where each rendered device key of a marked toYaml line sits in the map it writes: its key
    path, read from the indentation of the lines carrying the same marker above it."""
    out: dict[int, list[tuple[str, ...]]] = {}
    lines = stream.splitlines()
    for i, line in enumerate(lines):
        m = re.search(rf"#\s*{MARKER}(\d+)\s*$", line)
        if not m or int(m.group(1)) not in hits or not line.lstrip().startswith(hits[int(m.group(1))]):
            continue
        tail = f"# {MARKER}{m.group(1)}"
        path, depth = [hits[int(m.group(1))]], len(line) - len(line.lstrip())
        for above in reversed(lines[:i]):
            if not above.rstrip().endswith(tail):
                break
            indent = len(above) - len(above.lstrip())
            if indent < depth:
                key = re.match(r"""^\s*["']?([^"':]+)["']?\s*:""", above)
                if key is None:
                    break
                path.insert(0, key.group(1))
                depth = indent
        out.setdefault(int(m.group(1)), []).append(tuple(path))
    return out


def _dig(path: tuple[str, ...], var: str) -> str:
    return "dig " + " ".join(json.dumps(p) for p in path) + f' "" {var}'


def map_count(path: tuple[str, ...], var: str) -> str:
    """The count a map variable holds at `path` (its last part the device resource), "" when it holds none: under
    `limits` or `requests` of the resources map, the limit, else the request."""
    if len(path) == 2 and path[0] in ("limits", "requests"):
        other = "requests" if path[0] == "limits" else "limits"
        return f'dig "{path[0]}" "{path[1]}" ({_dig((other, path[1]), var)}) {var}'
    return _dig(path, var)


def included_count(value: str) -> str | None:
    """The count a helper's key line takes from another helper (`{{ include "deepseek.nvidia.gpu" .Values.model.tag
    }}`, `"{{ include "x.gpus" $ctx | trim }}"`): that include as written, its argument any one term or parenthesised
    pipeline, with the pipeline after it; `<helper>.draCount` renders it in the helper's own context, so it reads what
    the key line read. None for anything else."""
    value = value.split(" #", 1)[0].strip()
    quoted = re.fullmatch(r"""(["']?)(\{\{.*\}\})\1""", value)
    actions = _ACTION.findall(quoted.group(2)) if quoted else []
    if len(actions) != 1 or _ACTION.sub("", quoted.group(2)).strip():
        return None
    expr = re.sub(r"\s*\|\s*(quote|toString|squote)\s*$", "", actions[0]).strip()
    call = re.match(r'(?:include|template)\s+"[^"]+"\s+', expr)
    arg = _argument(expr, call.end()) if call else ""
    rest = expr[call.end() + len(arg) :].strip() if call else ""
    if not arg or (rest and not rest.startswith("|")):  # a pipeline after it (`| int`, `| default 1`) is kept
        return None
    return "include" + expr[len("template") :] if expr.startswith("template") else expr


def key_lines(
    root: Path,
    hits: dict[int, str],
    marks: dict[int, tuple[str, int, str]],
    paths: dict[int, list[tuple[str, ...]]] | None = None,
) -> list[KeyLine]:
    out = []
    for n, resource in sorted(hits.items()):
        file, index, define = marks[n]
        line = (root / file).read_text(encoding="utf-8").splitlines()[index]
        written = _TOYAML_LINE.match(line)
        if written:
            found = sorted(set((paths or {}).get(n, [])), key=lambda p: (p[-2:-1] != ("limits",), p))
            if not found:
                continue
            var = written.group("a") or written.group("b")
            out.append(KeyLine(file, index, define, resource, None, map_count(found[0], var), var, tuple(found)))
            continue
        m = _KEY_LINE.match(line)
        if m is None:
            continue
        key, value = m.group(2), m.group(3)
        name_expr = None
        if key.startswith("{{"):
            actions = _ACTION.findall(key)
            name_expr = actions[0].strip() if len(actions) == 1 else None
            name_expr = re.sub(r"\s*\|\s*(quote|squote|toString)\s*$", "", name_expr or "") or None
            if not name_expr or " " in name_expr.strip("()") and not name_expr.startswith("$"):
                raise NotHelper(f"{file}:{index + 1}: the helper's device key is not one variable or value")
        count = count_expression(value) or included_count(value)
        if count is None:
            raise NotHelper(f"{file}:{index + 1}: the helper's device count is not one expression")
        out.append(KeyLine(file, index, define, resource, name_expr, count))
    return out


# --- the rewrite --------------------------------------------------------------------------------------------


@dataclass
class CallSite:
    rel: str  # the workload template
    index: int  # the line with `include "<helper>" <arg>`
    arg: str  # the include's argument (the helper's context at the call site)
    given: str = ""  # the argument as the chart wrote it, when the rewrite passes the chart's `dra` in (rootswitch)
    helper: str = ""  # the helper it includes, when that is not the one that writes the key (helper_chain)
    item: str = ""  # `.` inside `range .Values.<item>`: the values list or map whose items the helper gets
    via: str = ""  # another helper the template includes, which includes this one with a dict it builds (second_way)
    via_file: str = ""  # the file of that helper


_INCLUDE = re.compile(r'\binclude\s+"(?P<name>[^"]+)"\s+')
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|`[^`]*`|[()]')


def _argument(line: str, start: int) -> str:
    """The include's argument from `start`: a word (`.`, `$ctx.x`), or a parenthesised pipeline with its nested
    parentheses (`(fromYaml (include "app.cfg" .))`, quoted parentheses skipped); "" when the parentheses do not
    close on the line."""
    if not line.startswith("(", start):
        word = re.match(r"[^\s|})]+", line[start:])
        return word.group(0) if word else ""
    depth = 0
    for m in _TOKEN.finditer(line, start):
        if m.group(0) in "()":
            depth += 1 if m.group(0) == "(" else -1
            if depth == 0:
                return line[start : m.end()]
    return ""


def call_sites(root: Path, define: str, within: str = "") -> list[CallSite]:
    out = []
    for path in template_files(root, within):
        rel = path.relative_to(root).as_posix()
        if path.name.startswith("_"):
            continue
        text = path.read_text(encoding="utf-8")
        # an include inside a `define` that its own file never includes (bud-runtime's single-node.yaml, a pod helper
        # in a file of its own) is a hop of the chain (_includers), not a call site: it renders where another
        # template includes the define, and the render names that template
        defined = {i for name, b in _defines(text) if not _included_in(text, name) for i in range(b.start, b.end + 1)}
        for i, line in enumerate(text.splitlines()):
            if i in defined:
                continue
            for m in _INCLUDE.finditer(line):
                opening = line.rfind("{{", 0, m.start())
                if re.match(r"\{\{-?\s*(if|else|with|range)\b", line[opening:]) if opening >= 0 else False:
                    continue  # the helper's text as a condition: it writes nothing into the pod
                if m.group("name") != define:
                    continue
                arg = _argument(line, m.end())
                if not arg:
                    why = f"the argument of the include of {define} does not close on its line"
                    raise NotHelper(f"{rel}:{i + 1}: {why}")
                out.append(CallSite(rel, i, arg, item=_ranged_item(text, i) if arg == "." else ""))
    return out


def _ranged_item(text: str, index: int) -> str:
    """The values path of `range .Values.<path>` when that is what rebinds `.` at line `index` ("" otherwise)."""
    around = [b for b in enclosing(blocks(text), index) if b.word in ("with", "range", "define", "block")]
    if not around or around[-1].word != "range":
        return ""
    ranged = re.fullmatch(r"\$?\.Values((?:\.[\w-]+)+)", around[-1].cond)
    return ranged.group(1)[1:] if ranged else ""


def _included_in(text: str, define: str) -> bool:
    """Whether a template includes (or calls with `template`) the helper `define` itself."""
    return bool(re.search(rf'\b(?:include|template)\s+"{re.escape(define)}"', text))


@dataclass(frozen=True)
class Hop:
    """An include of a helper inside another helper's `define` that passes its own context on (`.` or `$`): the
    rewrite follows such a chain from the helper that writes the key up to the one the workload templates include."""

    rel: str  # the file of the including helper
    index: int  # the include's line
    inner: str  # the helper included
    outer: str  # the helper that includes it
    arg: str

    @property
    def built(self) -> bool:
        """Whether the include passes a `dict` built there (llm-d's `(dict "resources" .container.resources ...
        "Values" .Values)`) rather than its own context."""
        return self.arg.startswith("(")


_CHAIN_LIMIT = 4  # helpers between the workload template and the key: a deeper chain is reported, not followed
_BUILT = re.compile(r"\(dict(?:\s+[^()\s]+|\s+\([^()]*\))*\s*\)")  # `(dict "k" v ...)`, values one term or `( )`
_ROOT_VALUES = re.compile(r'"Values"\s+\$?\.Values(?=[\s)])')  # the dict hands the values on as its `Values`
_DOT_VALUES = re.compile(r'"Values"\s+\.Values(?=[\s)])')
_VIA_PARTS = ("dra", "draCount", "draClaimSpec")


def via_defines(define: str, hops: list[Hop]) -> tuple[str, str]:
    """For a chain whose hops pass a `dict` (Hop.built): the helper whose `.dra`, `.draCount` and `.draClaimSpec` the
    call sites include with their own argument, and the defines that translate each such hop, innermost first: each
    includes the inner helper's define with the hop's `dict`, evaluated in the outer helper's context, so the count
    and claim come from the keys the dict maps (`"resources" .container.resources`) as the helper reads them."""
    current, out = define, []
    for outer in dict.fromkeys(h.outer for h in hops):
        own = {h.arg for h in hops if h.outer == outer}
        if len(own) != 1:
            raise NotHelper(f"the helper {outer} includes {current} with several arguments ({', '.join(sorted(own))})")
        arg = own.pop()
        if arg in (".", "$"):
            continue
        out += [
            f'{{{{- define "{outer}.{part}" -}}}}{{{{ include "{current}.{part}" {arg} }}}}{{{{- end }}}}'
            for part in _VIA_PARTS
        ]
        current = outer
    return current, "".join(f"{line}\n" for line in out)


def _root_values(root: Path, site: CallSite) -> bool:
    """Whether a call site gives the helper the chart's values as `.Values`: the root (`.` outside `with`/`range`, or
    `$`), or a `dict` with `"Values" $.Values` (`.Values` outside `with`/`range`)."""
    text = (root / site.rel).read_text(encoding="utf-8")
    rebound = any(b.word in ("with", "range", "define", "block") for b in enclosing(blocks(text), site.index))
    if site.arg == "$" or (site.arg == "." and not rebound):
        return True
    return bool(_BUILT.fullmatch(site.arg) and _ROOT_VALUES.search(site.arg)) and not (
        rebound and _DOT_VALUES.search(site.arg)
    )


def _includers(root: Path, define: str, within: str = "") -> list[tuple[str, Block, str, int]]:
    """(file, block, name, line) of each include of `define` inside another helper's `define`."""
    out = []
    for path in template_files(root, within):
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for name, block in _defines(text):
            if name == define:
                continue
            for i in range(block.start, block.end + 1):
                if f'include "{define}"' in lines[i]:
                    out.append((path.relative_to(root).as_posix(), block, name, i))
    return out


def _hop(root: Path, rel: str, block: Block, outer: str, index: int, inner: str) -> Hop:
    """The include of `inner` at line `index` of helper `outer` as a Hop; NotHelper when it passes another context
    than its own (a `dict`, a field, `.` rebound by `with`/`range`): the switch and the count `inner` reads would be
    read from an object the workload's call site does not give."""
    text = (root / rel).read_text(encoding="utf-8")
    line = text.splitlines()[index]
    m = re.search(rf'\binclude\s+"{re.escape(inner)}"\s+', line)
    arg = _argument(line, m.end()) if m else ""
    where = f"{rel}:{index + 1}"
    rebound = [b for b in enclosing(blocks(text), index) if b.start > block.start and b.word in ("with", "range")]
    if _BUILT.fullmatch(arg) and _ROOT_VALUES.search(arg) and not (rebound and _DOT_VALUES.search(arg)):
        return Hop(rel, index, inner, outer, arg)  # a dict that hands the chart's values on as `Values`
    if arg not in (".", "$"):
        raise NotHelper(
            f"{where}: the helper {outer} includes {inner} with `{arg or line.strip()}`, not its own context, so the "
            f"DRA switch (dra.enabled) and the count {inner} reads could not be reached from {outer}'s call sites"
        )
    if arg == "." and rebound:
        raise NotHelper(
            f"{where}: the helper {outer} includes {inner} with `.` inside `{rebound[-1].word} {rebound[-1].cond}`, "
            f"which rebinds it, so the DRA switch (dra.enabled) {inner} reads could not be reached from {outer}'s "
            "call sites"
        )
    return Hop(rel, index, inner, outer, arg)


_QUIET_ACTION = re.compile(r"\{\{-?\s*(?:\$\w+\s*:?=|if\b|else\b|end\b|/\*)[^{}]*\}\}")


def _replayed_hop(text: str, outer: str, define: str) -> tuple[int, str, list[str]] | str:
    """The helper `outer` of `text`, which includes `define` with a `dict` it builds after assignments of its own
    (thom-caisat's `caisat.swinirModelResources`: `$resources := deepCopy .Values.model.resources`, memory floors set
    under a condition, then `include "caisat.inferenceModelResources" (dict "root" . "resources" $resources ...)`):
    (the include's line, the line with the chart's `dra` passed in the dict, the body lines between define and end),
    which replayed with `define.<part>` in place of `define` give the part for that call; why not, as a sentence,
    when a line of it writes text, or it includes `define` otherwise than once, alone on its line, with a `dict`."""
    from dramigrate.helm.rootswitch import ROOT_DRA

    block = next((b for name, b in _defines(text) if name == outer), None)
    if block is None:
        return f"the helper {outer} is not one define"
    lines = text.splitlines()
    body = lines[block.start + 1 : block.end]
    include = re.compile(rf'^\s*\{{\{{-?\s*include\s+"{re.escape(define)}"\s+(\(.*\))\s*-?\}}\}}\s*$')
    hops = [i for i, line in enumerate(body) if f'"{define}"' in line]
    if len(hops) != 1 or not (m := include.match(body[hops[0]])) or not _BUILT.fullmatch(m.group(1)):
        return f"{outer} does not include {define} once, alone on its line, with a `dict` it builds"
    if '"dra"' in m.group(1):
        return f"the `dict` {outer} gives {define} has a `dra` key already"
    if any(_QUIET_ACTION.sub("", line).strip() for i, line in enumerate(body) if i != hops[0]):
        return f"a line of {outer} besides its include of {define} writes text"
    arg = m.group(1)
    threaded = body[hops[0]].replace(arg, f"{arg[:-1].rstrip()} {ROOT_DRA})", 1)
    return block.start + 1 + hops[0], threaded, body


def second_way(root: Path, define: str, rels: set[str], within: str = "") -> list[CallSite]:
    """The call sites of another helper, each in a template of `rels` that asks for the device through it, given the
    chart's root (`.`), that includes `define` with a `dict` it builds after assignments of its own (_replayed_hop):
    the template's pod is wired with that helper's `.dra` and `.draClaimSpec`, which replay its lines
    (second_way_defines). [] when a template of `rels` is not reached so: fix then says why (_through_other_define)."""
    out: list[CallSite] = []
    outers = {name: file for file, _, name, _ in _includers(root, define, within)}
    for outer, file in sorted(outers.items()):
        sites = [s for s in call_sites(root, outer, within) if s.rel in rels]
        if not sites:
            continue
        if isinstance(_replayed_hop((root / file).read_text(encoding="utf-8"), outer, define), str):
            return []
        if not all(s.arg in (".", "$") and _root_values(root, s) for s in call_sites(root, outer, within)):
            return []
        out += [replace(s, helper=outer, via=outer, via_file=file) for s in sites]
    return out


def second_way_defines(text: str, outer: str, define: str, parts: list[str]) -> str:
    """The helper file with `outer`'s include of `define` passing the chart's `dra` in, and after it the `parts` of
    `outer` the templates include (`outer.dra`, `outer.draClaimSpec`), each `outer`'s lines with `define.<part>`
    included."""
    found = _replayed_hop(text, outer, define)
    if isinstance(found, str):
        raise NotHelper(found)
    at, threaded, body = found
    lines = text.splitlines()
    lines[at] = threaded
    out = "\n".join(lines) + "\n"
    # the other lines write nothing; chomped on both sides, they add no blank either to what the part gives
    quiet = [re.sub(r"(?<!-)\}\}", "-}}", re.sub(r"\{\{(?!-)", "{{-", line)) for line in body]
    for part in parts:
        replay = [
            threaded.replace(f'include "{define}"', f'include "{define}.{part}"', 1) if f'"{define}"' in line else line
            for line in quiet
        ]
        out += f'{{{{- define "{outer}.{part}" -}}}}\n' + "\n".join(replay) + "\n{{- end }}\n"
    return out


def _through_other_define(root: Path, rel: str, define: str, sites: list[CallSite], within: str = "") -> str:
    """Why the template `rel`, which includes another helper that includes `define` (a way second_way does not take:
    that helper writes text of its own, or is itself included by another), is not wired beside the templates that
    include `define` themselves (`sites`), and what the chart's maintainer can do; "" when no chain of helpers from
    `rel` reaches `define`."""
    lines = (root / rel).read_text(encoding="utf-8").splitlines()

    def chain(inner: str, seen: tuple[str, ...]) -> tuple[int, list[tuple[str, str, int]]] | None:
        """(the template's line, [(helper, file, line where it includes the one below)], outermost first)."""
        for file, _, name, index in sorted(_includers(root, inner, within), key=lambda f: (f[2], f[0], f[3])):
            if name in seen:
                continue
            at = next((i for i, line in enumerate(lines) if f'include "{name}"' in line), None)
            if at is not None:
                return at, [(name, file, index)]
            if len(seen) < _CHAIN_LIMIT and (up := chain(name, (*seen, name))) is not None:
                return up[0], [*up[1], (name, file, index)]
        return None

    found = chain(define, (define,))
    if found is None:
        return ""
    at, hops = found
    names = [n for n, _, _ in hops] + [define]
    why = _replayed_hop((root / hops[0][1]).read_text(encoding="utf-8"), names[0], define) if len(hops) == 1 else ""
    why = f" ({why})" if isinstance(why, str) and why else ""
    through = "".join(f", which includes {n} at {f}:{i + 1}" for n, (_, f, i) in zip(names[1:], hops, strict=True))
    direct = ", ".join(dict.fromkeys(f"{s.rel}:{s.index + 1}" for s in sites))
    return (
        f"{rel}:{at + 1} includes {names[0]}{through}, while {direct} include {define} "
        f"directly: the helper rewrite wires the pods of one way to {define} and does not follow a second one through "
        f"{names[0]}{why}. A maintainer can make it one way: have {rel} include {define} itself, with the map "
        f'{names[0]} computes passed in its argument (`(include "<helper>" . | fromYaml)`), then run fix again'
    )


def _pods_written(root: Path, found: list[tuple[str, Block, str, int]], rules: RuleSet | None) -> str:
    """What each helper of `found` writes, in words, when it writes a workload (` (x writes a Deployment; y a
    RayClusterFleet, a kind the migration leaves on its device plugin)`), "" when none does."""
    out = []
    for rel, block, name, _ in sorted(found, key=lambda f: f[2]):
        lines = (root / rel).read_text(encoding="utf-8").splitlines()[block.start : block.end]
        kind = next((m.group(1) for line in lines if (m := re.fullmatch(r"kind:\s*(\w+)\s*", line))), None)
        api = next((m.group(1) for line in lines if (m := re.fullmatch(r"apiVersion:\s*(\S+)\s*", line))), "")
        if kind and name not in (n for n, _ in out):
            left = rules is not None and rules.workload(api, kind) is None
            out.append((name, f"{kind}{', a kind the migration leaves on its device plugin' if left else ''}"))
    return f" ({'; '.join(f'{n} writes a {k}' for n, k in out)})" if out else ""


def helper_chain(
    root: Path, define: str, key_at: str, rules: RuleSet | None = None, within: str = ""
) -> tuple[list[CallSite], list[Hop]]:
    """The workload templates' includes of the helper that writes the key or, when none includes it, of the helper
    that includes it (and so on, up to _CHAIN_LIMIT helpers), with the hops between, innermost first; NotHelper when
    no template includes any of them, several helpers include one, or a hop passes another context."""
    hops: list[Hop] = []
    current = define
    while True:
        sites = call_sites(root, current, within)
        if sites:
            return [replace(s, helper=current if hops else "") for s in sites], hops
        found = _includers(root, current, within)
        outers = sorted({name for _, _, name, _ in found})
        if not found:
            via = f" (through {', '.join(h.outer for h in hops)})" if hops else ""
            raise NotHelper(f"{key_at}: no template includes {define}{via}")
        if len(outers) > 1:
            several = ", ".join(outers)
            raise NotHelper(
                f"{key_at}: no template includes {current}, and several helpers include it ({several}): the rewrite "
                f"wires one chain of helpers from the device key to the pod{_pods_written(root, found, rules)}"
            )
        if len(hops) + 1 >= _CHAIN_LIMIT:
            raise NotHelper(f"{key_at}: the helper {define} sits more than {_CHAIN_LIMIT} helpers below the pod")
        hops += [_hop(root, rel, block, name, index, current) for rel, block, name, index in found]
        current = outers[0]


def _negated(cond: str) -> str:
    return f"(not {as_arg(cond) if not cond.startswith('(') else cond})"


def _site_conditions(all_blocks: list[Block], pod: int, index: int, rel: str) -> list[str]:
    """The `if` conditions between the pod spec and the call site (an `else` branch negated)."""
    out = []
    for b in enclosing(all_blocks, index):
        if b.start <= pod:
            continue
        if b.word != "if" or b.chained_with:
            raise NotHelper(f"{rel}:{index + 1}: the helper is included inside `{b.word} {b.cond}`")
        conds: list[str | None] = [b.cond]
        for at, cond in b.branches:  # the branch the call site is in: every earlier condition false, its own true
            if at < index:
                conds = [*(_negated(c) for c in conds if c is not None), cond] if conds[-1] is not None else conds
        *negated, own = conds
        out += [c for c in negated if c is not None]
        if own is not None:
            out.append(own if " " not in own or own.startswith("(") else f"({own})")
    return out


def _switch(mode: str, context: str, default: bool, guards: tuple[str, ...] = ()) -> str:
    """The switch, read with `dig` so that values which never mention it keep the chart's default: a new key in
    values.yaml would change the render of charts that embed their values (z2jh's hub Secret). `guards`: values
    conditions (`(not .Values.kaiwo.enabled)`) under which the chart renders its request in a kind the migration
    leaves on its device plugin, so the switch does too (read from the chart's root: `values` mode only)."""
    where = f'(pick {context}.Values "dra")' if mode == "values" else context
    switch = f'(dig "dra" "enabled" {"true" if default else "false"} {where})'
    if mode != "values" or not guards:
        return switch
    rooted = [re.sub(r"(?<![\w$)])\.Values\b", f"{context}.Values", g) for g in guards]
    return f"(and {switch} {' '.join(rooted)})"


def state_define(define: str, mode: str, default: bool, guards: tuple[str, ...] = ()) -> str:
    """`<helper>.dra`: "claim" when the switch is on and the helper writes the device key with a count above 0,
    "key" when it writes it with 0 (the migration still adds the toleration), "" otherwise (switch off, no key, or a
    count unset: an `include` prints a null count `<no value>`, which Helm removes only from the final output, so
    the key renders `nvidia.com/gpu:` and asks for no device)."""
    return (
        f'{{{{- define "{define}.dra" -}}}}\n'
        f'{{{{- $count := include "{define}.draCount" . | replace "<no value>" "" | trimAll "{_NUMBER}" -}}}}\n'
        f'{{{{- if and {_switch(mode, "$", default, guards)} (ne $count "") }}}}'
        "{{ if gt (int $count) 0 }}claim{{ else }}key{{ end }}{{ end }}\n"
        "{{- end }}\n"
    )


def _claim_at(define: str, context: str) -> str:
    return f'(eq (include "{define}.dra" {context}) "claim")'


def _count_at(define: str, context: str) -> str:
    return f'(include "{define}.draCount" {context} | trimAll "{_NUMBER}" | int)'


def count_define(text: str, define: str, block: Block, key: KeyLine) -> str:
    """`<helper>.draCount`: the helper's own actions up to its device key, then the count it writes there (only
    when the key is the device migrated), each open block closed: the count the key would render, else empty."""
    lines = text.splitlines()
    all_blocks = blocks(text)
    open_blocks = [b for b in enclosing(all_blocks, key.index) if b.start > block.start]
    # each block around the key opens with its own line and, when the key is in an `else`/`else if` branch, that
    # branch's line (amd-aim-llm: the key in the `else` of `if .Values.resources`; was: counted in the `if` branch)
    taken = [[(at, c) for at, c in b.branches if at < key.index][-1:] for b in open_blocks]
    openers = {b.start for b in open_blocks} | {at for branch in taken for at, _ in branch}
    closed = [b for b in all_blocks if block.start < b.start and b.end < key.index]
    # kept: the blocks around the key and the variables they (and the count) need, nothing that only writes text
    needed = set(re.findall(r"\$\w+", f"{key.count} {key.name_expr or ''}"))
    conds = [b.cond for b in open_blocks] + [c or "" for branch in taken for _, c in branch]
    needed |= {v for c in conds for v in re.findall(r"\$\w+", c)}
    kept = []
    for i in range(key.index - 1, block.start, -1):
        s = lines[i].strip()
        if i in openers:
            kept.append(lines[i])
            continue
        assign = re.fullmatch(r"\{\{-?\s*(\$\w+)\s*:?=\s*(.*?)\s*-?\}\}", s)
        if assign and assign.group(1) in needed and not any(b.start < i < b.end for b in closed):
            kept.append(lines[i])
            needed |= set(re.findall(r"\$\w+", assign.group(2)))
    body = kept[::-1]
    count = f"{{{{ {key.count} }}}}"
    if key.name_expr:
        count = f'{{{{- if eq ({key.name_expr} | toString) "{key.resource}" }}}}{count}{{{{- end }}}}'
    body.append(count)
    body += ["{{- end }}"] * len(open_blocks)
    return f'{{{{- define "{define}.draCount" -}}}}\n' + "\n".join(body) + "\n{{- end }}\n"


def _without_empty_blocks(body: list[str]) -> list[str]:
    """Replayed lines without the closed blocks (and comments) that assign nothing: the count needs only the
    assignments and the blocks around them (a container helper's `if .Values.server.parallel` ... `end` goes)."""
    assigns = {i for i, line in enumerate(body) if re.search(r"\$\w+\s*:?=", line)}
    closed = [b for b in blocks("\n".join(body)) if b.end >= 0]
    empty = [b for b in closed if not any(b.start <= i <= b.end for i in assigns)]
    drop = {i for b in empty for i in range(b.start, b.end + 1)}
    drop |= {i for i, line in enumerate(body) if re.fullmatch(r"\{\{-?\s*/\*.*\*/\s*-?\}\}", line)}
    return [line for i, line in enumerate(body) if i not in drop]


def replay_define(text: str, define: str, block: Block, key: KeyLine, others: list[KeyLine] | None = None) -> str:
    """`<helper>.draCount` for a helper that builds its map in variables (dict, merge, mergeOverwrite, set) and
    writes it with toYaml: every control and assignment line of the helper up to that line, replayed (a merge
    inside an `if` changes the map too), then the count the map holds at the device key, each open block closed.
    With `others` (a vendor choice: the map may hold another device resource instead), the count of the first
    device resource the map holds, and `<helper>.draDevice` for its name."""
    if not others:
        return _replayed(text, define, block, key, f"{{{{- {key.count} -}}}}", "draCount")
    every = [key, *others]
    counts = [f"{{{{ {k.count} }}}}" for k in every]
    names = [f"{{{{- {json.dumps(k.resource)} -}}}}" for k in every]
    return "".join(
        _replayed(text, define, block, key, _first_held(every, out), part)
        for out, part in ((counts, "draCount"), (names, "draDevice"))
    )


def _first_held(keys: list[KeyLine], out: list[str]) -> str:
    """`out[i]` for the first of `keys` whose count the map holds (an `if`/`else if` chain, a line a branch: the
    newlines between go with the left-trimmed actions), nothing when none."""
    chain = [
        f'{{{{- {"if" if n == 0 else "else if"} ne (toString ({k.count})) "" }}}}{text}'
        for n, (k, text) in enumerate(zip(keys, out, strict=True))
    ]
    return "\n".join([*chain, "{{- end -}}"])


def _replayed(text: str, define: str, block: Block, key: KeyLine, tail: str, part: str) -> str:
    """A define `<helper>.<part>` that replays the helper's control and assignment lines up to the key, then `tail`."""
    lines = text.splitlines()
    opened = [b for b in enclosing(blocks(text), key.index) if b.start > block.start]
    body = []
    for i in range(block.start + 1, key.index):
        actions = _WHOLE_ACTION.findall(lines[i])
        if not actions or _WHOLE_ACTION.sub("", lines[i]).strip():
            continue  # YAML the helper writes (`resources:`): no part of the count
        if all(re.match(r"\{\{-?\s*(/\*|(if|else|end|range|with)\b|\$\w+\s*:?=)", a) for a in actions):
            body.append(lines[i].strip())
    body = _without_unread(_without_empty_blocks(body), tail)
    body.append(tail)
    body += ["{{- end }}"] * len(opened)
    return f'{{{{- define "{define}.{part}" -}}}}\n' + "\n".join(body) + "\n{{- end }}\n"


# a line that only declares a variable, its value read without changing any map (`set`, `unset`, `merge` do)
_DECLARED = re.compile(r"\{\{-?\s*(\$\w+)\s*:=\s*(?P<value>.*?)\s*-?\}\}")
_CHANGES_MAP = re.compile(r"\b(?:set|unset|merge|mergeOverwrite|setIfAbsent)\b")


def _without_unread(body: list[str], tail: str) -> list[str]:
    """Replayed lines without the declarations of variables nothing after them reads (infaas' `$shortModelName`
    in a helper whose count reads `$model` only): they wrote nothing, and the helper itself runs them where the
    define runs."""
    out = list(body)
    while True:
        for i, line in enumerate(out):
            m = _DECLARED.fullmatch(line.strip())
            if m is None or m.group(1) == "$_" or _CHANGES_MAP.search(m.group("value")):
                continue
            later = "\n".join([*out[i + 1 :], tail])
            if not re.search(re.escape(m.group(1)) + r"\b", later):
                del out[i]
                break
        else:
            return out


def _map_edit(
    line: str, define: str, key: KeyLine, claim: str, request: str = "", choice: MapChoice | None = None
) -> list[str]:
    """The lines that replace a toYaml line: with the switch on, the map it writes loses the device key (a part
    left empty goes too, as the migration drops it) and, at the resources level, gets the container's claim. With
    a `choice` (the map may hold another device resource: `<helper>.draDevice` names the one it holds), then, with
    the switch on, the render fails while the map still asks for a device resource the migration takes."""
    written = _TOYAML_LINE.match(line)
    assert written is not None and key.var is not None
    var, pad, trim = key.var, written.group("pad"), written.group("trim")
    parts = sorted({p[:-1] for p in key.paths})
    state = f'(include "{define}.dra" $)'
    device = f'(include "{define}.draDevice" $ | trim)' if choice and choice.others else json.dumps(key.resource)
    out = [f"{pad}{{{{{trim} if {unparenthesized(state)} -}}}}"]
    if "." in var:  # a map a variable holds (`$model.resources`, a values map): edited in a copy of its own, the
        # values left as they are; the toYaml line writes that copy, the same map with the switch off
        local = "$dra" + var.rsplit(".", 1)[1][:1].upper() + var.rsplit(".", 1)[1][1:]
        out.insert(0, f"{pad}{{{{{trim} {local} := {var} -}}}}")
        out[1] = f"{pad}{{{{- if {unparenthesized(state)} -}}}}"
        body = written.group("body")
        line = line.replace(body, body.replace(var, local, 1), 1)
        var = local
    if all(len(p) == 1 for p in parts):  # the variable is the resources map
        parts = sorted({*parts, ("limits",), ("requests",)})  # values may set the key in either
        names = " ".join(json.dumps(p[0]) for p in parts)
        out.append(f"{pad}  {{{{- $kept := omit {var} {names} -}}}}")
        for (part,) in parts:
            out.append(
                f'{pad}  {{{{- with omit (get {var} "{part}" | default dict) {device} }}}}'
                f'{{{{ $_ := set $kept "{part}" . }}}}{{{{ end -}}}}'
            )
        entry = f'"name" "{claim}"' + (f' "request" "{request}"' if request else "")
        claims = f'(append (get {var} "claims" | default list) (dict {entry}))'
        out += [
            f'{pad}  {{{{- if eq {state} "claim" }}}}{{{{ $_ := set $kept "claims" {claims} }}}}{{{{ end -}}}}',
            f"{pad}  {{{{- {var} = $kept -}}}}",
        ]
    else:
        raise NotHelper(f"{key.file}:{key.index + 1}: the device key sits deeper in the map the helper writes")
    out.append(f"{pad}{{{{- end -}}}}")
    if choice:
        out.append(choice.untaken(var, [key.resource, *(k.resource for k in choice.others)], pad))
    out.append(f"{pad}{line.lstrip()}")
    return out


@dataclass(frozen=True)
class MapChoice:
    """What a helper's map may hold besides the device resource the values render (helperchoice.map_others): the
    other device resources the DRA branch takes (`others`), and the switch and the names the migration takes
    (a Go regular expression) for the guard that fails the render on any other one."""

    others: tuple[KeyLine, ...]
    switch: str
    migrated: str

    def untaken(self, var: str, names: list[str], pad: str = "") -> str:
        """With the switch on, a render whose map still asks for a device resource the migration takes fails."""
        sections = " ".join(f'(get ({var} | default dict) "{p}" | default dict)' for p in ("limits", "requests"))
        taken = f"regexMatch {split_literal(self.migrated, pad=pad + '    ')} $left"
        return "\n".join(
            [
                f"{pad}{{{{- if {unparenthesized(self.switch)} }}}}",
                f"{pad}{{{{- range $left, $_ := merge dict {sections} }}}}",
                *fail_when(taken, untaken_message(names), pad),
                f"{pad}{{{{- end }}}}{{{{- end -}}}}",
            ]
        )


def rewrite_helper(
    text: str,
    define: str,
    keys: list[KeyLine],
    mode: str,
    default: bool,
    claim: str,
    guards: tuple[str, ...] = (),
    request: str = "",
    others: list[KeyLine] | None = None,
    migrated: str = "",
    claims_here: bool = True,
) -> str:
    """The helper's `define` with its device key lines in the non-DRA branch and the container's `claims` in the
    DRA branch (naming `request` of the claim when the containers it writes share one: container_request), and the
    `<helper>.draCount` define after it. `others`: the keys of a vendor choice's other branches (helperchoice), each
    in the non-DRA branch too, and `<helper>.draDevice` for the device of the branch that renders. For a helper that
    writes a map with toYaml, `others` are the device resources the map may hold instead (MapChoice), `migrated` those
    the migration takes: its guard fails the render on any other one."""
    if keys[0].var is not None:
        choice = MapChoice(tuple(others or ()), _switch(mode, "$", default, guards), migrated) if migrated else None
        return _rewrite_map_helper(text, define, keys, mode, default, claim, guards, request, choice)
    from dramigrate.helm import branches, helperchoice

    lines = text.splitlines()
    block = next(b for name, b in _defines(text) if name == define)
    switch = _switch(mode, "$", default, guards)
    key = keys[0]
    dra_on = and_all(switch, f'(eq ({key.name_expr} | toString) "{key.resource}")') if key.name_expr else switch
    every = [*keys, *(others or [])]
    parents = {
        line_indent(lines[parent_line(lines, k.index)]) if parent_line(lines, k.index) > block.start else 0
        for k in every
    }
    if len(parents) != 1:
        raise NotHelper(f"{key.file}: the helper writes its device keys at different depths")
    ind = " " * parents.pop()
    claims = [
        f"{ind}{{{{- if {unparenthesized(_claim_at(define, '$'))} }}}}",
        f"{ind}claims:",
        f"{ind}  - name: {claim}",
        *([f"{ind}    request: {request}"] if request else []),
        f"{ind}{{{{- end }}}}",
    ]
    if not claims_here:  # included under the container's `limits:`: the call sites write the claims
        claims = []
    if others:  # a vendor choice: the count and the device of the chain's branch that renders
        count = helperchoice.count_text(text, define, block, key, others)
    elif chosen := branches.per_branch(text, block, keys):
        count = branches.count_define(text, define, block, chosen)
    else:
        count = count_define(text, define, block, key)
    extra = count + state_define(define, mode, default, guards)
    out = list(lines)
    at = _resources_end(lines, block, key.index)
    out[at:at] = claims
    spans: set[tuple[int, int]] = set()
    added = 0  # the lines of the guards against another device the key's name may be
    for k in every:
        parent = parent_line(lines, k.index)
        end = block_end(lines, parent) if parent > block.start else -1
        children = {i for i in range(parent + 1, end) if not is_control(lines[i])} if end > 0 else set()
        # a map that holds only the device key goes as a whole (an empty `limits:` is not what `fix -` writes)
        spans.add((parent, end) if children and children <= {x.index for x in every} else (k.index, k.index + 1))
    for start, stop in sorted(spans, reverse=True):
        pad = " " * line_indent(lines[start])
        # right after `{{- define "x" -}}`, whose trim ate the newline before the key, the `if` must eat it too
        trim = "-" if start == block.start + 1 and lines[block.start].rstrip().endswith("-}}") else ""
        opening = f"{pad}{{{{- if not {as_arg(dra_on)} {trim}}}}}"
        inside = list(lines[start:stop])
        first = min(keys, key=lambda k: k.index)  # the keys of one helper share their name: its first key guards
        if key.name_expr and not others and migrated and start <= first.index < stop:  # another device the name
            # may be is refused with the switch on, not left to its device plugin
            taken = f"and {switch} (regexMatch {json.dumps(migrated)} ({first.name_expr} | toString))"
            guard = f"{{{{- if {taken} }}}}{{{{ fail {json.dumps(untaken_message([first.resource]))} }}}}{{{{ end }}}}"
            inside[first.index - start : first.index - start] = [" " * line_indent(lines[first.index]) + guard]
            added += 1  # one line: the chart's diff stays small
        out[start:stop] = [opening, *inside, f"{pad}{{{{- end }}}}"]
    # the new define goes right after the helper's `end` (its place moved by the lines added above it)
    shift = 2 * len(spans) + len(claims) + added
    at = block.end + shift + 1
    out[at:at] = extra.rstrip("\n").splitlines()
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def _resources_end(lines: list[str], block: Block, index: int) -> int:
    """Where the container's `claims` go: the helper's `end`, or, when the helper writes more of the pod after the
    container's `resources:` that holds the key at `index` (a pod-template helper), the line after that block and
    the `end`s of the blocks opened in it."""
    res = parent_line(lines, parent_line(lines, index))
    if res <= block.start or not is_key(lines[res], "resources"):
        return block.end
    end, depth = block_end(lines, res), 0
    for line in lines[res + 1 : end]:
        word = re.match(r"\s*\{\{-?\s*(\w+)", line) if is_control(line) else None
        depth += {"if": 1, "with": 1, "range": 1, "end": -1}.get(word.group(1), 0) if word else 0
    while depth > 0 and end < block.end and re.fullmatch(r"\s*\{\{-?\s*end\s*-?\}\}\s*", lines[end]):
        end, depth = end + 1, depth - 1
    more = any(not is_control(line) and line.strip() for line in lines[end : block.end])
    return end if more else block.end


def _section_edits(lines: list[str], define: str, key: KeyLine, state: str) -> list[tuple[int, int, list[str]]]:
    """(start, stop, new lines) for a helper that writes `limits:` then `toYaml $limits` (llm-d's): with the switch on
    the map loses the device key, and a section left empty goes with its key, as the migration drops it."""
    assert key.var is not None
    var, at = key.var, key.index
    if "." in var:
        raise NotHelper(
            f"{key.file}:{at + 1}: the helper writes {var}, a map the values hold, below its own `limits:` or "
            "`requests:`: the rewrite edits a map of the values only when the helper writes the whole resources map "
            "with toYaml"
        )
    parent = lines[at - 1] if at > 0 else ""
    if not is_key(parent, "limits", "requests") or parent_line(lines, at) != at - 1:
        raise NotHelper(f"{key.file}:{at + 1}: the helper's toYaml line is not right below its `limits:`")
    pad = " " * line_indent(parent)
    before = next((x for x in reversed(lines[: at - 1]) if x.strip()), "")
    right = "-" if before.rstrip().endswith("-}}") else ""  # that trim ate the newline before the key: so does this
    opening = [
        f"{pad}{{{{- if {unparenthesized(state)} }}}}",
        f'{pad}  {{{{- {var} = omit {var} "{key.resource}" }}}}',
        f"{pad}{{{{- end }}}}",
        f"{pad}{{{{- if or {var} (not {state}) {right}}}}}",
    ]
    return [(at + 1, at + 1, [f"{pad}{{{{- end }}}}"]), (at - 1, at - 1, opening)]


def _rewrite_map_helper(
    text: str,
    define: str,
    keys: list[KeyLine],
    mode: str,
    default: bool,
    claim: str,
    guards: tuple[str, ...] = (),
    request: str = "",
    choice: MapChoice | None = None,
) -> str:
    """rewrite_helper for a helper that writes its map with toYaml: the map edited before that line (and, when the
    map is one part of resources, the claims beside it, as for a key line)."""
    lines = text.splitlines()
    block = next(b for name, b in _defines(text) if name == define)
    key = keys[0]
    state = f'(include "{define}.dra" $)'
    sections = all(set(k.paths) == {(k.resource,)} for k in keys)
    if len({k.index for k in keys}) != 1 and not sections:
        raise NotHelper(f"{key.file}: the helper writes the device key from several toYaml lines")
    if not all(lines[k.index].lstrip().startswith("{{") for k in keys):
        raise NotHelper(f"{key.file}:{key.index + 1}: the helper's toYaml line starts with text")
    others = list(choice.others) if choice and not sections else None
    extra = replay_define(text, define, block, key, others) + state_define(define, mode, default, guards)
    edits: list[tuple[int, int, list[str]]] = []
    if sections:  # `limits:` then `toYaml $limits`: the claims go beside `limits:`
        ind = " " * line_indent(lines[key.index - 1]) if key.index else ""
        claims = [
            f"{ind}{{{{- if {unparenthesized(_claim_at(define, '$'))} }}}}",
            f"{ind}claims:",
            f"{ind}  - name: {claim}",
        ]
        claims += [f"{ind}    request: {request}"] if request else []
        for k in {k.index: k for k in keys}.values():
            edits += _section_edits(lines, define, k, state)
        edits.append((block.end, block.end, [*claims, f"{ind}{{{{- end }}}}"]))  # after the last section's `end`
    else:
        edits.append((key.index, key.index + 1, _map_edit(lines[key.index], define, key, claim, request, choice)))
    edits.append((block.end + 1, block.end + 1, extra.rstrip("\n").splitlines()))
    out = list(lines)
    # from the end, and at one place the later edit first: one section's `end` stays before the next one's `if`
    for _, start, stop, new in sorted(((n, *e) for n, e in enumerate(edits)), key=lambda e: (e[1], e[2], e[0]))[::-1]:
        out[start:stop] = new
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


_LISTED = re.compile(r"\{\{-?\s*toYaml (\S+) \| nindent \d+\s*-?\}\}")


def _given_list(lines: list[str], at: int) -> str | None:
    """The values list the pod's `tolerations:` at line `at` renders: the one its next line writes with
    `toYaml X | nindent N` (rykelley's pod helper, inside `if .Values.gpu.enabled`), else the `with`/`if` guarding
    it (`toYaml .`)."""
    listed = _LISTED.fullmatch(lines[at + 1].strip()) if at + 1 < len(lines) else None
    if listed and listed.group(1) != "." and lines[at].strip() == "tolerations:":
        return listed.group(1)
    return given_tolerations(lines, at)


def _merge_tolerations(lines: list[str], at: int, p: str, cond: str, tol_text: list[str], rel: str) -> tuple:
    """(start, stop, new lines) merging the DRA toleration into the pod's `tolerations:` rendered by
    `{{- if X }}`/`{{- with X }}` + `{{- toYaml X | nindent N }}` + `{{- end }}`."""
    prev = lines[at - 1].strip() if at > 0 else ""
    body = lines[at + 1].strip() if at + 1 < len(lines) else ""
    after = lines[at + 2].strip() if at + 2 < len(lines) else ""
    guard = re.fullmatch(r"\{\{-?\s*(if|with)\s+(.+?)\s*-?\}\}", prev)
    yaml_m = re.fullmatch(r"\{\{-?\s*(?:toYaml (\S+)|\. \| toYaml) \| nindent \d+\s*-?\}\}", body)
    listing = guard and yaml_m and (yaml_m.group(1) or ".") in (".", guard.group(2))  # the guard is the list's own
    if listing and re.fullmatch(r"\{\{-?\s*end\s*-?\}\}", after):
        word, expr = guard.groups()
        start, stop = at - 1, at + 3
        outer = re.fullmatch(r"\{\{-?\s*if\s+(.+?)\s*-?\}\}", lines[at - 2].strip()) if at > 1 else None
        closed = stop < len(lines) and re.fullmatch(r"\{\{-?\s*end\s*-?\}\}", lines[stop].strip())
        if outer and closed and outer.group(1) == expr:  # vLLM stack 0.1.8: `if X` around `with X`, both the list's
            start, stop = at - 2, stop + 1  # own test: the DRA branch's toleration must not wait for that list
        new = [
            f"{p}{{{{- if or {as_arg(expr)} {as_arg(cond)} }}}}",
            f"{p}tolerations:",
            f"{p}  {{{{- {word} {expr} }}}}",
            f"{p}  {body}",
            f"{p}  {{{{- end }}}}",
            f"{p}  {{{{- if {unparenthesized(cond)} }}}}",
            *tol_text,
            f"{p}  {{{{- end }}}}",
            f"{p}{{{{- end }}}}",
        ]
        return start, stop, new
    if yaml_m and lines[at].strip() == "tolerations:":
        # an empty values list renders `[]`, which cannot stand beside the added entry: the DRA branch leaves it out
        listed = [
            f"{p}  {{{{- if not (and {as_arg(cond)} (empty {yaml_m.group(1)})) }}}}",
            lines[at + 1],
            f"{p}  {{{{- end }}}}",
        ]
        dra = [f"{p}  {{{{- if {unparenthesized(cond)} }}}}", *tol_text, f"{p}  {{{{- end }}}}"]
        return at + 1, at + 2, [*(listed if yaml_m.group(1) else lines[at + 1 : at + 2]), *dra]
    raise NotHelper(f"{rel}:{at + 1}: the pod's tolerations have a shape the rewrite does not merge into")


def _ray_params(lines: list[str], pod: int, params: dict[str, Any], cond: str, count: str, rel: str) -> tuple:
    """(start, stop, new lines) setting KubeRay's `rayStartParams.num-gpus` in the DRA branch: KubeRay reads the
    GPU count from the Ray container's limits, which no longer name the GPU (the migration sets it too)."""
    if set(params) != {"num-gpus"}:
        raise NotHelper(f"{rel}: the migration sets rayStartParams {', '.join(sorted(params))}")
    template = parent_line(lines, pod)
    if template < 0 or lines[template].strip() != "template:":
        raise NotHelper(f"{rel}:{pod + 1}: the pod spec is not under a `template:` of a Ray group")
    col = line_indent(lines[template])
    for i in range(template - 1, max(-1, template - 40), -1):
        m = re.match(r"^(\s*)(- )?rayStartParams:\s*(\{\})?\s*$", lines[i])
        if m and len(m.group(1)) + len(m.group(2) or "") == col:
            pad = " " * col
            cond = _unless_num_gpus(lines, i, col, cond, rel)
            value = f"{pad}  num-gpus: {{{{ {count} | toString | quote }}}}"
            if m.group(3):  # `rayStartParams: {}`: the DRA branch writes the map
                head = lines[i][: len(m.group(1)) + len(m.group(2) or "")]
                new = [
                    f"{m.group(1)}{{{{- if {unparenthesized(cond)} }}}}",
                    f"{head}rayStartParams:",
                    value,
                    f"{m.group(1)}{{{{- else }}}}",
                    lines[i],
                    f"{m.group(1)}{{{{- end }}}}",
                ]
                return i, i + 1, new
            stop, block = _params_block(lines, i, col, cond)
            return (
                i + 1,
                stop,
                [f"{pad}  {{{{- if {unparenthesized(cond)} }}}}", value, f"{pad}  {{{{- end }}}}", *block],
            )
        if not is_control(lines[i]) and line_indent(lines[i]) < col and not lines[i].lstrip().startswith("- "):
            break
    raise NotHelper(f"{rel}:{template + 1}: no rayStartParams beside this Ray group's template")


_PARAMS_YAML = re.compile(r"\s*\{\{-?\s*toYaml\s+(\$?\.Values(?:\.[\w-]+)+)\s*\|\s*n?indent\s+\d+\s*-?\}\}\s*")


def _params_block(lines: list[str], at: int, col: int, cond: str) -> tuple[int, list[str]]:
    """(stop, lines) of the rayStartParams block below `at`, a line that writes the values map whole (`toYaml
    .Values.head.rayStartParams`) dropped in the DRA branch when the map is empty: it renders `null` (the values set it
    to null) or `{}`, which after the branch's num-gpus line no longer parses, where the migration writes the map."""
    stop = at + 1
    while stop < len(lines) and (not lines[stop].strip() or is_control(lines[stop]) or line_indent(lines[stop]) > col):
        stop += 1
    while stop > at + 1 and not lines[stop - 1].strip():
        stop -= 1
    block = []
    for line in lines[at + 1 : stop]:
        m = _PARAMS_YAML.fullmatch(line)
        if m:
            pad = " " * line_indent(line)
            block += [f"{pad}{{{{- if not (and {as_arg(cond)} (empty {m.group(1)})) }}}}", line, f"{pad}{{{{- end }}}}"]
        else:
            block.append(line)
    return stop, block


_PARAMS_FROM = re.compile(r"\{\{-?\s*(?:toYaml|range \$\w+, \$\w+ :=|with)\s+\(?(\S+?)\)?(?:\s|\}\})")


def _unless_num_gpus(lines: list[str], at: int, col: int, cond: str, rel: str) -> str:
    """`cond` for setting num-gpus in a group's rayStartParams whose keys come from values too (`toYaml
    .Values.head.rayStartParams`, `range $k, $v := ...`): the migration sets num-gpus only where the map has none, and a
    second num-gpus key would repeat it in the pod's YAML."""
    found: list[str] = []
    for n in range(at + 1, len(lines)):
        if lines[n].strip() and not is_control(lines[n]) and line_indent(lines[n]) <= col:
            break
        found += _PARAMS_FROM.findall(lines[n])
    source = [e for e in found if e not in (".", "$")]
    if any(not re.fullmatch(r"\$?\.Values(\.[\w-]+)+", e) for e in source) or (found and not source):
        raise NotHelper(
            f"{rel}:{at + 1}: rayStartParams are written from {(source or found)[0]!r}, which may set num-gpus: "
            "the rewrite cannot tell where the migration sets it"
        )
    guards = [f'(not (hasKey ({e} | default dict) "num-gpus"))' for e in dict.fromkeys(source)]
    return " ".join([cond if cond.startswith("and ") else f"and {as_arg(cond)}", *guards]) if guards else cond


@dataclass
class Wiring:
    """One call site's pod: what the migration added there."""

    site: CallSite
    delta: PodDelta
    params: dict[str, Any]  # keys the migration set in the pod's group `rayStartParams` (KubeRay's num-gpus)
    # the other call sites that write into the same pod (an init container pulling the model and the server, each
    # including the helper): the pod is wired once, its claim there while any of them renders one
    shared: tuple[CallSite, ...] = ()
    # a vendor choice in the helper (helperchoice): each device resource -> what the migration adds to the pod when it
    # asks for that device, the rendered one first
    choices: dict[str, PodDelta] = field(default_factory=dict)


def _site_pod(lines: list[str], index: int, writes_key: bool, rel: str) -> tuple[int, int]:
    """(pod, containers): the lines of the pod spec and the `containers:` the include at `index` writes into, (-1, -1)
    when no `containers:` sits above it; NotHelper when the include is not a container's `resources:`."""
    placed = _placed_at(lines[index])
    heads = ("containers:", "initContainers:", *(f"{k}:" for k in _single_containers(lines, index)))
    containers = next(
        (i for i in range(index - 1, -1, -1) if bare(lines[i]) in heads and line_indent(lines[i]) < placed),
        -1,
    )
    if containers < 0:
        return -1, -1
    on_key = lines[index].strip().startswith("resources:")
    below_key = index > 0 and is_key(lines[index - 1], "resources") and is_control(lines[index])
    own_key = writes_key and is_control(lines[index])  # the helper writes `resources:` itself
    if not (on_key or below_key or own_key or section_at(lines, index) >= 0):
        raise NotHelper(f"{rel}:{index + 1}: the helper is not included as a container's `resources:`")
    return parent_line(lines, containers), containers


def _single_containers(lines: list[str], index: int) -> tuple[str, ...]:
    """The keys of one container each in the pod specs of the document line `index` is in, as rules/workloads.yaml
    declares them for its kind (KServe's InferenceService: `predictor.model`, whose `resources:` a helper writes)."""
    from dramigrate.helm.poddelta import kind_singles

    kind = api = ""
    for i in range(index, -1, -1):
        if lines[i].startswith("---"):
            break
        if m := re.fullmatch(r"kind:\s*(\w+)\s*", lines[i]):
            kind = m.group(1)
        if m := re.fullmatch(r"apiVersion:\s*(\S+)\s*", lines[i]):
            api = m.group(1).strip("'\"")
    return kind_singles(api, kind) if kind and api else ()


def _placed_at(line: str) -> int:
    """One past the column an include line's output starts at, as YAML reads it for the key above: its `nindent N`
    places it at N (a list may sit at its key's column: `containers:` then `{{- include "x.container" . | nindent 6
    }}`, both at column 6), `indent N` at the line's column plus N; otherwise the line's own column."""
    own = line_indent(line)
    placed = re.search(r"\|\s*(n?)indent\s+(\d+)\s*-?\}\}\s*$", line) if is_control(line) else None
    if placed is None:
        return own
    return max(own, int(placed.group(2)) + (0 if placed.group(1) else own) + 1)


def section_at(lines: list[str], index: int) -> int:
    """The `limits:` or `requests:` line of a container's `resources:` that the include at `index` writes into (Docker
    Model Runner's `limits:` then `{{- include "x.gpuResources" . | nindent 12 }}`, and again under `requests:`: the
    helper writes the device key alone), else -1."""
    if not is_control(lines[index]):
        return -1
    section = parent_line(lines, index)
    if section < 0 or not is_key(lines[section], "limits", "requests"):
        return -1
    res = parent_line(lines, section)
    return section if res >= 0 and is_key(lines[res], "resources") else -1


def _section_edits_at(
    lines: list[str], define: str, sites: list[CallSite], claim: str, request: str, alone: bool
) -> list[tuple[int, int, list[str]]]:
    """The edits for includes of a helper that writes the device key alone under a container's `limits:`/`requests:`
    (section_at): the container's `claims` right below its `resources:` (once per container), and, when the helper
    writes nothing but device keys (`alone`) and the section holds only the include, the section in the non-DRA branch
    with it, as the migration drops a `limits:` it leaves empty."""
    edits: list[tuple[int, int, list[str]]] = []
    done: set[int] = set()
    for site in sites:
        section = section_at(lines, site.index)
        res, end = parent_line(lines, section), block_end(lines, section)
        only = end == site.index + 1 and not any(
            emits_text(x) or not is_control(x) for x in lines[section + 1 : site.index]
        )
        if alone and only:
            pad = " " * line_indent(lines[section])
            opening = f'{pad}{{{{- if not (include "{define}.dra" {site.arg}) }}}}'
            edits.append((section, end, [opening, *lines[section:end], f"{pad}{{{{- end }}}}"]))
        if res in done:
            continue
        done.add(res)
        ind = " " * child_indent(lines, res)
        claim_at = unparenthesized(_claim_at(define, site.arg))
        claims = [f"{ind}{{{{- if {claim_at} }}}}", f"{ind}claims:", f"{ind}  - name: {claim}"]
        claims += [f"{ind}    request: {request}"] if request else []
        edits.append((res + 1, res + 1, [*claims, f"{ind}{{{{- end }}}}"]))
    return edits


def container_request(
    migrated: list[dict[str, Any]], claims: set[str], rel: str, define: str, before: str | None
) -> str:
    """The request of the pod's claim that each container naming it names in the migration of one template ("" for
    the whole claim, when one container of each pod asks), the same as `before` (another template's; None for
    none yet). An init container and the server each asking for one device share one request, each naming it
    (`request: gpu`); NotHelper when containers name different requests (two app containers: one each, named after
    the container), as the helper writes one `claims` entry for every container it is included in."""
    named: dict[str, str] = {}
    for doc in migrated:
        for _, pod in pod_groups(doc, []):
            for c in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]:
                entries = ((c.get("resources") or {}).get("claims") or []) if isinstance(c, dict) else []
                for e in entries:
                    if isinstance(e, dict) and e.get("name") in claims:
                        named[str(c.get("name"))] = str(e.get("request") or "")
    found = set(named.values()) | ({before} if before is not None else set())
    if len(found) > 1:
        each = ", ".join(f"{c} names {r or 'the whole claim'}" for c, r in named.items())
        raise NotHelper(
            f"{rel}: the containers that include {define} name different requests of the pod's claim in the "
            f"migration ({each}), and the helper writes one `claims` entry for every container"
        )
    return found.pop() if found else ""


def _pod_of(lines: list[str], site: CallSite) -> tuple[int, int]:
    """_site_pod of a call site whose helper writes the key, (-1, -1) where it is not a container's `resources:`."""
    try:
        return _site_pod(lines, site.index, True, site.rel)
    except NotHelper:
        return -1, -1


_BLOCK_SCALAR = re.compile(r"^\s*(?:-\s+)?[^\s#][^#]*:\s*[|>][-+]?[0-9]?\s*(?:#.*)?$")


def _in_block_scalar(lines: list[str], index: int) -> bool:
    """Whether line `index` is text of a block scalar (`key: |`) a shallower line above opens."""
    want = line_indent(lines[index])
    for i in range(index - 1, -1, -1):
        if lines[i].strip() and not is_control(lines[i]) and line_indent(lines[i]) < want:
            if _BLOCK_SCALAR.match(lines[i]):
                return True
            want = line_indent(lines[i])
    return False


def per_item_containers(text: str, sites: list[CallSite], define: str) -> None:
    """NotHelper for a call site inside a `range` under its pod's `containers:` (llm-d-modelservice's `containers:`
    then `range .`, one container per item): the migration gives that pod one claim with a request for each item's
    container that asks for a device, named after the container, and a helper included once per item writes the
    same `claims` entry in each."""
    lines, all_blocks = text.splitlines(), blocks(text)
    for site in sorted(sites, key=lambda s: s.index):
        if _in_block_scalar(lines, site.index):
            continue  # a pod spec held as text (llm-d's `dual-pod.llm-d.ai/server-patch: |`): reported as such
        containers = _pod_of(lines, site)[1]
        ranges = (b for b in enclosing(all_blocks, site.index) if b.word == "range" and b.start > containers >= 0)
        loop = next(ranges, None)
        if loop is not None:
            raise NotHelper(
                f"{site.rel}:{site.index + 1}: the helper is included inside `range {loop.cond}`, one container of the "
                f"pod per item: the migration gives the pod one claim with a request for each item's container that "
                f"asks for a device (named after it), and {define} writes the same `claims` entry in each"
            )


def sites_by_pod(text: str, sites: list[CallSite]) -> list[list[CallSite]]:
    """The call sites of one template grouped by the pod spec they write into (an init container that pulls the
    model and the server, each including the helper), in line order; a call site with no `containers:` above it (a
    pod helper writes the pod) on its own. NotHelper for the sites of one pod given different arguments: the
    migration's claim for that pod depends on every count (an init container's larger count adds a request)."""
    lines = text.splitlines()
    groups: dict[object, list[CallSite]] = {}
    for site in sorted(sites, key=lambda s: s.index):
        pod = _pod_of(lines, site)[0]
        groups.setdefault(pod if pod >= 0 else ("alone", site.index), []).append(site)
    for group in groups.values():
        if len({s.arg for s in group}) > 1:
            args = ", ".join(f"`{s.arg}` (line {s.index + 1})" for s in group)
            raise NotHelper(
                f"{group[0].rel}:{group[0].index + 1}: containers of one pod include the helper with different "
                f"arguments ({args}): the migration's claim for the pod depends on each container's count, and the "
                "helper renders one"
            )
    return list(groups.values())


def _template_name(name_expr: str, define: str, arg: str, suffix: str) -> str:
    spec_call = f'include "{define}.draClaimSpec" {arg}'
    return f"{_name_text(name_expr)}{suffix}-{{{{ {spec_call} | sha256sum | trunc 8 }}}}"


def _pod_edits(
    lines: list[str], all_blocks: list[Block], rel: str, define: str, w: Wiring, at: tuple[int, int], name: str
) -> tuple[list[tuple[int, int, list[str]]], str]:
    """The edits wiring one pod (`resourceClaims`, the toleration, KubeRay's num-gpus) whose `containers:` the
    include of w.site writes into, and the condition under which it has a claim."""
    site, (pod, containers) = w.site, at
    conds = [_site_conditions(all_blocks, max(pod, containers), site.index, rel)]
    for other in w.shared:  # each under the conditions between its own `containers:`/`initContainers:` and it
        own = _site_pod(lines, other.index, True, rel)[1]
        conds.append(_site_conditions(all_blocks, max(pod, own), other.index, rel))
        if conds[-1] != conds[0]:
            raise NotHelper(
                f"{rel}:{other.index + 1}: containers of one pod include the helper under different conditions "
                f"({' '.join(conds[0]) or 'none'} and {' '.join(conds[-1]) or 'none'}): the migration names one "
                "request of the pod's claim in each while both render, the whole claim while one does, and the "
                "helper cannot tell which"
            )
    claim_cond = and_all(_claim_at(define, site.arg), *conds[0])
    # the migration adds the toleration for any device key it removes, a count of 0 too
    tol_cond = and_all(f'(include "{define}.dra" {site.arg})', *conds[0])
    p = " " * line_indent(lines[containers])
    # right after an action that trims the newline before `containers:` (`{{- define "app.pod" -}}`), each block
    # trims on its right instead, so that it adds no newline when it renders nothing
    eaten = containers > 0 and lines[containers - 1].rstrip().endswith("-}}")
    opening, closing = ("{{{{ if {} -}}}}", "{{ end -}}") if eaten else ("{{{{- if {} }}}}", "{{- end }}")
    pod_lines = [
        f"{p}{opening.format(unparenthesized(claim_cond))}",
        f"{p}resourceClaims:",
        f"{p}  - name: {w.delta.claim}",
        f"{p}    resourceClaimTemplateName: {name}",
        f"{p}{closing}",
    ]
    from dramigrate.helm import helperchoice

    edits: list[tuple[int, int, list[str]]] = []
    every = w.choices or {"": w.delta}  # a vendor choice: each device's own toleration (the taint key differs)
    pod_end = max((b.end for b in enclosing(all_blocks, containers)), default=len(lines))
    existing = [
        i
        for i in range(pod + 1, min(pod_end, len(lines)))
        if not is_control(lines[i]) and lines[i].strip().startswith("tolerations:") and line_indent(lines[i]) == len(p)
    ]
    given = _given_list(lines, existing[0]) if existing else None  # the values list may tolerate the taint
    # a toleration the values list gave the pod itself (jellyfin's values-example.yaml) is the DRA branch's too
    # wherever another values list does not (PodDelta.covered)
    own = {device: d.tolerations or (d.covered if given else []) for device, d in every.items()}
    tolerations = any(own.values())
    texts = {
        device: untolerated_only(own[device], p, f"{define}.draTolerated", given)
        if given
        else [f"{p}  {t}" for t in _dump_list(own[device]) if own[device]]
        for device in every
    }
    tol_text = helperchoice.picked(define, site.arg, texts, next(iter(every)), f"{p}  ")
    if tolerations and existing:
        edits.append(_merge_tolerations(lines, existing[0], p, tol_cond, tol_text, rel))
    elif tolerations:
        pod_lines += [f"{p}{opening.format(tol_cond)}", f"{p}tolerations:", *tol_text, f"{p}{closing}"]
    own_claims = [
        i
        for i in range(pod + 1, min(pod_end, len(lines)))
        if not is_control(lines[i]) and lines[i].strip() == "resourceClaims:" and line_indent(lines[i]) == len(p)
    ]
    if own_claims:  # the pod writes its own claims (`with .Values.podResourceClaims`): the DRA claim joins that list
        try:  # (a second `resourceClaims:` key would keep only the last list, dropping the user's claims)
            joined = _merge_list(lines, own_claims[0], p, unparenthesized(claim_cond), pod_lines[2:4], rel)
        except NotIdiomatic:
            joined = None
        if joined is None:
            at_own = own_claims[0] + 1
            raise NotHelper(f"{rel}:{at_own}: the pod's own resourceClaims have a shape the DRA claim does not join")
        edits.append((joined.index, joined.stop, joined.lines))
        pod_lines = pod_lines[5:]
    at_line = _above_blanks(lines, containers)
    if pod_lines:
        edits.append((at_line, at_line, pod_lines))
    if w.params:
        edits.append(_ray_params(lines, pod, w.params, claim_cond, _count_at(define, site.arg), rel))
    return edits, claim_cond


def _above_blanks(lines: list[str], at: int) -> int:
    """Where lines that open with `{{-` go in before line `at`: above the blank lines right over it (Docker Model
    Runner's blank line between `initContainers` and `containers:`), which the `{{-` would eat, unless a `-}}` above
    eats them already."""
    top = at
    while top > 0 and not lines[top - 1].strip():
        top -= 1
    return top if top > 0 and top < at and not lines[top - 1].rstrip().endswith("-}}") else at


def _document(lines: list[str], define: str, arg: str, cond: str, name: str, where: str, namespaced: bool) -> list[str]:
    """The ResourceClaimTemplate document beside the workload, rendered when `cond` holds."""
    namespace = _metadata_line(lines, "namespace") if namespaced else None
    return [
        f"{{{{- if {unparenthesized(cond)} }}}}",
        *fail_when(f"not {SERVED}", OLD_CLUSTER.format(f"set dra.enabled=false ({where})")),
        "---",
        "apiVersion: resource.k8s.io/v1",
        "kind: ResourceClaimTemplate",
        "metadata:",
        f"  name: {name}",
        *([f"  namespace: {namespace}"] if namespace else []),
        "spec:",
        "  spec:",
        f'    {{{{- include "{define}.draClaimSpec" {arg} | nindent 4 }}}}',
        "{{- end }}",
    ]


def _apply(lines: list[str], edits: list[tuple[int, int, list[str]]], text: str) -> str:
    out = list(lines)
    for start, stop, new in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        out[start:stop] = new
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def rewrite_site_template(
    text: str,
    rel: str,
    define: str,
    wirings: list[Wiring],
    writes_key: bool = False,
    pod_cond: str | None = None,
    section: tuple[str, str, bool] | None = None,
) -> str:
    """A workload template with each call site's pod wired: `resourceClaims`, the toleration, and the
    ResourceClaimTemplate document beside the workload. `pod_cond`: the pod spec is written by a helper the call site
    includes (rewrite_pod_helper wires it, under this condition): the template gets only the document. `section`:
    (claim, request, alone) for includes under a container's `limits:`/`requests:` (_section_edits_at)."""
    from dramigrate.helm.rootswitch import shared, threaded_line

    lines = text.splitlines()
    for site in (s for w in wirings for s in (w.site, *w.shared)):
        if site.given:
            lines[site.index] = threaded_line(lines[site.index], site.helper or define, site)
    all_blocks = blocks(text)
    edits: list[tuple[int, int, list[str]]] = []
    name_expr = _metadata_line(lines, "name")
    if not name_expr:
        raise NotHelper(f"{rel}: the workload's metadata.name is not one line")
    # each pod's claim template named after its own workload (a Deployment and a Job in one template), numbered
    # where workloads share a name
    names = [_metadata_line(lines, "name", w.site.index) or name_expr for w in wirings]
    for n, w in enumerate(wirings):
        site = w.site
        name = _template_name(names[n], define, site.arg, "" if names.count(names[n]) == 1 else f"-{n}")
        if pod_cond is None:
            at = _site_pod(lines, site.index, writes_key, rel)
            if at[1] < 0:
                raise NotHelper(f"{rel}:{site.index + 1}: no `containers:` above the helper's call site")
            pod_edits, claim_cond = _pod_edits(lines, all_blocks, rel, define, w, at, name)
            edits += pod_edits
            if section is not None:
                edits += _section_edits_at(lines, define, [w.site, *w.shared], *section)
            around = enclosing(all_blocks, at[1])
        else:
            claim_cond = and_all(pod_cond, *_site_conditions(all_blocks, -1, site.index, rel))
            around = enclosing(all_blocks, site.index)
        rooted = site.given or site.arg.startswith("(") or (site.arg in (".", "$") and not site.item)  # values mode
        where = "in values.yaml" if rooted else f"in each item of {site.item}" if site.item else site.arg
        document = _document(lines, define, site.arg, claim_cond, name, where, w.delta.namespaced)
        at_line = around[-1].end if around else len(lines)
        edits.append((at_line, at_line, document))
    out = _apply(lines, edits, text)
    for w in wirings:  # a `dict` argument the rewrite passes the chart's `dra` in: built once
        out = shared(out, w.site.helper or define, w.site)
    return out


def rewrite_pod_helper(
    text: str, hop: Hop, define: str, wiring: Wiring, name_expr: str, writes_key: bool
) -> tuple[str, str]:
    """The helper that writes the pod spec (llama-cpp's `podSpec`, which includes the container helper) with the
    pod's `resourceClaims` and toleration at its `containers:`, and the condition under which the pod has a claim
    (read in the helper's context, which its only call site passes on unchanged)."""
    lines = text.splitlines()
    at = _site_pod(lines, hop.index, writes_key, hop.rel)
    name = _template_name(name_expr, define, hop.arg, "")
    edits, claim_cond = _pod_edits(
        lines, blocks(text), hop.rel, define, replace(wiring, site=CallSite(hop.rel, hop.index, hop.arg)), at, name
    )
    return _apply(lines, edits, text), claim_cond


def spec_define(define: str, specs: dict[str, tuple[dict[str, Any], str]]) -> str:
    """`<helper>.draClaimSpec`: the claim spec of the migration (device resource -> the spec and its request; several
    for a vendor choice, the rendered device first) with its count the helper's."""
    inner = {}
    from dramigrate.helm import helperchoice

    for device, (spec, request) in specs.items():
        text = _sentinel_yaml(spec.get("spec", {}), {request: "@@COUNT@@"}, "")
        inner[device] = text.replace("{{ int (@@COUNT@@) }}", f"{{{{ {unparenthesized(_count_at(define, '.'))} }}}}")
    body = helperchoice.spec_text(inner, next(iter(specs)), define)
    return f'{{{{- define "{define}.draClaimSpec" -}}}}\n{body}{{{{- end }}}}\n'


def values_doc(values: str, mode: str, context_path: str, resource: str, default: bool) -> str:
    """The documentation of the switch appended to values.yaml."""
    sep = "" if values.endswith("\n") or not values else "\n"
    where = "" if mode == "values" else f" in {context_path}"  # appended to values.yaml: it need not name itself
    text = (
        f"DRA (resource.k8s.io/v1, Kubernetes 1.34+): `dra.enabled: true`{where} requests {resource} through a "
        "ResourceClaim instead of the device-plugin resource; `false` renders the chart as before. Default:"
    )
    return (
        f"{sep}\n"
        + "".join(f"# {part}\n" for part in textwrap.wrap(text, 100, break_on_hyphens=False))
        + f"# dra:\n#   enabled: {'true' if default else 'false'}\n"
    )


def build(
    root: Path,
    keys: list[KeyLine],
    sites: list[CallSite],
    deltas: dict[tuple[str, int], tuple[PodDelta, dict[str, Any]]],
    context_path: str,
    opt_in: bool,
    guards: tuple[str, ...] = (),
    hops: list[Hop] | None = None,
    request: str = "",
    choice: Any = None,
    migrating: str = "",
) -> list[Change]:
    """The changes: the helper, each call site's template, values.yaml's documentation, the chart conventions.
    `guards`: values conditions that keep the switch off (idiomatic.kind_guards); `hops`: the helpers between the
    call sites and the one that writes the key (helper_chain); `request`: the claim's request each container the
    helper writes names (container_request), "" for the whole claim; `choice`: a vendor choice's other branches
    (helperchoice.Choice); `migrating`: the device resources the migration takes (patterns.migrated_regex), which a key
    whose name is a template variable must not ask the device plugin for with the switch on."""
    from dramigrate.helm import helperchoice

    hops = hops or []
    defines = {k.define for k in keys}
    files = {k.file for k in keys}
    if len(defines) != 1 or len(files) != 1:
        raise NotHelper(f"the device keys are written by several helpers ({', '.join(sorted(defines))})")
    if all(k.var for k in keys):  # toYaml lines (llm-d's limits and requests maps): the limits one counts
        if len({k.resource for k in keys}) != 1:
            raise NotHelper("the helper writes different device keys")
        keys = sorted(keys, key=lambda k: (not is_key(_line(root, k, -1), "limits"), k.index))
    elif per_branch(root, keys) is not None:  # cosmos3's `if eq $gpu 1` ... `else if eq $gpu 8`: a count per branch
        pass
    elif len({(k.resource, k.name_expr, k.count) for k in keys}) != 1:
        lines = (root / next(iter(files))).read_text(encoding="utf-8").splitlines()
        section = {k.index: section_of(lines, k.index) for k in keys}
        if len({(k.resource, k.name_expr) for k in keys}) != 1 or sorted(section.values()) != ["limits", "requests"]:
            raise NotHelper("the helper writes different device keys or counts")
        # `requests:` and `limits:` each read their own values key (vllm's chart-helm): the API server takes an
        # extended resource only with both equal, so the limits one counts, as the migration's claim does
        keys = sorted(keys, key=lambda k: section[k.index] != "limits")
    define, file, key = defines.pop(), files.pop(), keys[0]
    mode = switch_mode(sites, hops)
    if mode == "values":
        _values_reach(root, file, define, sites)
    site_define, via = via_defines(define, hops)
    for s in sites if via else []:
        if not _root_values(root, s):
            raise NotHelper(
                f"{s.rel}:{s.index + 1}: the helper {s.helper or define} gets `{s.arg}`, which does not hand the "
                "chart's values on as `Values`, so the DRA switch (dra.enabled) the chain reads there could not "
                "be turned"
            )
    default = not opt_in
    claims = {d.claim for d, _ in deltas.values()}
    specs = {repr(_uncounted(d.spec)) for d, _ in deltas.values()}  # the count is the helper's (draCount)
    if len(claims) != 1 or len(specs) != 1:
        raise NotHelper("the migration gives the helper's call sites different claims")
    any_delta = next(iter(deltas.values()))[0]
    requests = [r["name"] for r in any_delta.spec.get("spec", {}).get("devices", {}).get("requests", [])]
    if len(requests) != 1:
        raise NotHelper("the migrated claim has several requests")
    device_specs = {key.resource: (any_delta.spec, requests[0])}
    if choice is not None:
        device_specs.update(helperchoice.device_specs(choice, claims))
    helper_text = (root / file).read_text(encoding="utf-8")
    if f'"{define}.draCount"' in helper_text:
        raise NotHelper(f"{file} has a {define}.draCount define already")
    block = next(b for name, b in _defines(helper_text) if name == define)
    above = helper_text.splitlines()[block.start + 1 : key.index]
    writes_key = any(is_key(line, "resources") for line in above)  # llm-d's `resources:` + toYaml
    writes_key = writes_key or any(_writes_resources(root, h) for h in hops)
    by_rel: dict[str, list[Wiring]] = {}
    for s in sites:
        if (s.rel, s.index) not in deltas:
            raise NotHelper(f"{s.rel}:{s.index + 1}: the helper is included where the migration adds no claim")
    for rel in dict.fromkeys(s.rel for s in sites):
        text = (root / rel).read_text(encoding="utf-8")
        for first, *others in sites_by_pod(text, [s for s in sites if s.rel == rel]):
            delta, params = deltas[(rel, first.index)]
            devices = {r: choice.deltas[r][(rel, first.index)] for r in choice.resources} if choice else {}
            by_rel.setdefault(rel, []).append(
                Wiring(first, delta, params, tuple(others), {key.resource: delta, **devices} if devices else {})
            )
    texts = {rel: (root / rel).read_text(encoding="utf-8") for rel in {file, *by_rel, *(h.rel for h in hops)}}
    pod_hop = _pod_hop(texts, sites, hops, writes_key) or _own_pod(texts, file, define, sites, keys, writes_key)
    pod_cond = None
    if pod_hop is not None and via:
        raise NotHelper(
            f"{pod_hop.rel}:{pod_hop.index + 1}: the helper {pod_hop.outer} writes the pod spec above a hop "
            "that passes a dict"
        )
    if pod_hop is not None:
        name_expr = _metadata_line(texts[sites[0].rel].splitlines(), "name")
        if not name_expr:
            raise NotHelper(f"{sites[0].rel}: the workload's metadata.name is not one line")
        block = next(b for name, b in _defines(texts[file]) if name == define)
        own = pod_hop.outer == define  # the helper writes the pod and its container (a pod-template helper)
        if pod_hop.rel == file and pod_hop.index < block.end and not own:
            raise NotHelper(
                f"{file}:{pod_hop.index + 1}: the helper {pod_hop.outer} that writes the pod sits above {define}"
            )
        before = texts[pod_hop.rel].splitlines()
        texts[pod_hop.rel], pod_cond = rewrite_pod_helper(
            texts[pod_hop.rel], pod_hop, define, by_rel[sites[0].rel][0], name_expr, writes_key
        )
        if own:  # the pod's lines went in above the keys: the keys moved down by as many
            shift = len(texts[file].splitlines()) - len(before)
            keys = [replace(k, index=k.index + shift) for k in keys]
    taken = [f"{site_define}.{part}" for part in _VIA_PARTS if via and f'"{site_define}.{part}"' in texts[file]]
    if taken:
        raise NotHelper(f"{file} has a {taken[0]} define already")
    others = choice.keys if choice is not None else None
    migrated = choice.migrated if choice is not None else migrating
    claim = claims.pop()
    alone = _key_alone(texts, file, define, sites, [*keys, *(others or [])], bool(writes_key or hops))
    after = rewrite_helper(
        texts[file], define, keys, mode, default, claim, guards, request, others, migrated, claims_here=alone is None
    )
    texts[file] = after.rstrip("\n") + "\n" + spec_define(define, device_specs) + via
    section = None if alone is None else (claim, request, alone)
    for rel, wirings in sorted(by_rel.items()):
        wirings = [w for w in wirings if not _never_on(texts[rel], w.site, guards)]
        here = next((w.site.via for w in wirings if w.site.via), site_define)
        texts[rel] = rewrite_site_template(texts[rel], rel, here, wirings, writes_key, pod_cond, section)
    for s in {s.via: s for s in sites if s.via}.values():  # the helpers of a second way, replayed (second_way)
        parts = [p for p in _VIA_PARTS if any(f'"{s.via}.{p}"' in texts[rel] for rel in by_rel)]
        texts.setdefault(s.via_file, (root / s.via_file).read_text(encoding="utf-8"))
        texts[s.via_file] = second_way_defines(texts[s.via_file], s.via, define, parts)
    if any(f'"{site_define}.draTolerated"' in text for text in texts.values()):
        texts[file] += "\n".join(tolerated_define(f"{site_define}.draTolerated")) + "\n"
    changes = [
        Change(rel, (root / rel).read_text(encoding="utf-8"), text)
        for rel, text in sorted(texts.items(), key=lambda item: item[0] != file)
        if rel == file or text != (root / rel).read_text(encoding="utf-8")
    ]
    values_path = root / "values.yaml"
    values = values_path.read_text(encoding="utf-8") if values_path.is_file() else ""
    changes.append(
        Change(
            "values.yaml",
            values if values_path.is_file() else None,
            values + values_doc(values, mode, context_path, " or ".join(device_specs), default),
        )
    )
    device_class = _class(any_delta.spec)
    about = "DRA ResourceClaims behind the dra.enabled switch"  # a changelog line: no helper name in it
    if mode == "values":
        return changes + conventions(root, device_class, default, about)
    about += f" of {context_path}"
    # a switch inside a values object (a list entry): declared in that object's schema where it forbids unknown keys
    entry = {
        "type": "object",
        "description": "Dynamic Resource Allocation (resource.k8s.io/v1, Kubernetes 1.34+)",
        "properties": {"enabled": {"type": "boolean", "default": default}},
    }
    nested = tuple((p, "dra", entry) for p in _context_paths(context_path))
    top = any(s.given for s in sites)  # call sites that pass the chart's own `dra` in (rootswitch)
    return changes + conventions(root, device_class, default, about, nested=nested, top=top)


def _key_alone(
    texts: dict[str, str], file: str, define: str, sites: list[CallSite], keys: list[KeyLine], more: bool
) -> bool | None:
    """None when no call site includes the helper under a container's `limits:`/`requests:` (section_at); else whether
    the helper writes nothing but its device keys, so that those sections render empty with the switch on. NotHelper
    when the helper writes more than key lines of that section's map (`limits:` itself, a map with toYaml, a chain of
    helpers or `resources:`: `more`), or some call sites include it elsewhere."""
    under = [s for s in sites if section_at(texts[s.rel].splitlines(), s.index) >= 0]
    if not under:
        return None
    lines = texts[file].splitlines()
    block = next(b for name, b in _defines(texts[file]) if name == define)
    nested = [k for k in keys if k.var is not None or parent_line(lines, k.index) > block.start]
    where = f"{under[0].rel}:{under[0].index + 1}"
    if more or nested:
        what = f"{file}:{nested[0].index + 1}: a device key below a map of its own" if nested else "more of the pod"
        raise NotHelper(f"{where}: the helper is included under a container's `limits:`, and writes {what}")
    if len(under) != len(sites):
        other = next(s for s in sites if s not in under)
        raise NotHelper(
            f"{where}: the helper is included under a container's `limits:` here and elsewhere at "
            f"{other.rel}:{other.index + 1}: the claims would go in the helper for one and beside it for the other"
        )
    written = {k.index for k in keys}
    body = range(block.start + 1, block.end)
    return all(
        i in written or not lines[i].strip() or (is_control(lines[i]) and not emits_text(lines[i])) for i in body
    )


def with_literal_templates(
    changes: list[Change],
    root: Path,
    rels: set[str],
    define: str,
    rules: RuleSet,
    rendered: tuple[dict[str, Any], dict[str, Any], dict[str, Any]],
    opt_in: bool,
    guards: tuple[str, ...],
    alternative: Callable[..., Any] | None,
) -> list[Change]:
    """The helper's changes with the pattern-A rewrite of the templates `rels` whose device request does not come
    from the helper (a vLLM Deployment with a literal `nvidia.com/gpu` beside an ollama StatefulSet whose helper
    writes it): both read `dra.enabled` from values.yaml, which the A rewrite's `dra:` block now sets (so its
    values.yaml and chart conventions stand for both); NotHelper with why when those templates are no pattern A."""
    from dramigrate.helm import idiomatic

    originals, migrated, claim_templates = rendered
    try:
        literal = idiomatic.build(
            root, rels, rules, originals, migrated, claim_templates, opt_in, guards=guards, alternative=alternative
        )
    except RewriteError as exc:
        other = ", ".join(sorted(rels))
        raise NotHelper(f"{other}: a device request there does not come from {define}, and {exc}") from exc
    taken = {c.rel for c in literal}
    values = next((c.after for c in literal if c.rel == "values.yaml"), "") or ""
    known = re.search(r"^dra:\n(?:(?:  .*)?\n)*?  deviceClassName: (\S+)$", values, re.M)
    if any(_scope(root, c.rel) for c in changes if c.rel.endswith(".tpl")):
        # the helper in a subchart reads its own values, not the umbrella's `dra:` block; its switch's documentation
        # goes after that block
        docs = [
            "\n" + c.after[len(c.before) :].lstrip("\n")
            for c in changes
            if c.rel == "values.yaml" and c.before and c.after.startswith(c.before)
        ]
        literal = [
            replace(c, after=c.after + "".join(docs)) if c.rel == "values.yaml" and c.after else c for c in literal
        ]
        known = None
    own = [_dra_class(c, define, known.group(1)) if known else c for c in changes if c.rel not in taken]
    return own + literal


def _dra_class(change: Change, define: str, device_class: str) -> Change:
    """The change with the helper's claim spec asking for `dra.deviceClassName` from values.yaml where it asks for
    the class the pattern-A rewrite documents there (`gpu.nvidia.com`), as that rewrite's own claims do."""
    start = change.after.find(f'{{{{- define "{define}.draClaimSpec" -}}}}')
    if start < 0:
        return change
    stop = change.after.index("{{- end }}", start)  # the define's own end: the spec has no `end` of its own
    spec = re.sub(
        rf"^(\s*)deviceClassName: {re.escape(device_class)}$",
        r"\1deviceClassName: {{ .Values.dra.deviceClassName }}",
        change.after[start:stop],
        flags=re.M,
    )
    return replace(change, after=change.after[:start] + spec + change.after[stop:])


def _never_on(text: str, site: CallSite, guards: tuple[str, ...]) -> bool:
    """Whether a call site renders only where a guard keeps the switch off (an Argo Rollout under `if
    .Values.rollout.enabled` that includes the Deployment's pod-template helper): wiring it would be dead text."""
    try:
        conditions = _site_conditions(blocks(text), -1, site.index, site.rel)
    except NotHelper:  # inside `with`/`range` above the pod: wired as before
        return False
    return any(_negated(c) in guards for c in conditions)


def _writes_resources(root: Path, hop: Hop) -> bool:
    """Whether the helper of a hop writes `resources:` above its include (the container's key, the map below it)."""
    text = (root / hop.rel).read_text(encoding="utf-8")
    block = next(b for name, b in _defines(text) if name == hop.outer)
    lines = text.splitlines()[block.start + 1 : hop.index]
    return bool(lines) and is_key(lines[-1], "resources")


def _pod_hop(texts: dict[str, str], sites: list[CallSite], hops: list[Hop], writes_key: bool) -> Hop | None:
    """The hop whose helper writes the pod spec, when the call sites' templates do not (llama-cpp's `podSpec`,
    included at `spec:`); NotHelper when that pod could not be wired from the helper alone."""
    podless = [s for s in sites if _site_pod(texts[s.rel].splitlines(), s.index, writes_key, s.rel)[1] < 0]
    if not hops or not podless:
        return None
    found = [h for h in hops if _site_pod(texts[h.rel].splitlines(), h.index, writes_key, h.rel)[1] >= 0]
    site = podless[0]  # the call site named: one with no `containers:` above it (llm-d's decode-lws.yaml)
    if not found:
        raise NotHelper(f"{site.rel}:{site.index + 1}: no `containers:` above the helper's call site or its chain")
    _root_sites(texts, sites, found[0], len(found) == 1)
    return found[0]


def _root_sites(texts: dict[str, str], sites: list[CallSite], pod: Hop, alone: bool = True) -> None:
    """NotHelper unless the pod helper `pod` (`alone`: the only one) can be wired for every call site: each passes
    the chart's root (not inside `with`/`range`), one per template, and names its workload alike."""
    names = {_metadata_line(texts[s.rel].splitlines(), "name") for s in sites}
    one_each = len({s.rel for s in sites}) == len(sites)
    if not alone or len(names) != 1 or not one_each or any(s.arg not in (".", "$") or s.given for s in sites):
        raise NotHelper(
            f"{pod.rel}:{pod.index + 1}: the helper {pod.outer} writes the pod spec, and the rewrite "
            "wires it only when every call site passes the chart's root, one per template, and names its workload alike"
        )
    for s in sites:
        around = [b for b in enclosing(blocks(texts[s.rel]), s.index) if b.word in ("with", "range", "define")]
        if around and s.arg == ".":
            raise NotHelper(
                f"{s.rel}:{s.index + 1}: the helper is included inside `{around[-1].word} {around[-1].cond}`"
            )


def _own_pod(
    texts: dict[str, str], file: str, define: str, sites: list[CallSite], keys: list[KeyLine], writes_key: bool
) -> Hop | None:
    """A Hop from the helper to itself when it writes the whole pod template, its `containers:` above the container's
    `resources:` that holds the keys (a `podTemplate` helper included right under a workload's `template:`), and no
    call site has `containers:` above it: the pod's `resourceClaims` and toleration go into the helper, as into a
    template; None otherwise."""
    lines = texts[file].splitlines()
    block = next(b for name, b in _defines(texts[file]) if name == define)
    podless = [s for s in sites if _site_pod(texts[s.rel].splitlines(), s.index, writes_key, s.rel)[1] < 0]
    if not podless:
        return None
    at = parent_line(lines, parent_line(lines, keys[0].index))  # `resources:` above `limits:`/`requests:` above the key
    if at <= block.start or not is_key(lines[at], "resources") or _site_pod(lines, at, False, file)[1] <= block.start:
        return None
    hop = Hop(file, at, define, define, ".")
    _root_sites(texts, sites, hop, len(podless) == len(sites))
    return hop


def _values_reach(root: Path, file: str, define: str, sites: list[CallSite]) -> None:
    """Raise NotHelper when the switch, read from `.Values` of the helper's context, may have none to read: the
    helper reads no `.Values` itself and a call site passes a `.` that `with`/`range` rebinds, or a `.`/`$` inside a
    `define` (whose root is the include's argument). A helper that reads `.Values` is given an object that has them
    (amd-aim-llm's platform-merged values inside `with $ctx`)."""
    text = (root / file).read_text(encoding="utf-8")
    block = next(b for name, b in _defines(text) if name == define)
    if re.search(r"(?<![\w)\]])\$?\.Values\b", "\n".join(text.splitlines()[block.start : block.end + 1])):
        return
    for site in sites:
        if (_BUILT.fullmatch(site.arg) and _root_values(root, site)) or site.item:
            continue  # a dict that hands the chart's values on (`"Values" $.Values`), or each item of a values list
        rebinding = ("define", "block") if site.arg == "$" else ("define", "block", "with", "range")
        around = [b for b in enclosing(blocks((root / site.rel).read_text(encoding="utf-8")), site.index)]
        around = [b for b in around if b.word in rebinding]
        if around:
            raise NotHelper(
                f"{site.rel}:{site.index + 1}: the helper {define} gets `{site.arg}` inside `{around[-1].word} "
                f"{around[-1].cond}`, which need not be the chart's root, and reads no .Values itself: the DRA "
                "switch (dra.enabled) would have no values to be read from there"
            )


def _context_paths(where: str) -> list[tuple[str | int, ...]]:
    """The values paths of the objects a helper gets (`servingEngineSpec.modelSpec[]` -> servingEngineSpec,
    modelSpec, 0: a list's items; `worker` -> worker), from context_path's words; none for a context it cannot
    name."""
    out: list[tuple[str | int, ...]] = []
    for part in where.split(" and "):
        one = part.removeprefix("each ")
        if part == "values.yaml" or not re.fullmatch(r"[\w.\[\]<>-]+", one):
            continue  # values.yaml (the chart's own `dra`, schema'd as for pattern A), or no values path
        out.append(tuple(0 if p == "[]" else p for p in re.findall(r"\[\]|[\w-]+", one)))
    return out


def _line(root: Path, key: KeyLine, offset: int) -> str:
    """The helper's line `offset` lines from the key line, "" beyond the file."""
    lines = (root / key.file).read_text(encoding="utf-8").splitlines()
    return lines[key.index + offset] if 0 <= key.index + offset < len(lines) else ""


def per_branch(root: Path, keys: list[KeyLine]) -> dict[Any, KeyLine] | None:
    """branches.per_branch for the helper of `keys`: the key of each branch when they sit in several."""
    from dramigrate.helm import branches

    text = (root / keys[0].file).read_text(encoding="utf-8")
    block = next(b for name, b in _defines(text) if name == keys[0].define)
    return branches.per_branch(text, block, keys)


def _uncounted(spec: dict[str, Any]) -> dict[str, Any]:
    """A claim spec without its requests' counts (helpers whose call sites ask for different counts share it)."""
    out = json.loads(json.dumps(spec))
    for request in out.get("spec", {}).get("devices", {}).get("requests", []):
        (request.get("exactly") or request).pop("count", None)
    return out


def _class(spec: dict[str, Any]) -> str:
    reqs = spec.get("spec", spec).get("devices", {}).get("requests", [])
    return str((reqs[0].get("exactly") or reqs[0]).get("deviceClassName", "")) if reqs else ""


# --- locating, building and proving (called by run.py for patterns D, E and F) -----------------------------------


def pod_deltas(
    original: list[dict[str, Any]], migrated: list[dict[str, Any]], claim_templates: dict[str, Any]
) -> list[tuple[PodDelta, dict[str, Any]]]:
    """What the migration added to each pod spec of a template that got a claim, in document order, with the
    keys it set in the pod's group `rayStartParams`."""
    return [d for d in every_pod_delta(original, migrated, claim_templates) if d is not None]


def ranged_pods(
    text: str, pods: list[list[CallSite]], rendered: list[tuple[PodDelta, dict[str, Any]] | None]
) -> list[tuple[PodDelta, dict[str, Any]] | None]:
    """`rendered` (every pod of a template, in document order) folded to one per pod of `pods` when those pods sit
    inside a `range` that writes them once for each item of a values list or map (a Deployment per model): each
    pod's first delta with a claim, the items' pods renders of it (what the migration gives each differs only in
    its count, which the helper's count define reads from each item, and the name, hashed from it); unchanged when
    the renders do not come in whole rounds of the template's pods."""
    lines, all_blocks = text.splitlines(), blocks(text)
    loops = set()
    for group in pods:  # the innermost `range` around each pod's spec and the blocks inside it that hold the pod
        around = enclosing(all_blocks, _pod_of(lines, group[0])[0])
        at = max((i for i, b in enumerate(around) if b.word == "range"), default=-1)
        loops.add(tuple(b.start for b in around[at:]) if at >= 0 else ())
    # one pod: every render is one item's (also under an `if $model.enabled` of the range's body); several: in whole
    # rounds when all sit in one range under the same blocks, so each item renders all of them or none
    if () in loops or (len(pods) > 1 and len(loops) > 1) or len(rendered) <= len(pods) or len(rendered) % len(pods):
        return rendered
    rounds = [rendered[n :: len(pods)] for n in range(len(pods))]
    return [next((d for d in items if d is not None), None) for items in rounds]


def every_pod_delta(
    original: list[dict[str, Any]], migrated: list[dict[str, Any]], claim_templates: dict[str, Any]
) -> list[tuple[PodDelta, dict[str, Any]] | None]:
    """pod_deltas for every rendered pod spec of a template, in document order: None for a pod the migration
    gives no claim."""
    out: list[tuple[PodDelta, dict[str, Any]] | None] = []
    before = [g for doc in original for g in pod_groups(doc, [])]
    after = [g for doc in migrated for g in pod_groups(doc, [])]
    for (old_group, old), (new_group, new) in zip(before, after, strict=False):
        delta = claim_delta(old, new, claim_templates, NotHelper)
        if delta is None:
            out.append(None)
            continue
        params_before = (old_group or {}).get("rayStartParams") or {}
        params_after = (new_group or {}).get("rayStartParams") or {}
        params = {k: v for k, v in params_after.items() if params_before.get(k) != v}
        out.append((delta, params))
    return out


def switch_mode(sites: list[CallSite], hops: list[Hop] | tuple[Hop, ...] = ()) -> str:
    """Where the helper reads its switch: "values" when every call site gives it the chart's root (`include "x" .`),
    or a hop of the chain passes a `dict` that hands the values on (fix checks each call site gives them), the switch
    then in values.yaml; else "context", in the object each call site gives it."""
    if any(h.built for h in hops):
        return "values"
    return "values" if all(s.arg in (".", "$") and not s.item for s in sites) else "context"


def switch_places(root: Path, sites: list[CallSite], define: str, hops: list[Hop] | None = None) -> list[str]:
    """Where the values documentation tells the user to set `dra.enabled`, in context_path's words, each place once;
    NotHelper for a call site whose helper gets an object no values path names (`$spec` built by `mergeOverwrite`):
    the documentation could not say where the switch goes."""
    if switch_mode(sites, hops or ()) == "values":
        return ["values.yaml"]
    out = []
    for site in sites:
        if site.arg.startswith("(") and not site.given:  # an object built by a call (`fromYaml (include ...)`)
            raise NotHelper(
                f"{site.rel}:{site.index + 1}: the helper {site.helper or define} gets `{site.arg}`, an object built "
                "at the call site: no values key reaches it, so the DRA switch (dra.enabled) could not be turned"
            )
        where = context_path(root, site)
        if switch_paths({}, where) is None:
            raise NotHelper(
                f"{site.rel}:{site.index + 1}: the helper {site.helper or define} gets `{site.arg}`, "
                "an object no values path names: the values documentation could not say where its DRA switch "
                "(dra.enabled) goes"
            )
        out.append(where)
    return sorted(dict.fromkeys(out), key=lambda w: w != "values.yaml")


def switch_paths(values: Any, where: str) -> list[tuple[str | int, ...]] | None:
    """The values objects whose `dra.enabled` a place in context_path's words names, in `values`: () for
    `values.yaml`, each item of a list for `each a.b[]`, the `c` of each entry of a map for `each a.<name>.c` (only
    the objects there: a switch is set beside what the user has); None for words that name no values path."""
    if where == "values.yaml":
        return [()]
    if re.fullmatch(r"[\w-]+(?:\.[\w-]+)*", where):  # one object (`worker`)
        return [p] if isinstance(get_path(values, p := tuple(where.split("."))), dict) else []
    found = re.fullmatch(r"each ([\w-]+(?:\.[\w-]+)*?)(\[\]|\.<name>)((?:\.[\w-]+)*)", where)
    if found is None:
        return None
    head, rest = tuple(found.group(1).split(".")), tuple(p for p in found.group(3).split(".") if p)
    node = get_path(values, head)
    entries: list[str | int] = []
    if found.group(2) == "[]" and isinstance(node, list):
        entries = list(range(len(node)))
    elif found.group(2) == ".<name>" and isinstance(node, dict):
        entries = list(node)
    paths = [(*head, entry, *rest) for entry in entries]
    return [p for p in paths if isinstance(get_path(values, p), dict)]


def flipped(root: Path, places: list[str], on: bool, work: Any, switch: str = OWN) -> Callable[[Any], Any]:
    """Render options -> the same with `dra.enabled` (`<switch>.enabled`) set to `on` at each of `places`
    (switch_paths) in one more values file: only what differs from the values the chart renders with, lists whole
    (Helm replaces them)."""
    from dramigrate.helm.chartvalues import chart_defaults
    from dramigrate.helm.render import _merge_maps, _user_values
    from dramigrate.helm.values import minimal_patch, with_paths

    made: dict[str, Any] = {}

    def options(given: Any) -> Any:
        key = repr(given)
        if key not in made:
            values = _merge_maps(chart_defaults(root), _user_values(given))
            paths = [path for place in places for path in switch_paths(values, place) or []]
            changed = with_paths(values, [((*path, switch, "enabled"), on) for path in paths])
            patch = minimal_patch(values, changed)
            made[key] = replace(given, values_files=(*given.values_files, work.values_file(patch))) if patch else given
        return made[key]

    return options


def context_path(root: Path, site: CallSite) -> str:
    """Where the helper's context sits in the values, in words (`each servingEngineSpec.modelSpec[]`,
    `values.yaml` for a call site that passes the chart's own `dra` in)."""
    scope = _scope(root, site.rel)
    if scope:  # a subchart's call site: its values sit under its key in the umbrella's
        inner = context_path(
            root / Path(*Path(site.rel).parts[:2]), replace(site, rel=Path(*Path(site.rel).parts[2:]).as_posix())
        )
        return f"{scope}.dra" if inner == "values.yaml" else re.sub(r"^(each )?", rf"\g<1>{scope}.", inner, count=1)
    if site.given or site.via:  # the chart's `dra` passed in, at the call site or in the helper it includes
        return "values.yaml"
    named = re.fullmatch(r"\$?\.Values((?:\.[\w-]+)+)", site.arg)
    if named:  # `include "x" .Values.worker`: that object
        return named.group(1)[1:]
    text = (root / site.rel).read_text(encoding="utf-8")
    var = re.match(r"(\$\w+)((?:\.\w+)*)$", site.arg)
    pairs = None
    if var:
        loop = re.search(r"range\s+" + re.escape(var.group(1)) + r"\s*:=\s*\.Values\.([\w.]+)", text)
        if loop:
            return f"each {loop.group(1)}[]{var.group(2)}"
        if one := _assigned_once(text, var.group(1)):  # `$modelSpec := .Values.servingEngineSpec.modelSpec`
            return f"{one}{var.group(2)}"
        pairs = re.search(r"range\s+\$\w+\s*,\s*" + re.escape(var.group(1)) + r"\s*:=\s*\.Values\.([\w.]+)", text)
    if pairs or site.item:
        # `range $name, $step := .Values.steps`, or `.` inside `range .Values.steps`: each entry of a map, or each
        # item of a list
        from dramigrate.helm.chartvalues import chart_defaults

        path, rest = (pairs.group(1), var.group(2) if var else "") if pairs else (site.item, "")
        items = isinstance(get_path(chart_defaults(root), tuple(path.split("."))), list)
        return f"each {path}{'[]' if items else '.<name>'}{rest}"
    return f'each object the "{site.arg}" argument of the helper\'s include names'


def _assigned_once(text: str, var: str) -> str:
    """The values path (`servingEngineSpec.modelSpec`) a template variable holds when the template sets it once, to
    that path as it is (`{{- $modelSpec := .Values.servingEngineSpec.modelSpec }}`, a fork of vLLM's production
    stack with one model where the upstream ranges over a list), and nothing sets it again; else "". `.Values` read
    where a `with` or `range` rebinds `.` is not the chart's."""
    sets = list(re.finditer(r"\{\{-?\s*" + re.escape(var) + r"\s*(:?=)\s*([^{}]*?)\s*-?\}\}", text))
    if len(sets) != 1 or sets[0].group(1) != ":=":
        return ""
    named = re.fullmatch(r"(\$?)\.Values((?:\.[\w-]+)+)", sets[0].group(2))
    if named is None:
        return ""
    line = text.count("\n", 0, sets[0].start())
    rebound = any(b.word in ("with", "range", "define", "block") for b in enclosing(blocks(text), line))
    return "" if rebound and not named.group(1) else named.group(2)[1:]


def _scope(root: Path, rel: str) -> str:
    """The umbrella's values key of the subchart a file `rel` sits in (`charts/<folder>/...`); "" for its own."""
    parts = Path(rel).parts
    if len(parts) < 3 or parts[0] != "charts":
        return ""
    from dramigrate.helm.outcome import _subchart_scopes

    return ".".join(_subchart_scopes(root, root / parts[0] / parts[1])[0])


def _contexts(values: Any, key: str, path: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """Paths of the values maps that hold `key` (the objects a helper reads its count from)."""
    out: list[tuple[str | int, ...]] = []
    if isinstance(values, dict):
        if key in values:
            out.append(path)
        for k, v in values.items():
            out += _contexts(v, key, (*path, k))
    elif isinstance(values, list):
        for i, v in enumerate(values):
            out += _contexts(v, key, (*path, i))
    return out


def unit_suites(
    root: Path,
    keys: list[KeyLine],
    sites: list[CallSite],
    originals: dict[str, Any],
    claim: str,
    rendered: Any,
    trial: SuiteRender,
    hops: list[Hop] | None = None,
    switch: str = OWN,
) -> list[Change]:
    """helm-unittest suites (the chart keeps them in `tests/`) for the call-site templates: with the values of the
    run, the switch off renders the device key and no claim, on the claim and no key, and on with the count at 0
    neither. Written only where the template renders one document with the device key. The run's values files, when
    the chart holds them all (and no --set), are named (`values:`) and `set:` holds what a case changes; else `set:`
    holds what the device request and claim come from, as far as the rewritten chart (`trial`) renders them the same
    with it as with all the run's values (suitevalues.py). `switch`: the key of the switch (`draDevices` in
    values.yaml beside a chart's own `dra:`, switchname)."""
    from dramigrate.helm.render import _user_values
    from dramigrate.helm.unittest_suite import Case, suite, suite_path
    from dramigrate.helm.values import set_path

    key = keys[0]
    knob = re.search(r"\.(\w+)\s*(?:\|[^|]*)?\)*$", key.count)
    mode = switch_mode(sites, hops or ())
    user = _user_values(trial.options)
    contexts = [()] if mode == "values" else (_contexts(user, knob.group(1)) if knob else [])
    if not contexts:
        return []

    def values(on: bool, zero: bool = False) -> dict[str, Any]:
        out = user  # set_path copies
        for c in contexts:
            out = set_path(out, (*c, switch, "enabled"), on)
            if zero and knob and mode == "context":
                out = set_path(out, (*c, knob.group(1)), 0)
        return out

    cases = [
        (f"renders the {key.resource} device-plugin request and no claim with {switch}.enabled false", values(False)),
        (f"renders a ResourceClaim and no {key.resource} request with {switch}.enabled true", values(True)),
    ]
    if mode == "context" and knob:
        cases.append((f"renders no claim with {switch}.enabled true and {knob.group(1)} 0", values(True, True)))
    counts = [(*c, knob.group(1)) for c in contexts] if knob else []
    files = [Path(f).resolve() for f in trial.options.values_files]
    inside = not (trial.options.set_values or trial.options.set_string_values) and all(
        f.is_relative_to(root.resolve()) for f in files
    )
    named = [f"../{f.relative_to(root.resolve()).as_posix()}" for f in files] if inside else None
    out = []
    for rel in sorted({s.rel for s in sites if [x.rel for x in sites].count(s.rel) == 1}):
        if (root / suite_path(rel)).exists():
            continue
        made_cases = []
        for i, (it, case) in enumerate(cases):
            expect = ("device", "claim", "none")[i]
            other = cases[1 if i != 1 else 0][1]  # the switch on (off for the case with it on)
            if named is not None:  # the chart's own files (or its defaults), named; set: what the case changes
                made_cases.append(Case(it, changed_part(case, user), named, expect))
            else:
                trimmed = trimmed_case(trial, "", (rel, rel), case, other, key.resource, counts)
                made_cases.append(Case(it, trimmed, expect=expect))
        about = f"DRA ResourceClaims from the {key.define} helper behind {switch}.enabled"
        docs = rendered.documents.get(rel)
        made = suite(rel, rel, originals.get(rel, []), key.resource, claim, made_cases, about, docs, rendered.release)
        if made is not None:
            out.append(made)
    return out


def marked_render(
    root: Path, work: Any, options: Any, rules: RuleSet
) -> tuple[dict[int, tuple[str, int, str]], Any, dict[int, str]]:
    """The chart copied with a marker on each key-shaped line of its defines (marked_copy) and rendered with
    options: the markers, the render, and the markers on device keys in it (none when it does not render). Once per
    chart run and options: run.py starts it early, beside the migrations, when the chart's patterns want it."""
    from concurrent.futures import Future

    from dramigrate.helm.renderpool import render_key, run_cache

    cache = run_cache(root)
    key = render_key(options)
    if cache is None or key is None:
        return _marked_render(root, work, options, rules)
    with cache.lock:
        future = cache.marked.get(key)
        mine = future is None
        if future is None:
            future = cache.marked[key] = Future()
    if mine:
        try:
            future.set_result(_marked_render(root, work, options, rules))
        except BaseException as exc:  # raised where the render is asked for
            future.set_exception(exc)
    return result(future)


def start_marked_render(root: Path, work: Any, options: Any, rules: RuleSet) -> None:
    """Start marked_render now on a render thread, to render beside the work before it is asked for (the end of the
    chart run drops it if it has not started, or waits for it)."""
    from dramigrate.helm.renderpool import render_key, render_pool, run_cache
    from dramigrate.helm.sandbox import render_parallelism

    cache = run_cache(root)
    key = render_key(options)
    if cache is None or key is None or render_parallelism() < 2:  # one render at a time: none beside the others
        return
    with cache.lock:
        if key not in cache.marked:
            cache.marked[key] = render_pool().submit(_marked_render, root, work, options, rules)


def _marked_render(
    root: Path, work: Any, options: Any, rules: RuleSet, within: str = ""
) -> tuple[dict[int, tuple[str, int, str]], Any, dict[int, str]]:
    from dramigrate.helm.renderpool import cached_render

    copy = work.path / ("helper-markers-within" if within else "helper-markers") / root.name
    marks = marked_copy(root, copy, within)
    marked = cached_render(copy, options)
    return marks, marked, {} if marked.error else marked_keys(marked.stream, marks, rules)


def _device_lines(stream: str, rules: RuleSet) -> set[str]:
    """The device key lines of a render (`nvidia.com/gpu: "8"`), stripped."""
    out = set()
    for line in stream.splitlines():
        key = re.match(r"""^\s*(?:-\s+)?["']?([^"':]+)["']?\s*:""", line)
        if key and rules.is_device_candidate(key.group(1)) and rules.lookup(key.group(1)) is not None:
            out.add(line.strip())
    return out


def other_branches(
    copy: Path,
    marks: dict[int, tuple[str, int, str]],
    found: tuple[dict[int, str], dict[int, list[tuple[str, ...]]]],
    reference: str,
    others: list[tuple[Any, str]],
    rules: RuleSet,
) -> None:
    """The helper lines that write a device key with other value sets of the proof (`others`: each one's options and
    original render), added to `found` (the markers on device keys and their paths, from the marked render of the
    reference, whose original render is `reference`; `copy`: that marked copy). A helper whose branches each write
    their own count (cosmos3's `cosmos3.resources`: `if eq $gpu 1`, `else if eq $gpu 8`, literal keys in each) has
    its keys rewritten in every branch the proof renders, not only in those the reference renders. Only value sets
    whose original render writes a device key line the reference's does not are rendered marked (not another
    vendor's: its key is the vendor choice's)."""
    from dramigrate.helm.renderpool import _render_uncached, render_all

    hits, paths = found
    resources = set(hits.values())
    seen = _device_lines(reference, rules)
    wanted: list[Any] = []
    for options, stream in others:
        lines = _device_lines(stream, rules)
        if not lines <= seen:
            seen |= lines
            wanted.append(options)
    renders = render_all([lambda o=o: _render_uncached(copy, o) for o in wanted])
    for render in renders:
        # the same device in other branches; another vendor's key is the vendor choice's (helperchoice.find)
        more = {n: r for n, r in marked_keys(render.stream, marks, rules).items() if n not in hits and r in resources}
        hits.update(more)
        for n, where in marked_paths(render.stream, more).items():
            paths.setdefault(n, []).extend(where)


def fix(
    outcome: Any,
    root: Path,
    rels: set[str],
    rules: RuleSet,
    work: Any,
    expected: list[tuple[Any, Any, str, list[Any]]],
    reference: tuple[Any, Any, str],
    opt_in: bool,
    mode: str,
    migrate: Callable[[str], str],
    guards: tuple[tuple[str, ...], dict[str, str]] = ((), {}),
    alternative: Callable[..., Any] | None = None,
    switched: tuple[frozenset[str], dict[str, Any], dict[str, Any], dict[str, Any]] | None = None,
    within: str = "",
) -> bool:
    """Rewrite a chart whose device key a named helper writes, and prove it on the chart as written, its switch
    turned through the values where the documentation says (`migrate`: the core's migration of a rendered stream);
    False (nothing done) when no helper line writes the device key, so the caller reports the template's own
    pattern. `switched`: pattern-A templates under a switch of their own that the values leave off and the proof
    turns on (a vLLM Deployment under `if eq .Values.inferenceBackend "vllm"`), with the originals, migrations and
    claim templates of the first value set that renders them: rewritten beside the helper (with_literal_templates).
    `within`: the umbrella's vendored subchart (`charts/<folder>`) whose helper may write the key."""
    from dramigrate.helm.outcome import (
        ENGINE_HINT,
        _by_template,
        _every_by_template,
        _manual,
        _rewritten_copy,
        _switches_usage,
    )
    from dramigrate.helm.prove import objects
    from dramigrate.helm.proveswitch import Flip, prove_switch
    from dramigrate.helm.renderpool import cached_render
    from dramigrate.helm.rewrite import chart_name
    from dramigrate.helm.rootswitch import constant, thread

    ref_variation, ref_render, ref_want = reference
    if within:  # a vendored subchart's helper (`charts/<folder>`): its defines marked too, once
        marks, marked, hits = _marked_render(root, work, ref_variation.options, rules, within)
    else:
        marks, marked, hits = marked_render(root, work, ref_variation.options, rules)
    if not hits:
        return False
    name = chart_name(root)
    keys: list[KeyLine] = []
    paths = marked_paths(marked.stream, hits)
    copy = work.path / ("helper-markers-within" if within else "helper-markers") / root.name
    others = [(v.options, r.stream) for v, r, _, _ in expected if r is not ref_render and not (r.error or v.vendor)]
    other_branches(copy, marks, (hits, paths), ref_render.stream, others, rules)
    try:
        keys = key_lines(root, hits, marks, paths)
        if not keys:
            return False
        if len({k.var is None for k in keys}) != 1:
            raise NotHelper(f"{keys[0].file}: the helper writes the device key both as a line and with toYaml")
        define = keys[0].define
        sites, hops = helper_chain(root, define, f"{keys[0].file}:{keys[0].index + 1}", rules, within)
        others = rels - {s.rel for s in sites} - {k.file for k in keys}
        if others and not hops and all(thread(root, s).given for s in sites):
            # templates that reach the helper through another that builds its dict: the chart's `dra` passed in there
            sites += second_way(root, define, others, within)
        originals, migrated = _by_template(ref_render.stream, name), _by_template(ref_want, name)
        claim_templates = {
            str(doc["metadata"]["name"]): doc
            for key, docs in objects(ref_want).items()
            if key[1] == "ResourceClaimTemplate"
            for doc in docs
        }
        deltas: dict[tuple[str, int], tuple[PodDelta, dict[str, Any]]] = {}
        quiet: set[str] = set()
        request: str | None = None  # the request of the claim the containers name (container_request)
        # the templates these values render first: a refusal names a line the user's render has (llm-d's requester
        # values render prefill-deployment.yaml, not decode-deployment.yaml, which comes first by name)
        for rel in sorted({s.rel for s in sites}, key=lambda r: (r not in originals, r)):
            text = (root / rel).read_text(encoding="utf-8")
            here = sorted((s for s in sites if s.rel == rel), key=lambda s: s.index)
            per_item_containers(text, here, define)
            found = pod_deltas(originals.get(rel, []), migrated.get(rel, []), claim_templates)
            if not found:
                if rel in originals and all(constant(s.arg) for s in here):
                    quiet.add(rel)  # `(dict "gpu" 0)`: rendered, no device; with literals only, never one
                continue  # not rendered with these values: wired like the others (one helper, one device)
            pods = sites_by_pod(text, here)
            paired: list[tuple[list[CallSite], tuple[PodDelta, dict[str, Any]] | None]] = list(
                zip(pods, found, strict=False)
            )
            if len(found) != len(pods):
                # the helper's pods all rendered, some without a device with these values (a worker's count 0):
                # each pod in its place, those without a claim wired as the others below (the helper's count at
                # each call site decides)
                rendered = every_pod_delta(originals.get(rel, []), migrated.get(rel, []), claim_templates)
                rendered = ranged_pods(text, pods, rendered)
                if len(rendered) != len(pods):
                    raise NotHelper(
                        f"{rel}:{here[0].index + 1}: {len(here)} include(s) of {define} in {len(pods)} pod(s), the "
                        f"migration adds claims to {len(found)} of the {len(rendered)} pod(s) these values render "
                        "(render with values that ask for devices in every one)"
                    )
                paired = list(zip(pods, rendered, strict=True))
            deltas.update({(s.rel, s.index): d for group, d in paired if d is not None for s in group})
            request = container_request(migrated.get(rel, []), {d.claim for d, _ in found}, rel, define, request)
        if not deltas:
            raise NotHelper(f"the migration adds no claim to a pod that includes {define}")
        sites = [s if any(h.built for h in hops) else thread(root, s) for s in sites if s.rel not in quiet]
        shared = next(iter(deltas.values()))[0]
        for s in sites:  # a call site these values do not render: wired as the others (one helper, one device)
            if (s.rel, s.index) not in deltas:
                ray = re.search(r"^kind:\s*RayCluster\s*$", (root / s.rel).read_text(encoding="utf-8"), re.M)
                # KubeRay reads num-gpus from the limits the claim replaces (rules/workloads.yaml, RayCluster)
                deltas[(s.rel, s.index)] = (shared, {"num-gpus": "1"} if ray else {})
        # the templates that ask for a device some other way: not those the calls are in, nor the helper's own file (a
        # define that writes the whole workload maps its requests there)
        literal = (rels | (switched[0] if switched else frozenset())) - {s.rel for s in sites} - {k.file for k in keys}
        apart = all(_scope(root, rel) != _scope(root, keys[0].file) for rel in literal)  # in another chart
        if literal and switch_mode(sites, hops) != "values" and not apart:
            for rel in sorted(literal):
                if why := _through_other_define(root, rel, define, sites, within):
                    raise NotHelper(why)
            other = ", ".join(sorted(literal))
            raise NotHelper(f"{other}: a device request there does not come from {define}")
        from dramigrate.helm import helperchoice

        choice = helperchoice.find(root, keys, sites, originals, deltas, rules, alternative)
        places = switch_places(root, sites, define, hops)
        where = " and ".join(places)
        from dramigrate.helm.patterns import migrated_regex

        def built(at: Path) -> list[Change]:
            made = build(
                at, keys, sites, deltas, where, opt_in, guards[0], hops, request or "", choice, migrated_regex(rules)
            )
            if literal:  # templates with their own device key beside the helper's: pattern A, one dra.enabled for both
                more = switched[1:] if switched else ({}, {}, {})
                what = ({**originals, **more[0]}, {**migrated, **more[1]}, {**claim_templates, **more[2]})
                made = with_literal_templates(made, at, literal, define, rules, what, opt_in, guards[0], alternative)
            return made

        # a switch in values.yaml goes under `draDevices` where the chart has a `dra:` of its own there (switchname):
        # read there by the helper, or passed in by a call site that builds its argument (rootswitch)
        in_values = switch_mode(sites, hops) == "values"
        top = not within and (in_values or any(s.given for s in sites))
        switch = (switch_key(root) or OWN) if top else OWN
        if within and in_values and switch_key(root) != OWN:
            # a vendored subchart's helper reads its own values, not the umbrella's top level `draDevices` would be
            raise NotHelper("values.yaml already has a top-level `dra:` key")
        changes = build_beside(root, built) if top else built(root)
    except RewriteError as exc:
        _manual(outcome, f"pattern D ({keys[0].define if keys else 'a helper'}): {exc}{ENGINE_HINT}", "")
        return True
    except (OSError, UnicodeDecodeError) as exc:
        _manual(outcome, f"cannot read a template: {exc}", "")
        return True
    outcome.changes = changes = folded(changes)  # the guards' lines, fewer where they fold
    patch = outcome.diff()
    written = _rewritten_copy(root, changes, work, skip=frozenset({"Chart.yaml"}))  # the bump shows in labels
    if (root / "tests").is_dir():  # the suites render the rewritten chart to trim the values they set
        from dramigrate.helm.unittest_suite import Rendered

        claim = next(iter(deltas.values()))[0].claim
        rendered = Rendered(_every_by_template(ref_render, name), ref_variation.options.release_name)
        trial = SuiteRender(written, work, ref_variation.options)
        outcome.changes = changes = [
            *changes,
            *unit_suites(root, keys, sites, originals, claim, rendered, trial, hops, switch),
        ]
        patch = outcome.diff()
    # the chart as written, its switch turned against the default where the values documentation says
    turn = f"{switch}.enabled={'true' if opt_in else 'false'}"
    if literal and "values.yaml" not in places:  # the umbrella's own literal keys: its values.yaml `dra:` block too
        places, where = [*places, "values.yaml"], f"{where} and values.yaml"
    flip = Flip(not opt_in, flipped(root, places, opt_in, work, switch), f"{turn} set in {where}", migrate)
    prove_switch(
        outcome, root, expected, lambda options, _: cached_render(written, options), patch, mode, guards[1], flip
    )
    if switch != OWN:
        outcome.usage = _switches_usage([f"{switch}.enabled"], opt_in)
    return True
