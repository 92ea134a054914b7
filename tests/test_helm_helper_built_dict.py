"""A container whose resources map is read out of a dict a named helper builds from values (groundx's services:
`$svcData := include (printf "svc.%s.settings" $entry) $ | fromYaml`, then `$rs := get $svcData "resources"`). The
pass-through follows the helper to the values it reads: each define that copies a device map into the dict copies
its siblings beside it (`resourceClaims`, the toleration), the pod renders them from the dict, and values-dra.yaml
sets them beside the map; proven by (L) and (D). Renders are real."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml
from conftest import chart_with
from test_helm_manual_reasons import NAMED_SETTINGS, NAMED_TEMPLATE, NAMED_TOLERATED, NODE_TOLERATIONS

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

VALUES = "ranker:\n  resources:\n    limits:\n      nvidia.com/gpu: 2\napi:\n  resources:\n    limits:\n      cpu: 1\n"


def _texts(chart: Path, files: tuple[Path, ...] = ()) -> list[tuple[str, str]]:
    return [(m.source, m.text) for m in render_chart(chart, RenderOptions(values_files=files))]


def _docs(chart: Path, files: tuple[Path, ...] = ()) -> dict[tuple[str, str], dict[str, Any]]:
    return {(d["kind"], d["metadata"]["name"]): d for _, text in _texts(chart, files) for d in yaml.safe_load_all(text)}


def test_a_map_read_from_a_helper_built_dict_gets_the_pass_through_there(tmp_path: Path) -> None:
    """Was manual work ("the container's resources map $rs is the `resources` of $svcData, a dict a named helper
    builds ..., not a values map the template reads"), with steps by hand."""
    files = {"values.yaml": VALUES, "templates/_settings.tpl": NAMED_SETTINGS, "templates/app.yaml": NAMED_TEMPLATE}
    original = chart_with(tmp_path / "original", "services", files)
    chart = shutil.copytree(original, tmp_path / "fixed" / "services")
    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    assert _texts(chart) == _texts(original)  # the values as they were: byte-identical
    docs = _docs(chart, (chart / "values-dra.yaml",))
    ranker, api = (docs["Deployment", name]["spec"]["template"]["spec"] for name in ("ranker", "api"))
    assert ranker["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}
    (claim,) = ranker["resourceClaims"]
    spec = docs["ResourceClaimTemplate", claim["resourceClaimTemplateName"]]["spec"]["spec"]
    assert spec["devices"]["requests"][0]["exactly"]["count"] == 2
    assert [t["key"] for t in ranker["tolerations"]] == ["nvidia.com/gpu"]
    # the CPU service, whose map asks for no device, is as it was
    assert api == _docs(original)["Deployment", "api"]["spec"]["template"]["spec"]


def test_tolerations_a_helper_call_writes_keep_what_it_writes_beside_the_device_toleration(tmp_path: Path) -> None:
    """groundx's pods take their tolerations from one helper call: the dict's list, else their node's. The toleration
    the migration adds goes under its own values key (`resourceTolerations`), which the template joins to what the
    call writes: the node's toleration stays, and so does a list of the user's own (was manual work: "the pod's
    tolerations are written at line N ..., so a DRA values file has no key to add it that keeps what that line
    writes"; the list carried whole in the DRA values would have dropped the node's)."""
    settings = NAMED_SETTINGS.replace(
        '{{- $cfg := dict "name" "ranker" -}}\n',
        '{{- $cfg := dict "name" "ranker" -}}\n{{- if $in.tolerations -}}\n'
        '  {{- $_ := set $cfg "tolerations" $in.tolerations -}}\n{{- end -}}\n',
    )
    files = {
        "values.yaml": VALUES.replace("ranker:\n", "ranker:\n  tolerations: []\n"),
        "templates/_settings.tpl": settings + NODE_TOLERATIONS,
        "templates/app.yaml": NAMED_TOLERATED,
    }
    original = chart_with(tmp_path / "original", "services", files)
    chart = shutil.copytree(original, tmp_path / "fixed" / "services")
    outcome = run_chart(chart, ChartOptions(), load_rules(), Settings(), Target.parse("1.36"), "fix")
    assert outcome.proven, outcome.report()
    write_changes(outcome)
    own = tmp_path / "own.yaml"
    own.write_text("ranker:\n  tolerations:\n    - {key: dedicated, operator: Exists, effect: NoSchedule}\n")
    for files_given in ((), (own,)):
        assert _texts(chart, files_given) == _texts(original, files_given)  # the values as they were
    dra = chart / "values-dra.yaml"
    for files_given, first in (((dra,), "node"), ((dra, own), "dedicated")):
        ranker = _docs(chart, files_given)["Deployment", "ranker"]["spec"]["template"]["spec"]
        assert [t["key"] for t in ranker["tolerations"]] == [first, "nvidia.com/gpu"]
        assert ranker["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}
