"""A subchart whose files the rewrite leaves as they are renders, in every render, only a marker of what Helm hands
it (leftout.py): the proof compares the markers where the documents were, so equal markers mean equal documents and a
value set that hands it other values is compared. tke-dynamo-vllm-single-pd's packed etcd generated an RSA key in each
of 42 renders, past the chart's time budget. A subchart the rewrite changes, or that may include a template the
rewrite defines, is rendered and compared as before. Renders are real."""

from __future__ import annotations

import shutil
import tarfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import chart_with, deployment
from test_helm_idiomatic import RULES, T136

from dramigrate.config import Settings
from dramigrate.helm import leftout, renderpool
from dramigrate.helm.outcome import ChartOptions, Workdir
from dramigrate.helm.render import RenderOptions
from dramigrate.helm.run import run_chart

WORKER = deployment(
    "{{ .Release.Name }}-worker",
    """\
      containers:
        - name: worker
          image: worker
          resources:
            limits:
              nvidia.com/gpu: {{ .Values.worker.gpus }}
""",
)

# the subchart: a random token in a Secret (a key each render, as etcd's), its Deployment and a define
KEYS_SECRET = """\
apiVersion: v1
kind: Secret
metadata:
  name: {{ include "keys.name" . }}
data:
  token: {{ randAlphaNum 32 | b64enc | quote }}
"""
KEYS_DEPLOYMENT = deployment(
    '{{ include "keys.name" . }}',
    """\
      containers:
        - name: keys
          image: "keys:{{ .Values.tag }}"
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
""",
    app="keys",
)


def umbrella(root: Path, keys_resources: str = "{limits: {cpu: 1}}", **keys_files: str) -> Path:
    """An umbrella with a GPU worker (pattern A) and a packed subchart `keys` switched by `keys.enabled`."""
    chart = chart_with(
        root,
        "platform",
        {
            "templates/worker.yaml": WORKER,
            "values.yaml": "worker:\n  gpus: 1\nkeys:\n  enabled: true\n  tag: v1\n",
        },
    )
    (chart / "Chart.yaml").write_text(
        "apiVersion: v2\nname: platform\nversion: 0.1.0\ndependencies:\n"
        "- name: keys\n  version: 0.1.0\n  condition: keys.enabled\n"
    )
    keys = chart_with(
        root / "src",
        "keys",
        {
            "templates/secret.yaml": KEYS_SECRET,
            "templates/deployment.yaml": KEYS_DEPLOYMENT,
            "templates/_helpers.tpl": '{{- define "keys.name" -}}{{ .Release.Name }}-keys{{- end }}\n',
            "values.yaml": f"tag: v0\nresources: {keys_resources}\n",
            **keys_files,
        },
    )
    pack(keys, chart / "charts" / "keys-0.1.0.tgz")
    return chart


def pack(folder: Path, archive: Path) -> None:
    archive.parent.mkdir(exist_ok=True)
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(folder, arcname=folder.name)


def fixed(chart: Path, monkeypatch: pytest.MonkeyPatch, leaving: bool) -> tuple[Any, list[tuple[str, int]]]:
    """A diff run of the chart, and each render's folder with how many documents of the subchart it holds."""
    renders: list[tuple[str, int]] = []
    real = renderpool._render_folder

    def counted(root: Path, options: Any) -> Any:
        rendered = real(root, options)
        docs = [m.source for m in rendered.manifests if "/charts/keys/" in m.source]
        renders.append((str(root), sum(not s.endswith(leftout.MARKER) for s in docs)))
        return rendered

    with monkeypatch.context() as patch:
        patch.setattr(renderpool, "_render_folder", counted)
        if not leaving:
            patch.setattr(leftout, "leaving_out", lambda *args: None)
        outcome = run_chart(chart, ChartOptions(), RULES, Settings(), T136, "diff")
    return outcome, renders


def test_the_proof_leaves_out_an_unchanged_subchart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rewrite and its proof are those of full renders; the subchart's documents are rendered in the first render
    (for the findings), and no second render of a value set is needed (its random token is what differed)."""
    chart = umbrella(tmp_path)
    full, full_renders = fixed(chart, monkeypatch, leaving=False)
    left, renders = fixed(chart, monkeypatch, leaving=True)
    assert full.proven and left.proven, left.manual
    assert left.changes == full.changes
    assert left.checked == full.checked
    assert renders[0][1] == 2  # the first render, for the findings: the Secret and the Deployment
    assert sum(n > 0 for _, n in renders) < sum(n > 0 for _, n in full_renders) / 2, renders
    assert any("leftout" in folder for folder, _ in renders)
    assert "dramigrate-left-out" not in left.report() + repr(left.changes)  # the marker is the proof's alone


def test_a_subchart_asking_for_a_device_is_rendered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A subchart whose documents ask for a device is the rewrite's to change: no render leaves it out."""
    chart = umbrella(tmp_path, "{limits: {nvidia.com/gpu: 1}}")
    _, renders = fixed(chart, monkeypatch, leaving=True)
    assert renders and not any("leftout" in folder for folder, _ in renders), renders


