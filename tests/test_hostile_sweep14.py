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


def _agree(tmp_path: Path, *targets: str) -> tuple[int, str]:
    """lint, diff and fix of targets give the same findings (as JSON) and the same exit code; (that code, lint's
    text report)."""
    import json

    text = tmp_path.with_name(tmp_path.name + "-lint.txt")  # lint's text report, from the run that writes its JSON

    def findings(command: str, *more: str) -> tuple[int, list[tuple[str, str, int, bool]], str]:
        code, out, err = run_dramigrate([command, *targets, "--format", "json", *more], cwd=tmp_path, timeout=60)
        assert "Traceback" not in err and "internal error" not in out + err, err
        report = json.loads(out)["findings"]
        found = [(f["rule"], f["file"], f["line"], f["fixable"] or f["fixed"] or f["wouldFix"]) for f in report]
        return code, found, err

    linted, diffed, fixed = findings("lint", "--format", f"text={text}"), findings("diff"), findings("fix")
    assert linted[1] == diffed[1] == fixed[1]
    assert linted[0] == fixed[0], (linted, fixed)
    return linted[0], text.read_text() + linted[2]


ALIAS_BOMB = "a0: &a0 [x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 9)
)


@pytest.mark.parametrize(
    ("rel", "data", "message"),
    [
        ("templates/bomb.yaml", ALIAS_BOMB.encode(), "bad input app: a rendered document expands past 2,000,000"),
        (
            "templates/pod.yaml",
            COUNTED.replace("app:1", "caf\xe9").encode("latin-1"),
            "bad input app/templates/pod.yaml: not UTF-8",
        ),
        ("templates/notes.yaml", "# caf\xe9\n".encode("latin-1"), "bad input app/templates/notes.yaml: not UTF-8"),
    ],
    ids=["alias bomb", "latin-1 template", "latin-1 template fix does not edit"],
)
def test_lint_refuses_the_chart_fix_refuses(tmp_path: Path, rel: str, data: bytes, message: str) -> None:
    """A chart template rendering an alias bomb, or one that is not UTF-8: lint said `(fixable)`, exit 1 (it
    never read template text), while fix named the chart as bad input, exit 2, and wrote nothing of it."""
    chart = chart_with(tmp_path, "app", {"templates/pod.yaml": COUNTED, "values.yaml": "gpus: 1\n"})
    (chart / rel).write_bytes(data)
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    code, out = _agree(tmp_path, ".")

    assert code == 2 and message in out, out
    assert "(fixable)" not in "".join(line for line in out.splitlines(True) if line.startswith("app/"))
    assert (chart / rel).read_bytes() == data
    assert "{{ .Values.gpus }}" in (chart / "templates" / "pod.yaml").read_text("latin-1")
    assert "resourceClaimTemplateName" in (tmp_path / "good.yaml").read_text()


