"""Hostile inputs of the fourteenth sweep (issue 11's checker): each beside good files, which are still migrated,
while the bad one is named with file:line and left as it was; lint says what fix does."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, chart_with, run_dramigrate

LONG = "9" * 5000  # past Python's int-string limit (4300 digits)
COUNTED = ONE_GPU_POD.format(name="{{ .Release.Name }}").replace("gpu: 1", "gpu: {{ .Values.gpus }}")


@pytest.mark.parametrize("given", [False, True], ids=["chart values", "-f file"])
def test_a_long_integer_in_a_values_file_keeps_the_lines_of_its_keys(tmp_path: Path, given: bool) -> None:
    """One unused 5000-digit number made the values file unreadable for locations: the count was said to be set at
    `values:0`, or, with `-f`, at the line of the same key in the chart's own values.yaml (which sets another)."""
    chart_with(tmp_path, "app", {"templates/pod.yaml": COUNTED, "values.yaml": f"x: 1\ngpus: 1\nz: {LONG}\n"})
    args = ["lint", "app"]
    if given:
        (tmp_path / "mine.yaml").write_text(f"a: 2\nb: {LONG}\ngpus: 3\n")
        args += ["-f", "mine.yaml"]

    code, out, err = run_dramigrate(args, cwd=tmp_path)

    assert code == 1, out + err
    where = "mine.yaml:3: gpus: 3" if given else "app/values.yaml:2: gpus: 1"
    assert f"related: {where} sets this device count" in out + err, out + err
    assert "values:0" not in out + err
