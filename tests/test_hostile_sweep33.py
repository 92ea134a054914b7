"""Session 33's red team (issue 11, "How it will be checked"): each attack in a folder of good files, the good files
still migrated, the bad one named and left as it was, no traceback."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, run_dramigrate


@pytest.mark.parametrize(
    ("written", "tagged"),
    [
        ("nvidia.com/gpu: 1", "nvidia.com/gpu: !!float 1e"),  # a float tag on a count ending in its exponent's letter
        ("nvidia.com/gpu: 1", "nvidia.com/gpu: !!int 0x"),  # a hexadecimal prefix with no digit
        ("nvidia.com/gpu: 1", "nvidia.com/gpu: !!int +"),  # a sign with no digit: PyYAML's reader indexes past it
        ("  name: bad\n", "  name: bad\n  labels: {!!float role: x}\n"),  # on a key, as a mutation fuzzer placed it
    ],
    ids=["float-count", "int-count", "sign-count", "float-key"],
)
@pytest.mark.parametrize("command", ["lint", "fix"])
def test_a_tagged_value_ruamel_cannot_read_is_bad_input_named_at_its_file(
    tmp_path: Path, written: str, tagged: str, command: str
) -> None:
    """`!!float 1e` and `!!int 0x` (a value does not fit its tag: the API server refuses the object) ended the file
    in `internal error: IndexError` asking for a bug report: ruamel's float and int constructors index past the end
    of such a value, and only ValueError, TypeError, KeyError and AttributeError were taken for a value that does
    not fit its tag (`!!int +` the same in PyYAML's, which lint's first look reads with). The file is named as bad
    input, as `!!int abc` is, and the good file beside it migrated."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    bad = tree / "bad.yaml"
    bad.write_text(ONE_GPU_POD.format(name="bad").replace(written, tagged))
    before = bad.read_bytes()

    code, out, _ = run_dramigrate([command, ".", "--format", "json"], cwd=tree)

    report = json.loads(out)
    assert code == 2
    assert [f for f in report["findings"] if f["rule"] == "internal-error"] == []
    [error] = [e for e in report["errors"] if e["file"] == "bad.yaml"]
    assert "does not fit its tag" in error["message"], error
    assert bad.read_bytes() == before
    if command == "fix":
        assert "resourceClaimTemplateName" in (tree / "good.yaml").read_text()


@pytest.mark.parametrize("value", ["!!int +", "!!int '-'", "!!float e"])
def test_a_kustomization_value_that_does_not_fit_its_tag_is_named_at_its_line(tmp_path: Path, value: str) -> None:
    """`namePrefix: !!int +` ended the kustomization in `internal error while reading the kustomization:
    IndexError` (PyYAML's int constructor reads the digit after a sign that has none): named at its line, as
    `!!int abc` is, and the manifest beside it migrated."""
    tree = tmp_path / "tree"
    (tree / "base").mkdir(parents=True)
    (tree / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    (tree / "base" / "pod.yaml").write_text(ONE_GPU_POD.format(name="based"))
    kustomization = tree / "base" / "kustomization.yaml"
    kustomization.write_text(f"resources:\n- pod.yaml\nnamePrefix: {value}\n")

    code, out, _ = run_dramigrate(["fix", ".", "--format", "json"], cwd=tree)

    report = json.loads(out)
    assert code == 2
    assert [f for f in report["findings"] if f["rule"] == "internal-error"] == []
    [error] = [e for e in report["errors"] if e["file"] == "base/kustomization.yaml"]
    assert error["line"] == 3 and "does not fit its tag" in error["message"], error
    assert "resourceClaimTemplateName" in (tree / "good.yaml").read_text()
    assert "nvidia.com/gpu: 1" in (tree / "base" / "pod.yaml").read_text()


# A pod pinned to a GPU model: with `named-classes`, fix makes a DeviceClass of its selector for the classes file.
PINNED_POD = ONE_GPU_POD.format(name="pinned").replace(
    "spec:\n", "spec:\n  nodeSelector:\n    nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB\n", 1
)

PINNED_CONFIG = "classes-file: cluster/classes.yaml\nnamed-classes: true\n"


def _repository(tmp_path: Path, config: str) -> Path:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "app").mkdir()
    (repo / "app" / "pinned.yaml").write_text(PINNED_POD)
    (repo / ".dramigrate.yaml").write_text(config)
    return repo


