"""The tolerations the DRA branch adds to a pod template: merged into the pod's own `tolerations:` (a values list, a
helper's list, a literal one) so the pod keeps one key, and each rendered only where the user's list does not
already tolerate that taint (checked taint by taint at render time).
"""

from __future__ import annotations

import bisect
import itertools
import json
import re
from typing import Any

import yaml

from dramigrate.helm.goexpr import and_all, as_arg, from_root, grouped, whole_root
from dramigrate.helm.model import NAME, SWITCH
from dramigrate.helm.owntolerations import own_gates, untolerated
from dramigrate.helm.patterns import NotIdiomatic, Pattern
from dramigrate.helm.rewrite import _actions, _terms
from dramigrate.helm.templatelines import (
    COMMENT_AFTER,
    BlockDumper,
    Edit,
    block_end,
    blocks_opened,
    emits_text,
    is_control,
    line_indent,
)


def given_tolerations(lines: list[str], at: int) -> str | None:
    """The values list the pod's `tolerations:` at line `at` renders (the list the user's values give): the `X` of
    `toYaml X` below it (transcript-create's `toYaml .Values.worker.gpu.tolerations`, inside `if
    .Values.worker.gpu.enabled` or after the pod's `nodeSelector:`), else that of the `{{- with X }}`/`{{- if X }}`
    that guards it; or None."""
    body = _TOYAML.fullmatch(lines[at + 1].strip()) if at + 1 < len(lines) else None
    if body and body.group(1) != ".":
        return body.group(1)
    m = re.fullmatch(r"\{\{-?\s*(?:with|if)\s+(\S+)\s*-?\}\}", lines[at - 1].strip()) if at > 0 else None
    return m.group(1) if m else _with_in_list(lines, at)


def _with_in_list(lines: list[str], at: int) -> str | None:
    """The values list a pod's `tolerations:` at line `at` writes after its own items, in no block of its own but
    that `with` (suse-pytorch: the chart's GPU entry under `if .Values.gpu.enabled`, then `{{- with
    .Values.tolerations }}` and `{{- toYaml . | nindent 8 }}`, under an `if or .Values.gpu.enabled
    .Values.tolerations` the list renders whenever it is set); else None."""
    depth = 0
    for i in range(at + 1, block_end(lines, at)):
        text = lines[i].strip()
        m = _WITH.fullmatch(text)
        if m and depth == 0 and i + 1 < len(lines) and _TOYAML_DOT.fullmatch(lines[i + 1].strip()):
            return m.group(1)
        depth += blocks_opened(text)
        if depth < 0:
            return None
    return None


def tolerated_test(define: str, key: str, given: str) -> str:
    """A template expression, non-empty when the toleration list `given` tolerates the `key:NoSchedule` taint the
    device plugin's nodes carry (read by tolerated_define's `define`)."""
    return f'(include "{define}" (dict "key" {key} "tolerations" {given}))'


def _tolerates_taint(key: str) -> str:
    """The condition, on a toleration as dot, that it tolerates the `key:NoSchedule` taint the device plugin's nodes
    carry (as the migration reads one: plan.covers)."""
    return (
        f'and (eq (.operator | default "Equal") "Exists") (has (.key | default "") (list "" {key}))'
        ' (has (.effect | default "") (list "" "NoSchedule"))'
    )


def tolerated_define(define: str) -> list[str]:
    """The define tolerated_test reads: the migration adds no toleration for a taint the pod's values list tolerates
    already (jellyfin's values-example.yaml, helix' values-eks.yaml), nor may the chart (a second identical one)."""
    return [
        f'{{{{- define "{define}" -}}}}',
        "{{- range .tolerations }}",
        f"{{{{- if {_tolerates_taint('$.key')} }}}}true{{{{ end }}}}",
        "{{- end }}",
        "{{- end }}",
    ]


TOLERATED = "$draTolerated"  # set by tolerated_check's lines


def _vendor_tolerations(
    branch_tols: dict[str, list[dict[str, Any]]], picks: dict[str, str], given: str | None, text: str, p: str
) -> list[str]:
    """The DRA tolerations of a vendor choice whose branches each tolerate their device's taint alike, the key aside
    (transcript-create's amd and nvidia workers): one `range` over the keys, each under its branch's condition, in place
    of a block per branch (was: eleven lines each); [] when they differ, or the keys' order is not the branches'."""
    owns = list(branch_tols.values())
    if len(owns) < 2 or any(len(own) != 1 for own in owns) or DRA_KEY in text:
        return []
    keys = [str(own[0].get("key", "")) for own in owns]
    shapes = {json.dumps({**own[0], "key": ""}, sort_keys=True) for own in owns}
    # `range` over a dict takes the keys in order: that of the branches, unless at most one branch holds (each
    # compares one value with its own literal, `eq .Values.gpu.type "amd"`)
    compared = [re.fullmatch(r'\(?eq (\S+) ("[^"]*")\)?', picks[res]) for res in branch_tols]
    literals = {(m[1], m[2]) for m in compared if m}
    exclusive = all(compared) and len({v for v, _ in literals}) == 1 and len(literals) == len(compared)
    ordered = keys == sorted(keys) or exclusive
    if len(shapes) != 1 or len(set(keys)) != len(keys) or list(branch_tols) != list(picks) or not ordered:
        return []
    pairs = " ".join(f"{json.dumps(k)} {grouped(picks[res])}" for k, res in zip(keys, branch_tols, strict=True))
    entry = [f"{p}  {line}" for line in _dump_list([{**owns[0][0], "key": _KEY_SENTINEL}])]
    entry = [
        line.replace(f"'{_KEY_SENTINEL}'", f"{{{{ {DRA_KEY} }}}}").replace(_KEY_SENTINEL, f"{{{{ {DRA_KEY} }}}}")
        for line in entry
    ]
    if given and re.fullmatch(r"[\w.$]+", given):
        check = [f"{p}  {c}" for c in tolerated_check(from_root(given), DRA_KEY, expr=True)]
        entry = [*check, f"{p}  {{{{- if not {TOLERATED} }}}}", *entry, f"{p}  {{{{- end }}}}"]
    return [
        f"{p}  {{{{- range {DRA_KEY}, $on := dict {pairs} }}}}",
        f"{p}  {{{{- if $on }}}}",
        *entry,
        f"{p}  {{{{- end }}}}",
        f"{p}  {{{{- end }}}}",
    ]


