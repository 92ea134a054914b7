"""The values-only rewrite of a chart whose objects a packed library chart writes from values (bjw-s `common` from
5.0.1, under app-template and the charts built like it: `templates/common.yaml` only calls the library's loader).

The library is left as it is (a change in the packed archive would be undone by `helm dependency update`), so
the rewrite is the pass-through's (passthrough.py) without its template edits: the library passes a container's
`resources` through whole (`controllers.<controller>.containers.<container>.resources`, where the DRA values put
`claims`) and renders the pod options of that container's controller (`controllers.<controller>.pod`, where they
put `resourceClaims` and the toleration). The chart gets only `templates/resourceclaimtemplates.yaml` (the
pass-through's, rendering `resourceClaimTemplates` from values) and the DRA variants of its GPU values files. The
places are data (rules/library-values.json); passthroughproof.py proves the rewrite as the pass-through's, (L) and (D).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dramigrate.helm.helper import blocks, template_files
from dramigrate.helm.passthrough import MapEdit, NotPassThrough
from dramigrate.helm.rewrite import Change
from dramigrate.helm.values import Path_, display, get_path

# the entry of the chart's `artifacthub.io/changes` (passthrough.build)
CHANGE = "DRA ResourceClaimTemplates from values (resourceClaimTemplates), named in the pod options of the DRA values"


# how deep under the values' top level the library's places may sit (a component's key: `machine-learning.controllers`)
MAX_PREFIX = 1


def _bind(pattern: str, path: Path_) -> dict[str, str] | None:
    """The names a dotted pattern (`controllers.<controller>.pod`) binds in a values path, or None if it does not
    match it."""
    parts = pattern.split(".")
    if len(parts) != len(path):
        return None
    bound: dict[str, str] = {}
    for part, key in zip(parts, path, strict=True):
        if part.startswith("<") and part.endswith(">") and isinstance(key, str | int):
            bound[part] = str(key)
        elif part != key:
            return None
    return bound


def _bind_under(pattern: str, path: Path_) -> tuple[Path_, dict[str, str]] | None:
    """The values key a dotted pattern sits under in a values path (MAX_PREFIX keys at most, () for none) and the
    names it binds there, or None if it matches no tail of the path."""
    for cut in range(min(MAX_PREFIX, len(path)) + 1):
        if all(isinstance(k, str) for k in path[:cut]) and (bound := _bind(pattern, path[cut:])) is not None:
            return path[:cut], bound
    return None


def _matching_under(node: Any, parts: list[str]) -> list[Path_]:
    """The paths _matching finds at the values' top level, then under each values key (MAX_PREFIX deep): a chart that
    renders the library once per component merges that component's values (`server:`, `machine-learning:`) over its
    own before it includes the loader, so the library's places sit under the component's key."""
    found, level = _matching(node, parts), [((), node)]
    for _ in range(MAX_PREFIX):
        level = [((*at, k), v) for at, n in level if isinstance(n, dict) for k, v in n.items() if isinstance(k, str)]
        found += [(*at, *p) for at, n in level for p in _matching(n, parts)]
    return found


def _matching(node: Any, parts: list[str], path: Path_ = ()) -> list[Path_]:
    """The paths of the set maps (non-empty) under `node` that a dotted pattern's parts match (`<name>`: any key)."""
    if not parts:
        return [path] if isinstance(node, dict) and node else []
    if isinstance(node, list) and parts[0].startswith("<"):  # `<name>` binds a list item's index too
        return [p for i, item in enumerate(node) for p in _matching(item, parts[1:], (*path, i))]
    if not isinstance(node, dict):
        return []
    head, rest = parts[0], parts[1:]
    keys = [k for k in node if isinstance(k, str)] if head.startswith("<") else [head] if head in node else []
    return [p for k in keys for p in _matching(node[k], rest, (*path, k))]


def _fill(pattern: str, bound: dict[str, str]) -> Path_:
    """The values path of a dotted pattern with its names bound; () for "" (the values' top level)."""
    return tuple(bound.get(part, part) for part in pattern.split(".")) if pattern else ()