def test_fix_names_the_classes_file_it_wrote(tmp_path: Path) -> None:
    """fix appended a DeviceClass to the classes file but named only the manifests as written, in the text summary
    (`written: 1 file(s)`) and in the JSON report's `files.written` and `filesChanged`, while diff counted the
    classes file among the files that would change: a CI job committing the files fix says it wrote left the
    claims' DeviceClass behind. The classes file is named with the files written."""
    repo = _repository(tmp_path, PINNED_CONFIG)

    code, out, err = run_dramigrate(["fix", "app", "--format", "json"], cwd=repo)

    assert code == 0, err
    assert "kind: DeviceClass" in (repo / "cluster" / "classes.yaml").read_text()
    report = json.loads(out)
    written = [w["file"] for w in report["files"]["written"]]
    assert written[0] == "app/pinned.yaml" and len(written) == 2, written
    # named as the diff's patch and any error name it: the config's setting, resolved from the config's folder
    assert Path(written[1]) == repo / "cluster" / "classes.yaml"
    assert report["summary"]["filesChanged"] == 2
    again = _repository(tmp_path / "again", PINNED_CONFIG)
    code, _, err = run_dramigrate(["fix", "app"], cwd=again)
    assert f"written: 2 file(s)\n  app/pinned.yaml\n  {again / 'cluster' / 'classes.yaml'}\n" in err, err


OTHER_FILES = {
    ".github/workflows/ci.yml": "on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n    - run: make\n",
    "docs/notes.yaml": "Notes on the rollout, kept as YAML for a site generator.\n",
}


@pytest.mark.parametrize("name", list(OTHER_FILES))
@pytest.mark.parametrize("given", ["config", "flag"])
def test_a_classes_file_that_holds_something_else_is_never_appended_to(tmp_path: Path, name: str, given: str) -> None:
    """A pull request's `.dramigrate.yaml` (read untrusted, in CI) may name any file of the repository as its
    classes file, and fix appended DeviceClass documents to whatever it named outside the run's inputs: a GitHub
    workflow, a YAML file of prose. A classes file holds Kubernetes objects (the admins' own beside the
    DeviceClasses): one that holds anything else is named as bad input and left as it was; the manifests are
    migrated (a file not named .yaml or .yml, as a README or a shell script, is refused by its name: the test
    below)."""
    repo = _repository(tmp_path, "named-classes: true\n" + (f"classes-file: {name}\n" if given == "config" else ""))
    (repo / name).parent.mkdir(parents=True, exist_ok=True)
    (repo / name).write_text(OTHER_FILES[name])
    flag = ["--classes-file", name] if given == "flag" else []

    code, out, err = run_dramigrate(["fix", "--untrusted", "app", *flag, "--format", "json"], cwd=repo)

    assert (repo / name).read_text() == OTHER_FILES[name]
    assert code == 2 and "Traceback" not in out + err
    report = json.loads(out)
    [error] = report["errors"]
    assert Path(repo, error["file"]).resolve() == (repo / name).resolve(), error
    assert "holds other things than Kubernetes objects" in error["message"], error
    assert report["files"]["written"] == [{"file": "app/pinned.yaml"}]
    assert "resourceClaimTemplateName" in (repo / "app" / "pinned.yaml").read_text()