def test_a_subchart_including_a_template_of_the_umbrella_is_left_out_while_the_rewrite_leaves_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A subchart that includes a define of the umbrella's (Helm shares them across the chart tree; nt-platform's
    subcharts all include the umbrella's, and one generates an RSA key in each render) is left out as long as the
    rewrite changes no define it reaches: the proof is that of full renders. One that builds the name of a template
    it includes is rendered with every value set."""
    labels = '{{- define "platform.labels" -}}tier: {{ include "platform.tier" . }}{{- end }}\n'
    tier = '{{- define "platform.tier" -}}gpu{{- end }}\n'
    uses = KEYS_SECRET.replace("data:", 'data:\n  labels: {{ include "platform.labels" . | b64enc | quote }}')
    chart = umbrella(tmp_path / "a", **{"templates/secret.yaml": uses})
    (chart / "templates" / "_labels.tpl").write_text(labels)
    (chart / "templates" / "_tier.tpl").write_text(tier)
    full, _ = fixed(chart, monkeypatch, leaving=False)
    left, renders = fixed(chart, monkeypatch, leaving=True)
    assert full.proven and left.proven, left.manual
    assert left.changes == full.changes and left.checked == full.checked
    assert any("leftout" in folder for folder, _ in renders), renders
    built = KEYS_SECRET.replace("data:", 'data:\n  name: {{ include (printf "%s.name" .Chart.Name) . | b64enc }}')
    chart = umbrella(tmp_path / "b", **{"templates/secret.yaml": built})
    _, renders = fixed(chart, monkeypatch, leaving=True)
    assert renders and not any("leftout" in folder for folder, _ in renders), renders
    builds = '{{- define "platform.labels" -}}{{ include (printf "%s.tier" .Chart.Name) . }}{{- end }}\n'
    chart = umbrella(tmp_path / "c", **{"templates/secret.yaml": uses})
    (chart / "templates" / "_labels.tpl").write_text(builds)
    _, renders = fixed(chart, monkeypatch, leaving=True)
    assert renders and not any("leftout" in folder for folder, _ in renders), renders


def test_a_copy_changing_a_define_the_subchart_reaches_renders_it(tmp_path: Path) -> None:
    """A copy (the rewritten chart) that changes a define of the umbrella the subchart reaches only through another
    define renders the subchart in full; one changing a define it never reaches leaves it out."""
    labels = '{{- define "platform.labels" -}}tier: {{ include "platform.tier" . }}{{- end }}\n'
    uses = KEYS_SECRET.replace("data:", 'data:\n  labels: {{ include "platform.labels" . | b64enc | quote }}')
    chart = umbrella(tmp_path / "in", **{"templates/secret.yaml": uses})
    (chart / "templates" / "_labels.tpl").write_text(labels)
    (chart / "templates" / "_tier.tpl").write_text('{{- define "platform.tier" -}}gpu{{- end }}\n')
    (chart / "templates" / "_other.tpl").write_text('{{- define "platform.other" -}}a{{- end }}\n')
    cache = renderpool.RunCache(chart)
    renderpool.CACHE.append(cache)
    work = Workdir()
    try:
        base = RenderOptions()
        leftout.plan(chart, base, renderpool.cached_render(chart, base), RULES, Settings(), T136, work)
        assert left_out(chart, base) == ("platform/charts/keys/",)

        def copy(name: str, file: str, text: str) -> Path:
            shutil.copytree(chart, tmp_path / name / "platform")
            (tmp_path / name / "platform" / "templates" / file).write_text(text)
            return tmp_path / name / "platform"

        other = copy("other", "_other.tpl", '{{- define "platform.other" -}}b{{- end }}\n')
        assert left_out(other, base) == ("platform/charts/keys/",)
        tier = copy("tier", "_tier.tpl", '{{- define "platform.tier" -}}cpu{{- end }}\n')
        assert left_out(tier, base) == ()
        moved = copy("moved", "_other.tpl", '{{- define "platform.tier" -}}cpu{{- end }}\n')
        assert left_out(moved, base) == ()
    finally:
        renderpool.CACHE.pop()
        work.close()


@pytest.fixture
def planned(tmp_path: Path) -> Any:
    """The chart's run cache with its plan made from the first render, and its Workdir."""
    chart = umbrella(tmp_path / "in")
    cache = renderpool.RunCache(chart)
    renderpool.CACHE.append(cache)
    work = Workdir()
    try:
        base = RenderOptions()
        leftout.plan(chart, base, renderpool.cached_render(chart, base), RULES, Settings(), T136, work)
        yield chart, work
    finally:
        renderpool.CACHE.pop()
        work.close()


