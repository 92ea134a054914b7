"""The pass-through (pattern B) in a pod that writes `tolerations:` twice (scubbo's jellyfin): a literal list, and
below it `{{- with .Values.tolerations }}` a second key, a duplicate rendered only where the values set a list (YAML
readers then take the second). The DRA toleration went into neither, so with the DRA values the pod lacked the
`nvidia.com/gpu` toleration the manifest migration adds, and fix refused the chart. Now it joins the literal list,
and the values list inside its `with`. Renders are real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with, deployment, dramigrate_in_process, fix_chart, with_original

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
    code, migrated, err = dramigrate_in_process(["fix", "-"], stdin=_render(original, ()))
    assert code == 0, err
    assert _keys(_render(chart, dra)) == _keys(migrated) == ["dedicated", "nvidia.com/gpu"]
    # with a list of the user's, the second key (the one YAML readers keep) has the toleration too
    assert _keys(_render(chart, (*dra, mine))) == ["team", "nvidia.com/gpu"]
    assert _render(chart, (mine,)) == _render(original, (mine,))  # without the DRA values, as before


def _helm_template(chart: Path, values: tuple[Path, ...]) -> str:
    """The stream as `helm template` prints it: each manifest after `---` and its `# Source:` line."""
    return "".join(
        f"---\n# Source: {m.source}\n{m.text}\n" for m in render_chart(chart, RenderOptions(values_files=values))
    )


def test_fix_of_the_piped_render_reads_the_repeated_key_as_the_proof_does(tmp_path: Path) -> None:
    """With a user's list the render writes `tolerations:` twice. The chart's proof reads that render as Helm does
    (the last key wins) and proves the DRA render equal to its manifest migration; `helm template | dramigrate fix -`,
    the manifest migration a user runs to check it, refused the same render (bad input, duplicate key, exit 2), so
    the proof and the migration it names could not be compared. Both read it one way now; a plain manifest that
    repeats a key (no Helm `# Source:` lines) is still refused, as kubectl refuses it."""
    files = {"values.yaml": VALUES, "templates/media.yaml": TEMPLATE}
    chart, original = chart_with(tmp_path / "fixed", "media", files), chart_with(tmp_path / "original", "media", files)
    fix_chart(chart)
    mine = tmp_path / "mine.yaml"
    mine.write_text("tolerations: [{key: team, operator: Exists}]\n")
    stream = _helm_template(original, (mine,))
    assert stream.count("      tolerations:\n") == 2  # the render repeats the key

    code, migrated, err = dramigrate_in_process(["fix", "-"], stdin=stream)
    assert code == 0, err
    assert (
        _keys(migrated)
        == _keys(_render(chart, (*with_original(chart / "values-dra.yaml"), mine)))
        == [
            "team",
            "nvidia.com/gpu",
        ]
    )
    repeat = stream.splitlines().index("      tolerations:", stream.splitlines().index("      tolerations:") + 1) + 1
    assert f"-:{repeat}:" in err and "chart-duplicate-key" in err, err

    plain = "\n".join(line for line in stream.splitlines() if not line.startswith("# Source:")) + "\n"
    code, out, err = dramigrate_in_process(["fix", "-"], stdin=plain)
    assert code == 2 and out == "" and "duplicate key: tolerations" in err, err
