"""Every idiomatic rewrite takes a pod whose `containers:`, `resources:`, `limits:` and `requests:` keys carry a YAML
comment after them (`limits: # requests default to these`), and `if`/`with`/`range` lines with a template comment
after the action (`{{- if .gpu }} {{- /* 0: none */}}`), as maintainers write them: a map ranged beside the chart's
own key (keyedmap), containers of a values list (listed; nested when several ask), a map built in variables
(mapvars), names from values (namelookup), a helper under each section, writing `resources:` itself, or `limits:`
then `toYaml` of a variable (helper), a helper given the map (arghelpers), and maps passed through whole, by section,
or under an `if` (passthrough, patterns). Each was refused (the chart manual work) while only the comments set it
apart from a shape it takes; a literal key (pattern A) was taken before and stays so. Fixed, each keeps every comment
on the line it was on; with the switch off the render is the original's, with it on no device key is left in a
container and the claims ask for as many devices as the keys did. Each chart here is written for the test; renders
are real."""

from __future__ import annotations

import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import chart_with, deployment, fix_chart, with_original

from dramigrate.helm.render import RenderOptions, render_chart

# kubeflow/arena's shape: the chart's own key, then a `range` over a values map of devices
KEYED_MAP = deployment(
    "runner",
    """\
      containers: # the pod's
        - name: runner
          image: runner:1
          resources: # the scheduler reads these
            limits: # requests default to these
              {{- if gt (int .Values.gpus) 0 }} {{- /* 0: no GPU */}}
              nvidia.com/gpu: {{ .Values.gpus }}
              {{- end }}
              {{- range $key, $value := .Values.devices }} {{- /* each item */}}
              {{ $key }}: {{ $value | quote }}
              {{- end }}
              memory: 1Gi
      {{- with .Values.tolerations }} {{- /* a list or nothing */}}
      tolerations: # the values' own
        {{- toYaml . | nindent 8 }}
      {{- end }}
""",
)

# a Nebius docker-deployment chart's shape: a container per item of a values list, keys under inline `if`s
LISTED = deployment(
    "runner",
    """\
      containers: # the pod's
        {{- range .Values.containers }} {{- /* each item */}}
        - name: {{ .name }}
          image: {{ .image }}
          {{- with .resources }} {{- /* a map or nothing */}}
          resources: # from the item
            {{- with .limits }} {{- /* a map or nothing */}}
            limits: # requests default to these
              {{ if .cpu }}cpu: {{ .cpu }}{{ end }}
              {{ if .gpu }}nvidia.com/gpu: {{ .gpu }}{{ end }}
            {{- end }}
          {{- end }}
        {{- end }}
""",
)

# devtron's shape: each section from a variable the device entry is merged into
MAP_BUILT = deployment(
    "app",
    """\
      containers: # the pod's
        - name: app
          image: app:1
{{- $resources := .Values.resources | default dict }}
{{- $gpu := .Values.gpu | default dict }}
{{- $gpuLimits := dict }}
{{- if $gpu.enabled }} {{- /* true or false */}}
  {{- $gpuLimits = dict $gpu.provider ($gpu.count | default 0) }}
{{- end }}
{{- $limits := merge (get $resources "limits" | default dict) $gpuLimits }}
{{- if $limits }} {{- /* when set */}}
          resources: # built above
            limits: # the values' limits and the GPU
{{ toYaml $limits | indent 14 }}
{{- end }}
""",
)

# OpenVINO's model server shape: the limit and the request each named by a values key of their own
NAMED = deployment(
    "server",
    """\
      containers: # the pod's
      - name: server
        image: server:1
        resources: # the device from values
          limits: # the claim's count
{{ if (((.Values.server.resources).limits).device) }} {{- /* a resource name */}}
            {{ .Values.server.resources.limits.device }}: "{{ .Values.server.resources.limits.device_quantity }}"
{{- end }}
          requests: # equal to the limits
{{ if (((.Values.server.resources).requests).device) }} {{- /* a resource name */}}
            {{ .Values.server.resources.requests.device }}: "{{ .Values.server.resources.requests.device_quantity }}"
{{- end }}
""",
)