_KEY_SENTINEL = "@@KEY@@"  # DRA_KEY's place in a toleration _vendor_tolerations dumps
DRA_KEY = "$draKey"  # the device resource a `range` writes a toleration for (_vendor_tolerations, keyedmap)


def tolerated_check(given: str, key: str, expr: bool = False) -> list[str]:
    """Lines of actions, rendering nothing, that set TOLERATED when the values list `given` tolerates the taint of
    `key` (a user's GPU values often do; `expr`: `key` is a Go expression, `$draKey`): the A rewrite's single DRA
    toleration renders only when not. A loop of four lines, as a chart writes one (it was one line of 250 characters
    a reviewer had to scroll through; one action a line took six, which moved a set's median added lines past 60)."""
    taint = key if expr else json.dumps(key)
    taint = whole_root(taint) if expr else taint  # inside the range the dot is the list's item
    return [
        f"{{{{- {TOLERATED} := false }}}}",
        f"{{{{- range {given} }}}}",
        f"  {{{{- if {_tolerates_taint(taint)} }}}}{{{{ {TOLERATED} = true }}}}{{{{ end }}}}",
        "{{- end }}",
    ]


# _dump_list's one-line toleration, its key a literal or a `range`'s variable (`- {key: {{ $draKey }}, ...}`)
_FLOW_ENTRY = re.compile(r"(\s*)- \{key: (?:\{\{ (\$\w+) \}\}|['\"]?([^'\",]+?)['\"]?), .*\}")


def per_taint(text: list[str], given: str, keys: tuple[str, ...]) -> list[str]:
    """The DRA tolerations' lines `text` with each entry whose key is one of `keys` rendered only where the values
    list `given` does not tolerate that taint (as the migration decides, taint by taint: a list tolerating the GPU's
    taint still gets the EFA NIC's toleration). A key of `keys` may be a variable (`$draKey`: keyedmap.tolerations'
    entry for each device of a values map, inside its `range`, where `given` is read from the root)."""
    out: list[str] = []
    i = 0
    while i < len(text):
        line = text[i]
        m = re.fullmatch(r"(\s*)- key: (?:\{\{ (\$\w+) \}\}|['\"]?([^'\"]+?)['\"]?)", line) or _FLOW_ENTRY.fullmatch(
            line
        )
        taint = (m.group(2) or m.group(3)) if m else ""
        if is_control(line) or m is None or taint not in keys:
            out.append(line)
            i += 1
            continue
        ind, stop, expr = m.group(1), i + 1, bool(m.group(2))
        while stop < len(text) and not is_control(text[stop]) and line_indent(text[stop]) > len(ind):
            stop += 1
        check = [f"{ind}{c}" for c in tolerated_check(whole_root(given) if expr else given, taint, expr)]
        out += [*check, f"{ind}{{{{- if not {TOLERATED} }}}}", *text[i:stop], f"{ind}{{{{- end }}}}"]
        i = stop
    return out


def untolerated_only(tolerations: list[dict[str, Any]], p: str, define: str, given: str) -> list[str]:
    """The DRA tolerations' lines (indented `p`), each under `if not` the values list `given` tolerating its key."""
    out: list[str] = []
    for t in tolerations:
        test = tolerated_test(define, json.dumps(t.get("key", "")), given)
        out += [f"{p}  {{{{- if not {test} }}}}", *(f"{p}  {line}" for line in _dump_list([t])), f"{p}  {{{{- end }}}}"]
    return out


def _dump_list(items: list[dict[str, Any]]) -> list[str]:
    """A list's lines; each toleration whose fields are plain scalars on one line, as the DRA values files write it
    (`- {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}`: was three lines a toleration)."""
    out: list[str] = []
    for item in items:
        flat = isinstance(item, dict) and "key" in item and "effect" in item and all(_plain(v) for v in item.values())
        text = yaml.dump([item], Dumper=BlockDumper, sort_keys=False, default_flow_style=None if flat else False)
        out += text.rstrip("\n").splitlines()
    return out


