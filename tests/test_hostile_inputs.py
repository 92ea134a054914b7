"""Hostile content in a folder of good files, from the sixth sweep (inputs not in the repo): each one is migrated
exactly or named, never an internal error."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, dramigrate_executable, run_dramigrate


def test_a_json_manifest_holding_a_lone_surrogate_escape_is_migrated_and_keeps_it(tmp_path: Path) -> None:
    """A JSON manifest with "\\ud800" in an annotation (valid JSON, no UTF-8 form) was an internal error when fix
    wrote it back; the escape stays as it was written."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "annotations": {"a": "\ud800"}},
        "spec": {"containers": [{"name": "a", "image": "i", "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
    }
    path = tmp_path / "pod.json"
    path.write_text(json.dumps(pod))

    code, out, err = run_dramigrate(["fix", tmp_path])

    assert "internal error" not in err
    assert code == 0
    written = json.loads(path.read_text())
    migrated = written["items"][0]
    assert migrated["metadata"]["annotations"] == {"a": "\ud800"}
    assert "\\ud800" in path.read_text()
    assert migrated["spec"]["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}


def test_a_pod_whose_container_list_holds_a_number_is_not_an_internal_error(tmp_path: Path) -> None:
    """`containers: [null, 7, [a], {gpu container}]` ended the file with an internal error in the claim checks after
    the rewrite; the GPU container is migrated and the entries of the wrong type stay for the API server to refuse."""
    path = tmp_path / "pod.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - null\n  - 7\n  - [a]\n"
        "  - name: app\n    image: app:1\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n"
    )

    code, out, err = run_dramigrate(["fix", tmp_path])

    assert "internal error" not in out + err
    assert code == 0
    text = path.read_text()
    assert "  - null\n  - 7\n  - [a]\n  - name: app\n" in text
    assert "nvidia.com/gpu: 1" not in text and "resourceClaimTemplateName" in text


def test_numbers_of_a_json_manifest_stay_numbers_as_written(tmp_path: Path) -> None:
    """JSON numbers with an exponent ("cpu": 1e3, "memory": 1.5e9) were written back as strings: PyYAML reads them
    as YAML 1.1 strings; a float field of a custom resource then fails its schema. 1e400 became Infinity, which is
    no JSON: such a file is named instead."""
    pod = (
        '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"e": "1e3"}}, "spec": {"containers":'
        ' [{"name": "a", "image": "i", "resources": {"limits": {"nvidia.com/gpu": 1, "cpu": 1e3, "memory": 1.5e9}}}],'
        ' "overhead": {"cpu": -2E-2, "p": 1.5e+9, "q": 0.1e-2}}}'
    )
    path = tmp_path / "pod.json"
    path.write_text(pod)

    code, out, err = run_dramigrate(["fix", tmp_path])

    assert code == 0, err
    migrated = json.loads(path.read_text())["items"][0]
    assert migrated["spec"]["containers"][0]["resources"]["limits"] == {"cpu": 1000, "memory": 1.5e9}
    assert migrated["spec"]["overhead"] == {"cpu": -0.02, "p": 1.5e9, "q": 0.001}
    assert migrated["metadata"]["labels"] == {"e": "1e3"}
    text = path.read_text()
    assert '"cpu": 1e3' in text and '"memory": 1.5e9' in text and '"cpu": -2E-2' in text
    assert '"p": 1.5e+9' in text and '"q": 0.1e-2' in text
    huge = tmp_path / "huge.json"
    huge.write_text(pod.replace("-2E-2", "1e400"))
    code, out, err = run_dramigrate(["fix", huge])
    assert code == 2
    assert "huge.json: a number in this JSON manifest is beyond a float's range (as 1e400)" in err
    assert huge.read_text() == pod.replace("-2E-2", "1e400")


def test_a_utf16_manifest_without_a_byte_order_mark_is_named_not_skipped(tmp_path: Path) -> None:
    """UTF-16 without a BOM (kubectl refuses it: "control characters are not allowed") was skipped as a file with
    nothing to check, so a GPU workload in it passed the gate unseen."""
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    wide = tmp_path / "wide.yaml"
    wide.write_bytes(ONE_GPU_POD.format(name="wide").encode("utf-16-le"))
    before = wide.read_bytes()

    code, out, err = run_dramigrate(["fix", tmp_path])

    assert code == 2
    assert "wide.yaml: UTF-16-LE text without a byte-order mark, which kubectl reads as UTF-8 and refuses" in err
    assert wide.read_bytes() == before
    assert "resourceClaims" in (tmp_path / "good.yaml").read_text()


def test_a_workload_larger_than_kubernetes_stores_is_named_at_once_not_rewritten(tmp_path: Path) -> None:
    """A GPU workload carrying a 5 MiB annotation took ruamel some 15 s of CPU to rewrite (20 MB: past any CI limit),
    though no API server stores it (etcd takes 1.5 MiB)."""
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    big = tmp_path / "big.yaml"
    big.write_text(
        ONE_GPU_POD.format(name="big").replace(
            "  name: big\n", "  name: big\n  annotations:\n    a: " + "x" * (5 << 20) + "\n"
        )
    )
    before = big.read_bytes()

    code, out, err = run_dramigrate(["fix", tmp_path])

    assert code == 2
    assert "big.yaml:1: this document is 5.0 MiB, larger than any object Kubernetes stores" in err
    assert big.read_bytes() == before
    assert "resourceClaims" in (tmp_path / "good.yaml").read_text()


def test_a_workload_with_a_custom_tag_is_migrated_and_keeps_the_tag(tmp_path: Path) -> None:
    """`annotations: {a: !Ref x}` (the API server reads the string) made fix refuse the file: "the rewritten document
    would not parse back to the intended objects", as ruamel's tagged values compared by identity."""
    path = tmp_path / "pod.yaml"
    path.write_text(ONE_GPU_POD.format(name="p").replace("  name: p\n", "  name: p\n  annotations: {a: !Ref x}\n"))

    code, out, err = run_dramigrate(["fix", tmp_path])

    assert code == 0, err
    text = path.read_text()
    assert "  annotations: {a: !Ref x}\n" in text
    assert "nvidia.com/gpu: 1" not in text and "resourceClaimTemplateName" in text


def test_a_workload_of_more_values_than_fix_rewrites_in_time_is_named_at_once(tmp_path: Path) -> None:
    """200,000 annotations in one flow mapping (2 MB) kept fix in ruamel past 60 s and the good files beside it
    unwritten; past 20,000 values the document is named instead (here 25,000)."""
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    wide = tmp_path / "wide.yaml"
    annotations = ", ".join(f"k{i}: v" for i in range(25_000))
    wide.write_text(
        ONE_GPU_POD.format(name="wide").replace("  name: wide\n", f"  name: wide\n  annotations: {{{annotations}}}\n")
    )
    before = wide.read_bytes()

    code, out, err = run_dramigrate(["fix", tmp_path])

    assert code == 2
    assert "wide.yaml:1: this document holds more than 20,000 values" in err
    assert wide.read_bytes() == before
    assert "resourceClaims" in (tmp_path / "good.yaml").read_text()


def test_a_folder_whose_git_head_is_a_fifo_is_checked_without_waiting_for_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder with its own .git whose HEAD is a FIFO (an unpacked archive): git blocked reading it and every
    command waited 60 s for git's answer on which files are ignored. Past git's time limit the files were all taken,
    and fix rewrote gitignored ones with only a note: now the .gitignore files decide (git asked again with an empty
    repository of its own), and when even that does not answer (a .gitignore that is a FIFO) fix writes none of the
    folder's files, each named with its way out (--include-ignored)."""
    monkeypatch.setenv("DRAMIGRATE_GIT_TIMEOUT", "2")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("generated/\n")
    good = tmp_path / "good.yaml"
    good.write_text(ONE_GPU_POD.format(name="good"))
    (tmp_path / "generated").mkdir()
    generated = tmp_path / "generated" / "gen.yaml"
    generated.write_text(ONE_GPU_POD.format(name="gen"))
    tracked = tmp_path / "generated" / "tracked.yaml"  # matched by .gitignore but tracked: git never ignores it
    tracked.write_text(ONE_GPU_POD.format(name="tracked"))
    subprocess.run(["git", "-C", str(tmp_path), "add", "-f", "generated/tracked.yaml"], check=True)
    (tmp_path / ".git" / "HEAD").unlink()
    os.mkfifo(tmp_path / ".git" / "HEAD")
    started = time.monotonic()

    code, out, err = run_dramigrate(["fix", tmp_path], timeout=50)

    assert time.monotonic() - started < 20
    assert code == 0, out + err
    assert "git did not say within 2 s which files it ignores; the .gitignore files decided" in err
    assert "resourceClaims" in good.read_text()
    assert "resourceClaims" in tracked.read_text()  # was skipped: a CI gate passed a tracked legacy manifest
    assert generated.read_text() == ONE_GPU_POD.format(name="gen")
    good.write_text(ONE_GPU_POD.format(name="good"))
    tracked.write_text(ONE_GPU_POD.format(name="tracked"))

    (tmp_path / ".gitignore").unlink()
    os.mkfifo(tmp_path / ".gitignore")  # git blocks on it too
    good.write_text(ONE_GPU_POD.format(name="good"))
    code, out, err = run_dramigrate(["fix", tmp_path], timeout=50)
    assert code == 2
    assert "gen.yaml:11:9: error [legacy-device-request]" in out + err
    assert "none was skipped" in err
    assert "good.yaml: not written: git did not say within 2 s whether it ignores this file" in out + err
    assert good.read_text() == ONE_GPU_POD.format(name="good")
    assert generated.read_text() == ONE_GPU_POD.format(name="gen")
    code, out, err = run_dramigrate(["fix", "--include-ignored", tmp_path], timeout=50)
    assert code == 0 and "resourceClaims" in good.read_text(), out + err


def test_a_chart_whose_values_file_holds_too_many_keys_is_named_before_rendering(tmp_path: Path) -> None:
    """A chart whose values.yaml holds 50,000 keys took 30 s to fix (every probe renders the values again, fix reads
    them round-trip) and 300,000 ran past 60 s: the file is named at once and a good manifest beside it migrated."""
    from conftest import chart_with

    pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: a\n    image: a:1\n"
    pod += "    resources:\n      limits:\n        nvidia.com/gpu: {{ .Values.gpus }}\n"
    keys = "gpus: 1\n" + "".join(f"k{i}: {i}\n" for i in range(25_000))
    chart = chart_with(tmp_path, "wide", {"templates/pod.yaml": pod, "values.yaml": keys})
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    before = {p: p.read_bytes() for p in chart.rglob("*") if p.is_file()}
    started = time.monotonic()

    code, out, err = run_dramigrate(["fix", tmp_path], timeout=50)

    assert time.monotonic() - started < 20
    assert code == 2
    assert f"{chart}/values.yaml:1: this values file holds more than 20,000 values" in out + err
    assert {p: p.read_bytes() for p in chart.rglob("*") if p.is_file()} == before
    assert "resourceClaims" in (tmp_path / "good.yaml").read_text()
    # YAML the chart keeps but never reads as values (a lookup table for .Files.Get) is no values file
    (chart / "values.yaml").write_text("gpus: 1\n")
    (chart / "files").mkdir()
    (chart / "files" / "lookup.yaml").write_text(keys)
    code, out, err = run_dramigrate(["lint", chart], timeout=50)
    assert code == 1 and "[legacy-device-request]" in out, out + err


def test_a_packed_subchart_whose_values_hold_too_many_keys_is_named_before_rendering(tmp_path: Path) -> None:
    """The values bound did not reach a subchart packed as charts/sub-0.1.0.tgz, which Helm reads on every render
    too: 300,000 keys killed the engine at its memory limit with no word of the file, 25,000 rendered on. The
    archive and the file in it are named at once, the chart is untouched, a good manifest beside it migrated."""
    import io
    import tarfile

    from conftest import chart_with

    pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: a\n    image: a:1\n"
    pod += "    resources:\n      limits:\n        nvidia.com/gpu: {{ .Values.gpus }}\n"
    chart = chart_with(tmp_path, "umbrella", {"templates/pod.yaml": pod, "values.yaml": "gpus: 1\n"})
    (chart / "charts").mkdir()
    with tarfile.open(chart / "charts" / "sub-0.1.0.tgz", "w:gz") as tar:
        for name, text in {
            "sub/Chart.yaml": "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
            "sub/values.yaml": "".join(f"k{i}: {i}\n" for i in range(25_000)),
        }.items():
            member = tarfile.TarInfo(name)
            member.size = len(text)
            tar.addfile(member, io.BytesIO(text.encode()))
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    before = {p: p.read_bytes() for p in chart.rglob("*") if p.is_file()}

    code, out, err = run_dramigrate(["fix", tmp_path], timeout=50)

    assert code == 2, out + err
    assert (
        f"{chart}/charts/sub-0.1.0.tgz: the packed subchart's sub/values.yaml holds more than 20,000 values"
        in out + err
    )
    assert {p: p.read_bytes() for p in chart.rglob("*") if p.is_file()} == before
    assert "resourceClaims" in (tmp_path / "good.yaml").read_text()


def test_a_file_named_values_yaml_elsewhere_in_a_packed_subchart_is_not_bounded(tmp_path: Path) -> None:
    """Only a chart's own values.yaml is read by Helm as values: a big `files/values.yaml` a subchart ships as data
    does not refuse the chart (it did: the chart's GPU template was then neither linted nor fixed)."""
    import io
    import tarfile

    from dramigrate.helm.sandbox import check_packed_values

    (tmp_path / "charts").mkdir()
    big = "".join(f"k{i}: {i}\n" for i in range(25_000))
    with tarfile.open(tmp_path / "charts" / "sub-0.1.0.tgz", "w:gz") as tar:
        for name, text in {"sub/values.yaml": "a: 1\n", "sub/files/values.yaml": big}.items():
            member = tarfile.TarInfo(name)
            member.size = len(text)
            tar.addfile(member, io.BytesIO(text.encode()))
    check_packed_values(tmp_path, "pk")  # no refusal


def test_documents_after_tag_directives_are_migrated_with_their_tag_handles(tmp_path: Path) -> None:
    """A document whose `%TAG !e! ...` directive names a handle its body uses (`image: !e!img app:1`), first in its
    file or after a `...` end marker, was refused as invalid YAML ("found undefined tag handle"): the file was split
    on `---` and the directive parsed apart from its document. Both are migrated, the directives and handles are
    written back as they were, and the written file is valid YAML that a second fix leaves alone."""
    import yaml

    tagged = ONE_GPU_POD.format(name="tagged").replace("image: app:1", "image: !e!img app:1")
    first = tmp_path / "first.yaml"
    first.write_text("%TAG !e! tag:example.com,2000:\n---\n" + tagged)
    after_end = tmp_path / "after-end.yaml"
    after_end.write_text(ONE_GPU_POD.format(name="plain") + "...\n%TAG !e! tag:example.com,2000:\n---\n" + tagged)

    code, out, err = run_dramigrate(["fix", tmp_path])

    assert code == 0, out + err
    for path in (first, after_end):
        text = path.read_text()
        assert "nvidia.com/gpu: 1" not in text and "image: !e!img app:1" in text
        assert "%TAG !e! tag:example.com,2000:\n---\n" in text
        objects = list(yaml.safe_load_all(text.replace("!e!img ", "")))
        pods = [o for o in objects if o and o["kind"] == "Pod"]
        assert pods and all(p["spec"]["resourceClaims"] for p in pods)
        assert sum(o["kind"] == "ResourceClaimTemplate" for o in objects if o) == len(pods)
        assert list(yaml.compose_all(text))  # the directives still stand before a document start
    lint = run_dramigrate(["lint", "--format", "json", after_end])
    assert lint[0] == 0 and "after-end.yaml" not in lint[1]


CONFIG_MAP = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  greeting: "caf\u00e9"\n'


@pytest.mark.parametrize(
    "stream",
    [CONFIG_MAP.encode("latin-1"), CONFIG_MAP.encode("utf-16"), b"kind: Secret\ndata: \x80\x81\xfe\xc0\n"],
    ids=["latin-1", "utf-16", "binary"],
)
@pytest.mark.parametrize("flags", [[], ["--post-renderer"]], ids=["fix", "post-renderer"])
def test_a_stream_without_device_requests_is_passed_through_byte_for_byte(stream: bytes, flags: list[str]) -> None:
    """`fix -` (and the Helm post-renderer) with nothing to migrate hands back exactly what it was given. A byte
    that is not UTF-8 came back as U+FFFD and a UTF-16 stream as mojibake, with exit 0: the stream was changed
    while the run said nothing was."""
    proc = subprocess.run(
        [dramigrate_executable(), "fix", "-", *flags], input=stream, capture_output=True, timeout=120, check=False
    )
    assert proc.stdout == stream
    assert b"Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "tail",
    ["  m: &m\n    a: 1\n    <<: *m\n", "  m: &m\n    n:\n      <<: [*m]\n", "  x: &a [1, *a]\n", "  m: &m {k: *m}\n"],
    ids=["merge", "merge-list", "sequence", "mapping"],
)
@pytest.mark.parametrize("command", ["lint", "fix"])
def test_an_alias_inside_the_node_it_names_is_bad_input(tmp_path: Path, tail: str, command: str) -> None:
    """`m: &m {<<: *m}`: ruamel's merge of it ended the file with an internal error (AttributeError), and a plain
    recursive alias was read as a workload Kubernetes refuses to decode (go-yaml: anchor value contains itself).
    Now the file is bad input at the alias's line; the good file beside it is still migrated."""
    from conftest import run_dramigrate

    (tmp_path / "loop.yaml").write_text(ONE_GPU_POD.format(name="loop") + tail)
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    line = 12 + tail.count("\n") - 1

    code, out, err = run_dramigrate([command, "."], cwd=tmp_path)

    assert code == 2 and "internal" not in out + err, out + err
    assert f"bad input loop.yaml:{line}: the alias *" in out + err
    assert (tmp_path / "loop.yaml").read_text() == ONE_GPU_POD.format(name="loop") + tail
    assert ("resourceClaimTemplateName" in (tmp_path / "good.yaml").read_text()) == (command == "fix")
