"""Pattern E with the limit and the request each named by a values key of its own (OpenVINO's model server chart:
`{{ .Values.server.resources.limits.device }}: "{{ ...limits.device_quantity }}"` under `if` that name, the same from
`.requests`, beside the container's cpu and memory). Was: manual work, 'the pod's device keys are not all the one
resource name from values'. Now the pattern-E rewrite looks the claim up by the limit's name (the request's where
the limit does not render), proven; a request naming another device than its limit fails the render with the switch
on. Renders are real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import chart_with, deployment, dra_render, fix_chart

from dramigrate.helm.render import HelmError

SERVER = deployment(
    "{{ .Release.Name }}-server",
    """\
      containers:
      - name: server
        image: server:1
        resources:
          limits:
{{ if (((.Values.server.resources).limits).cpu) }}
            cpu: "{{ .Values.server.resources.limits.cpu }}"
{{- end }}
{{ if (((.Values.server.resources).limits).device) }}
            {{ .Values.server.resources.limits.device }}: "{{ .Values.server.resources.limits.device_quantity }}"
{{- end }}
          requests:
{{ if (((.Values.server.resources).requests).cpu) }}
            cpu: "{{ .Values.server.resources.requests.cpu }}"
{{- end }}
{{ if (((.Values.server.resources).requests).device) }}
            {{ .Values.server.resources.requests.device }}: "{{ .Values.server.resources.requests.device_quantity }}"
{{- end }}
""",
)
GPU = 'server:\n  resources:\n    limits:\n      cpu: 2\n      device: gpu.intel.com/i915\n      device_quantity: "1"\n'
BOTH = GPU + '    requests:\n      device: gpu.intel.com/i915\n      device_quantity: "1"\n'


def _chart(tmp_path: Path, values: str, *sets: str) -> tuple[Path, Any]:
    """The chart (its values.yaml without resources, as OpenVINO ships it) fixed with `-f gpu.yaml`."""
    chart = chart_with(tmp_path, "server", {"templates/server.yaml": SERVER, "values.yaml": "server:\n  replicas: 1\n"})
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text(values + "".join(sets))
    return gpu, fix_chart(chart, values=(gpu,))


def _on(chart: Path, values: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The claim's first request and the pod, rendered with the DRA switch on."""
    given = chart.parent / "on.yaml"
    given.write_text("dra: {enabled: true}\n" + values)
    docs, _, pods = dra_render(chart, given)
    claims = [d for d in docs if d["kind"] == "ResourceClaimTemplate"]
    request = claims[0]["spec"]["spec"]["devices"]["requests"][0]["exactly"] if claims else {}
    return request, pods["release-name-server"]


@pytest.mark.parametrize("values", [GPU, BOTH], ids=["limit", "request-and-limit"])
def test_a_device_named_in_limits_and_requests_is_proven(tmp_path: Path, values: str) -> None:
    gpu, outcome = _chart(tmp_path, values)
    chart = tmp_path / "server"
    if values == BOTH:  # the name changes in both sections at once, as the API server needs
        renamed = 'server.resources.limits.device changed to "gpu.intel.com/xe" (and server.resources.requests.device)'
        assert renamed in outcome.checked, outcome.checked
    request, pod = _on(chart, values)
    assert (request["deviceClassName"], request["count"]) == ("gpu.intel.com", 1), request
    assert "'i915'" in request["selectors"][0]["cel"]["expression"]
    resources = pod["containers"][0]["resources"]
    assert resources["claims"] == [{"name": "gpu"}] and resources["limits"] == {"cpu": "2"}, resources
    assert [t["key"] for t in pod["tolerations"]] == ["gpu.intel.com/i915"]
    other = values.replace("i915", "xe").replace('"1"', "2")  # another device of its pack, looked up by name
    request, pod = _on(chart, other)
    assert "'xe'" in request["selectors"][0]["cel"]["expression"] and request["count"] == 2, request
    assert [t["key"] for t in pod["tolerations"]] == ["gpu.intel.com/xe"]
    _, pod = _on(chart, "")  # no device: no claim
    assert "resourceClaims" not in pod and "tolerations" not in pod, pod


def test_a_request_naming_another_device_than_its_limit_fails_with_the_switch_on(tmp_path: Path) -> None:
    _chart(tmp_path, BOTH)
    chart = tmp_path / "server"
    with pytest.raises(HelmError, match=r"request names \(server.resources.requests.device\) differs from the one"):
        _on(chart, GPU + '    requests:\n      device: gpu.intel.com/xe\n      device_quantity: "1"\n')
    off = chart.parent / "off.yaml"
    off.write_text("dra: {enabled: false}\n" + BOTH)
    _, _, pods = dra_render(chart, off)
    assert pods["release-name-server"]["containers"][0]["resources"]["requests"] == {"gpu.intel.com/i915": "1"}


def test_a_whole_number_count_in_a_request_and_limit_of_their_own_is_proven(tmp_path: Path) -> None:
    """A count given as a number (`--set ...device_quantity=2`, not the string "2"): switched off with 0, the key
    renders `"0"`, which the migration still tolerates; the DRA render kept the toleration only for a count the
    `or` of the request's and the limit's counts did not pass over (was: 'expected [...] tolerations, the rewritten
    chart has none')."""
    _, outcome = _chart(tmp_path, GPU.replace('device_quantity: "1"', "device_quantity: 2"))
    assert any("switched off with 0" in c for c in outcome.checked), outcome.checked
    _, pod = _on(tmp_path / "server", GPU.replace('device_quantity: "1"', "device_quantity: 0"))
    assert "resourceClaims" not in pod and [t["key"] for t in pod["tolerations"]] == ["gpu.intel.com/i915"], pod
