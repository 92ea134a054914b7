"""Pattern D with the resource name from values: z2jh's `jupyterhub.singleuser.resources` helper writes each
`singleuser.extraResource.limits` entry (`{{ $key | quote }}: {{ $value | quote }}`), and the user-placeholder
StatefulSet includes it. fix puts the DRA branch inside the helper's `range`, for the device the render asked for
(nvidia.com/gpu), behind `dra.enabled` read with `dig` (z2jh embeds its values in the hub Secret, so a new key in
values.yaml would change that render). A copy of the corpus chart; skipped when ../shared is absent.
"""

from __future__ import annotations

import shutil
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import CORPUS, CORPUS_MISSING

from dramigrate.config import Settings
from dramigrate.helm.outcome import ChartOptions
from dramigrate.helm.render import RenderOptions, render_chart
from dramigrate.helm.run import run_chart, write_changes
from dramigrate.rules import load_rules
from dramigrate.versions import Target

VALUES = "ai-on-eks/infra/base/terraform/helm-values/jupyterhub-values.yaml"
PLACEHOLDERS = "scheduling.userPlaceholder.replicas=2"


def _copy(dest: Path) -> Path:
    root = dest / "jupyterhub"
    shutil.copytree(CORPUS / "zero-to-jupyterhub-k8s/jupyterhub", root)
    for path in [root, *root.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)  # the corpus is read-only
    return root


def _render(root: Path, values: Path, *sets: str) -> str:
    options = RenderOptions(values_files=(values,), set_values=sets, kube_version="1.34")
    return "".join(f"---\n# Source: {m.source}\n{m.text}" for m in render_chart(root, options))


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if not CORPUS.is_dir():
        pytest.skip(CORPUS_MISSING)
    tmp = tmp_path_factory.mktemp("z2jh-helper")
    original, root = _copy(tmp / "original"), _copy(tmp / "fixed")
    values = tmp / "values.yaml"
    values.write_bytes((CORPUS / VALUES).read_bytes())
    settings = Settings(kube_version="1.34")
    options = ChartOptions(values_files=(values,), kube_version="1.34")
    outcome = run_chart(root, options, load_rules(), settings, Target.parse("1.34"), "fix")
    assert outcome.proven, outcome.manual
    write_changes(outcome)
    return {"outcome": outcome, "root": root, "original": original, "values": values}


def test_placeholder_pods_claim_the_gpu_from_the_helper(hub: dict[str, Any]) -> None:
    assert {c.rel for c in hub["outcome"].changes} >= {
        "templates/_helpers.tpl",
        "templates/scheduling/user-placeholder/statefulset.yaml",
    }
    docs = [d for d in yaml.safe_load_all(_render(hub["root"], hub["values"], PLACEHOLDERS)) if isinstance(d, dict)]
    (sts,) = [d for d in docs if d["kind"] == "StatefulSet" and "placeholder" in d["metadata"]["name"]]
    pod = sts["spec"]["template"]["spec"]
    assert "nvidia.com/gpu" not in str(pod["containers"][0]["resources"])
    assert pod["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]
    (claim,) = pod["resourceClaims"]
    (template,) = [d for d in docs if d["kind"] == "ResourceClaimTemplate"]
    assert template["metadata"]["name"] == claim["resourceClaimTemplateName"]
    assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 1


def test_switch_off_renders_byte_identical(hub: dict[str, Any]) -> None:
    off = ("dra.enabled=false", PLACEHOLDERS)
    # the version bump is the one intended difference: it shows in the chart labels
    shutil.copy(hub["root"] / "Chart.yaml", hub["original"] / "Chart.yaml")
    rendered = _render(hub["root"], hub["values"], *off).splitlines()
    # z2jh generates random secrets (randAlphaNum): lines that differ between two renders of the original are masked
    first, second = (_render(hub["original"], hub["values"], *off).splitlines() for _ in range(2))
    assert len(rendered) == len(first)
    changed = [new for new, a, b in zip(rendered, first, second, strict=True) if a == b and new != a]
    assert changed == []
    assert '"nvidia.com/gpu": "1"' in {line.strip() for line in rendered}
