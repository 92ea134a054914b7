"""Every plain manifest of ../shared/corpus through the installed CLI: each device request is reported, and
`fix` turns the fixable ones into valid DRA objects that keep the pod's device total, idempotently.

One subprocess per command over the whole copied tree (lint, fix, lint again, fix again); the per-file
tests only read the results.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from conftest import CORPUS, CORPUS_MISSING, run_dramigrate

REPORTED = {
    "legacy-device-request",
    "invalid-count",
    "shared-device",
    "report-only-kind",
    "unknown-kind",
    "unknown-resource",
    "kustomize-patch",
}
CORE_KINDS = {"Pod", "Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob", "ReplicaSet"}
CORE_GROUPS = {"v1", "apps/v1", "batch/v1"}
KSERVE_SINGLE = {
    "model",
    "pytorch",
    "tensorflow",
    "sklearn",
    "xgboost",
    "onnx",
    "triton",
    "pmml",
    "lightgbm",
    "paddle",
    "huggingface",
    "alibi",
    "art",
}
VERSIONS = ("1.34", "1.36")


def _chart_dirs(root: Path) -> list[Path]:
    return [p.parent for p in root.rglob("Chart.yaml")]


def _in_chart(rel: str, charts: list[Path]) -> bool:
    parents = Path(rel).parents
    return any(c in parents for c in charts)


def _corpus_files() -> list[str]:
    if not (CORPUS / "requests.json").is_file():
        return []
    requests = json.loads((CORPUS / "requests.json").read_text(encoding="utf-8"))
    charts = [c.relative_to(CORPUS) for c in _chart_dirs(CORPUS)]
    return sorted(
        rel
        for rel, info in requests.items()
        if info["requests"] and not info["parse_error"] and not _in_chart(rel, charts)
    )


FILES = _corpus_files()
PARAMS = [pytest.param(rel, id=rel) for rel in FILES] or [
    pytest.param("", id="no-corpus", marks=pytest.mark.skip(reason=CORPUS_MISSING))
]


# -- one run over the copied tree ------------------------------------------------------------------------


@dataclass
class CorpusRun:
    root: Path
    requests: dict[str, Any]
    before: dict[str, bytes]
    after: dict[str, bytes]
    again: dict[str, bytes]
    lint: dict[str, Any]
    fix: dict[str, Any]
    relint: dict[str, Any]
    refix: dict[str, Any]
    fix_code: int
    refix_code: int
    changed: list[str] = field(default_factory=list)

    def findings(self, report: dict[str, Any], rel: str) -> list[dict[str, Any]]:
        return [f for f in report["findings"] if os.path.normpath(f["file"]) == rel]


def _copy_plain(corpus: Path, dest: Path) -> None:
    charts = _chart_dirs(corpus)
    for folder, dirs, names in os.walk(corpus):
        here = Path(folder)
        if here in charts:
            dirs[:] = []
            continue
        for name in names:
            src = here / name
            target = dest / src.relative_to(corpus)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, target)
            target.chmod(target.stat().st_mode | stat.S_IWUSR)


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.suffix in (".yaml", ".yml")}


def _json_cli(args: list[str], cwd: Path, report: Path | None = None) -> tuple[int, dict[str, Any], str]:
    if report is not None:
        args = [*args, "--output", str(report)]
    code, out, err = run_dramigrate(args, cwd=cwd)
    assert "Traceback" not in err, err[-3000:]
    text = report.read_text(encoding="utf-8") if report is not None else out
    try:
        return code, json.loads(text), err
    except json.JSONDecodeError:
        pytest.fail(f"dramigrate {' '.join(args)} did not write JSON (exit {code}):\n{text[:2000]}\n{err[-2000:]}")


@pytest.fixture(scope="module")
def run(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> CorpusRun:
    root = tmp_path_factory.mktemp("corpus") / "tree"
    reports = tmp_path_factory.mktemp("reports")
    _copy_plain(corpus, root)
    requests = json.loads((corpus / "requests.json").read_text(encoding="utf-8"))
    before = _snapshot(root)
    _, lint, _ = _json_cli(["lint", "--format", "json", "."], root)
    fix_code, fix, _ = _json_cli(["fix", "--format", "json", "."], root, reports / "fix.json")
    after = _snapshot(root)
    _, relint, _ = _json_cli(["lint", "--format", "json", "."], root)
    changed = [rel for rel in after if after[rel] != before.get(rel)]
    refix_code, refix = 0, {"findings": []}
    if changed:
        refix_code, refix, _ = _json_cli(["fix", "--format", "json", *changed], root, reports / "refix.json")
    return CorpusRun(
        root, requests, before, after, _snapshot(root), lint, fix, relint, refix, fix_code, refix_code, changed
    )


# -- helpers over parsed documents -----------------------------------------------------------------------


def _docs(text: bytes) -> list[Any]:
    return list(yaml.safe_load_all(text.decode("utf-8-sig")))


def _count(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _pod_specs(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    """Every pod-spec-like mapping (a `containers` list, or a KServe component) with its path."""
    out = []
    if isinstance(node, dict):
        if isinstance(node.get("containers"), list) or any(isinstance(node.get(k), dict) for k in KSERVE_SINGLE):
            out.append((path, node))
        for k, v in node.items():
            out.extend(_pod_specs(v, (*path, k)))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out.extend(_pod_specs(v, (*path, i)))
    return out


def _at(node: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        try:
            node = node[p]
        except (KeyError, IndexError, TypeError):
            return None
    return node


def _containers(spec: dict[str, Any]) -> list[tuple[str, bool, Any]]:
    """(slot, plain init container?, container) for every container-like mapping of a pod spec."""
    out = []
    for key in ("initContainers", "containers"):
        for i, c in enumerate(spec.get(key) or []):
            if isinstance(c, dict):
                plain_init = key == "initContainers" and c.get("restartPolicy") != "Always"
                out.append((f"{key}[{i}]", plain_init, c))
    for key in sorted(KSERVE_SINGLE):
        if isinstance(spec.get(key), dict):
            out.append((key, False, spec[key]))
    return out


def _resources(c: Any) -> dict[str, Any]:
    res = c.get("resources") if isinstance(c, dict) else None
    merged: dict[str, Any] = {}
    for section in ("requests", "limits"):  # limits win, as for the device plugin
        values = res.get(section) if isinstance(res, dict) else None
        if isinstance(values, dict):
            merged.update(values)
    return merged


def removed_devices(before: dict[str, Any], after: dict[str, Any]) -> dict[str, int]:
    """Per resource the pod's device total that fix removed: max(app + sidecar sum, biggest plain init)."""
    after_by_slot = {slot: c for slot, _, c in _containers(after)}
    app: dict[str, int] = {}
    init: dict[str, int] = {}
    for slot, plain_init, c in _containers(before):
        gone = set(_resources(c)) - set(_resources(after_by_slot.get(slot)))
        for res in gone:
            n = _count(_resources(c)[res])
            if n is None:
                continue
            if plain_init:
                init[res] = max(init.get(res, 0), n)
            else:
                app[res] = app.get(res, 0) + n
    return {r: max(app.get(r, 0), init.get(r, 0)) for r in set(app) | set(init)}


