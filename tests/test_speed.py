"""The fast lint path gives exactly what the round-trip (ruamel) path gives: same data, positions and findings."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from conftest import CORPUS, CORPUS_MISSING, ONE_GPU_POD
from hypothesis import given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st

from dramigrate import migrate, pipeline, prefilter
from dramigrate.config import Settings
from dramigrate.detect import _resource_blocks
from dramigrate.documents import _LINE_BREAKS, has_content, odd_breaks, parse_document, split_documents
from dramigrate.fastyaml import Mapping, Sequence, fast_documents
from dramigrate.findings import InputError
from dramigrate.rules import load_rules
from dramigrate.triage import _literals, has_word, literal_words, may_matter
from dramigrate.versions import Target

ROOT = Path(__file__).resolve().parents[1]


def _same(fast: Any, slow: Any, where: str) -> None:
    """Same values and types as detection sees them, and the same positions on every mapping and sequence."""
    if isinstance(slow, dict):
        assert type(fast) is Mapping, where
        assert (fast.lc.line, fast.lc.col) == (slow.lc.line, slow.lc.col), where
        assert fast.fa.flow_style() == slow.fa.flow_style(), where
        assert list(fast) == list(slow), where
        for k in slow:
            assert fast.lc.key(k) == tuple(slow.lc.key(k)), f"{where}.{k} key"
            assert fast.lc.value(k) == tuple(slow.lc.value(k)), f"{where}.{k} value"
            _same(fast[k], slow[k], f"{where}.{k}")
    elif isinstance(slow, list):
        assert type(fast) is Sequence, where
        assert (fast.lc.line, fast.lc.col) == (slow.lc.line, slow.lc.col), where
        assert fast.fa.flow_style() == slow.fa.flow_style(), where
        assert len(fast) == len(slow), where
        for i, v in enumerate(slow):
            assert fast.lc.item(i) == tuple(slow.lc.item(i)), f"{where}[{i}]"
            _same(fast[i], v, f"{where}[{i}]")
    else:
        assert fast == slow, where
        if isinstance(slow, int) and not isinstance(slow, bool):  # ruamel loads 0 as a ScalarInt, an int all the same
            assert type(fast) is int, where
        else:
            assert type(fast) is type(slow), where  # quoted and block strings: ruamel's str subclasses


RULES = load_rules(())


def _findings(path: Path, fast: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[list[dict[str, Any]], str]:
    with monkeypatch.context() as m:
        if not fast:
            m.setattr(pipeline, "fast_parse", lambda *_args: False)
        r = migrate.run_file(migrate.Job(str(path), None, False), RULES, Settings(), Target.parse("1.36"))
    return [dataclasses.asdict(f) for f in r.findings], repr(r.error)


def _check_tree(files: list[Path], monkeypatch: pytest.MonkeyPatch) -> int:
    fast_parsed = 0
    for path in files:
        raw = path.read_bytes()
        if not may_matter(raw, RULES):  # lint decides these from the bytes, before either parse
            continue
        fast = fast_documents(str(path), raw)
        if fast is not None:
            fast_parsed += 1
            slow = split_documents(str(path), raw)
            for a, b in zip(fast.yf.documents, slow.documents, strict=True):
                try:
                    parse_document(str(path), b)
                except InputError as exc:
                    pytest.fail(f"{path}: libyaml parsed a document ruamel refuses: {exc.message}")
                _same(a.data, b.data, f"{path}:{b.start_line}")
        assert _findings(path, True, monkeypatch) == _findings(path, False, monkeypatch), path
    return fast_parsed


def test_fast_lint_is_identical_on_the_golden_fixtures(monkeypatch: pytest.MonkeyPatch) -> None:
    files = sorted(p for p in (ROOT / "fixtures").rglob("*") if p.suffix in (".yaml", ".yml"))
    assert files
    assert _check_tree(files, monkeypatch) > 10


@pytest.mark.skipif(not CORPUS.is_dir(), reason=CORPUS_MISSING)
def test_fast_lint_is_identical_on_the_corpus(monkeypatch: pytest.MonkeyPatch) -> None:
    files = sorted(p for p in CORPUS.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
    assert _check_tree(files, monkeypatch) > 100


def test_fast_lint_is_identical_on_generated_device_files(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("bench_generate", ROOT / "benchmarks" / "generate.py")
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    gen.generate(tmp_path, 120, 7, device_share=0.5)
    assert _check_tree(sorted(tmp_path.rglob("*.y*ml")), monkeypatch) > 50


@pytest.mark.parametrize(
    "text",
    [
        "a: &x 1\nc: *x\n",  # an anchored scalar is a ruamel scalar type
        "a: 010\n",  # octal in YAML 1.1, decimal-ish in 1.2
        "a: yes\n",  # a boolean in YAML 1.1 only
        "a: 1.5\n",  # ruamel keeps float formatting
        "a: !!str 5\n",
        "<<: {a: 1}\n",
        "a: 1\n...\nb: 2\n",  # a document end marker inside a `---` section: two YAML documents
        "a: 1\na: 2\n",  # ruamel refuses duplicate keys with its own message
        "a: 1\r\n\rb: 2\n",  # a bare CR is a line break for YAML, not for the document splitter
    ],
)
def test_what_the_fast_parse_cannot_reproduce_goes_to_ruamel(text: str) -> None:
    assert fast_documents("x.yaml", text.encode()) is None


def test_a_plain_scalar_resolves_the_same_in_every_file_of_a_worker() -> None:
    # plain scalars are memoised across files: a value seen first as a string key, or quoted, must still give
    # ruamel's value when it comes plain, and one ruamel types otherwise must send every file holding it to ruamel
    first = fast_documents("a.yaml", b"'010': x\n'7': \"7\"\nyes2: 1\n")
    assert first is not None and first.roots == [{"010": "x", "7": "7", "yes2": 1}]
    for _ in range(2):
        assert fast_documents("b.yaml", b"a: 010\n") is None
    again = fast_documents("c.yaml", b"k: 7\nq: '7'\n")
    assert again is not None and again.roots == [{"k": 7, "q": "7"}]
    assert type(again.roots[0]["k"]) is int and type(again.roots[0]["q"]) is not str  # quoted: ruamel's str type


def test_the_fast_parse_counts_values_as_the_bomb_check_does(monkeypatch: pytest.MonkeyPatch) -> None:
    # the parse counts a document's values and walks it for the node bound only when it holds an alias
    from dramigrate import documents, fastyaml

    monkeypatch.setattr(documents, "MAX_NODES", 7)
    monkeypatch.setattr(fastyaml, "MAX_NODES", 7)
    ok = split_documents("a.yaml", b"a: {b: 1, c: [1, 2]}\nd: x\n").documents[0]  # 7 values with the root
    assert fastyaml.fast_parse("a.yaml", ok) and ok.data == {"a": {"b": 1, "c": [1, 2]}, "d": "x"}
    for text in (b"a: {b: 1, c: [1, 2, 3]}\nd: x\n", b"a: &x [1, 2]\nb: *x\nc: *x\n"):  # 8 values; 4 expanded to 10
        with pytest.raises(InputError, match="too many nodes"):
            fastyaml.fast_parse("a.yaml", split_documents("a.yaml", text).documents[0])


def test_the_rewrite_bound_takes_the_values_the_fast_parse_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """lint holds a device document to fix's bound on values with the count the fast parse made while building it: it
    walked every value again (a twelfth of a worker's time on a device file). A document with an alias is still
    walked (its aliases expanded), and a counted document past the bound is still bad input."""
    from dramigrate import limits

    walked: list[int] = []
    walk = limits.expands_within
    monkeypatch.setattr(limits, "expands_within", lambda data, budget: walked.append(budget) or walk(data, budget))
    plain, aliased = tmp_path / "plain.yaml", tmp_path / "aliased.yaml"
    plain.write_text(ONE_GPU_POD.format(name="plain"))
    aliased.write_text(
        ONE_GPU_POD.format(name="a").replace("  name: a\n", "  name: a\n  labels: &l {x: y}\n  annotations: *l\n")
    )

    def lint(path: Path) -> migrate.FileResult:
        return migrate.run_file(migrate.Job(str(path), None, False), RULES, Settings(), Target.parse("1.36"))

    assert [f.rule for f in lint(plain).findings] == ["legacy-device-request"] and walked == []
    assert [f.rule for f in lint(aliased).findings] == ["legacy-device-request"]
    assert walked[-1] == limits.MAX_EDITED_NODES
    monkeypatch.setattr(limits, "MAX_EDITED_NODES", 10)  # the plain Pod holds 12 values with its root
    error = lint(plain).error
    assert error is not None and error.message.startswith("this document holds more than 10 values")


SEEN_CASES = [
    "kind: Deployment\nspec:\n  nodeSelector: {nvidia.com/gpu.present: 'true'}\n  resources:\n    limits: {cpu: 1}\n",
    "x: &r {nvidia.com/gpu: 1}\nspec:\n  containers:\n  - name: a\n    resources:\n      limits: *r\n",
    "\"kind\": 'ResourceQuota'\nspec: {hard: {cpu: 1}}\n",
    "spec:\n  template:\n    spec:\n      resourceClaims: []\n",
    "data:\n  pod.yaml: |\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n",
    "args: ['--requests', 'nvidia.com/gpu']\n",
    "singleuser: {extra_resource_guarantees: {nvidia.com/gpu: 1}}\n",
    "'limits nvidia.com/gpu: 1'\n",
    "spec: {requests: [nvidia.com/gpu]}\n",
]


@pytest.mark.parametrize("text", SEEN_CASES)
def test_what_the_fast_parse_met_answers_as_the_walks_of_every_value(text: str) -> None:
    """Lint asks the parse's record (fastyaml.Seen) whether a document needs the pipeline, holds a request in a
    string or a resources block, instead of walking every value again: each answer is the walk's."""
    from dramigrate.detect import Detector, objects_of
    from dramigrate.embedded import _strings, embedded_findings
    from dramigrate.fastyaml import seen
    from dramigrate.triage import _needs_pipeline, needs_pipeline

    fast = fast_documents("x.yaml", text.encode())
    assert fast is not None
    doc = fast.yf.documents[0]
    met = seen(doc)
    assert (met is not None) == isinstance(doc.data, dict | list)  # a scalar root has no record: it is walked
    assert needs_pipeline(doc, RULES) == _needs_pipeline(doc.data, RULES)
    walked = [s for info in objects_of(doc.data) for _, _, s in _strings(info.obj)]
    if met is not None and (
        embedded_findings("x.yaml", doc, RULES) or any(w in s for s in walked for w in ("limits", "requests"))
    ):
        assert met.texts
    blocks = [b for info in objects_of(doc.data) for b in _resource_blocks(info.obj, info.path)]
    assert met is None or bool(blocks) <= bool(met.sections)
    det = Detector("x.yaml", RULES, Settings(), Target.parse("1.36"), {})
    det.decisions, det.suppressed = [], []
    got = [dataclasses.asdict(f) for f in det.analyze(doc)[0] + embedded_findings("x.yaml", doc, RULES)]
    if met is not None:
        doc.data.seen = None  # as if ruamel had parsed it: every check walks
    assert got == [dataclasses.asdict(f) for f in det.analyze(doc)[0] + embedded_findings("x.yaml", doc, RULES)]


def test_what_the_fast_parse_met_goes_with_its_document(tmp_path: Path) -> None:
    """Lint lets each document of a large manifest go once its findings are made; the parse's record of it must
    not keep it (a 15 MiB manifest took 330 MB instead of 140 MB when the record sat on the Document)."""
    import gc

    from dramigrate.fastyaml import fast_parse

    doc = split_documents("x.yaml", b"kind: Pod\nspec: {containers: [{resources: {limits: {cpu: 1}}}]}\n").documents[0]
    assert fast_parse("x.yaml", doc)
    limits = id(doc.data["spec"]["containers"][0]["resources"]["limits"])  # a section the record lists
    doc.data = None
    gc.collect()
    assert not any(type(o) is Mapping and id(o) == limits for o in gc.get_objects())


def test_aliased_maps_parse_fast_and_shared_as_ruamel_shares_them() -> None:
    text = (
        "spec:\n  selector:\n    matchLabels: &id001\n      app: x\n  template:\n    metadata:\n      labels: *id001\n"
    )
    fast = fast_documents("x.yaml", text.encode())
    assert fast is not None
    slow = split_documents("x.yaml", text.encode())
    parse_document("x.yaml", slow.documents[0])
    a, b = fast.yf.documents[0].data, slow.documents[0].data
    _same(a, b, "x.yaml")
    assert a["spec"]["template"]["metadata"]["labels"] is a["spec"]["selector"]["matchLabels"]


EDGE_CASES = {
    "section-far.yaml": "spec:\n  resources:\n    limits:\n"
    + "      # note\n" * 30
    + "\n"
    + "      example.com/fpga: 1\n",
    "crlf.yaml": "resources:\r\n  requests:\r\n    'vendor.io/dev': 2\r\n",
    "flow.yaml": "resources: {limits: {acme.dev/x: 1}}\n",
    "dash.yaml": "- limits:\n    foo.org/thing: 1\n",
    "kubespawner.yaml": "extra_resource_limits:\n  amd.com/gpu: '1'\n",
    "guarantees.yaml": "extra_resource_guarantees:\n  acme.dev/x: '1'\n",  # holds neither limits nor requests
    "tabs.yaml": "limits:\n\t\tfoo.io/bar: 1\n",
    "nul.yaml": "a: 1\n\0limits:\n  x.io/y: 1\n",
    "utf16.yaml": "resources:\n  limits:\n    nvidia.com/gpu: 1\n",
    "native.yaml": "resources:\n  limits:\n    hugepages.kubernetes.io/x: 1\n",
    "clean.yaml": "metadata:\n  labels:\n    app.kubernetes.io/name: x\nspec:\n  limits:\n    cpu: 1\nz:\n  a.io/b: 1",
    "claims-lines.yaml": "spec:\n  claims\n   : [a]\n",  # claims\s*: across lines (grep finds the word `claims`)
    "claims-word.yaml": "metadata:\n  name: claimsx\n",  # the word alone: not a claim
}


@pytest.mark.skipif(prefilter._grep() is None, reason="no GNU grep with -P")
def test_grep_prefilter_keeps_every_file_the_python_triage_keeps(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name, text in EDGE_CASES.items():
        (tmp_path / name).write_bytes(text.encode("utf-16" if name == "utf16.yaml" else "utf-8"))
    files = sorted(tmp_path.iterdir())
    files += sorted(p for p in (ROOT / "fixtures").rglob("*") if p.suffix in (".yaml", ".yml"))
    if CORPUS.is_dir():
        files += sorted(p for p in CORPUS.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
    monkeypatch.setattr(prefilter, "MIN_FILES", 0)
    stream = prefilter.Stream(RULES)
    stream.add([str(p) for p in files])
    grep = stream.finish()
    assert grep is not None
    kept = grep.result().candidates
    missed = [p for p in files if may_matter(p.read_bytes(), RULES) and str(p) not in kept]
    assert missed == []
    assert str(tmp_path / "nul.yaml") in kept and str(tmp_path / "utf16.yaml") in kept  # Python decides those
    assert str(tmp_path / "clean.yaml") not in kept  # and it does filter: a domain key after the section is not in it
    assert str(tmp_path / "claims-lines.yaml") in kept and str(tmp_path / "claims-word.yaml") not in kept
    if CORPUS.is_dir():  # most corpus files ask for no device; the repo's own fixtures almost all do
        assert len(kept) < len(files) * 0.8


TIME_V = Path("/usr/bin/time")


@pytest.mark.skipif(prefilter._grep() is None or not TIME_V.exists(), reason="no GNU grep with -P, or no GNU time")
def test_a_file_grep_matches_millions_of_times_keeps_lint_small(tmp_path: Path) -> None:
    """grep -o prints every match: a 4 MB file of `{{` (or of NUL bytes) made it print over 30 MB, which the pre-filter
    held and split, and lint of a small tree took 400 MB. Past a bound the batch's grep is stopped and Python
    decides its files, as when grep fails."""
    import subprocess
    import sys

    for i in range(prefilter.MIN_FILES):
        (tmp_path / f"s{i}.yaml").write_text(f"apiVersion: v1\nkind: Service\nmetadata:\n  name: s{i}\n")
    (tmp_path / "braces.yaml").write_text("a: |\n  " + "{{" * 2_000_000 + "\n")
    (tmp_path / "zeros.yaml").write_bytes(b"\0" * 4_000_000)
    (tmp_path / "job.yaml").write_text(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: t\nspec:\n  template:\n    spec:\n"
        "      containers:\n      - name: t\n        image: x\n        resources:\n          limits:\n"
        "            nvidia.com/gpu: 1\n"
    )
    report, usage = tmp_path / "report.json", tmp_path / "time.txt"
    subprocess.run(
        [str(TIME_V), "-v", "-o", str(usage), sys.executable, "-m", "dramigrate", "lint", str(tmp_path)]
        + ["--format", f"json={report}", "--quiet"],
        capture_output=True,
        timeout=120,
        check=False,
    )
    peak_kib = next(
        int(line.rsplit(":", 1)[1]) for line in usage.read_text().splitlines() if "Maximum resident" in line
    )
    assert peak_kib < 150 * 1024
    found = json.loads(report.read_text())
    assert found["summary"]["files"] == prefilter.MIN_FILES + 3
    assert [f["file"] for f in found["findings"] if f["rule"] == "legacy-device-request"] == [
        str(tmp_path / "job.yaml")
    ]


def test_a_manifest_of_more_than_ten_thousand_documents_is_linted(tmp_path: Path) -> None:
    """A rendered platform (kustomize build or helm template output) holds tens of thousands of small objects
    within the 32 MiB file cap: the document limit must not refuse it, and positions stay right to the end."""
    objects = "".join(f"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{i}\n" for i in range(12_000))
    workload = (
        "---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: train\nspec:\n  template:\n    spec:\n"
        "      restartPolicy: Never\n      containers:\n      - name: t\n        image: x\n"
        "        resources:\n          limits:\n            nvidia.com/gpu: 1\n"
    )
    path = tmp_path / "rendered.yaml"
    path.write_text(objects + workload)
    r = migrate.run_file(migrate.Job(str(path), None, False), RULES, Settings(), Target.parse("1.36"))
    assert r.error is None
    device = [f for f in r.findings if f.rule == "legacy-device-request"]
    assert [(f.line, f.resource) for f in device] == [(objects.count("\n") + 15, "nvidia.com/gpu")]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "a: 1",
        "a: 1\n",
        "---\n",
        "---",
        "# c\n\n---\na: 1\n---  # two\nb: 2",
        "\n  \n---\na: 1\n",
        "a: 1\n---\n---\nb: 2\n---\n",
        "a: |\n  ---\n  x\n----\n--- x\n---\t\nc: 3\n",
        "---\n---\n\n",
        "a: ---\n---\nb: --- # x\n---- \n ---\nc: 1\n",
    ],
)
def test_the_document_split_by_regex_is_the_split_by_lines(text: str) -> None:
    """Lint splits a big file on its `---` lines with one regex over the text instead of a list of every line."""
    from dramigrate import documents

    assert documents._split_markers(text) == documents._split_lines(text)


@pytest.mark.skipif(prefilter._grep() is None, reason="no GNU grep with -P")
def test_grep_finds_the_autoscaler_files_python_finds(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The autoscaler check of a large tree reads only the files grep names: every file holding a needle, found in
    the pre-filter's own pass; a file holding needles only is no candidate, unless a word hides under a needle."""
    from dramigrate.cutover import needles

    texts = {
        "karpenter.yaml": "apiVersion: karpenter.sh/v1\nkind: NodePool\n",
        "nul.yaml": "a: 1\n\0image: registry.k8s.io/autoscaling/cluster-autoscaler:v1\n",
        "crlf.yaml": "image: cluster-autoscaler\r\n",
        "hidden.yaml": "x: cluster-autoscaleresourceClaims\n",  # grep -o prints the needle, not the word under it
        "clean.yaml": "apiVersion: v1\nkind: Service\n",
    }
    for name, text in texts.items():
        (tmp_path / name).write_text(text, newline="")
    files = sorted(tmp_path.iterdir()) + sorted(p for p in (ROOT / "fixtures").rglob("*.y*ml"))
    monkeypatch.setattr(prefilter, "MIN_FILES", 0)
    stream = prefilter.Stream(RULES, needles())
    stream.add([str(p) for p in files])
    grep = stream.finish()
    assert grep is not None
    found = grep.result()
    holding = {str(p) for p in files if any(n in p.read_bytes() for n in needles())}
    assert holding <= found.needles
    assert {str(tmp_path / n) for n in ("karpenter.yaml", "nul.yaml", "crlf.yaml", "hidden.yaml")} <= holding
    assert str(tmp_path / "clean.yaml") not in found.needles
    assert {str(p) for p in files if may_matter(p.read_bytes(), RULES)} <= found.candidates
    assert str(tmp_path / "hidden.yaml") in found.candidates
    assert str(tmp_path / "crlf.yaml") not in found.candidates


@pytest.mark.parametrize(
    "text",
    [
        "".join(" " * i + f"k{i}:\n" for i in range(101)),  # one more space per level
        "".join("  " * i + f"k{i}:\n" for i in range(60)) + "  " * 60 + "x: " + "[" * 45 + "]" * 45 + "\n",
        "a: " + "{" * 101 + "}" * 101 + "\n",
        "- " * 101 + "x\n",
        "".join("  " * i + "- - - a:\n" for i in range(26)),  # three levels per line
        "---\n" * 11,
        "a: |\n" + "---\n" * 11,  # a marker at column 0 ends the block scalar
    ],
)
def test_the_quick_structure_bound_never_passes_what_the_line_walk_refuses(text: str) -> None:
    """check_structure skips its line walk when a bound from whole-text searches says no limit can be reached: the
    bound must be sound (a text the walk refuses never passes it)."""
    from dramigrate.limits import Limits, _within_limits, check_structure

    limits = Limits(max_depth=100, max_documents=10)
    assert not _within_limits(text, limits)
    with pytest.raises(InputError, match="nested more than|YAML documents"):
        check_structure("f.yaml", text, limits)


def test_the_walk_tells_the_files_it_finds_as_it_goes(tmp_path: Path) -> None:
    """grep starts on the first files while the walk goes on: expand tells them in batches, every file once, in
    walk order, the last batch before it returns."""
    from dramigrate.sources import TELL_EVERY, expand

    for i in range(TELL_EVERY * 2 + 7):
        folder = tmp_path / f"d{i // 50:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i:04d}.yaml").write_text("a: 1\n")
    told: list[list[str]] = []
    inputs = expand([str(tmp_path)], found=told.append)
    assert len(told) >= 3
    assert [f for batch in told for f in batch] == inputs.files


WORDS = [w.encode() for w in literal_words(RULES)]


@given(st.lists(st.sampled_from([*WORDS, *(w[:-1] for w in WORDS), *(w[1:] for w in WORDS), b"x", b"\n", b"/"])))
def test_the_word_check_finds_what_the_word_regex_finds(parts: list[bytes]) -> None:
    raw = b"".join(parts)
    assert has_word(raw, RULES) == (_literals(RULES).search(raw) is not None)


_GREP_ALPHABET = b"ab.[]\\*+?{}()|^$-/~1\0"  # every character special in an extended regex, and a NUL byte
_GREP_WORD = st.lists(st.sampled_from(_GREP_ALPHABET), min_size=1, max_size=4).map(bytes)


@pytest.mark.skipif(prefilter._grep() is None, reason="no GNU grep with -P")
@hyp_settings(max_examples=60, deadline=None)
@given(st.lists(_GREP_WORD, min_size=1, max_size=5), st.lists(st.sampled_from(_GREP_ALPHABET + b"\n"), max_size=80))
def test_grep_finds_the_words_alternation_as_it_finds_fixed_strings(words: list[bytes], text: list[int]) -> None:
    """The first pass gives grep the words as one extended regex: each matches literally, and `-o` prints what it
    prints for the same words as fixed strings."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "f.yaml")
        path.write_bytes(bytes(text))

        def matches(flag: str, patterns: bytes) -> bytes:
            command = ["grep", flag, "-oa", "-f", "-", str(path)]
            return subprocess.run(command, input=patterns, capture_output=True, env=prefilter._ENV, check=False).stdout

        fixed = b"".join(w + b"\n" for w in dict.fromkeys(words))
        assert matches("-E", prefilter.alternation(dict.fromkeys(words))) == matches("-F", fixed)


@given(st.text())
def test_the_odd_line_break_check_is_the_regex(text: str) -> None:
    assert odd_breaks(text) == (_LINE_BREAKS.search(text) is not None)
    for c in "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029":
        assert odd_breaks(text + c)


_NO_CONTENT_LINES = ["", " ", "\t", "# a comment " * 30, "%YAML 1.1", "...", "  ... ", "\u3000"]


@given(
    st.lists(st.sampled_from(_NO_CONTENT_LINES), max_size=60),
    st.sampled_from(["", "a: 1", " x" * 200, "# ok", "...x"]),
    st.sampled_from(["\n", "\r\n", "\r", "\u2028", "\x85"]),
)
def test_has_content_reads_as_far_as_every_line(blank: list[str], last: str, newline: str) -> None:
    """has_content splits only a growing prefix of a document into lines: it answers as a split of every line."""
    text = newline.join([*blank, last])
    lines = (line.strip() for line in text.splitlines())
    assert has_content(text) == any(s and not s.startswith(("#", "%")) and s != "..." for s in lines)


def test_resource_blocks_are_found_with_their_paths() -> None:
    # paths are joined only for the blocks found; an empty key joins as the walk always joined it
    data = {
        "a": [{"resources": {"limits": {"x.io/y": 1}}}, "s"],
        "": {"b": {"requests": {"x.io/z": 1}}},
        "hub": {"extra_resource_limits": {"a.io/b": 1}},
    }
    found = {p: block for block, p in _resource_blocks(data, "")}
    assert sorted(found) == ["a[0].resources", "b", "hub.extra_resource_limits"]
    assert found["hub.extra_resource_limits"] == {"limits": {"a.io/b": 1}}
    assert [p for _, p in _resource_blocks(data["a"], "spec.x")] == ["spec.x[0].resources"]


STRAY_BESIDE_A_CONTAINER = ONE_GPU_POD.format(name="pod") + "  sidecarSet:\n    {block}\n"


@pytest.mark.parametrize(
    ("block", "stray"),
    [
        ("resources: {limits: {amd.com/gpu: 2}}", True),  # a block no pod spec reads, beside a container's
        ("resources: {limits: {cpu: 1}, requests: {example.com/widget: 1}}", False),  # no device the rules know
        ("extra_resource_limits: {nvidia.com/gpu: 1}", True),  # JupyterHub's key
        ("notes: 'limits: nvidia.com/gpu'", False),
    ],
)
def test_a_device_outside_the_pod_specs_is_found_beside_the_containers_devices(
    block: str, stray: bool, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # lint skips the walk for such blocks when every device section the parse met is a container's (stray_requests)
    path = tmp_path / "pod.yaml"
    path.write_text(STRAY_BESIDE_A_CONTAINER.format(block=block))
    fast = _findings(path, True, monkeypatch)
    assert fast == _findings(path, False, monkeypatch)
    assert any(f["rule"] == "unknown-kind" for f in fast[0]) is stray
    assert any(f["rule"] == "legacy-device-request" for f in fast[0])


def test_a_container_limits_map_aliased_outside_the_pod_spec_is_found(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "pod.yaml"
    text = ONE_GPU_POD.format(name="pod").replace("limits:\n", "limits: &gpu\n") + "  extra:\n    limits: *gpu\n"
    path.write_text(text)
    fast = _findings(path, True, monkeypatch)
    assert fast == _findings(path, False, monkeypatch)
    assert [f["pod_template_path"] for f in fast[0] if f["rule"] == "unknown-kind"] == ["spec.extra"]


def test_a_graph_file_names_a_device_as_its_own_rule_packs_say(tmp_path: Path) -> None:
    # the kustomize scan remembers each key's lookup per rule set: another run's packs are asked again
    from dramigrate.kustomize.fields import mentions_device

    pack = tmp_path / "acme.yaml"
    pack.write_text(
        "schemaVersion: 1\nkind: RulePack\nname: acme\nresources:\n"
        "  - {match: acme.example/npu, deviceClass: npu.acme.example, request: npu}\n"
        "deviceClasses:\n"
        "  - {name: npu.acme.example, driver: npu.acme.example, selectors: [\"device.driver == 'npu.acme.example'\"]}\n"
    )
    text = "resources:\n  limits:\n    acme.example/npu: 1\n    app.kubernetes.io/x: 1\n"
    for _ in range(2):
        assert not mentions_device(text, RULES)
        assert mentions_device(text, load_rules((pack,)))
        assert mentions_device(text.replace("acme.example/npu", "nvidia.com/gpu"), RULES)


@given(st.text(alphabet="ab.-/9Z_é\n :~", max_size=60))
def test_graph_keys_are_found_as_the_key_regex_finds_them(text: str) -> None:
    from dramigrate.kustomize.fields import _KEY, _keys

    assert list(_keys(text)) == _KEY.findall(text)


def test_the_report_reads_again_only_the_files_that_hold_a_suppression_comment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """lint read every file with findings already: the report's suppression pass opens only those whose bytes hold
    `dramigrate:` (2,000 device files read a second time took a tenth of a second at the end of a run), and their
    comments still hide what they name."""
    from dramigrate import commands, suppress

    pod = (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  containers:\n  - name: app\n    image: app:1\n"
        "    resources:\n      limits:\n        nvidia.com/gpu: 1\n"
    )
    (tmp_path / "plain.yaml").write_text(pod.format(name="plain"))
    (tmp_path / "quiet.yaml").write_text("# dramigrate: disable-file=legacy-device-request\n" + pod.format(name="q"))
    opened: list[str] = []
    real = suppress._read
    monkeypatch.setattr(suppress, "_read", lambda file: opened.append(Path(file).name) or real(file))
    report = tmp_path.parent / "report.json"
    commands.do_lint(commands.Options([str(tmp_path)], format=["json"], output=report), None)
    findings = json.loads(report.read_text())["findings"]
    assert [Path(f["file"]).name for f in findings if f["rule"] == "legacy-device-request"] == ["plain.yaml"]
    assert "plain.yaml" not in opened


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=30,
)


@given(_JSON)
def test_the_json_report_is_encoded_as_json_dumps_encodes_it(doc: Any) -> None:
    from dramigrate.report.json import dumps

    assert dumps(doc) == json.dumps(doc, indent=2)
    assert dumps({1: doc}) == json.dumps({1: doc}, indent=2)  # a key that is not a string: json.dumps says it


@pytest.mark.skipif(prefilter._grep() is None, reason="no GNU grep with -P")
def test_grep_prefilter_filters_a_deep_tree_whose_paths_pass_arg_max(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A batch of BATCH long paths (a deep monorepo) passed Linux's 2 MiB ARG_MAX: grep could not start, and Python
    read every file of the batch itself. Command lines are cut by the length of their names too."""
    monkeypatch.setattr(prefilter, "MIN_FILES", 0)
    deep = tmp_path
    per_name = 4 * 2**20 // prefilter.BATCH  # a batch of BATCH paths holds twice ARG_MAX
    while len(str(deep)) < per_name:
        deep /= "d" * min(200, per_name - len(str(deep)) + 1)
    deep.mkdir(parents=True)
    clean = [deep / f"s{i:05d}.yaml" for i in range(prefilter.BATCH + 10)]
    for p in clean:
        p.write_text("apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n")
    job = deep / "job.yaml"
    job.write_text("kind: Job\nspec:\n  containers:\n  - resources:\n      limits:\n        nvidia.com/gpu: 1\n")
    stream = prefilter.Stream(RULES)
    stream.add([str(p) for p in [*clean, job]])
    grep = stream.finish()
    assert grep is not None
    assert grep.result().candidates == {str(job)}


def test_an_unknown_extended_resource_in_a_flow_mapping_is_reported_as_in_block_style(
    run_cli: Any, tmp_path: Path
) -> None:
    """`resources: {limits: {example.org/fpga: 1}}` gets the warning its block-style twin gets (was: the byte triage
    saw `limits:` only at the start of a line, and lint skipped the file without a word)."""
    pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: f}\nspec:\n  containers:\n"
    (tmp_path / "flow.yaml").write_text(pod + "  - {name: c, image: x, resources: {limits: {example.org/fpga: 1}}}\n")
    (tmp_path / "block.yaml").write_text(
        pod + "  - name: c\n    image: x\n    resources:\n      limits:\n        example.org/fpga: 1\n"
    )
    one_line = {"resources": {"limits": {"example.org/fpga": 1}}, "name": "c", "image": "x"}
    manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "f"}, "spec": {"containers": [one_line]}}
    (tmp_path / "compact.json").write_text(json.dumps(manifest, separators=(",", ":")))
    code, out, _ = run_cli(["lint", "--format", "json", tmp_path])
    warned = {Path(f["file"]).name for f in json.loads(out)["findings"] if f["rule"] == "unknown-resource"}
    assert warned == {"flow.yaml", "block.yaml", "compact.json"}


def test_without_libyaml_lint_parses_with_ruamel(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A PyYAML built without libyaml: the fast parse declines every document, and ruamel gives the same findings."""
    from dramigrate import fastyaml

    path = tmp_path / "pod.yaml"
    path.write_text(ONE_GPU_POD.format(name="pod"))
    fast = _findings(path, True, monkeypatch)
    monkeypatch.setattr(fastyaml, "CParser", None)
    assert fastyaml.fast_documents(str(path), path.read_bytes()) is None
    assert fast[0] and _findings(path, True, monkeypatch) == fast