def _plain(value: Any) -> bool:
    """A scalar the template writes as it is, or the sentinel the rewrite fills in later with a device resource's name
    (`@@KEY@@`, a `range`'s `$draKey`; NAME, a values key: a resource name is a plain scalar in a flow mapping too);
    not another sentinel (a field an `if` may leave out takes a line of its own) nor an action."""
    if value in (NAME, _KEY_SENTINEL):
        return True
    return isinstance(value, (str, int, float, bool)) and not any(x in str(value) for x in ("@@", "{{"))


def _closed(lines: list[str], start: int, end: int) -> int:
    """`end`, or past the `{{- end }}` lines right after it that close actions opened in lines [start, end) (a vendor
    choice's `if`/`else` inside the wrapped `limits:`)."""
    opened = 0
    for _, _, word in _actions("\n".join(lines[start:end])):
        opened += word in ("if", "with", "range") or -(word == "end")
    while opened > 0 and end < len(lines) and re.fullmatch(r"\{\{-?\s*end\s*-?\}\}", lines[end].strip()):
        end, opened = end + 1, opened - 1
    return end


def _adjacent(spans: list[tuple[int, int, str]], lines: list[str]) -> list[tuple[int, int, str]]:
    """Line spans [start, stop) to wrap in `cond`, those that follow each other at one indent under one condition
    joined (a container's `requests:` and `limits:` of device keys only: one `if not`, not two)."""
    out: list[tuple[int, int, str]] = []
    for start, stop, cond in spans:
        if (
            out
            and out[-1][1] == start
            and out[-1][2] == cond
            and line_indent(lines[out[-1][0]]) == line_indent(lines[start])
        ):
            out[-1] = (out[-1][0], stop, cond)
        else:
            out.append((start, stop, cond))
    return out


def _wrap(edits: list[Edit], lines: list[str], start: int, stop: int, cond: str) -> None:
    ind = " " * line_indent(lines[start])
    edits.append(Edit(start, stop, [f"{ind}{{{{- {cond} }}}}", *lines[start:stop], f"{ind}{{{{- end }}}}"]))


def _joined(edits: list[Edit], lines: list[str], start: int, stop: int, cond: str) -> bool:
    """Whether the key lines [start, stop) are alone inside an `if X` of their own (kube-llmops' `{{- if gt (int $gpu)
    0 }}` the line above, its `{{- end }}` the line below), which then takes `cond` too (`if and X (not ...)`): one
    line changed, not two added."""
    m = _IF_ALONE.fullmatch(lines[start - 1]) if start > 0 else None
    if m is None or stop >= len(lines) or not _END.fullmatch(lines[stop].strip()):
        return False
    edits.append(Edit(start - 1, start, [f"{m.group(1)}if and {grouped(m.group(2))} {cond}{m.group(3)}"]))
    return True


_IF_ALONE = re.compile(rf"(\s*\{{\{{-?\s*)if\s+((?:(?!\}}\}}).)+?)(\s*-?\}}\}}(?:{COMMENT_AFTER})*)")


# `{{- with X }}` and `{{- if X }}` alone on a line, maybe with template comments after them (kept by an edit that
# writes the line anew)
_WITH = re.compile(rf"\{{\{{-?\s*with\s+((?:(?!\}}\}}).)+?)\s*-?\}}\}}(?P<comment>(?:{COMMENT_AFTER})*)")


_IF = re.compile(rf"\{{\{{-?\s*if\s+(\S+)\s*-?\}}\}}(?P<comment>(?:{COMMENT_AFTER})*)")


_TOYAML_DOT = re.compile(r"\{\{-?\s*toYaml \. \| nindent \d+\s*-?\}\}")


_TOYAML = re.compile(r"\{\{-?\s*toYaml (\S+) \| n?indent \d+\s*-?\}\}")


_END = re.compile(r"\{\{-?\s*end\s*-?\}\}")


_RANGE_OVER = re.compile(r"\{\{-?\s*range\s+(?:\$\w+\s*(?:,\s*\$\w+\s*)?:=\s*)?(\.Values(?:\.\w+)+)\s*-?\}\}")


_LIST_KEY = re.compile(r"(?:tolerations|resourceClaims|claims):")  # a pod's (a container's claims) list key alone


# a list a helper writes: `{{- include "textual.tolerations" (list $ $tolerations) | nindent 8 }}`
_HELPER_LIST = re.compile(r'\{\{-?\s*(include\s+"[^"]+"\s+.+?)\s*\|\s*nindent\s+\d+\s*-?\}\}')
# a pod's list key with its items written by one trimming action on the same line: `tolerations: {{- include
# "common.tplvalues.render" (dict "value" .Values.tolerations "context" .) | nindent 8 }}` (bitnami-style charts)
_INLINE_LIST = re.compile(
    r"^([ \t]*)(tolerations:)[ \t]*(\{\{-(?:(?!\}\}).)*\|[ \t]*nindent[ \t]+\d+[ \t]*-?\}\})[ \t]*$", re.M
)


