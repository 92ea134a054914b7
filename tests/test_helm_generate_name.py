"""A chart workload with only `metadata.generateName` (a training Job a pipeline creates again and again). The
manifest migration names its claim template from the prefix (`train-` -> `train-<hash>`); the chart rewrites did not
take it: the engine's template skipped objects without a name (its render kept the device-plugin request, so fix said
manual work), and the idiomatic rewrite said 'the workload's metadata.name is not one line'. Both now migrate it as
`fix -` does and prove it. Real renders."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from conftest import chart_with, dramigrate_in_process, run_dramigrate

from dramigrate.helm.prove import canonical_claims, first_difference, objects
from dramigrate.helm.render import RenderOptions, render_chart

JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  generateName: {{ .Release.Name }}-train-
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: train
          image: train:1
          resources:
            limits:
              nvidia.com/gpu: {{ .Values.gpus }}
"""
FILES = {"values.yaml": "gpus: 1\n", "templates/job.yaml": JOB}


def _render(chart: Path, sets: tuple[str, ...] = ()) -> str:
    options = RenderOptions(set_values=sets, kube_version="1.34")
    return "".join(f"---\n{m.text}\n" for m in render_chart(chart, options))


@pytest.mark.parametrize("style", ["idiomatic", "engine"])
def test_a_generate_name_workload_is_migrated_as_the_manifest_migration_does(tmp_path: Path, style: str) -> None:
    chart = chart_with(tmp_path / "fixed", "job", FILES)
    original = chart_with(tmp_path / "original", "job", FILES)
    code, _, err = run_dramigrate(["fix", "--chart-style", style, str(chart)])
    assert code == 0, err
    assert "rewrite proven" in err, err
    for sets in ((), ("gpus=4",)):
        code, migrated, err = dramigrate_in_process(["fix", "-"], stdin=_render(original, sets))
        assert code == 0, err
        rendered = _render(chart, sets)
        (claims,) = [d for d in yaml.safe_load_all(rendered) if d and d["kind"] == "ResourceClaimTemplate"]
        assert re.fullmatch(r"release-name-train-[0-9a-f]{8}", claims["metadata"]["name"])  # named from the prefix
        # the hash is of the spec as each writes it (the idiomatic rewrite's text, the core's JSON): compared by content
        expected, got = canonical_claims(objects(migrated)), canonical_claims(objects(rendered))
        assert not first_difference(expected, got), first_difference(expected, got)