@dataclass(frozen=True)
class Placer:
    """What moves each map edit's pod-level siblings into the library's pod options (MapEdit.places), given the
    library (`common 5.0.1`), its entry of rules/library-values.json and the chart's name. The library renders a pod
    option from the controller's `pod:` when set there, else from its defaults for every pod (lists are replaced, not
    merged): a toleration the defaults hold is kept in front of the added one. The claim templates are named after
    the chart and the controller (`draw-things-main-gpu-<hash>`): the library renders the pods' claims without
    `tpl`, so the names cannot take the release's."""

    title: str
    places: dict[str, Any]
    chart: str
    kind: str = "library chart"  # what writes the pods from values, before the title in messages

    def __call__(self, edits: list[MapEdit], merged: dict[str, Any]) -> None:
        places, title = self.places, self.title
        for edit in edits:
            under = next((b for p in places["container_resources"] if (b := _bind_under(p, edit.path))), None)
            if under is None:
                raise NotPassThrough(
                    f"{self.kind} {title}: the device keys are in {display(edit.path)}, not in a container's "
                    f"resources it passes through ({', '.join(places['container_resources'])})"
                )
            prefix, bound = under
            pod = (*prefix, *_fill(places["pod_options"], bound))
            named = [str(k) for k in prefix] + [v for k, v in bound.items() if k != "<container>"]
            edit.group = "-".join([self.chart, *named])
            for name in list(edit.siblings):
                if name not in places["pod_option_keys"]:
                    raise NotPassThrough(f"{self.kind} {title} has no pod option for the {name} the migration sets")
                option = tuple(places.get("pod_option_paths", {}).get(name, name).split("."))
                key = (*pod, *option)
                edit.places[name] = key
                defaults = places["default_pod_options"]
                default = None  # the component's own defaults, else the top level's, which it merges over
                for at in dict.fromkeys([prefix, ()]) if defaults else ():
                    default = get_path(merged, (*at, *defaults.split("."), *option))
                    if default is not None:
                        break
                if get_path(merged, key) is not None or not default:
                    continue
                if name == "resourceClaims":  # the pod names claims of its own already, from the defaults
                    raise NotPassThrough(
                        f"{self.kind} {title}: {defaults}.resourceClaims names claims every "
                        f"pod takes, and the DRA values would replace them in {display(key)}"
                    )
                kept = copy.deepcopy(default if isinstance(default, list) else [])
                edit.siblings[name] = [*kept, *(x for x in edit.siblings[name] if x not in kept)]

    def maps(self, merged: dict[str, Any]) -> list[Path_]:
        """The container resources maps of the values the library passes through, those set only: a map left empty
        may stand back for another (corvid renders `resourcesDefault` unless `resources` is set), so a marker in it
        would hide the map the container takes."""
        out: list[Path_] = []
        for pattern in self.places["container_resources"]:
            out += [p for p in _matching_under(merged, pattern.split(".")) if p not in out]
        return out

    def templates(self, root: Path) -> list[Change]:
        """The chart's own template changes: none, but for a library that merges a define of the chart into the pod
        spec it writes (merged_claims), or whose objects the chart renders with one include of it (wrapped_claims)."""
        if call := self.places.get("merged_pod_define"):
            return merged_claims(root, call, self.title)
        if entry := self.places.get("wrapped_define"):
            return wrapped_claims(root, entry, self.title)
        return []

    def documented(self) -> list[Path_]:
        """The values keys beside which values.yaml documents the pod's `resourceClaims: []` (passthrough.claims_docs:
        beside the top-level `resources`), when a template of the chart renders it."""
        rendered = self.places.get("merged_pod_define") or self.places.get("wrapped_define")
        return [("resources",)] if rendered else []

    def claims_named(self) -> str:
        """The map whose `claims` name the pod's claims, for values.yaml's comment (`container.resources`: DND-IT's
        common renders the top-level `resources` as the pod's own from Kubernetes 1.34, which takes no claims)."""
        named = str(self.places.get("container_claims", "")).removesuffix(".claims")
        return named if self.documented() else ""


def placer(title: str, places: dict[str, Any], chart: str) -> Placer:
    return Placer(title, places, chart)


def pod_spec_places(counts: list[Path_]) -> dict[str, Any] | None:
    """The values places of a pod spec the chart takes from values (`counts`: the values paths that set the device
    counts, lint's perturbation): each count in `<spec>.containers[i].resources` (or initContainers) of one values map
    `<spec>`, as a chart writes it when it renders a pod spec from values key by key and each container whole (the
    Actions runner scale set's `template.spec`: `range $key, $val := .Values.template.spec`). The container's claims
    go in its resources, the pod's resourceClaims and toleration in `<spec>`; whether the templates take them there is
    the proof's to show. None for another shape."""
    specs: set[Path_] = set()
    for path in counts:
        at = next((k for k in range(len(path) - 3) if path[k] in _CONTAINER_LISTS and path[k + 2] == "resources"), None)
        if at is None or not isinstance(path[at + 1], int) or at == 0:
            return None
        specs.add(path[:at])
    if len(specs) != 1 or not all(isinstance(k, str) and re.fullmatch(r"[\w-]+", k) for k in next(iter(specs))):
        return None
    spec = ".".join(str(k) for k in next(iter(specs)))
    return {
        "container_resources": [f"{spec}.{lst}.<container>.resources" for lst in _CONTAINER_LISTS],
        "pod_options": spec,
        "default_pod_options": "",
        "pod_option_keys": ["resourceClaims", "tolerations"],
    }


_CONTAINER_LISTS = ("containers", "initContainers")