def split_inline_lists(text: str) -> str:
    """`text` with each pod list key whose items one trimming `nindent` action writes on the key's own line
    (_INLINE_LIST) split into the key alone and that action on the line below: it renders byte for byte the same (the
    `{{-` trims what is before it either way), and the toleration edits take the key alone."""
    return _INLINE_LIST.sub(r"\1\2\n\1  \3", joined_list_actions(text))


# an action begun on a pod's `tolerations:` line and ended on a later one (`tolerations: {{- toYaml
# .Values.x.tolerations`, then `  | nindent 6 }}`: moophlo's stable-diffusion chart)
_SPLIT_ACTION = re.compile(r"^([ \t]*tolerations:[ \t]*\{\{)((?:(?!\}\})[^\n])*\n(?:(?!\}\})[\s\S])*?)(\}\})", re.M)


def joined_list_actions(text: str) -> str:
    """`text` with each action begun on a pod's `tolerations:` line and ended on a later line written on that line
    (its line breaks and the spaces around them one space): Go templates read the breaks inside an action as spaces,
    so it renders byte for byte the same, and the edits, which read a line at a time, see the list's action whole. An
    action holding a raw string or a comment, where a break is text, is left as it is."""

    def join(m: re.Match[str]) -> str:
        body = m.group(2)
        if "`" in body or "/*" in body:
            return m.group(0)
        return m.group(1) + re.sub(r"[ \t]*\n\s*", " ", body) + m.group(3)

    return _SPLIT_ACTION.sub(join, text)


# the values list a helper renders whole, bitnami's `include "common.tplvalues.render" (dict "value" X "context" $)`
_RENDERED_VALUE = re.compile(r'\binclude\s+"[^"]+"\s+\(\s*dict\s+"value"\s+(\S+)\s')


def _pod_key_lines(lines: list[str], pod: int, pod_end: int, p: str, key: str) -> list[int]:
    """The lines of the pod (from `pod` to `pod_end`, its keys at indent `p`) that write its key `key:`."""
    return [
        i
        for i in range(pod + 1, pod_end)
        if not is_control(lines[i]) and lines[i].strip().startswith(f"{key}:") and line_indent(lines[i]) == len(p)
    ]


def last_written_first(lines: list[str], keys: list[int]) -> list[int]:
    """A pod's `tolerations:` lines (_pod_key_lines), the one a render keeps first: a pod that writes the key twice
    in blocks of their own (comfyui's `with .Values.comfyui.tolerations` above its containers and again after its
    volumes) renders both where the list is set, and the later one is the pod's list (the YAML readers keep the last
    key), so the DRA entries go there. Keys in alternatives (an `if` and its `else`) keep their order."""
    if len(keys) < 2:
        return keys
    depth = low = 0  # low: the outermost of the first key's blocks reached (the blocks opened after are deeper)
    for _, _, word in _actions("\n".join(lines[keys[0] : keys[-1]])):
        if word in ("if", "with", "range"):
            depth += 1
        elif word == "end":
            depth -= 1
            low = min(low, depth)
        elif word == "else" and depth == low:
            return keys  # the `else` of a block the first key is in
    return [keys[-1], *keys[:-1]]


def _at_column(tol_text: list[str], width: int, body: str) -> list[str]:
    """The DRA toleration's lines (their items at column `width`) at the column of the items the chart's list writes
    with `body`, `{{- toYaml X | nindent N }}` (llm-service's items at the `tolerations:` key's own column, N = 4):
    a YAML list's items share one column. As they are when `body` is no such line."""
    m = re.search(r"\btoYaml \S+ \| n?indent (\d+)\s*-?\}\}\s*$", body)
    column = int(m.group(1)) if m else width
    if column == width:
        return tol_text
    return [f"{' ' * column}{t[width:]}" if t[:width].isspace() else t for t in tol_text]


