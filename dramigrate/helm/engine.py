"""The Helm helper that migrates a chart's workloads at render time: `templates/_dramigrate.tpl`.

`dramigrate fix CHART` keeps each workload template's text as it was, inside a `define`, and renders it
through "<chart>.dramigrate.migrate", which applies the core's pod-template migration to the rendered
objects (plan.py, apply.py, emit.py): device resources leave `limits`/`requests`, containers get
`resources.claims`, the pod gets `resourceClaims` and the toleration ExtendedResourceToleration used to
add, KubeRay groups get `rayStartParams.num-gpus`, GPU/NIC pairs get pcieRoot constraints. A second
template file renders "<chart>.dramigrate.claimTemplates" over the same sources: the
ResourceClaimTemplates, named `<workload>-<hash>` with the hash computed by `toJson | sha256sum | trunc 8`
exactly as emit.spec_hash computes it. Because the chart's own logic (values, helpers, `tpl`,
`.Files.Get`) still produces the requests, whatever count a user's values give is migrated.

The rule packs and workload kinds are embedded as JSON data (`rules_data`), so the helper holds
mechanisms only. Node-label translation is not done here: label hacks that come from values are
reported for manual work (run.py). The proof in rewrite.py compares this helper's output with
the core's on real renders; whatever it does not match is never written.
"""

from __future__ import annotations

import json
import string
from functools import cache
from importlib.resources import files
from typing import Any

from dramigrate.config import Settings
from dramigrate.rules import NATIVE_RESOURCES, RuleSet

HELPER_FILE = "templates/_dramigrate.tpl"
CLAIMS_FILE = "templates/dramigrate-resourceclaimtemplates.yaml"
SOURCE_MARK = "dramigrate.source."


def prefix(chart_name: str) -> str:
    """Named templates are global across a chart and its subcharts: prefix them with the chart's name."""
    return f"{chart_name}.dramigrate"


def source_name(chart_name: str, rel_path: str) -> str:
    return f"{chart_name}.{SOURCE_MARK}{rel_path}"


def _segments(path: str) -> list[str]:
    """A workloads.yaml path as its segments: `key`, `key[*]` (every list item) or `*` (every map value)."""
    return [seg for seg in path.split(".") if seg]


def _expand_template(selector: str) -> str:
    """A Python format string ("... == '{profile}'") as a Go regexp expansion template ("... == '${profile}'")."""
    out = []
    for literal, field, _spec, _conv in string.Formatter().parse(selector):
        out.append(literal.replace("$", "$$"))
        if field is not None:
            out.append("${" + field + "}")
    return "".join(out)


def rules_data(rules: RuleSet, settings: Settings) -> dict[str, Any]:
    """What the helper needs from the rule packs, workload kinds and sharing settings, as plain data."""
    resources = []
    for r in rules.resources:
        if not r.match and r.regex is None:
            continue
        sharing_always = bool(r.sharing) and settings.sharing.get(r.sharing.get("setting", ""), "none") != "none"
        resources.append(
            {
                "match": r.match,
                "regex": "" if r.match or r.regex is None else f"^(?:{r.regex.pattern})$",
                "class": r.device_class,
                "request": r.request,
                "selectors": list(r.selectors) if r.match else [_expand_template(s) for s in r.selectors],
                "config": [dict(c) for c in r.config],
                "reportOnly": r.report_only,
                "rayNumGpus": bool(r.ray_num_gpus),
                "rayResource": r.ray_resource,
                "nic": bool(r.nic),
                "sharingAlways": sharing_always,
                "sharingLabel": str(r.sharing.get("nodeLabel", "")) if r.sharing else "",
            }
        )
    shared_labels = {
        r.sharing["nodeLabel"]: r.sharing["sharedValuePattern"].pattern
        for r in rules.resources
        if r.sharing.get("nodeLabel") and r.sharing.get("sharedValuePattern")
    }
    # A toleration of the resource's taint whose value is a -SHARED product marks the request shared too (R10).
    shared_taints = {
        key: r.sharing["nodeLabel"]
        for r in rules.resources
        if r.sharing.get("nodeLabel") and r.sharing.get("sharedValuePattern")
        for key, res in rules.taints.items()
        if res and res == r.match
    }
    kinds: dict[str, Any] = {}
    for (group, kind), wk in sorted(rules.kinds.items()):
        accepts: Any = wk.accepts_claims
        if isinstance(accepts, dict):
            accepts = {"annotation": accepts["annotation"], "values": [str(v) for v in accepts["values"]]}
        pod_specs = []
        for loc in wk.pod_specs:
            ray = loc.ray_start_params
            if ray and ("." in ray or "[" in ray or "*" in ray):
                accepts = False  # not a path the helper walks: leave the kind to manual work
            pod_specs.append({"at": _segments(loc.at), "spec": _segments(loc.spec), "name": loc.name, "rayPath": ray})
        kinds[f"{group}/{kind}"] = {
            "podSpecs": pod_specs,
            "lists": list(wk.container_lists),
            "singles": list(wk.single_containers),
            "accepts": accepts,
        }
    return {
        "native": NATIVE_RESOURCES.pattern,
        "resources": resources,
        "sharedLabels": shared_labels,
        "sharedTaints": shared_taints,
        "kinds": kinds,
        "alignNics": settings.align_nics,
        "erToleration": settings.extended_resource_toleration,
    }