# the pod's claims from values, in the chart's define that the library merges into the pod spec
MERGED_CLAIMS = """\
{{- with .Values.resourceClaims }}
resourceClaims:
  {{- toYaml . | nindent 2 }}
{{- end }}
"""


def merged_claims(root: Path, call: str, title: str) -> list[Change]:
    """The chart's defines that it passes to the library define `call` to merge into the pod spec it writes
    (`include "corvid.podSpec" (list . "ollama-podSpec")`), each rendering `resourceClaims` from values before its
    end: the library renders no pod resourceClaims of its own, and its merge takes the define's keys into the pod
    (the define is included with the chart's root context). The library itself is left as it is."""
    wanted = re.compile(rf'\binclude\s+"{re.escape(call)}"\s+\(list\s+[.$]\w*\s+"([\w.-]+)"\s*\)')
    texts = {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8") for p in template_files(root)}
    names = sorted({m.group(1) for text in texts.values() for m in wanted.finditer(text)})
    if not names:
        raise NotPassThrough(f"library chart {title}: no template of the chart gives {call} a define of its own")
    edited = dict(texts)
    for name in names:
        where = next(
            ((rel, b) for rel, t in edited.items() for b in blocks(t) if b.word == "define" and b.cond == f'"{name}"'),
            None,
        )
        if where is None:
            raise NotPassThrough(f"library chart {title}: the define {name} the chart gives {call} is not its own")
        rel, block = where
        lines = edited[rel].splitlines(keepends=True)
        body = lines[block.start + 1 : block.end]
        if ".Values.resourceClaims" in "".join(body):
            continue  # the chart passes the pod's claims through already
        end = lines[block.end].lstrip()
        if not end.startswith("{{") or block.end == block.start:
            raise NotPassThrough(f"{rel}:{block.end + 1}: the define {name} does not end on a line of its own")
        keys = [line for line in body if re.match(r"\s*[\w-]+:", line)]
        pad = re.match(r"\s*", keys[0]).group(0) if keys else ""
        added = "".join(f"{pad}{line}" if line.strip() else line for line in MERGED_CLAIMS.splitlines(keepends=True))
        edited[rel] = "".join([*lines[: block.end], added, *lines[block.end :]])
    return [Change(rel, texts[rel], text) for rel, text in edited.items() if text != texts[rel]]


# the pod's claims from values, added to each pod the library's entry define renders, a workload's pod template or a
# CronJob's (the line `{{ include ... }}` of the chart is kept as the else branch: with no resourceClaims in the
# values the template renders as before)
WRAPPED_CLAIMS = """\
{{{{- if .Values.resourceClaims }}}}
{{{{- /* DRA (resource.k8s.io/v1, Kubernetes 1.34+): the library renders no pod resourceClaims, so add them */}}}}
{{{{- range $doc := regexSplit "(?m)^---[ \\t]*$" (include "{entry}" .) -1 }}}}
{{{{- $obj := fromYaml $doc }}}}
{{{{- $pod := dig "spec" "template" "spec" (dig "spec" "jobTemplate" "spec" "template" "spec" nil $obj) $obj }}}}
{{{{- if and (kindIs "map" $pod) $pod.containers }}}}
{{{{- $_ := set $pod "resourceClaims" $.Values.resourceClaims }}}}
---
{{{{ toYaml $obj }}}}
{{{{- else if trim $doc }}}}
---
{{{{ trim $doc }}}}
{{{{- end }}}}
{{{{- end }}}}
{{{{- else }}}}
{line}
{{{{- end }}}}
"""


def wrapped_claims(root: Path, entry: str, title: str) -> list[Change]:
    """The chart's template lines that render the library's objects (`{{ include "common.all" . }}`, a line of its
    own), each wrapped so that, when the values set `resourceClaims`, every object of the include's output with a pod
    template gets them in its pod spec (the library renders no pod resourceClaims and takes no pod fields whole);
    with them unset the line renders as it did. The library itself is left as it is."""
    wanted = re.compile(rf'^\{{\{{-?\s*include\s+"{re.escape(entry)}"\s+\.\s*-?\}}\}}$')
    changes, before = [], False
    for path in template_files(root):
        rel = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        if ".Values.resourceClaims" in text:
            before = True  # wrapped before (a second fix writes nothing), or the chart renders the pod's claims itself
            continue
        lines = text.splitlines(keepends=True)
        edited = [
            WRAPPED_CLAIMS.format(entry=entry, line=line.rstrip("\r\n")) if wanted.match(line.strip()) else line
            for line in lines
        ]
        if edited != lines:
            changes.append(Change(rel, text, "".join(edited)))
    if not changes and not before:
        raise NotPassThrough(
            f'library chart {title}: no template of the chart renders {{{{ include "{entry}" . }}}} '
            "on a line of its own"
        )
    return changes