def template_requests(template: dict[str, Any]) -> list[dict[str, Any]]:
    """Each request of a ResourceClaimTemplate as {deviceClassName, count}, for v1/v1beta2 and flat v1beta1."""
    out = []
    for r in template["spec"]["spec"]["devices"].get("requests") or []:
        exact = r.get("exactly") or (r if "deviceClassName" in r else None)
        if exact is None and r.get("firstAvailable"):
            exact = r["firstAvailable"][0]
        assert exact is not None, f"request without exactly/firstAvailable: {r}"
        mode = exact.get("allocationMode", "ExactCount")
        assert mode == "ExactCount", f"request {r['name']} is not ExactCount: {r}"
        out.append({"deviceClassName": exact["deviceClassName"], "count": exact.get("count", 1)})
    return out


def new_claim_templates(spec_before: dict[str, Any], spec_after: dict[str, Any]) -> list[str]:
    old = {c.get("name") for c in spec_before.get("resourceClaims") or [] if isinstance(c, dict)}
    return [
        c["resourceClaimTemplateName"]
        for c in spec_after.get("resourceClaims") or []
        if isinstance(c, dict) and c.get("name") not in old and c.get("resourceClaimTemplateName")
    ]


def tolerated(spec: dict[str, Any], resource: str) -> bool:
    for t in spec.get("tolerations") or []:
        if not isinstance(t, dict) or t.get("effect") not in (None, "", "NoSchedule"):
            continue
        if t.get("operator") == "Exists" and t.get("key") in (None, "", resource):
            return True
    return False


def validation_error(obj: dict[str, Any], version: str) -> str | None:
    try:
        kubernetes_validate.validate(obj, version, strict=True)
    except (kubernetes_validate.ValidationError, kubernetes_validate.SchemaNotFoundError) as exc:
        return str(exc).splitlines()[0]
    return None


def wrapped(spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "x"}, "template": {"spec": spec}}


def _is_rct(doc: Any) -> bool:
    return (
        isinstance(doc, dict)
        and doc.get("kind") == "ResourceClaimTemplate"
        and str(doc.get("apiVersion", "")).startswith("resource.k8s.io/")
    )


def _key(doc: dict[str, Any]) -> tuple[str, str]:
    meta = doc.get("metadata") or {}
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))