def values(work: Workdir, text: str) -> RenderOptions:
    path = work.path / f"v{abs(hash(text))}.yaml"
    path.write_text(text)
    return RenderOptions(values_files=(path,))


def left_out(root: Path, options: RenderOptions) -> tuple[str, ...]:
    found = leftout.leaving_out(root, options)
    return () if found is None else found.prefixes


def marked(root: Path, options: RenderOptions) -> tuple[tuple[tuple[str, str], ...], int]:
    """The markers of a render that leaves the subchart out, and how many of its other documents it holds."""
    found = leftout.leaving_out(root, options)
    assert found is not None
    rendered = found.render(options)
    assert not rendered.error, rendered.error
    docs = [m.source for m in rendered.manifests if "/charts/keys/" in m.source]
    return tuple(found.markers(rendered)), sum(not s.endswith(leftout.MARKER) for s in docs)


def test_a_render_whose_subchart_inputs_differ_holds_another_marker(planned: Any) -> None:
    """Every value set leaves the subchart out, its marker standing for it. Values of the umbrella alone, or the
    subchart's values restated as they are (a probe's values file holds the whole merged values), give the first
    render's marker; a changed value of it (a `--set-string` where a file has a number too), `global`, the release or
    capabilities give another; its condition switched off, none. A device added to it renders it in full."""
    chart, work = planned
    assert left_out(chart, RenderOptions()) == ("platform/charts/keys/",)
    first, docs = marked(chart, RenderOptions())
    assert len(first) == 1 and docs == 0
    restated = "worker: {gpus: 1}\nkeys: {enabled: true, tag: v1, resources: {limits: {cpu: 1}}}\n"
    for same in (
        values(work, "worker: {gpus: 4}\n"),
        values(work, restated),
        RenderOptions(set_values=("worker.gpus=2",)),
    ):
        assert marked(chart, same) == (first, 0), same
    seen = {first}
    for changed in (
        values(work, "keys: {tag: v2}\n"),
        values(work, "keys: {tag: null}\n"),
        values(work, "keys: {size: 1.0}\n"),
        RenderOptions(set_string_values=("keys.size=1",)),
        values(work, "global: {image: x}\n"),
        RenderOptions(release_name="other"),
        RenderOptions(kube_version="1.30"),
    ):
        markers, docs = marked(chart, changed)
        assert len(markers) == 1 and markers not in seen and docs == 0, changed
        seen.add(markers)
    assert marked(chart, values(work, "keys: {enabled: false}\n")) == ((), 0)
    assert marked(chart, values(work, "keys: {resources: {limits: {cpu: 1, nvidia.com/gpu: 1}}}\n"))[1] == 2


def test_a_copy_whose_subchart_or_reachable_templates_changed_renders_it(planned: Any, tmp_path: Path) -> None:
    """A copy of the chart (the rewritten one) leaves the subchart out when its files are the same and the templates
    the copy defines anew are not named in it; a changed subchart file, or a define of a name the subchart includes,
    keeps it in."""
    chart, _ = planned
    keys = ("platform/charts/keys/",)

    def copy(name: str) -> Path:
        shutil.copytree(chart, tmp_path / name / "platform")
        return tmp_path / name / "platform"

    same = copy("same")
    (same / "templates" / "claims.yaml").write_text('{{- define "platform.claims" -}}{{- end }}\n')
    assert left_out(same, RenderOptions()) == keys

    shadowing = copy("shadowing")
    (shadowing / "templates" / "_keys.tpl").write_text('{{- define "keys.name" -}}other{{- end }}\n')
    assert left_out(shadowing, RenderOptions()) == ()

    touched = copy("touched")
    sub = tmp_path / "sub"
    with tarfile.open(touched / "charts" / "keys-0.1.0.tgz") as tar:
        tar.extractall(sub, filter="data")
    (sub / "keys" / "templates" / "deployment.yaml").write_text(KEYS_DEPLOYMENT.replace("image: ", "image:  "))
    pack(sub / "keys", touched / "charts" / "keys-0.1.0.tgz")
    assert left_out(touched, RenderOptions()) == ()