@pytest.mark.parametrize(
    ("listing", "link"),
    [
        ("resources:\n- ../base\n- ../../outside.yaml\n", False),
        ("resources:\n- ../base\npatches:\n- path: ../../outside.yaml\n", False),
        ("resources:\n- ../base\nsecretGenerator:\n- name: s\n  files:\n  - token=../../outside.yaml\n", False),
        ("resources:\n- ../base\n- link.yaml\n", True),
    ],
    ids=["resource", "patch", "secret generator", "symlinked resource"],
)
def test_lint_says_an_overlay_reading_outside_its_folder_is_not_migrated(
    tmp_path: Path, listing: str, link: bool
) -> None:
    """kustomize refuses a file outside the kustomization's folder (its load restrictor): fix's proof build failed
    and nothing was written (a kustomize-unproven warning), while lint called the base's request fixable (exit 1).
    Both now say it without building, same findings, same exit code; the outside file's content is never shown."""
    from conftest import base_and_overlay

    repo = tmp_path / "repo"
    overlay = base_and_overlay(repo, listing)
    (tmp_path / "outside.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: pod\n  labels: {token: OUTSIDE-SECRET}\n"
    )
    if link:
        (overlay / "link.yaml").symlink_to("../../outside.yaml")
    (repo / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    before = (repo / "base" / "pod.yaml").read_text()

    code, out = _agree(repo, "base", "overlay")

    bad = 2 if link else 0  # the link itself is a file the walk does not read: bad input, named
    assert code == bad, out
    assert ("bad input overlay/link.yaml: a symlink that leaves overlay; skipped (never read)" in out) == link, out
    assert "overlay/kustomization.yaml" in out and "outside its own folder" in out, out
    assert "base/pod.yaml:11:9: warning [kustomize-patch]" in out and "(fixable)" not in out
    code, fixed, err = run_dramigrate(["fix", "."], cwd=repo)
    assert code == bad and "OUTSIDE-SECRET" not in out + fixed + err
    assert (repo / "base" / "pod.yaml").read_text() == before
    assert "resourceClaimTemplateName" in (repo / "good.yaml").read_text()


@pytest.mark.parametrize("head", ["%YAML 1.2\n---\n", ONE_GPU_POD.format(name="first") + "...\n%YAML 1.2\n---\n"])
def test_a_yaml_1_2_directive_is_refused_as_kubernetes_refuses_it(tmp_path: Path, head: str) -> None:
    """`%YAML 1.2` then `nvidia.com/gpu: 010`: migrated as a claim of 8 devices, while the API server's decoder
    (sigs.k8s.io/yaml over go-yaml v2, whose parser accepts only `%YAML 1.1`: "found incompatible YAML document")
    rejects the document. The file is now bad input at the directive's line, for lint as for fix, and untouched."""
    text = head + ONE_GPU_POD.format(name="p").replace("gpu: 1", "gpu: 010")
    (tmp_path / "v12.yaml").write_text(text)
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    line = head.count("\n") - 1

    for command in ("lint", "diff", "fix"):
        code, out, err = run_dramigrate([command, "."], cwd=tmp_path)

        assert code == 2, out + err
        said = out + err
        assert f"bad input v12.yaml:{line}:1: `%YAML 1.2`: Kubernetes reads manifests with go-yaml v2" in said, said
    assert (tmp_path / "v12.yaml").read_text() == text
    assert "resourceClaimTemplateName" in (tmp_path / "good.yaml").read_text()


def test_a_yaml_1_1_directive_reads_counts_as_kubernetes_does(tmp_path: Path) -> None:
    """go-yaml v2 accepts `%YAML 1.1`, and reads `010` as octal: 8 devices, which the claim keeps."""
    (tmp_path / "v11.yaml").write_text("%YAML 1.1\n---\n" + ONE_GPU_POD.format(name="p").replace("gpu: 1", "gpu: 010"))

    code, _, err = run_dramigrate(["fix", "v11.yaml"], cwd=tmp_path)

    assert code == 0, err
    assert "count: 8" in (tmp_path / "v11.yaml").read_text()


def _disk_full_on(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """The disk fills up while the temp file of `name` is written (beside it, before any rename)."""
    import errno

    from dramigrate import writer

    real = writer._create_temp

    def create_temp(folder: str, file: str, shown: str) -> tuple[int, str]:
        if file == name:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(folder, file, shown)

    monkeypatch.setattr(writer, "_create_temp", create_temp)


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("kind", ["chart", "kustomize"])
def test_a_full_disk_leaves_a_chart_or_kustomize_graph_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    """On a 300 KiB tmpfs, fix wrote a chart's templates and Chart.yaml, then met the full disk on values.yaml: the
    chart no longer rendered (`.Values.dra` is nil) while the summary said `written: 0 file(s)`; a kustomize base had
    its pod and name-reference file written, not its kustomization. Each is now written whole or not at all, and
    the file beside it still is."""
    from conftest import base_and_overlay

    from dramigrate import commands
    from dramigrate.commands import Options

    repo = tmp_path / "repo"
    if kind == "chart":
        chart_with(repo, "app", {"templates/pod.yaml": COUNTED, "values.yaml": "gpus: 1\n"})
        _disk_full_on(monkeypatch, "values.yaml")
        group = repo / "app"
    else:
        base_and_overlay(repo / "k", "resources:\n- ../base\n")
        _disk_full_on(monkeypatch, "kustomization.yaml")
        group = repo / "k"
    (repo / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    before = _tree(group)

    code = commands.do_fix(Options([str(repo)]))

    err = capsys.readouterr().err
    assert code == 2 and "No space left on device" in err, err
    assert _tree(group) == before
    assert not [line for line in err.splitlines() if line.startswith("written:") and "written: 1 file(s)" not in line]
    assert "resourceClaimTemplateName" in (repo / "good.yaml").read_text()


@pytest.mark.parametrize(
    ("a", "b"),
    [("resources:\n- ../b\n- pod.yaml\n", "resources:\n- ../a\n"), ("resources:\n- .\n- pod.yaml\n", None)],
    ids=["two", "itself"],
)
def test_lint_says_kustomizations_in_a_circle_are_not_migrated(tmp_path: Path, a: str, b: str | None) -> None:
    """Two kustomizations building on each other (or one on itself): lint called the pod fixable (`in a kustomize
    base of : fix migrates it`, naming no overlay: every one has a parent), exit 1, while fix's build failed
    (kustomize refuses the cycle) and left it with a warning, exit 0. Both now say it, same findings and exit code."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "kustomization.yaml").write_text(a)
    (tmp_path / "a" / "pod.yaml").write_text(ONE_GPU_POD.format(name="a"))
    targets = ["a"]
    if b is not None:
        (tmp_path / "b").mkdir()
        (tmp_path / "b" / "kustomization.yaml").write_text(b)
        targets.append("b")

    code, out = _agree(tmp_path, *targets)

    assert code == 0, out
    assert f"{' -> '.join([*targets, 'a'])}: these kustomizations build on one another in a circle" in out, out
    assert "a/pod.yaml:11:9: warning [kustomize-patch]" in out and "(fixable)" not in out
    assert "resourceClaim" not in (tmp_path / "a" / "pod.yaml").read_text()