# -- the tests -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("rel", PARAMS)
def test_every_request_is_reported(run: CorpusRun, rel: str) -> None:
    info = run.requests[rel]
    findings = run.findings(run.lint, rel)
    bad = [e for e in run.lint["errors"] if os.path.normpath(e["file"]) == rel]
    if bad:  # bad input (e.g. a workload with only generateName) is reported with file:line as a whole
        assert all(e["line"] >= 1 and e["message"] for e in bad), bad
        return
    seen = {f["resource"] for f in findings if f["rule"] in REPORTED}
    missing = sorted({r["resource"] for r in info["requests"]} - seen)
    assert not missing, (
        f"{rel}: lint reports nothing for {missing}; requests.json lists "
        f"{[r for r in info['requests'] if r['resource'] in missing]}"
    )
    for f in findings:
        assert f["line"] >= 1 and f["column"] >= 1, f


@pytest.mark.parametrize("rel", PARAMS)
def test_fix_rewrites_into_valid_objects(run: CorpusRun, rel: str) -> None:
    before, after = run.before[rel], run.after[rel]
    lint = run.findings(run.lint, rel)
    legacy = [f for f in lint if f["rule"] == "legacy-device-request"]
    if not any(f["fixable"] for f in lint):
        assert after == before, f"{rel}: nothing was fixable, yet fix rewrote the file"
        return
    still = [f for f in run.findings(run.relint, rel) if f["rule"] == "legacy-device-request"]
    assert not still, f"{rel}: after fix, lint still finds {[(f['line'], f['resource']) for f in still]}"
    assert after != before or not legacy, f"{rel}: lint found {len(legacy)} legacy requests, fix did not rewrite"

    docs_before = _docs(before)
    docs_after = _docs(after)  # the rewritten file parses
    old_rcts = {_key(d) for d in docs_before if _is_rct(d)}
    new_rcts = {_key(d): d for d in docs_after if _is_rct(d) and _key(d) not in old_rcts}
    problems: list[str] = []
    for key, rct in new_rcts.items():
        for version in VERSIONS:
            if (err := validation_error(rct, version)) is not None:
                problems.append(f"ResourceClaimTemplate {key} invalid for {version}: {err}")
    # The documents the file had keep their order; the new templates come in between.
    kept = [d for d in docs_after if not (_is_rct(d) and _key(d) in new_rcts)]
    assert len(kept) == len(docs_before), f"{rel}: documents lost or added besides new ResourceClaimTemplates"
    for doc_b, doc_a in zip(docs_before, kept, strict=True):
        if doc_b == doc_a or not isinstance(doc_b, dict):
            continue
        ns = str((doc_a.get("metadata") or {}).get("namespace") or "")
        core = doc_b.get("kind") in CORE_KINDS and doc_b.get("apiVersion") in CORE_GROUPS
        for path, spec_b in _pod_specs(doc_b):
            spec_a = _at(doc_a, path)
            if spec_a == spec_b:
                continue
            where = f"{doc_b.get('kind')}/{(doc_b.get('metadata') or {}).get('name')} {'.'.join(map(str, path))}"
            assert isinstance(spec_a, dict), f"{rel}: {where}: pod spec disappeared"
            removed = removed_devices(spec_b, spec_a)
            templates = [new_rcts.get((ns, n)) for n in new_claim_templates(spec_b, spec_a)]
            if None in templates:
                problems.append(f"{where}: references a ResourceClaimTemplate that is not in the file")
                continue
            got = sum(r["count"] for t in templates for r in template_requests(t))
            if got != sum(removed.values()):
                problems.append(f"{where}: removed devices {removed} (total {sum(removed.values())}), claims ask {got}")
            for res in removed:
                if not tolerated(spec_a, res):
                    problems.append(f"{where}: no explicit toleration {{key: {res}, operator: Exists}} added")
            if core:
                for version in VERSIONS:
                    was = validation_error(wrapped(spec_b), version)
                    now = validation_error(wrapped(spec_a), version)
                    if was is None and now is not None:
                        problems.append(f"{where}: rewritten pod template invalid for {version}: {now}")
    assert not problems, f"{rel}:\n  " + "\n  ".join(problems)


def test_fix_twice_changes_nothing(run: CorpusRun) -> None:
    if not run.changed:
        pytest.skip("fix changed nothing in the corpus")
    differ = [rel for rel in run.changed if run.again[rel] != run.after[rel]]
    assert not differ, f"a second fix rewrote {differ}"
    assert run.refix_code != 2, f"a second fix over the rewritten files reports bad input: {run.refix.get('errors')}"
    again = [f for f in run.refix["findings"] if f["fixed"]]
    assert not again, f"a second fix still fixes {[(f['file'], f['line'], f['rule']) for f in again][:10]}"


def test_fix_reports_and_exit_code(run: CorpusRun) -> None:
    """Bad input in the tree (the corpus has unparseable files) is exit 2, and the rest is still fixed."""
    assert run.changed, "fix changed no corpus file"
    assert run.fix_code == (2 if run.fix["errors"] else 0 if not run.fix["summary"]["errors"] else 1)
    assert run.fix["summary"]["filesChanged"] == len(run.changed)
    fixed = {os.path.normpath(f["file"]) for f in run.fix["findings"] if f["fixed"]}
    assert fixed <= set(run.changed), f"findings flagged fixed in files fix did not write: {fixed - set(run.changed)}"
