"""A container's resources map built in template variables (pattern F) that holds several MIG profiles side by side
(suse-pytorch's shape: `printf "nvidia.com/mig-%s"` over a values map of profiles, merged into `$limits`). The map
rewrite took one device resource a map and refused the chart; the DRA branch now keeps every resource's count and
the claim template asks for each with one request, as the manifest migration (`fix -`) of the original render
writes it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, deployment, dramigrate_in_process, fix_chart

from dramigrate.helm.render import RenderOptions, render_chart

DEPLOYMENT = deployment(
    "{{ .Release.Name }}-app",
    """\
      containers:
        - name: app
          image: app:1
          resources:
            {{- $limits := dict "memory" "1Gi" }}
            {{- if .Values.gpu.mig.enabled }}
            {{- range $profile, $count := .Values.gpu.mig.devices }}
            {{- $limits = merge $limits (dict (printf "nvidia.com/mig-%s" $profile) $count) }}
            {{- end }}
            {{- else }}
            {{- $limits = merge $limits (dict .Values.gpu.resourceName 1) }}
            {{- end }}
            {{- $resources := dict "limits" $limits }}
            {{- toYaml $resources | nindent 12 }}
      {{- with .Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
""",
)
VALUES = """\
gpu:
  resourceName: nvidia.com/gpu
  mig:
    enabled: false
    devices: {}
tolerations: []
"""
MIG = """\
gpu:
  mig:
    enabled: true
    devices:
      1g.10gb: 1
      3g.40gb: 2
"""


def _render(chart: Path, values: Path) -> str:
    manifests = render_chart(chart, RenderOptions(values_files=(values,), kube_version="1.34"))
    return "".join(f"---\n{m.text}\n" for m in manifests)


def _claimed(stream: str) -> tuple[Any, ...]:
    """The pod's claims and tolerations, the container's resources and the claim template's spec."""
    docs = [d for d in yaml.safe_load_all(stream) if d]
    pod = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]
    template = next(d for d in docs if d["kind"] == "ResourceClaimTemplate")
    claims = [c["name"] for c in pod["resourceClaims"]]
    return claims, pod.get("tolerations"), pod["containers"][0]["resources"], template["spec"]


def test_several_mig_profiles_in_one_built_map_get_one_request_each(tmp_path: Path) -> None:
    chart = chart_with(tmp_path, "app", {"values.yaml": VALUES, "templates/deployment.yaml": DEPLOYMENT})
    mig = tmp_path / "mig.yaml"
    mig.write_text(MIG)
    code, migrated, _ = dramigrate_in_process(["fix", "-"], stdin=_render(chart, mig))
    assert code == 0

    fix_chart(chart, values=(mig,))

    claims, tolerations, resources, spec = _claimed(_render(chart, mig))
    assert (claims, tolerations, resources, spec) == _claimed(migrated)
    requests = spec["spec"]["devices"]["requests"]
    assert [(r["name"], r["exactly"]["count"]) for r in requests] == [("mig-1g-10gb", 1), ("mig-3g-40gb", 2)]