def _merge_tolerations(
    lines: list[str],
    at: int,
    p: str,
    cond: str,
    tol_text: list[str],
    rel: str,
    key: str = "",
    covered: bool = False,
    key_expr: str = "",
    checked: str = "",
    enclosed: bool = False,
    keys: tuple[str, ...] = (),
) -> Edit | None:
    """`{{- with X }} tolerations: {{- toYaml . | nindent N }} {{- end }}` (or without the `with`) gets
    the DRA toleration appended in the DRA branch (any list of the pod, its key at line `at`: `resourceClaims` too);
    with `key` (the one toleration's; `key_expr`, its Go expression), only where the values list X does not tolerate
    that taint already (`checked`: a looked-up name's Go expression, the taint key it is checked for, as `key` is).
    `covered`: the toleration is one the pod wrote itself with the values the rewrite is read from
    (PodDelta.covered): it renders only where the chart's list does not (None: nowhere). `enclosed`: a literal list
    inside the pod's own `if` blocks is taken too (the edit then spans from the outermost `if`, which other edits
    must not reach into). `keys`: the taint keys of several tolerations (a GPU's and an EFA NIC's), each entry
    rendered only where the values list does not tolerate its own taint (one that tolerates the GPU's may not EFA's).
    """
    prev = lines[at - 1].strip() if at > 0 else ""
    body = lines[at + 1].strip() if at + 1 < len(lines) else ""
    with_m = _WITH.fullmatch(prev)

    def unless_tolerated(given: str, ind: str, listing: bool = True) -> list[str]:
        """The DRA branch's opening line, after the check of the values list X where the chart lists X (a condition
        on it, `ne (len .Values.tolerations) 0`, is none); for the pod's own toleration, only when X is off."""
        if keys and listing and re.fullmatch(r"[\w.$]+", given):
            return [f"{ind}{{{{- if {cond} }}}}"]  # each entry checked for its own taint (per_taint)
        both = cond if cond.startswith("and ") else f"and {as_arg(cond)}"
        # a name looked up is checked for the pod's own toleration and where the caller says (`checked`; map-built
        # pods check theirs in `cond`)
        test = json.dumps(key) if key else checked or (key_expr if covered else "")
        if test and listing and re.fullmatch(r"[\w.$]+", given):
            checks = tolerated_check(given, test, True)
            return [*(f"{ind}{c}" for c in checks), f"{ind}{{{{- if {both} (not {TOLERATED}) }}}}"]
        return [f"{ind}{{{{- if {f'{both} (not {as_arg(given)})' if covered else cond} }}}}"]

    def dra_entries(given: str, ind: str, text: list[str], listing: bool = True) -> list[str]:
        """The DRA branch (its entries `text`) after the chart's list X, opened by unless_tolerated."""
        each = keys and listing and re.fullmatch(r"[\w.$]+", given)
        return [
            *unless_tolerated(given, ind, listing),
            *(per_taint(text, given, keys) if each else text),
            f"{ind}{{{{- end }}}}",
        ]

    aligned = _at_column(tol_text, len(p) + 2, body)  # after a values list the chart writes whole
    if with_m and _TOYAML_DOT.fullmatch(body) and _END.fullmatch(lines[at + 2].strip() if at + 2 < len(lines) else ""):
        expr = with_m.group(1)
        # the chart's list in one line, `with` and `end` beside its toYaml (they were two lines more, in every pod
        # of a chart that lists tolerations as `helm create` does); it renders the same, nothing between the actions
        listed = re.sub(r"^\{\{-\s*", "{{ ", body)
        new = [
            f"{p}{{{{- if or {expr} {as_arg(cond)} }}}}{with_m.group('comment')}",
            f"{p}{lines[at].strip()}",
            f"{p}  {{{{- with {expr} }}}}{listed}{{{{ end }}}}",
            *dra_entries(expr, f"{p}  ", aligned),
            f"{p}{{{{- end }}}}",
        ]
        return Edit(at - 1, at + 3, new)
    plain = _TOYAML.fullmatch(body)
    plain = plain if plain and plain.group(1) != "." else None  # `toYaml .` is the list of a `with` around (below)
    if_m = _IF.fullmatch(prev)
    if (
        if_m
        and plain
        and plain.group(1) == if_m.group(1)
        and _END.fullmatch(lines[at + 2].strip() if at + 2 < len(lines) else "")
    ):
        # `{{- if X }} tolerations: {{ toYaml X | nindent N }} {{- end }}` (sglang-helm): as the `with` form, the
        # chart's own two lines kept as they are (the inner `if` trims what the outer one did)
        expr = if_m.group(1)
        new = [
            f"{p}{{{{- if or {expr} {as_arg(cond)} }}}}{if_m.group('comment')}",
            *_opened(lines[at], f"{p}  ", f"if {expr}", lines[at + 1]),
            lines[at + 1],
            f"{p}  {{{{- end }}}}",
            *dra_entries(expr, f"{p}  ", aligned),
            f"{p}{{{{- end }}}}",
        ]
        return Edit(at - 1, at + 3, new)
    if _LIST_KEY.fullmatch(lines[at].strip()) and plain:
        # the values list may be empty (`tolerations: []`, the usual default): its `[]` cannot stand beside the
        # added entry, so the DRA branch writes it only when it has items; with the switch off it is as before
        keep = f"not (and {as_arg(cond)} (empty {plain.group(1)}))"
        return Edit(
            at,
            at + 2,
            [
                *_opened(lines[at], f"{p}  ", f"if {keep}", lines[at + 1]),
                lines[at + 1],
                f"{p}  {{{{- end }}}}",
                *dra_entries(plain.group(1), f"{p}  ", aligned),
            ],
        )
    helper = _HELPER_LIST.fullmatch(body)
    guarded = _guarded_list(lines, at)
    if helper and guarded and (rendered := _RENDERED_VALUE.search(body)) and rendered.group(1) == guarded[1]:
        helper = None  # the values list of the `if` around it, rendered whole: a guarded list (below)
    if _LIST_KEY.fullmatch(lines[at].strip()) and helper and not covered:
        # a list a helper writes (tonic's `include "textual.tolerations" (list $ $tolerations)`, the chart's and the
        # workload's values lists joined, or nothing): the DRA entries after it, where that list does not tolerate
        # the taint already (the migration adds none then)
        test = key_expr or (json.dumps(key) if key else "")
        given = f"({helper.group(1)} | fromYamlArray)"
        check = [f"{p}  {c}" for c in tolerated_check(given, test, True)] if test else []
        both = cond if cond.startswith("and ") else f"and {as_arg(cond)}"
        opening = f"{p}  {{{{- if {both} (not {TOLERATED}) }}}}" if test else f"{p}  {{{{- if {cond} }}}}"
        return Edit(at, at + 2, [*lines[at : at + 2], *check, opening, *tol_text, f"{p}  {{{{- end }}}}"])
    listed = _listed_items(lines, at)
    if listed is not None and listed[2] and enclosed and not covered:
        # a literal list the pod writes only inside its own `if` blocks (golden-service's inference pods tolerate
        # their pool's taints): the DRA entries at the list's end, and a list of their own where those blocks
        # write none, under the switch and not the blocks' conditions (a second `tolerations:` key is invalid)
        stop, item, opens = listed
        width = len(p) + 2
        own = [f"{' ' * item}{t[width:]}" if t[:width].isspace() else t for t in tol_text]
        first = opens[0][0]
        both = cond if cond.startswith("and ") else f"and {as_arg(cond)}"
        off = as_arg(opens[0][1]) if len(opens) == 1 else f"(and {' '.join(as_arg(c) for _, c in opens)})"
        alone = [f"{p}{{{{- if {both} (not {off}) }}}}", lines[at].rstrip(), *tol_text, f"{p}{{{{- end }}}}"]
        appended = [lines[stop - 1], f"{p}{{{{- if {cond} }}}}", *own, f"{p}{{{{- end }}}}"]
        return Edit(first, stop, [*alone, *lines[first : stop - 1], *appended])
    if listed is not None and not listed[2]:
        # a literal list, maybe followed by the values' list appended with toYaml (triton's LWS chart tolerates the
        # GPU taint itself, then `{{ toYaml . | indent 6 }}` of kubernetes.tolerations): the DRA branch appends its
        # entries at the list's end, as the migration does, at the indent of the chart's own items
        stop, item, _ = listed
        width = len(p) + 2
        own = [f"{' ' * item}{t[width:]}" if t[:width].isspace() else t for t in tol_text]
        # the chart's own items tolerating the taint under conditions of their own (porter's `nvidia.com/gpu` item
        # under `if` the request, which the limit alone skips): the DRA entry renders where none of them does
        gates = own_gates(lines, at + 1, stop, item, key) if key else None
        always = gates is not None and "" in gates  # an item of the chart's that tolerates it whatever the values
        if gates and not always:
            cond = (
                f"{cond} {untolerated(gates)}" if cond.startswith("and ") else and_all(as_arg(cond), untolerated(gates))
            )
        # the values list the chart appends (porter's `{{- if .Values.tolerations }}` around its toYaml), where the
        # user's own list may tolerate the taint: the migration adds no toleration then
        given = _values_lists(lines, at + 1, stop)
        literal = bool(key) and any(key in line for line in lines[at + 1 : stop] if not is_control(line))
        unread = not (key or key_expr) or len(given) > 1 or not (gates or given) or (gates is None and literal)
        if covered and (always or unread):
            return None  # the chart's own literal list tolerates the taint, always (or in a way not read here)
        # (written with the list's last line: an edit inserting at the line after it, the pod's `resourceClaims` at
        # `containers:`, comes before it there)
        if len(given) == 1 and (key or key_expr or keys):
            tail = dra_entries(given[0], p, own)
        else:
            tail = [f"{p}{{{{- if {cond} }}}}", *own, f"{p}{{{{- end }}}}"]
        # the values' list written with its first line alone indented (triton's `  {{ toYaml . | indent 6 }}`): a
        # multi-line item's other lines end the list, and the DRA entries after them would not parse; the DRA branch
        # writes that list whole
        start = next((i for i in range(at + 1, stop) if _FIRST_LINE_INDENTED.fullmatch(lines[i])), stop - 1)
        return Edit(start, stop, [*_listed_whole(lines[start]), *lines[start + 1 : stop], *tail])
    if guarded is not None:
        # `{{- if X }} tolerations: <any template writing the items> {{- end }}` (arena's `range` over the values'
        # tolerations, writing each field under its own `if`): the chart's lines kept under their own `if`/`with`,
        # the DRA entries after them at the indent of the chart's items, the key written when either has items
        opener, expr, stop, item = guarded
        if covered and opener == "if" and _terms(cond)[0] == "and" and grouped(expr) in _terms(cond):
            return None  # the DRA branch renders only where `if X` does (X one of its terms): the chart's entry too
        width = len(p) + 2
        own = [f"{' ' * item}{t[width:]}" if t[:width].isspace() else t for t in tol_text]
        whole = (expr, ".") if opener == "with" else (expr,)  # lines that list X whole: toYaml or range of it
        listing = any(
            (w in line and ("toYaml" in line or "range" in line))
            or ((m := _RENDERED_VALUE.search(line)) is not None and m.group(1) == w)
            for line in lines[at + 1 : stop]
            for w in whole
        )
        given = expr
        ranged = [m.group(1) for line in lines[at + 1 : stop] if (m := _RANGE_OVER.search(line))]
        if not listing and opener == "if" and len(ranged) == 1 and re.search(rf"{re.escape(ranged[0])}\b", expr):
            # arena's `if ne (len .Values.tolerations) 0` around a `range` over that list, writing each field: the
            # user's list is checked for the taint as a toYaml one is
            given, listing = ranged[0], True
        new = [
            f"{p}{{{{- if or {as_arg(expr)} {as_arg(cond)} }}}}",
            lines[at],
            f"{p}{{{{- {opener} {expr} }}}}",
            *lines[at + 1 : stop],
            f"{p}{{{{- end }}}}",
            *dra_entries(given, p, own, listing),
            f"{p}{{{{- end }}}}",
        ]
        return Edit(at - 1, stop + 1, new)
    if covered:
        return None  # as before: the values the rewrite is read from tolerate the taint in a shape not read here
    raise NotIdiomatic(
        Pattern("F", at + 1, lines[at].strip()),
        rel,
        f"the pod's {lines[at].strip().rstrip(':')} have a shape the rewrite does not merge into",
    )


