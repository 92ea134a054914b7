"""A pod whose `tolerations:` a helper it includes writes, among the pod's other keys (`{{- include "x.podDefaults" .
| nindent 6 }}`, a define that writes `enableServiceLinks`, `nodeSelector`, `tolerations` and `affinity` from values).

The A rewrite adds the migration's toleration (the device plugin's taint) in the DRA branch. It joins a list the pod
writes itself (tolerationedits.py); beside such a call it wrote a `tolerations:` key of its own, a second one wherever
the helper's values list is set, which is no valid pod. Here the call's line gets a DRA branch: the helper's output
read back as a map (`fromYaml`), the toleration appended to its list unless that list tolerates the taint already (the
migration adds none then), and the map written where the call wrote it. With the switch off the line is as it was.
"""

from __future__ import annotations

import json
import re
from typing import Any

from dramigrate.helm.locate import defines
from dramigrate.helm.templatelines import Edit
from dramigrate.helm.tolerationedits import TOLERATED, tolerated_check

# a pod-level line that is one include of a define, indented by nindent (`{{- include "x.pod" (dict ..) | nindent 6 }}`)
_CALL = re.compile(r'\s*\{\{-\s*(include\s+"([^"]+)"\s.*?)\s*\|\s*nindent\s+(\d+)\s*-?\}\}\s*')
_INNER = re.compile(r'^\{\{-?\s*include\s+"([^"]+)"[^|]*?(?:\|\s*nindent\s+0\s*)?-?\}\}\s*$', re.M)
POD = "$draPod"  # the helper's output as a map, in the DRA branch


def _writes_tolerations(name: str, named: dict[str, Any], seen: frozenset[str] = frozenset()) -> bool:
    """Whether the define writes a top-level `tolerations:` key, itself or through a define it includes unindented."""
    found = named.get(name)
    if found is None or name in seen:
        return False
    if re.search(r"^tolerations:", found.body, re.M):
        return True
    return any(_writes_tolerations(inner, named, seen | {name}) for inner in _INNER.findall(found.body))


def tolerations_calls(lines: list[str], pod: int, pod_end: int, indent: int, helpers: str) -> list[int]:
    """The 0-based lines of the pod spec (lines pod..pod_end) that include, at its keys' `indent`, a define of the
    chart's `helpers` that writes the pod's `tolerations:`."""
    calls = [(i, m) for i in range(pod + 1, pod_end) if (m := _CALL.fullmatch(lines[i])) and int(m.group(3)) == indent]
    if not calls or not helpers:
        return []
    named = defines({"helpers": helpers})  # parsed only when the pod includes a define at its keys' indent
    return [i for i, m in calls if _writes_tolerations(m.group(2), named)]


def _go_dict(item: dict[str, Any]) -> str:
    return "(dict " + " ".join(f"{json.dumps(str(k))} {json.dumps(v)}" for k, v in item.items()) + ")"


def joined_call(lines: list[str], at: int, cond: str, tolerations: list[dict[str, Any]]) -> Edit:
    """The call at line `at` (tolerations_calls) with a DRA branch (`cond`) that appends each of the migration's
    `tolerations` to the list the helper writes, unless that list tolerates its taint already."""
    m = _CALL.fullmatch(lines[at])
    assert m is not None
    ind, width = " " * (len(lines[at]) - len(lines[at].lstrip())), m.group(3)
    new = [f"{ind}{{{{- if {cond} }}}}", f"{ind}{{{{- {POD} := {m.group(1)} | fromYaml }}}}"]
    for item in tolerations:
        given = f"({POD}.tolerations | default list)"
        new += [f"{ind}{c}" for c in tolerated_check(given, str(item.get("key", "")))]
        joined = f'set {POD} "tolerations" (append {given} {_go_dict(item)})'
        new.append(f"{ind}{{{{- if not {TOLERATED} }}}}{{{{ $_ := {joined} }}}}{{{{ end }}}}")
    new += [f"{ind}{{{{- toYaml {POD} | nindent {width} }}}}", f"{ind}{{{{- else }}}}", lines[at]]
    new.append(f"{ind}{{{{- end }}}}")
    return Edit(at, at + 1, new)
