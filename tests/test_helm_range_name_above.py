"""Pattern A whose count reads each `range` item inside one workload (a RayCluster ranging over its worker groups, each
group a pod with its own GPU count): the workload's name is written above the range and reads the root only. The
migration gives each group's pod its own claim template, named after the group (`<release>-<groupName>-<hash>`); the
rewrite names each item's claim template the same way, from the list item's first key (`- groupName: {{ .name }}`),
or from the range's index where that key does not read the item, as KubeRay's own chart does for its worker groups.
Was: manual work, "the items' claim templates would share one name".

The second shape is the Nebius ray-cluster chart's: the device keys sit inside `with $gres.limits` (and `with
$gres.requests`) of a map the range sets per item, and the range's list is set in the `else` of the template's own
`if` (a user's spec pasted whole, or the chart's RayCluster). Was: manual work, the `with` read as "a container that
the range writes" and `$groups` "assigned inside an else"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import assert_second_fix_quiet, chart_with, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

RAY = """\
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: {{ .Release.Name }}-ray
spec:
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
          - name: head
            image: ray:1
  workerGroupSpecs:
  {{- range $i, $g := .Values.workerGroups }}
    - groupName: {{ NAME }}
      replicas: 1
      rayStartParams: {}
      template:
        spec:
          containers:
            - name: worker
              image: ray:1
              resources:
                limits:
                  nvidia.com/gpu: {{ $g.gpus }}
  {{- end }}
"""
GROUPS = "workerGroups:\n  - {name: small, gpus: 1}\n  - {name: big, gpus: 4}\n  - {name: cpu, gpus: 0}\n"

# the Nebius shape: a user's own spec or the chart's; `with` on the item's resources maps around each device key
NEBIUS = """\
{{- if .Values.putspec }}
{{ tpl .Values.putspec . }}
{{- else }}
{{- $cfg := .Values.configure -}}
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: {{ .Release.Name }}
spec:
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
          - name: ray-head
            image: {{ $cfg.image }}
  {{- $groups := $cfg.groups | default list }}
  {{- if gt (len $groups) 0 }}
  workerGroupSpecs:
    {{- range $i, $g := $groups }}
    - groupName: {{ $g.name }}
      rayStartParams: {}
      template:
        spec:
          containers:
            - name: ray-worker
              image: {{ $g.image }}
              {{- $gres := $g.resources }}
              {{- if or $gres.requests $gres.limits }}
              resources:
                {{- with $gres.requests }}
                requests:
                  {{- with .cpu }}
                  cpu: {{ . }}
                  {{- end }}
                  {{- if and (hasKey . "gpu") (gt (int (toString .gpu | default "0")) 0) }}
                  nvidia.com/gpu: {{ .gpu }}
                  {{- end }}
                {{- end }}
                {{- with $gres.limits }}
                limits:
                  {{- with .cpu }}
                  cpu: {{ . }}
                  {{- end }}
                  {{- if and (hasKey . "gpu") (gt (int (toString .gpu | default "0")) 0) }}
                  nvidia.com/gpu: {{ .gpu }}
                  {{- end }}
                {{- end }}
              {{- end }}
    {{- end }}
  {{- end }}
{{- end }}
"""
NEBIUS_VALUES = """\
putspec: ""
configure:
  image: ray:2
  groups:
    - name: small
      image: ray:2-gpu
      resources:
        requests: {cpu: 6, gpu: 1}
        limits: {cpu: 6, gpu: 1}
    - name: big
      image: ray:2-gpu
      resources:
        limits: {cpu: 6, gpu: 4}
    - name: cpu
      image: ray:2
      resources:
        limits: {cpu: 6}
"""


def _render(chart: Path, *sets: str, values: tuple[Path, ...] = ()) -> list[dict[str, Any]]:
    manifests = render_chart(chart, RenderOptions(set_values=sets, values_files=values))
    return [d for m in manifests for d in yaml.safe_load_all(m.text) if d]


def _groups(docs: list[dict[str, Any]]) -> dict[str, tuple[int | None, dict[str, Any]]]:
    """Each worker group's pod: the count of the claim template its claim names (None without one), and its spec."""
    counts = {
        d["metadata"]["name"]: d["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"]
        for d in docs
        if d["kind"] == "ResourceClaimTemplate"
    }
    (ray,) = [d for d in docs if d["kind"] == "RayCluster"]
    out = {}
    for group in ray["spec"]["workerGroupSpecs"]:
        pod = group["template"]["spec"]
        claims = pod.get("resourceClaims") or []
        out[group["groupName"]] = (counts[claims[0]["resourceClaimTemplateName"]] if claims else None, pod)
    return out


def _assert_each_group_its_claim(chart: Path, before: list[dict[str, Any]]) -> None:
    assert _render(chart, "dra.enabled=false") == before  # (L), which the proof checks on every value set too
    groups = _groups(_render(chart))
    assert {name: count for name, (count, _) in groups.items()} == {"small": 1, "big": 4, "cpu": None}
    names = [p["resourceClaims"][0]["resourceClaimTemplateName"] for _, p in groups.values() if "resourceClaims" in p]
    assert len(set(names)) == 2, names
    for _, pod in groups.values():
        assert "nvidia.com/gpu" not in str(pod["containers"][0].get("resources"))


def test_worker_groups_each_get_a_claim_template_named_after_the_group(tmp_path: Path) -> None:
    template = RAY.replace("{{ NAME }}", "{{ $g.name }}")
    chart = chart_with(tmp_path, "ray", {"templates/ray.yaml": template, "values.yaml": GROUPS})
    before = _render(chart)

    fix_chart(chart)  # was: refused, the items' claim templates would share one name

    _assert_each_group_its_claim(chart, before)
    docs = _render(chart)
    names = sorted(d["metadata"]["name"] for d in docs if d["kind"] == "ResourceClaimTemplate")
    assert [n.rsplit("-", 1)[0] for n in names] == ["release-name-ray-big", "release-name-ray-small"]
    assert_second_fix_quiet(chart)


def test_worker_groups_whose_first_key_is_not_read_from_the_item_are_named_by_index(tmp_path: Path) -> None:
    first = "    - groupName: {{ NAME }}\n      replicas: 1\n"
    template = RAY.replace(first, "    - replicas: 1\n      groupName: {{ $g.name }}\n")
    chart = chart_with(tmp_path, "ray", {"templates/ray.yaml": template, "values.yaml": GROUPS})

    fix_chart(chart)

    docs = _render(chart)
    names = sorted(d["metadata"]["name"].rsplit("-", 1)[0] for d in docs if d["kind"] == "ResourceClaimTemplate")
    assert names == ["release-name-ray-0", "release-name-ray-1"]
    assert_second_fix_quiet(chart)


def test_device_keys_inside_with_of_the_items_map_and_a_list_set_in_an_else(tmp_path: Path) -> None:
    chart = chart_with(tmp_path, "nebius", {"templates/ray.yaml": NEBIUS, "values.yaml": NEBIUS_VALUES})
    before = _render(chart)

    outcome = fix_chart(chart)  # was: refused, "a container that `range $i, $g := $groups` writes"

    assert "proven" in outcome.report()
    _assert_each_group_its_claim(chart, before)
    pasted = tmp_path / "own.yaml"
    pasted.write_text("putspec: |\n  apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: own}\n")
    assert [d["kind"] for d in _render(chart, values=(pasted,))] == ["ConfigMap"]  # the user's own spec: no claim
    assert_second_fix_quiet(chart)