# `  {{ toYaml . | indent 6 }}`: blanks before an untrimmed action, which `indent` does not add to the lines after
# the first one (with `{{-`, or `nindent`, every line gets the same indent)
_FIRST_LINE_INDENTED = re.compile(r"( +)\{\{( *)toYaml (\S+) \| indent (\d+) *\}\} *")


def _listed_whole(line: str) -> list[str]:
    """The line of a chart's list `line`; where it indents only the first line of the values' list
    (_FIRST_LINE_INDENTED), an `if` on the DRA switch that writes each item whole at that first line's column: with the
    switch off the line renders as before, byte for byte."""
    m = _FIRST_LINE_INDENTED.fullmatch(line)
    if m is None:
        return [line]
    lead, expr, width = m.group(1), m.group(3), len(m.group(1)) + int(m.group(4))
    pad = " " * max(1, len(m.group(2)) - 1)  # the chart's own spacing in its actions (`{{-       end }}`)
    return [
        f"{lead}{{{{-{pad}if $.Values.{SWITCH} }}}}",
        f"{lead}{{{{-{pad}  toYaml {expr} | nindent {width} }}}}",
        f"{lead}{{{{-{pad}else }}}}",
        line,
        f"{lead}{{{{-{pad}end }}}}",
    ]


def _opened(key: str, p: str, action: str, body: str) -> list[str]:
    """The `tolerations:` line `key` and the action opening a block around its body line: on a line of its own,
    `{{- action }}`, which trims what comes before it; where the key line ends in blanks and the body line does not trim
    them itself (`tolerations: ` above `{{ toYaml .Values.tolerations | nindent 8 }}`), after the key, untrimmed: the
    switch-off render kept everything but that blank (a user's tolerations rendered `tolerations:`, byte-different)."""
    if key != key.rstrip() and not body.lstrip().startswith("{{-"):
        return [f"{key}{{{{ {action} }}}}"]
    return [key, f"{p}{{{{- {action} }}}}"]


