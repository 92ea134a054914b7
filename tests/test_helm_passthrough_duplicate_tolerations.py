"""The pass-through (pattern B) in a pod that writes `tolerations:` twice (scubbo's jellyfin): a literal list, and
below it `{{- with .Values.tolerations }}` a second key, a duplicate rendered only where the values set a list (YAML
readers then take the second). The DRA toleration went into neither, so with the DRA values the pod lacked the
`nvidia.com/gpu` toleration the manifest migration adds, and fix refused the chart. Now it joins the literal list,
and the values list inside its `with`. Renders are real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, deployment, fix_chart, run_dramigrate, with_original

from dramigrate.helm.render import RenderOptions, render_chart

TEMPLATE = deployment(
    "{{ .Release.Name }}-media",
    """\
      containers:
        - name: media
          image: media:1
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
      tolerations:
        - key: dedicated
          operator: Equal
          value: media
          effect: NoSchedule
      {{- with .Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
""",
)
VALUES = "resources:\n  limits:\n    nvidia.com/gpu: 1\ntolerations: []\n"


def _render(chart: Path, values: tuple[Path, ...]) -> str:
    return "".join(f"---\n{m.text}\n" for m in render_chart(chart, RenderOptions(values_files=values)))


def _keys(stream: str) -> list[Any]:
    (pod,) = [d["spec"]["template"]["spec"] for d in yaml.safe_load_all(stream) if d and d["kind"] == "Deployment"]
    return [t["key"] for t in pod.get("tolerations") or []]


def test_the_dra_toleration_joins_each_tolerations_key_the_pod_writes(tmp_path: Path) -> None:
    files = {"values.yaml": VALUES, "templates/media.yaml": TEMPLATE}
    chart, original = chart_with(tmp_path / "fixed", "media", files), chart_with(tmp_path / "original", "media", files)
    fix_chart(chart)  # was: not proven, "spec.template.spec.tolerations: expected [...], the rewritten chart has [...]"
    dra = with_original(chart / "values-dra.yaml")
    mine = tmp_path / "mine.yaml"
    mine.write_text("tolerations: [{key: team, operator: Exists}]\n")
    code, migrated, err = run_dramigrate(["fix", "-"], stdin=_render(original, ()))
    assert code == 0, err
    assert _keys(_render(chart, dra)) == _keys(migrated) == ["dedicated", "nvidia.com/gpu"]
    # with a list of the user's, the second key (the one YAML readers keep) has the toleration too
    assert _keys(_render(chart, (*dra, mine))) == ["team", "nvidia.com/gpu"]
    assert _render(chart, (mine,)) == _render(original, (mine,))  # without the DRA values, as before