@pytest.mark.parametrize("name", [".gitignore", "Makefile", "classes.json", "README.md", "scripts/deploy.sh"])
def test_a_classes_file_not_named_as_yaml_is_never_written(tmp_path: Path, name: str) -> None:
    """A config's `classes-file: .gitignore` (or Makefile) made fix create that file with DeviceClass documents in
    it: git then read them as ignore rules; a README or a shell script got the documents appended. A classes file is
    YAML applied with `kubectl apply -f`, which takes .yaml and .yml files from a folder: any other name is refused
    before any work."""
    repo = _repository(tmp_path, f"named-classes: true\nclasses-file: {name}\n")
    kept = {"README.md": "# The project\n", "scripts/deploy.sh": "#!/bin/sh\necho deploying\n"}.get(name)
    if kept is not None:
        (repo / name).parent.mkdir(exist_ok=True)
        (repo / name).write_text(kept)

    code, out, err = run_dramigrate(["fix", "--untrusted", "app"], cwd=repo)

    assert (repo / name).read_text() == kept if kept is not None else not (repo / name).exists()
    assert code == 2 and "Traceback" not in out + err
    assert f"{name}: " in err and "ends in .yaml or .yml" in err, err
    assert (repo / "app" / "pinned.yaml").read_text() == PINNED_POD


FLAGS = {"immutable": ("+i", "immutable file"), "append-only": ("+a", "append-only file")}


@pytest.fixture
def flagged(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[Path, Path, str]]:
    """A tree of a good manifest and one with the file attribute chattr sets (immutable or append-only, which even
    root cannot replace), taken off again after the test so the folder can be removed."""
    flag, said = FLAGS[request.param]
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    bad = tree / "bad.yaml"
    bad.write_text(ONE_GPU_POD.format(name="bad"))
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, flag, bad], capture_output=True, check=False).returncode:
        pytest.skip("chattr cannot set file attributes here (not root, or a file system without them)")
    try:
        yield tree, bad, said
    finally:
        subprocess.run([chattr, flag.replace("+", "-"), bad], check=True)


@pytest.mark.parametrize("flagged", list(FLAGS), indirect=True)
def test_an_immutable_or_append_only_file_is_refused_by_name_and_never_called_fixable(
    flagged: tuple[Path, Path, str],
) -> None:
    """A manifest with the immutable or append-only attribute (`chattr +i`/`+a`, which a rename cannot replace,
    even as root) was called `(fixable)` by lint and diff, and fix then failed on it with `not written: Operation
    not permitted: ./.bad.yaml.12345.0c79a371.dramigrate`, a temporary name of the run's own. fix names the
    attribute and its way out, lint and diff say so instead of `(fixable)`, as for a read-only file; the file is
    left as it was and the good one migrated."""
    tree, bad, said = flagged
    before = bad.read_bytes()

    code, out, err = run_dramigrate(["lint", "."], cwd=tree)
    [line] = [line for line in out.splitlines() if line.startswith("bad.yaml:")]
    assert "(fixable)" not in line and said in line, out
    code, out, err = run_dramigrate(["diff", "."], cwd=tree)
    assert "bad.yaml" not in out and code == 2, out  # no patch fix would not apply
    code, out, err = run_dramigrate(["fix", "."], cwd=tree)

    assert code == 2 and "Traceback" not in err
    assert bad.read_bytes() == before
    reasons = [line for line in err.splitlines() if "bad.yaml:" in line and "not written" in line]
    assert reasons and all(said in line and ".dramigrate" not in line for line in reasons), err
    assert "resourceClaimTemplateName" in (tree / "good.yaml").read_text()


