"""Issue 9 B8: a plain init container gets exactly the devices it asked for.

The kubelet's device manager gave a plain init container exactly its count, reusing the app containers' devices.
A container claim entry with `request:` gets the whole request (core/v1 types.go), so an init container that
names an app container's 2-device request sees 2 devices where it asked for 1. dramigrate splits the app request
where the init container's share ends (e.g. `gpu-a: 1`, `gpu-b: 1`): the app container names every piece, the
init container exactly its share, and the pod's device total stays what the device plugin gave it.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from dramigrate.config import Settings
from dramigrate.migrate import Job, run_file
from dramigrate.rules import load_rules
from dramigrate.versions import Target

RULES = load_rules()


def pod(inits: list[int], apps: list[int], sidecar_first: int = 0) -> str:
    def ctr(name: str, n: int, sidecar: bool = False) -> dict[str, Any]:
        c: dict[str, Any] = {"name": name, "image": "i:1", "resources": {"limits": {"nvidia.com/gpu": n}}}
        if sidecar:
            c["restartPolicy"] = "Always"
        return c

    spec = {
        "initContainers": [ctr(f"side-{i}", n, True) for i, n in enumerate([sidecar_first] if sidecar_first else [])]
        + [ctr(f"init-{i}", n) for i, n in enumerate(inits)],
        "containers": [ctr(f"app-{i}", n) for i, n in enumerate(apps)],
    }
    return yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec})


def seen(text: str) -> tuple[dict[str, int], int]:
    """(devices each container sees, devices the pod gets) after fix."""
    result = run_file(Job("p.yaml", text.encode(), True), RULES, Settings(), Target.parse("1.36"))
    assert result.error is None and result.rewritten is not None
    docs = [d for d in yaml.safe_load_all(result.rewritten) if d]
    (rct,) = [d for d in docs if d["kind"] == "ResourceClaimTemplate"]
    counts = {r["name"]: r["exactly"]["count"] for r in rct["spec"]["spec"]["devices"]["requests"]}
    spec = next(d for d in docs if d["kind"] == "Pod")["spec"]
    out = {}
    for c in spec.get("initContainers", []) + spec["containers"]:
        entries = c["resources"]["claims"]
        names = [e["request"] for e in entries] if all("request" in e for e in entries) else list(counts)
        assert len(names) == len(set(names)), f"{c['name']} names a request twice"
        out[c["name"]] = sum(counts[n] for n in names)
    return out, sum(counts.values())


@pytest.mark.parametrize(
    ("inits", "apps", "sidecar", "total"),
    [
        pytest.param([1], [2], 0, 2, id="review-case-02"),
        pytest.param([1, 3], [4], 0, 4, id="two-shares-of-one-request"),
        pytest.param([3], [2, 2], 0, 4, id="a-share-across-two-app-requests"),
        pytest.param([3], [2], 0, 3, id="init-larger-than-the-app"),
        pytest.param([1, 3], [1], 1, 4, id="a-sidecar-started-first-is-still-running"),
    ],
)
def test_each_init_container_sees_exactly_its_count(
    inits: list[int], apps: list[int], sidecar: int, total: int
) -> None:
    by_container, pod_total = seen(pod(inits, apps, sidecar))
    want = {f"init-{i}": n for i, n in enumerate(inits)} | {f"app-{i}": n for i, n in enumerate(apps)}
    if sidecar:
        want["side-0"] = sidecar
    assert by_container == want
    assert pod_total == total, "the pod gets the larger of its biggest init share and the app sum, as before"


def test_the_chart_helper_splits_like_the_core(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A chart rewritten with _dramigrate.tpl renders the same pieces and claim entries as `fix` writes."""
    from dramigrate.helm.engine import claims_text, helper_text, wrap_source
    from dramigrate.helm.prove import first_difference, objects
    from dramigrate.helm.render import RenderOptions, render_chart

    text = pod([1, 3], [2, 2], 1)
    chart = tmp_path / "c"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: c\nversion: 0.1.0\n")
    (chart / "templates" / "w.yaml").write_text(wrap_source("c", "templates/w.yaml", text))
    (chart / "templates" / "_dramigrate.tpl").write_text(helper_text("c", RULES, Settings()))
    (chart / "templates" / "dramigrate-resourceclaimtemplates.yaml").write_text(claims_text("c", ["templates/w.yaml"]))
    core = run_file(Job("w.yaml", text.encode(), True), RULES, Settings(), Target.parse("1.36"))
    assert core.rewritten is not None and "gpu-a\n" in core.rewritten, "the case splits a request"
    rendered = "".join("---\n" + m.text for m in render_chart(chart, RenderOptions()))
    assert first_difference(objects(core.rewritten), objects(rendered)) == ""