def _guarded_list(lines: list[str], at: int) -> tuple[str, str, int, int] | None:
    """For `tolerations:` at line `at` alone inside `{{- if X }}` (or `with`) whose `{{- end }}` closes the list:
    the opening word, X, the line of that `end` and the indent of the list's items (from its `- ` lines, or the
    `nindent N` writing them); None for another shape."""
    base = line_indent(lines[at])
    opened = re.fullmatch(r"\{\{-?\s*(if|with)\s+(.+?)\s*-?\}\}", lines[at - 1].strip() if at > 0 else "")
    if not _LIST_KEY.fullmatch(lines[at].strip()) or not opened:
        return None
    depth, item = 1, None
    words, inside = _actions_by_line(lines, at + 1)
    for i in range(at + 1, len(lines)):
        line = lines[i]
        if i in inside:
            pass  # a line inside an action written over several lines (suse-pytorch's `if and ... (and`)
        elif not is_control(line):
            if line_indent(line) < base or (line_indent(line) == base and not line.lstrip().startswith("-")):
                return None
            item = line_indent(line) if item is None and line.lstrip().startswith("-") else item
        elif emits_text(line) and item is None and (n := re.search(r"\bn?indent (\d+)", line)):
            item = int(n.group(1))
        for word in words.get(i, []):
            if word == "else" and depth == 1:
                return None  # the list has an `else` branch of its own
            depth += word in ("if", "with", "range") or -(word == "end")
        if depth == 0:
            ends = re.fullmatch(r"\{\{-?\s*end\s*-?\}\}", line.strip())
            return (opened.group(1), opened.group(2), i, item) if ends and item is not None else None
    return None


def _actions_by_line(lines: list[str], start: int) -> tuple[dict[int, list[str]], set[int]]:
    """The keywords of the actions from line `start` on, by the line each action ends on, and the lines that begin
    inside an action written over several lines (those lines hold no YAML)."""
    offsets = list(itertools.accumulate((len(line) + 1 for line in lines[start:]), initial=0))
    words: dict[int, list[str]] = {}
    inside: set[int] = set()
    for begin, end, word in _actions("\n".join(lines[start:])):
        first, last = bisect.bisect_right(offsets, begin) - 1, bisect.bisect_right(offsets, end - 1) - 1
        words.setdefault(start + last, []).append(word)
        inside.update(range(start + first + 1, start + last + 1))
    return words, inside