@pytest.mark.parametrize("key", ["limits", "resources", "containers", "spec", "kind", "nvidia.com/gpu"])
@pytest.mark.parametrize("command", ["lint", "fix"])
def test_a_key_with_an_explicit_string_tag_does_not_hide_a_device_request(
    tmp_path: Path, key: str, command: str
) -> None:
    """`!!str limits:` is the key `limits` for the API server (kubectl and kustomize read the pod's GPU request
    through it), but ruamel keeps a tagged key as a TaggedScalar, which no look-up by name finds: the request under
    it was not seen at all (`!!str limits`: lint silent, exit 0), or seen as being outside any pod spec (`!!str
    spec`, `containers`, `resources`, `kind`: a warning, exit 0), or ended in `internal error: StopIteration`
    (`!!str nvidia.com/gpu`). A gate went green on a pod asking for a GPU. A key with an explicit tag is now bad
    input named at its line (exit 2), the file left as it was and the good file beside it migrated."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    bad = tree / "bad.yaml"
    text = ONE_GPU_POD.format(name="bad")
    at = next(i for i, line in enumerate(text.splitlines(), 1) if line.lstrip(" -").startswith(f"{key}:"))
    bad.write_text(text.replace(f"{key}:", f"!!str {key}:", 1))
    before = bad.read_bytes()

    code, out, _ = run_dramigrate([command, ".", "--format", "json"], cwd=tree)

    report = json.loads(out)
    assert code == 2
    assert [f for f in report["findings"] if f["rule"] == "internal-error"] == []
    [error] = [e for e in report["errors"] if e["file"] == "bad.yaml"]
    assert error["line"] == at and "tag" in error["message"], error
    assert bad.read_bytes() == before
    if command == "fix":
        assert "resourceClaimTemplateName" in (tree / "good.yaml").read_text()


INLINE_PATCH = """\
resources:
- ../base
patches:
- patch: |-
    apiVersion: v1
    kind: Pod
    metadata:
      name: {name}
    spec:
      containers:
      - name: app
        resources:
          limits:
            nvidia.com/gpu: 2
            {repeat}