def test_a_value_set_that_changes_the_subchart_compares_its_marker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A shipped values file that sets only the subchart's values is a value set of the proof whose renders leave the
    subchart out on both sides too; a rewritten chart that hands the subchart other values under that value set alone
    (a defect of its documents there) holds another marker there, and the proof fails."""
    chart = umbrella(tmp_path)
    (chart / "ci").mkdir()
    (chart / "ci" / "gpu-values.yaml").write_text("# for nvidia.com/gpu nodes\nkeys:\n  tag: v2\n")
    real = leftout.LeftOut.render
    rendered: list[tuple[bool, Any]] = []

    def defective(self: Any, options: RenderOptions, full: Any = None) -> Any:
        rewritten = self.root != self.made.root
        if rewritten and any(b"tag: v2" in Path(f).read_bytes() for f in options.values_files):
            options = replace(options, set_values=(*options.set_values, "keys.tag=v3"))
            rendered.append((True, options))
        return real(self, options, full)

    outcome, renders = fixed(chart, monkeypatch, leaving=True)
    assert outcome.proven, outcome.manual
    assert any("leftout" in folder for folder, _ in renders)
    with monkeypatch.context() as patch:
        patch.setattr(leftout.LeftOut, "render", defective)
        outcome, renders = fixed(chart, monkeypatch, leaving=True)
    assert rendered and not outcome.proven


def test_a_rewrite_of_a_define_a_left_out_subchart_reaches_starts_the_run_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The umbrella's define that writes both subcharts' Deployments gets the pass-through: the subchart without a
    device (left out by the first renders, as it reaches only that define) must then be rendered in full on both
    sides, so the run starts again leaving out only subcharts that include no other chart's template: proven, with
    the changes of a run that leaves nothing out."""
    from test_chart_umbrella_shared_define import write_umbrella

    umbrella = write_umbrella(tmp_path)
    options = ChartOptions(values_files=(tmp_path / "gpu.yaml",))
    real, raised = leftout.check_copy, []

    def counted(root: Path) -> None:
        try:
            real(root)
        except leftout.Wider:
            raised.append(root)
            raise

    with monkeypatch.context() as patch:
        patch.setattr(leftout, "check_copy", counted)
        again = run_chart(umbrella, options, RULES, Settings(), T136, "diff")
    with monkeypatch.context() as patch:
        patch.setattr(leftout, "leaving_out", lambda *args: None)
        full = run_chart(umbrella, options, RULES, Settings(), T136, "diff")
    assert raised, "the first renders left the subchart out"
    assert again.proven and full.proven, again.report()
    assert again.changes == full.changes and again.checked == full.checked


def test_a_packed_subchart_stored_or_compressed_is_the_same_file(tmp_path: Path) -> None:
    """A render stores the packed subcharts of its private copy uncompressed; a rewritten copy read before its first
    render holds them compressed. Compared by their members, they are the same file, not a change whose every define
    the rewrite might have changed (which kept nebuly-platform's loki in full on the rewritten side)."""
    keys = chart_with(tmp_path / "src", "keys", {"templates/_helpers.tpl": '{{- define "labels" -}}a{{- end }}\n'})
    pack(keys, tmp_path / "keys.tgz")
    data = (tmp_path / "keys.tgz").read_bytes()
    with (
        tarfile.open(tmp_path / "keys.tgz") as source,
        tarfile.open(tmp_path / "stored.tgz", "w:gz", compresslevel=0) as out,
    ):
        for member in source:
            out.addfile(member, source.extractfile(member) if member.isfile() else None)
    stored = (tmp_path / "stored.tgz").read_bytes()
    assert stored != data
    assert leftout._file_digest(stored, "keys.tgz") == leftout._file_digest(data, "keys.tgz")
    other = chart_with(tmp_path / "other", "keys", {"templates/_helpers.tpl": '{{- define "labels" -}}b{{- end }}\n'})
    pack(other, tmp_path / "other.tgz")
    assert leftout._file_digest((tmp_path / "other.tgz").read_bytes(), "keys.tgz") != leftout._file_digest(
        data, "keys.tgz"
    )