def _values_lists(lines: list[str], start: int, stop: int) -> list[str]:
    """The values lists that lines [start, stop) of a pod's list write whole: the X of `toYaml X`, or of a `with X`
    whose body is `toYaml .`."""
    out: list[str] = []
    for i in range(start, stop):
        whole = _TOYAML.search(lines[i])
        with_m = _WITH.fullmatch(lines[i].strip())
        if whole and whole.group(1) != ".":
            out.append(whole.group(1))
        elif with_m and i + 1 < stop and _TOYAML_DOT.search(lines[i + 1]):
            out.append(with_m.group(1))
    return list(dict.fromkeys(out))


def _listed_items(lines: list[str], at: int, alone_with: bool = False) -> tuple[int, int, list[tuple[int, str]]] | None:
    """For `tolerations:` at line `at` followed by literal list items: where the list ends (past the template actions
    after its items whose blocks close there, a `{{- with }}...{{ toYaml . }}...{{- end }}` that appends to it; before
    an `end` of a block open at the list, and so before any block after it), the
    indent of its items and the pod's `if` blocks open at it (_open_ifs, `alone_with` as there); None for another
    shape."""
    base = line_indent(lines[at])
    # the first item, maybe after a values list the chart writes first, whole (porter's job: `{{ if .Values.tolerations
    # }}` `{{ toYaml .Values.tolerations | nindent 12 }}` `{{ end }}` above its own items; not a `range` writing items)
    first = next(
        (i for i in range(at + 1, len(lines)) if not (is_control(lines[i]) or emits_text(lines[i]))), len(lines)
    )
    if not _LIST_KEY.fullmatch(lines[at].strip()) or first >= len(lines) or not lines[first].lstrip().startswith("- "):
        return None
    words = [w for _, _, w in _actions("\n".join(lines[at + 1 : first]))]
    if sum(w in ("if", "with", "range") for w in words) != words.count("end"):
        return None
    item = line_indent(lines[first])
    opens = _open_ifs(lines, at, alone_with)
    if item < base or opens is None:
        return None
    depth, end = 0, at + 1
    for i in range(at + 1, len(lines)):
        line = lines[i]
        if not is_control(line) and not emits_text(line):
            if line_indent(line) < base or (line_indent(line) == base and not line.lstrip().startswith("-")):
                break
            if depth == 0 and line_indent(line) < item:
                return None  # an item the list writes at another indent
        for _, _, word in _actions(line):
            depth += word in ("if", "with", "range") or -(word == "end")
            if depth < 0:
                break
        if depth < 0:
            break  # the `end` of a block open at the list (its own `if`): the list ends there, not at a later block
        if depth == 0:
            end = i + 1
    while end > first + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
        end -= 1  # blank lines and comments after the items stay below them (pytorch-runtime's before `containers:`)
    return end, item, opens


def _open_ifs(lines: list[str], at: int, alone_with: bool = False) -> list[tuple[int, str]] | None:
    """The pod's blocks open at line `at` (`{{- if .Values.spot }}` above `tolerations:`; the pod's lines are those
    above it up to a shallower YAML line), outermost first, each as its line and its condition; None when one of them
    is not an `if` alone on its line (a `with` or `range` rebinds `.`, an `else` branch negates its condition).
    `alone_with`: one `with` alone on its line, the only block open, counts as its condition (rhq's confidential-ai:
    `{{- with (index .Values.deploymentConfigs .Values.device).katacontainers.resourceName }}`, `tolerations:`, `- key:
    {{ . }}`); what is written inside it reads the values from the root."""
    pending, opens = 0, []
    for i in range(at - 1, -1, -1):
        line = lines[i]
        if not is_control(line) and not emits_text(line) and line_indent(line) < line_indent(lines[at]):
            break
        for _, _, word in reversed(_actions(line)):
            if word == "end" or (word == "else" and pending):
                pending += word == "end"
            elif word in ("if", "with", "range") and pending:
                pending -= 1
            elif word in ("if", "with", "range", "else"):
                opened = re.fullmatch(r"\{\{-?\s*(if|with)\s+(.+?)\s*-?\}\}", line.strip())
                if not opened or word != opened.group(1) or (word == "with" and not alone_with):
                    return None
                opens.insert(0, (i, opened.group(2)))
    if any(re.match(r"\s*\{\{-?\s*with\b", lines[i]) for i, _ in opens) and len(opens) > 1:
        return None
    return opens if not opens or _closed_plainly(lines, at, len(opens)) else None


def _closed_plainly(lines: list[str], at: int, count: int) -> bool:
    """Whether the `count` blocks open at line `at` close with no `else` of theirs (a literal list in each branch of
    `if .Values.spot ... else` has its own `tolerations:` in the `else`, which a list under `not` the `if` doubles)."""
    nested = 0
    for line in lines[at:]:
        for _, _, word in _actions(line):
            if word in ("if", "with", "range"):
                nested += 1
            elif word == "else" and not nested:
                return False
            elif word == "end" and nested:
                nested -= 1
            elif word == "end":
                count -= 1
                if not count:
                    return True
    return False


# why a device line no idiomatic rewrite takes is manual work: what they do take
NO_SHAPE = (
    "the idiomatic rewrites take a literal device key, its name a literal or one values key (A, E), a values "
    "resources map (B, C) or a helper line that writes either (D), and this line is none of them"
)