@cache
def _helper_source() -> str:
    """The helper's Go template source, shipped as dramigrate/helm/templates/_dramigrate.tpl."""
    return files("dramigrate.helm").joinpath("templates", "_dramigrate.tpl").read_text(encoding="utf-8")


def helper_text(chart_name: str, rules: RuleSet, settings: Settings) -> str:
    data = _one_entry_a_line(rules_data(rules, settings))
    data = data.replace("`", "\\u0060")  # it goes into a Go raw string
    return _helper_source().replace("__P__", prefix(chart_name)).replace("__RULES__", data)


def _one_entry_a_line(data: dict[str, Any]) -> str:
    """JSON with each rule and each workload kind on a line of its own: short, and diffs stay readable."""

    def compact(value: Any) -> str:
        return json.dumps(value, sort_keys=True, separators=(", ", ": "))

    parts = []
    for key in sorted(data):
        value = data[key]
        if isinstance(value, dict) and value:
            items = ",\n".join(f"  {json.dumps(k)}: {compact(v)}" for k, v in sorted(value.items()))
            parts.append(f"{json.dumps(key)}: {{\n{items}\n }}")
        elif isinstance(value, list) and value:
            items = ",\n".join(f"  {compact(v)}" for v in value)
            parts.append(f"{json.dumps(key)}: [\n{items}\n ]")
        else:
            parts.append(f"{json.dumps(key)}: {compact(value)}")
    return "{\n " + ",\n ".join(parts) + "\n}"


def claims_text(chart_name: str, sources: list[str]) -> str:
    """The template file that renders the ResourceClaimTemplates of the wrapped workload templates."""
    p = prefix(chart_name)
    includes = "\n".join(f'      (include "{source_name(chart_name, s)}" .)' for s in sorted(sources))
    return (
        "{{- /*\n"
        "ResourceClaimTemplates for the device requests of this chart's workloads, written by `dramigrate fix`.\n"
        "Each is named <workload>-<hash of its spec>: a ResourceClaimTemplate's spec is immutable, so a changed\n"
        "count makes a new template instead of a failing upgrade. resource.k8s.io/v1 is used when the cluster\n"
        "serves it, then v1beta2, then v1beta1; set dramigrate.resourceApiVersion to choose (offline renders\n"
        "for clusters older than 1.34 need it). The workload templates below are rendered again to find them.\n"
        "*/ -}}\n"
        f'{{{{- include "{p}.claimTemplates" (list . (list\n{includes}\n    )) }}}}\n'
    )


def wrap_source(chart_name: str, rel_path: str, text: str) -> str:
    """The workload template's own text inside a define, rendered through the migration helper."""
    name = source_name(chart_name, rel_path)
    body = text if text.endswith("\n") else text + "\n"
    return (  # `{{ end }}` untrimmed: a block scalar that ends the template keeps its final newline
        f'{{{{- define "{name}" -}}}}\n'
        f"{body}"
        "{{ end }}\n"
        "{{- /* dramigrate: this template's device requests become DRA claims (see _dramigrate.tpl) */}}\n"
        f'{{{{- include "{prefix(chart_name)}.migrate" (list . (include "{name}" .)) }}}}\n'
    )
