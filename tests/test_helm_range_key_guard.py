"""A container whose `requests:` and `limits:` each write the chart's own device key and then the keys of a values
map (`range $key, $value := .Values.devices`, arena's charts): with dra.enabled, a device resource in that map
fails the render by name, since the claim does not ask for it. One guard per map and container is enough: the
`limits:` range renders wherever the `requests:` one does, and the first guard fails the render (was: a 5-line
guard above each range, 10 lines more per container). Ranges in the two branches of an `if`/`else` keep one guard
each. Renders are real."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import chart_with, deployment, fix_chart

from dramigrate.helm.patterns import UNTAKEN
from dramigrate.helm.render import HelmError, RenderOptions, render_chart

SECTION = """\
            {section}:
              nvidia.com/gpu: {{{{ .Values.gpus }}}}
              {{{{- range $key, $value := .Values.devices }}}}
              {{{{ $key }}}}: {{{{ $value }}}}
              {{{{- end }}}}
"""
POD = """\
      containers:
        - name: main
          image: busybox
          resources:
"""
BRANCHED = """\
      containers:
        - name: main
          image: busybox
          resources:
            {{- if .Values.small }}
"""


def _chart(root: Path, branched: bool) -> Path:
    if branched:  # requests in the `if`, limits in the `else`: neither renders where the other does
        body = BRANCHED + SECTION.format(section="requests") + "            {{- else }}\n"
        body += SECTION.format(section="limits") + "            {{- end }}\n"
    else:
        body = POD + SECTION.format(section="requests") + SECTION.format(section="limits")
    return chart_with(
        root,
        "trainer",
        {
            "templates/deployment.yaml": deployment("{{ .Release.Name }}-trainer", body),
            "values.yaml": "gpus: 1\nsmall: false\ndevices: {}\n",
        },
    )


@pytest.mark.parametrize(("branched", "guards"), [(False, 1), (True, 2)])
def test_one_guard_per_map_where_one_range_renders_wherever_the_other_does(
    tmp_path: Path, branched: bool, guards: int
) -> None:
    chart = _chart(tmp_path, branched)
    fix_chart(chart)
    text = (chart / "templates/deployment.yaml").read_text()
    assert text.count(UNTAKEN) == guards, text
    for small in (["small=true"] if branched else []) + ["small=false"]:
        options = RenderOptions(set_values=("devices.amd\\.com/gpu=1", small))
        with pytest.raises(HelmError, match=UNTAKEN):
            render_chart(chart, options)