# Docker Model Runner's shape: a helper that writes the device key alone, included under each section
SECTION_HELPER = {
    "templates/_helpers.tpl": """\
{{- define "app.accel" -}}
{{- if .Values.accel.enabled }} {{- /* true or false */}}
nvidia.com/gpu: {{ .Values.accel.count }}
{{- end }}
{{- end }}
""",
    "templates/server.yaml": deployment(
        "runner",
        """\
      containers: # the pod's
      - name: runner
        image: runner
        {{- if .Values.accel.enabled }} {{- /* true or false */}}
        resources: # the accelerator only
          limits: # from the helper
            {{- include "app.accel" . | nindent 12 }}
          requests: # the same count
            {{- include "app.accel" . | nindent 12 }}
        {{- end }}
""",
    ),
}

# plex-media-server's shape: the values map written section by section inside `with`
SECTIONS_PASSED = deployment(
    "media",
    """\
      containers: # the pod's
      - name: media
        image: media:1
        {{- with .Values.resources }} {{- /* a map or nothing */}}
        resources: # the values map, section by section
          limits: # the user's
          {{- with .limits }} {{- /* a map or nothing */}}
            {{ toYaml . | indent 12 | trim }}
          {{- end }}
          {{- if .requests }} {{- /* a map or nothing */}}
          requests: # the user's
            {{ toYaml .requests | indent 12 | trim }}
          {{- end }}
        {{- end }}
""",
)

# a literal device key (pattern A)
LITERAL = deployment(
    "infer",
    """\
      containers: # the pod's
        - name: infer
          image: infer:1
          resources: # one GPU
            limits: # requests default to these
              cpu: 1
              {{- if .Values.gpu.enabled }} {{- /* true or false */}}
              nvidia.com/gpu: 1
              {{- end }}
            requests: # the same
              cpu: 1
      {{- with .Values.tolerations }} {{- /* a list or nothing */}}
      tolerations: # the values' own
        {{- toYaml . | nindent 8 }}
      {{- end }}
""",
)

# a values map passed through whole (pattern B), a platform's own map (`flavor`) the same way
WHOLE = deployment(
    "server",
    """\
      containers: # the pod's
        - name: server
          image: server:1
          resources: # from values
            {{- toYaml .Values.resources | nindent 12 }}
        - name: side
          image: side:1
          resources: # the platform's flavor
            {{- toYaml .Values.flavor | nindent 12 }}
      {{- with .Values.tolerations }} {{- /* a list or nothing */}}
      tolerations: # the values' own
        {{- toYaml . | nindent 8 }}
      {{- end }}
""",
)

# the values map's limits written under `if` the map
GUARDED_SECTION = deployment(
    "server",
    """\
      containers: # the pod's
        - name: server
          image: server:1
          {{- if .Values.resources }} {{- /* a map or nothing */}}
          resources: # the values map's limits
            limits: # the user's
              {{- toYaml .Values.resources.limits | nindent 14 }}
          {{- end }}
""",
)

# a helper that builds its `limits:` in a variable and writes it with toYaml (llm-d's shape, pattern D)
MAP_HELPER = {
    "templates/_helpers.tpl": """\
{{- define "app.resources" -}}
{{- $limits := dict "cpu" "1" }}
{{- if .Values.gpu.enabled }} {{- /* true or false */}}
{{- $_ := set $limits "nvidia.com/gpu" (.Values.gpu.count | toString) }}
{{- end }}
limits: # built above
  {{- toYaml $limits | nindent 2 }}
{{- end }}
""",
    "templates/server.yaml": deployment(
        "server",
        """\
      containers: # the pod's
        - name: server
          image: server:1
          resources: # from the helper
            {{- include "app.resources" . | nindent 12 }}
""",
    ),
}