"""


@pytest.mark.parametrize("repeat", ["nvidia.com/gpu: 3", "!!str cpu: 1"], ids=["a-key-given-twice", "a-tagged-key"])
def test_an_inline_patch_dramigrate_cannot_read_fails_its_own_graph_only(tmp_path: Path, repeat: str) -> None:
    """An overlay's inline patch that kustomize builds but that dramigrate's reader refuses (a key given twice, a key
    with a tag) raised out of the rewrite of its graph, and fix then failed every kustomize graph of the run with
    that one error: an unrelated overlay beside it was not migrated and was listed as failed with the other's
    message, named by an absolute path at a line of the patch's own text. The graph of the bad patch is left alone
    and named as bad input at the patch's line in its kustomization; the other graph and the manifest are migrated."""
    tree = tmp_path / "tree"
    for graph in ("bad", "other"):
        (tree / graph / "base").mkdir(parents=True)
        (tree / graph / "overlay").mkdir()
        (tree / graph / "base" / "pod.yaml").write_text(ONE_GPU_POD.format(name=graph))
        (tree / graph / "base" / "kustomization.yaml").write_text("resources:\n- pod.yaml\n")
    (tree / "other" / "overlay" / "kustomization.yaml").write_text("resources:\n- ../base\nnamePrefix: o-\n")
    kustomization = tree / "bad" / "overlay" / "kustomization.yaml"
    kustomization.write_text(INLINE_PATCH.format(name="bad", repeat=repeat))
    (tree / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    bad_files = {p: p.read_bytes() for p in (tree / "bad").rglob("*") if p.is_file()}

    code, out, err = run_dramigrate(["fix", ".", "--format", "json"], cwd=tree)

    report = json.loads(out)
    assert code == 2, err
    assert {p: p.read_bytes() for p in (tree / "bad").rglob("*") if p.is_file()} == bad_files
    assert "resourceClaimTemplateName" in (tree / "other" / "base" / "pod.yaml").read_text()
    assert "resourceClaimTemplateName" in (tree / "good.yaml").read_text()
    [error] = report["errors"]
    assert (error["file"], error["line"]) == ("bad/overlay/kustomization.yaml", 15), error
    assert [f["file"] for f in report["files"]["failed"]] == ["bad/overlay/kustomization.yaml"]


EMPTY_KEY_POD = (
    ONE_GPU_POD.format(name="bad")
    + "  tolerations:\n  - key: nvidia.com/gpu\n    operator: Exists\n:   effect: NoSchedule\n"
)


ONLY_RUAMEL_READS = {
    "empty-key": (EMPTY_KEY_POD, EMPTY_KEY_POD.count("\n"), "did not find expected key"),
    # YAML 1.1's line breaks (NEL, LINE SEPARATOR), which go-yaml breaks lines at and YAML 1.2 reads as characters
    "line-separator": (ONE_GPU_POD.format(name="bad").replace("kind: Pod", "kind: \u2028Pod"), 4, "expected ':'"),
    "next-line": (ONE_GPU_POD.format(name="bad").replace("- name: app", "- n\x85ame: app"), 9, "not allowed"),
}


@pytest.mark.parametrize("case", list(ONLY_RUAMEL_READS))
@pytest.mark.parametrize("command", ["lint", "fix"])
def test_a_document_only_ruamel_reads_is_bad_input_as_kubectl_refuses_it(
    tmp_path: Path, case: str, command: str
) -> None:
    """A line `:   effect: NoSchedule` (an empty key, which YAML 1.2 allows) is refused by libyaml and by go-yaml,
    its port that kubectl, kustomize, Helm and the API server read YAML with (`did not find expected key`). ruamel
    read it as a key `null` at the top of the object, and dramigrate called the request fixable, fix rewrote the
    file around it (still refused by kubectl) and the post-renderer handed Helm text it could not read. The same for
    a NEL or LINE SEPARATOR that breaks a line for go-yaml (`kind: <LS>Pod`: kubectl says `could not find expected
    ':'`). The file is now bad input at that line, as kubectl says, and left as it was; the good file beside it is
    migrated."""
    text, line, said = ONLY_RUAMEL_READS[case]
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    bad = tree / "bad.yaml"
    bad.write_text(text, encoding="utf-8")

    code, out, _ = run_dramigrate([command, ".", "--format", "json"], cwd=tree)

    report = json.loads(out)
    assert code == 2
    [error] = [e for e in report["errors"] if e["file"] == "bad.yaml"]
    assert error["line"] == line and said in error["message"], error
    assert bad.read_text(encoding="utf-8") == text
    if command == "fix":
        assert "resourceClaimTemplateName" in (tree / "good.yaml").read_text()


def test_the_post_renderer_refuses_a_document_kubectl_cannot_read_before_rewriting_it() -> None:
    """The same stream given to `fix - --post-renderer`: named at its line, nothing handed to Helm (exit 2)."""
    code, out, err = run_dramigrate(["fix", "-", "--post-renderer"], stdin=EMPTY_KEY_POD)

    assert code == 2 and out == ""
    assert f"-:{EMPTY_KEY_POD.count(chr(10))}:1: invalid YAML: did not find expected key" in err, err


def _alias_bomb(levels: int) -> str:
    """YAML text of a few hundred bytes whose aliases stand for 10**levels list items, ending in a resources map."""
    lines = ['l0: &l0 ["limits", "x"]']
    lines += [f"l{i}: &l{i} [{','.join([f'*l{i - 1}'] * 10)}]" for i in range(1, levels + 1)]
    return "\n".join([*lines, "resources:", "  limits:", "    nvidia.com/gpu: 1", ""])


def test_an_alias_bomb_held_as_text_in_an_annotation_does_not_hang_lint(tmp_path: Path) -> None:
    """A string the pod holds as text (an annotation, Argo's podSpecPatch) is parsed to find device requests inside
    it; its aliases are the same objects again, and the walk visited each once per path to it: a 1 KB annotation of
    nine levels took 28 s, one more level ten times that. Each object is walked once now; the findings are the same."""
    pod = ONE_GPU_POD.format(name="held").replace(
        "metadata:\n", f"metadata:\n  annotations:\n    patch: {json.dumps(_alias_bomb(12))}\n", 1
    )
    (tmp_path / "held.yaml").write_text(pod)
    code, out, err = run_dramigrate(["lint", "--format", "json", str(tmp_path / "held.yaml")], timeout=60)
    rules = sorted(f["rule"] for f in json.loads(out)["findings"])
    assert code == 1 and "embedded-device-request" in rules and "legacy-device-request" in rules, out + err
