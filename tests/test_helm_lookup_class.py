"""Pattern E (a device resource name from values) in several templates: where one template's lookup knows several
names with their own classes (a MIG profile by default), values.yaml leaves dra.deviceClassName empty, and a template
whose lookup knows one name only must still fall back to that name's class. Renders are real."""

from __future__ import annotations

from pathlib import Path

from conftest import chart_with, deployment, dra_render, fix_chart


def _named(name: str) -> str:
    return deployment(
        name,
        f"""\
      containers:
      - name: {name}
        image: {name}
        resources:
          limits:
            {{{{ .Values.{name}.gpu.type }}}}: {{{{ .Values.{name}.gpu.count }}}}
""",
    )


def test_a_name_lookup_of_one_resource_keeps_its_class_beside_one_of_several(tmp_path: Path) -> None:
    """nvidia-playground with whole GPUs everywhere (its no-MIG values): the templates whose values name a MIG profile
    by default look the class up by name, so values.yaml leaves dra.deviceClassName empty; the one whose lookup knows
    only nvidia.com/gpu read that empty value bare, and its claim template had no device class (was: not proven)."""
    values = (
        "notebook:\n  gpu: {type: nvidia.com/mig-1g.10gb, count: 1}\nserver:\n  gpu: {type: nvidia.com/gpu, count: 1}\n"
    )
    files = {
        "templates/notebook.yaml": _named("notebook"),
        "templates/server.yaml": _named("server"),
        "values.yaml": values,
    }
    chart = chart_with(tmp_path, "pg", files)
    whole = tmp_path / "whole.yaml"
    whole.write_text("notebook:\n  gpu: {type: nvidia.com/gpu}\nserver:\n  gpu: {count: 2}\n")
    fix_chart(chart, values=(whole,))
    docs, counts, _ = dra_render(chart, whole)
    classes = {
        d["metadata"]["name"].rsplit("-", 1)[0]: d["spec"]["spec"]["devices"]["requests"][0]["exactly"][
            "deviceClassName"
        ]
        for d in docs
        if d["kind"] == "ResourceClaimTemplate"
    }
    assert classes == {"notebook": "gpu.nvidia.com", "server": "gpu.nvidia.com"}
    assert sorted(counts.values()) == [1, 2]