# a helper that writes a container's `resources:` from a map it is given (pattern B through its argument)
ARG_HELPER = {
    "templates/_helpers.tpl": """\
{{- define "app.resources" -}}
{{- if .resources }} {{- /* when set */}}
resources: # the argument's map
  {{- if .resources.limits }} {{- /* a map or nothing */}}
  limits: # the argument's limits
    {{- toYaml .resources.limits | nindent 4 }}
  {{- end }}
{{- end }}
{{- end }}
""",
    "templates/server.yaml": deployment(
        "server",
        """\
      containers: # the pod's
        - name: server
          image: server:1
          {{- include "app.resources" .Values.server | nindent 10 }}
""",
    ),
}

# a helper that writes `resources:` and the device key under each section, each count from its own values key (vllm's
# chart-helm; pattern D)
OWN_HELPER = {
    "templates/_helpers.tpl": """\
{{- define "app.resources" -}}
resources: # the accelerator only
  requests: # the API server takes them equal to the limits
    cpu: 1
    {{- if gt (int (index .Values.resources.requests "nvidia.com/gpu")) 0 }} {{- /* 0: none */}}
    nvidia.com/gpu: {{ index .Values.resources.requests "nvidia.com/gpu" | quote }}
    {{- end }}
  limits: # the count
    cpu: 1
    {{- if gt (int (index .Values.resources.limits "nvidia.com/gpu")) 0 }} {{- /* 0: none */}}
    nvidia.com/gpu: {{ index .Values.resources.limits "nvidia.com/gpu" | quote }}
    {{- end }}
{{- end }}
""",
    "templates/server.yaml": deployment(
        "server",
        """\
      containers: # the pod's
        - name: server
          image: server:1
          {{- include "app.resources" . | nindent 10 }}
""",
    ),
}

CASES: dict[str, tuple[dict[str, str], str]] = {
    "keyedmap": (
        {"templates/pods.yaml": KEYED_MAP, "values.yaml": "gpus: 1\ndevices: {}\n"},
        "gpus: 1\ndevices:\n  amd.com/gpu: 1\n",
    ),
    "listed": (
        {"templates/pods.yaml": LISTED, "values.yaml": "containers: []\n"},
        "containers:\n  - name: a\n    image: a:1\n    resources:\n      limits: {cpu: 1, gpu: 2}\n",
    ),
    "nested": (  # two containers of the list ask: the migration names a request after each
        {"templates/pods.yaml": LISTED, "values.yaml": "containers: []\n"},
        "containers:\n  - name: a\n    image: a:1\n    resources:\n      limits: {cpu: 1, gpu: 2}\n"
        "  - name: b\n    image: b:1\n    resources:\n      limits: {gpu: 1}\n",
    ),
    "mapvars": (
        {"templates/app.yaml": MAP_BUILT, "values.yaml": "resources:\n  limits: {memory: 1Gi}\ngpu: {}\n"},
        "gpu: {enabled: true, provider: nvidia.com/gpu, count: 2}\n",
    ),
    "namelookup": (
        {"templates/server.yaml": NAMED, "values.yaml": "server:\n  replicas: 1\n"},
        "server:\n  resources:\n    limits: {device: gpu.intel.com/i915, device_quantity: '2'}\n"
        "    requests: {device: gpu.intel.com/i915, device_quantity: '2'}\n",
    ),
    "helper": (
        {**SECTION_HELPER, "values.yaml": "accel:\n  enabled: false\n  count: 1\n"},
        "accel:\n  enabled: true\n  count: 2\n",
    ),
    "literal": (
        {"templates/infer.yaml": LITERAL, "values.yaml": "gpu:\n  enabled: false\n"},
        "gpu:\n  enabled: true\n",
    ),
    "passed whole": (
        {"templates/server.yaml": WHOLE, "values.yaml": "resources: {}\nflavor: {}\n"},
        "resources:\n  limits: {nvidia.com/gpu: 1}\nflavor:\n  limits: {cpu: 1, nvidia.com/gpu: 2}\n",
    ),
    "guarded section": (
        {"templates/server.yaml": GUARDED_SECTION, "values.yaml": "resources: {}\n"},
        "resources:\n  limits: {cpu: 1, nvidia.com/gpu: 1}\n",
    ),
    "maphelper": (
        {**MAP_HELPER, "values.yaml": "gpu:\n  enabled: false\n  count: 1\n"},
        "gpu:\n  enabled: true\n  count: 2\n",
    ),
    "arghelper": (
        {**ARG_HELPER, "values.yaml": "server:\n  resources: {}\n"},
        "server:\n  resources:\n    limits: {memory: 1Gi, nvidia.com/gpu: 1}\n",
    ),
    "ownhelper": (
        {**OWN_HELPER, "values.yaml": "resources:\n  requests: {nvidia.com/gpu: 0}\n  limits: {nvidia.com/gpu: 0}\n"},
        "resources:\n  requests: {nvidia.com/gpu: 2}\n  limits: {nvidia.com/gpu: 2}\n",
    ),
    "passthrough": (
        {"templates/media.yaml": SECTIONS_PASSED, "values.yaml": "resources: {}\n"},
        "resources:\n  limits: {cpu: 2, nvidia.com/gpu: 2}\n  requests: {cpu: 1, nvidia.com/gpu: 2}\n",
    ),
}


