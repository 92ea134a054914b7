"""Pattern E whose values pick the device resource name and tolerate its taint themselves (an NVIDIA default and an
AMD values file, each with its own `tolerations`): fixed with the AMD file, the migration adds no toleration for the
rendered name, and none is added for the other names the claim template knows (the values that pick a name tolerate
it); each name's entry carries its own device class and CEL selectors. Renders are real."""

from __future__ import annotations

from pathlib import Path

from conftest import chart_with, deployment, dra_render, fix_chart

DEPLOYMENT = deployment(
    "server",
    """\
      {{- with .Values.accelerator.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: server
          image: server:1
          resources:
            limits:
              {{ .Values.accelerator.resourceName }}: {{ .Values.accelerator.count }}
""",
)
VALUES = """\
accelerator:
  resourceName: {name}
  count: 2
  tolerations:
    - key: {name}
      operator: Exists
      effect: NoSchedule
"""


def test_each_name_tolerated_by_its_values_gets_its_own_class_and_selectors(tmp_path: Path) -> None:
    files = {"templates/deployment.yaml": DEPLOYMENT, "values.yaml": VALUES.format(name="nvidia.com/gpu")}
    chart = chart_with(tmp_path, "server", files)
    amd = tmp_path / "amd.yaml"
    amd.write_text(VALUES.format(name="amd.com/gpu"))
    fix_chart(chart, values=(amd,))  # was manual: "a claim of another shape when ... is nvidia.com/gpu"
    on = tmp_path / "on.yaml"
    for name, device_class in (("amd.com/gpu", "gpu.amd.com"), ("nvidia.com/gpu", "gpu.nvidia.com")):
        on.write_text(VALUES.format(name=name) + "dra: {enabled: true}\n")
        docs, _, pods = dra_render(chart, on)
        exact = next(d for d in docs if d["kind"] == "ResourceClaimTemplate")["spec"]["spec"]["devices"]["requests"]
        assert exact[0]["exactly"]["deviceClassName"] == device_class
        assert ("selectors" in exact[0]["exactly"]) == (name == "amd.com/gpu")  # the AMD rule pack's partition CEL
        assert [t["key"] for t in pods["server"]["tolerations"]] == [name]  # the values' own, none added