def _comments(chart: Path) -> Counter[tuple[str, str, str]]:
    """Each comment of the templates, by file, with where it is: the whole line for a YAML comment after a key; for a
    template comment after an action, the line's indent (an `if` the switch joins, or a `with` the DRA toleration's
    `if` takes the place of, is written anew)."""
    out: Counter[tuple[str, str, str]] = Counter()
    for path in (chart / "templates").iterdir():
        for line in path.read_text().splitlines():
            if m := re.fullmatch(r"( *)\{\{.*?(\{\{-?\s*/\*.*)", line):
                out[(path.name, m.group(1), m.group(2))] += 1
            elif " # " in line:
                out[(path.name, "", line.strip())] += 1
    return out


def _render(chart: Path, *values: Path) -> list[dict[str, Any]]:
    texts = [m.text for m in render_chart(chart, RenderOptions(values_files=values, kube_version="1.34"))]
    return [d for t in texts for d in yaml.safe_load_all(t) if d]


def _device_counts(docs: list[dict[str, Any]]) -> int:
    """Device keys' counts in the containers' limits (their requests where no limits name the device)."""
    total = 0
    for d in docs:
        for c in d.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []):
            res = c.get("resources") or {}
            keys = {k: v for s in ("requests", "limits") for k, v in (res.get(s) or {}).items() if "gpu" in k}
            total += sum(int(v) for v in keys.values())
    return total


@pytest.mark.parametrize("case", CASES)
def test_commented_keys_and_guards_are_taken_and_kept(tmp_path: Path, case: str) -> None:
    files, asking = CASES[case]
    original = chart_with(tmp_path / "original", "app", files)
    chart = shutil.copytree(original, tmp_path / "fixed" / "app")
    given = tmp_path / "given.yaml"
    given.write_text(asking)
    fix_chart(chart, values=(given,))  # was: manual work, refused at the commented key or guard
    assert _comments(original) and _comments(original) <= _comments(chart)
    off, on = tmp_path / "off.yaml", tmp_path / "on.yaml"
    off.write_text("dra: {enabled: false}\n")
    on.write_text("dra: {enabled: true}\n")
    assert _render(chart, given, off) == _render(original, given)
    asked = _device_counts(_render(original, given))
    overlay = given.with_name("given-dra.yaml")  # a map passed through: the DRA values fix wrote beside the user's
    docs = _render(chart, *(with_original(overlay) if overlay.is_file() else (given,)), on)
    claimed = [
        r["exactly"]["count"]
        for d in docs
        if d["kind"] == "ResourceClaimTemplate"
        for r in d["spec"]["spec"]["devices"]["requests"]
    ]
    assert asked > 0 and _device_counts(docs) == 0 and sum(claimed) == asked, (asked, claimed)
