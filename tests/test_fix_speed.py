"""Fix's round-trip data composed from libyaml events (rtcompose) is exactly ruamel's own: same values and string
and number classes, positions, styles, comments, and the same dump, so every rewritten file stays byte-identical."""

from __future__ import annotations

import functools
import importlib.util
import io
from pathlib import Path
from typing import Any

import pytest
from conftest import CORPUS, CORPUS_MISSING
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarint import ScalarInt
from ruamel.yaml.scalarstring import DoubleQuotedScalarString, LiteralScalarString, SingleQuotedScalarString

from dramigrate.documents import Indent, _load, _round_trip, dump_yaml, has_content, indent_of, split_documents
from dramigrate.rtcompose import Decline, compose_round_trip
from dramigrate.rtdump import plain_dump

ROOT = Path(__file__).resolve().parents[1]


def _same(fast: Any, slow: Any, where: str, comments: bool = True) -> None:
    """The same data, classes, positions and styles; and the same comments unless `comments` is False (data read
    only as objects, composed without them)."""
    assert type(fast) is type(slow), where
    if isinstance(slow, (dict, list)):
        assert (fast.lc.line, fast.lc.col, fast.lc.data) == (slow.lc.line, slow.lc.col, slow.lc.data), where
        assert fast.fa.flow_style() == slow.fa.flow_style(), where
        if comments:
            assert repr(fast.ca) == repr(slow.ca), where  # comments, with their lines and columns
        assert len(fast) == len(slow), where
        if isinstance(slow, dict):
            assert list(fast) == list(slow), where
            for k in slow:
                _same(fast[k], slow[k], f"{where}.{k}", comments)
        else:
            for i, v in enumerate(slow):
                _same(fast[i], v, f"{where}[{i}]", comments)
    else:
        assert repr(fast) == repr(slow), where
        attrs = ("anchor", "comment", "_width", "_underscore", "_prec", "_exp")
        for attr in attrs if comments else tuple(a for a in attrs if a != "comment"):
            assert repr(getattr(fast, attr, None)) == repr(getattr(slow, attr, None)), f"{where} {attr}"


def _sharing(data: Any) -> list[int]:
    """Which collections of the data are one object (an alias): for each met in order, where it was first met."""
    first: dict[int, int] = {}
    out: list[int] = []
    todo = [data]
    while todo:
        node = todo.pop()
        if not isinstance(node, (dict, list)):
            continue
        out.append(first.setdefault(id(node), len(out)))
        if out[-1] == len(out) - 1:
            todo.extend(reversed(list(node.values()) if isinstance(node, dict) else node))
    return out


def _check(files: list[Path], comments: bool = True) -> tuple[int, int]:
    """(documents composed and equal to ruamel's, documents declined) over the files' `---` sections. `comments`:
    as compose_round_trip's (False: read as objects, comments and blank lines left out of the data; not dumped)."""
    same = declined = 0
    for path in files:
        try:
            documents = split_documents(str(path), path.read_bytes()).documents
        except Exception:  # noqa: BLE001,S112 - not a file fix reads: nothing to compare
            continue
        for doc in documents:
            if not has_content(doc.body):
                continue
            try:
                fast = compose_round_trip(doc.body, _round_trip(), comments)
            except Decline:
                declined += 1
                continue
            except Exception:  # noqa: BLE001 - refused: then ruamel must refuse it too (it words the error)
                with pytest.raises(Exception):  # noqa: B017,PT011
                    _round_trip().load(doc.body)
                continue
            slow = _round_trip().load(doc.body)
            _same(fast, slow, f"{path}:{doc.start_line}", comments)
            assert _sharing(fast) == _sharing(slow), f"{path}:{doc.start_line}"
            indent = indent_of(doc.body)
            if comments:
                assert dump_yaml(fast, indent) == dump_yaml(slow, indent), f"{path}:{doc.start_line}"
            same += 1
    return same, declined


def _ruamel_dump(data: Any, indent: Indent) -> str:
    """ruamel's round-trip dump as it comes, without rtdump's memos."""
    yaml = _round_trip()
    yaml.indent(mapping=indent.mapping, sequence=indent.sequence, offset=indent.offset)
    buf = io.StringIO()
    yaml.dump(data, buf)
    return buf.getvalue()


def _dumps_match(files: list[Path]) -> int:
    """How many documents of the files dump_yaml writes exactly as ruamel does; fails at the first that differs."""
    n = 0
    for path in files:
        for doc in split_documents(str(path), path.read_bytes()).documents:
            if has_content(doc.body):
                _dump_matches(_load(doc.body), indent_of(doc.body))
                n += 1
    return n


def _dump_matches(data: Any, indent: Indent) -> None:
    # twice: the second dump meets every scalar's resolved tag already memoised
    assert dump_yaml(data, indent) == _ruamel_dump(data, indent) == dump_yaml(data, indent), data


def test_dumps_are_ruamels_own_on_the_fixtures_and_a_generated_tree(tmp_path: Path) -> None:
    fixtures = sorted(p for top in ("fixtures/cases", "examples") for p in (ROOT / top).rglob("*.y*ml") if p.is_file())
    tricky = tmp_path / "scalars.yaml"  # the same texts plain and quoted, and what YAML 1.1 and 1.2 read apart
    tricky.write_text(
        "a: yes\nb: 'yes'\nc: 010\nd: '010'\ne: 1e3\nf: '1e3'\ng: ~\nh: '~'\ni: 2024-01-02\nj: '2024-01-02'\n"
        "k: 0x1F\nl: .inf\nm: ''\nn:\no: 'on'\np: on\nq: 1_000\nr: \"null\"\ns: 0o10\nt: -.5\n"
        "pct: '%41'\nu: !custom x\n"
    )
    texts = ["yes", "010", "1e3", "~", "null", "", "2024-01-02", "0x1F", ".inf", "on", "1_000", "-.5", "a: b", "%41"]
    _dump_matches({"plain": texts, "quoted": _load("\n".join(f"- '{t}'" for t in texts))}, Indent())
    gen = _generator()
    gen.generate(tmp_path / "tree", 60, 5, device_share=0.5)
    assert _dumps_match([*fixtures, tricky, *sorted((tmp_path / "tree").rglob("*.y*ml"))]) > 100


def test_generated_device_documents_are_written_without_ruamels_emitter(tmp_path: Path) -> None:
    gen = _generator()
    gen.generate(tmp_path, 60, 7, device_share=0.5)
    plain = total = 0
    for path in sorted(tmp_path.rglob("*.y*ml")):
        for doc in split_documents(str(path), path.read_bytes()).documents:
            if "nvidia.com/gpu" in doc.body or "amd.com/gpu" in doc.body:
                ind = indent_of(doc.body)
                data = _load(doc.body)
                text = plain_dump(data, ind.mapping, ind.sequence, ind.offset)
                total += 1
                if text is not None:
                    assert text == _ruamel_dump(data, ind), str(path)
                    plain += 1
    assert total > 20 and plain > total / 2


def test_emitted_claim_templates_are_written_without_ruamels_emitter(tmp_path: Path) -> None:
    """The ResourceClaimTemplates fix appends (plain dicts and lists) are written as ruamel writes them, without it."""
    from dramigrate.config import Settings
    from dramigrate.migrate import Job, run_file
    from dramigrate.rules import load_rules
    from dramigrate.versions import Target

    _generator().generate(tmp_path, 60, 11, device_share=0.5)
    settings = Settings()
    rules, target = load_rules(settings.rules), Target.parse(settings.kube_version)
    templates = [
        t
        for path in sorted(tmp_path.rglob("*.y*ml"))
        for t in run_file(Job(str(path), None, True), rules, settings, target).templates
    ]
    assert len(templates) > 10
    assert any("'" in str(t) for t in templates)  # CEL selectors with quoted strings: ruamel double-quotes them
    for template in templates:
        for indent in (Indent(2, 2, 0), Indent(2, 4, 2), Indent(4, 4, 2)):
            text = plain_dump(template, indent.mapping, indent.sequence, indent.offset)
            assert text is not None and text == _ruamel_dump(template, indent), template


# texts that YAML reads as something else, that need quoting or escapes, or that sit at ruamel's limits
_TEXTS = ["a", "yes", "on", "010", "1e3", "~", "null", "", " x", "x ", "a: b", "a #b", "#x", "- x", "-x", "@x", "it's"]
_TEXTS += ["é", "\u2028", "\x07", "%x", "!x", "&x", "*x", "? x", "[x]", "x,y", "0x1F", ".inf", "12:30", "True", "<<"]
_TEXTS += ["'", '"', "a\tb", "\ufeff", "x" * 130, "---", "a\\b", "two\nlines"]
_TEXTS += ['it\'s "x" \\ y', "!has(d['k'])", "'q'", "é'", "a'\x07"]
# literal block scalars (`|`): a script in a ConfigMap or a container's args, and what ruamel writes otherwise
_BLOCKS = ["echo 1\n", "echo 1", "a\n\n  b\nc\n", "x\n\n", " lead\n", "\nfirst\n", "tail  \n  \n", "é\u2028x\n"]
_BLOCKS += ["t\tab\n", "---\n...\n", "# c\nk: v\n", "\n", "-"]
_SCALARS = st.one_of(
    st.sampled_from(_TEXTS),
    st.sampled_from(_BLOCKS + _TEXTS).map(LiteralScalarString),
    st.sampled_from(_TEXTS).map(SingleQuotedScalarString),
    st.sampled_from(_TEXTS).map(DoubleQuotedScalarString),  # Helm's `quote` in a rendered manifest
    st.integers(-5, 10**6),
    st.builds(ScalarInt, st.integers(0, 99), width=st.sampled_from([None, 3])),
    st.booleans(),
    st.none(),
)
_KEYS = st.sampled_from(_TEXTS[:17]).map(lambda t: t + "k")
_KEYS = st.one_of(_KEYS, _KEYS.map(DoubleQuotedScalarString))
_NODES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4).map(CommentedSeq),
        st.dictionaries(_KEYS, inner, max_size=4).map(CommentedMap),
        st.lists(inner, max_size=4),  # plain ones, as in the templates fix emits
        st.dictionaries(_KEYS, inner, max_size=4),
    ),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(CommentedMap(a=SingleQuotedScalarString("it's"), b=CommentedSeq(["x", 7, CommentedMap(c=None)])), Indent())
@example(_load("# owned by team a\n\n# do not edit\na: 1\nb:\n  - c: d\n"), Indent(2, 4, 2))
@example({"a": [{"b": 1}, "c"], "d": {}}, Indent(2, 4, 2))
@example(
    CommentedMap(a=CommentedSeq([LiteralScalarString("set -e\n\n  run\n"), "x"]), b=LiteralScalarString("y")),
    Indent(3, 5, 2),
)
@given(
    st.one_of(
        st.dictionaries(_KEYS, _NODES, min_size=1, max_size=4).map(CommentedMap),
        st.dictionaries(_KEYS, _NODES, min_size=1, max_size=4),
    ),
    st.sampled_from([Indent(2, 2, 0), Indent(2, 4, 2), Indent(4, 4, 2), Indent(4, 6, 4), Indent(3, 5, 2)]),
)
def test_plain_dump_writes_what_ruamel_writes_or_declines(data: dict[str, Any], indent: Indent) -> None:
    text = plain_dump(data, indent.mapping, indent.sequence, indent.offset)
    if text is not None:
        assert text == _ruamel_dump(data, indent)


_INDENTS = st.sampled_from([Indent(2, 2, 0), Indent(2, 4, 2), Indent(4, 4, 2), Indent(4, 6, 4), Indent(3, 5, 2)])


def _slots(node: Any, out: list[tuple[Any, Any]], found: list[Any]) -> None:
    """Every place in the data a value sits (its collection, key or index) and every collection, depth first."""
    items = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
    for key, value in items:
        out.append((node, key))
        if isinstance(value, (dict, list)):
            found.append(value)
            _slots(value, out, found)


def _inside(node: Any, target: Any) -> bool:
    """Whether target is node or anywhere in it."""
    if node is target:
        return True
    values = node.values() if isinstance(node, dict) else node if isinstance(node, list) else []
    return any(_inside(v, target) for v in values)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(_KEYS, _NODES, min_size=2, max_size=5).map(CommentedMap),
    st.lists(st.tuples(st.integers(0, 60), st.integers(0, 60)), min_size=1, max_size=4),
    _INDENTS,
)
def test_plain_dump_writes_shared_collections_as_ruamel_writes_anchors(
    data: CommentedMap, links: list[tuple[int, int]], indent: Indent
) -> None:
    """A collection the data holds twice (an alias in the file): its anchor and aliases as ruamel writes them."""
    for a, b in links:
        places: list[tuple[Any, Any]] = []
        found: list[Any] = []
        _slots(data, places, found)
        if not found:
            return
        shared = found[a % len(found)]
        where, key = places[b % len(places)]
        if not _inside(shared, where):  # no collection inside itself
            where[key] = shared
    text = plain_dump(data, indent.mapping, indent.sequence, indent.offset)
    if text is not None:
        assert text == _ruamel_dump(data, indent)


@pytest.mark.parametrize("indent", [Indent(2, 2, 0), Indent(2, 4, 2), Indent(3, 5, 2), Indent(4, 6, 4)])
def test_labels_shared_through_an_alias_are_written_without_ruamels_emitter(indent: Indent) -> None:
    """PyYAML writes a workload's selector labels once with `&id001` and its pod labels as `*id001`: such a document
    is written as ruamel writes it (and parsed back by fix's own composer, rtcompose)."""
    data = _load(
        "spec:\n  selector:\n    matchLabels: &id001\n      app: x\n  template:\n    metadata:\n"
        "      labels: *id001\n    spec:\n      containers:\n      - &id002\n        name: a\n      - *id002\n"
    )
    text = plain_dump(data, indent.mapping, indent.sequence, indent.offset)
    assert text is not None and text == _ruamel_dump(data, indent)


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("bench_generate", ROOT / "benchmarks" / "generate.py")
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    return gen


@functools.cache
def _checked(where: str, comments: bool = True) -> tuple[int, int]:
    """_check over the fixtures and examples ("fixtures") or the corpus's first 150 device files ("corpus"), each
    once a run: two tests read each (the composed documents, and those composed with comments read as objects)."""
    if where == "fixtures":
        tops = [ROOT / top for top in ("fixtures/cases", "examples")]
        return _check(sorted(p for top in tops for p in top.rglob("*.y*ml") if p.is_file()), comments)
    files = sorted(p for p in CORPUS.rglob("*.y*ml") if p.is_file() and "templates" not in p.parts)
    return _check([p for p in files if b"nvidia.com/gpu" in p.read_bytes()][:150], comments)


def test_composed_documents_are_ruamels_on_the_fixtures() -> None:
    same, _ = _checked("fixtures")
    assert same > 30


@pytest.mark.skipif(not CORPUS.is_dir(), reason=CORPUS_MISSING)
def test_composed_documents_are_ruamels_on_the_corpus_device_files() -> None:
    same, _ = _checked("corpus")
    assert same > 50


def test_generated_device_files_are_composed_not_parsed_by_ruamel(tmp_path: Path) -> None:
    gen = _generator()
    gen.generate(tmp_path, 80, 3, device_share=0.5)
    same, declined = _check(sorted(tmp_path.rglob("*.y*ml")))
    assert same > 40 and declined < same / 5  # header comments included: most device files skip ruamel's parse


@pytest.mark.parametrize(
    "text",
    [
        "# owned by team a\n# do not edit\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n",
        "a: '010'\nb: \"x\\ty\"\nc: |\n  line\n  two\nd: [1, {e: f}]\ng:\nh: ~\n",
        "a: 010\nb: 0o10\nc: 1_000\nd: 1.50\ne: 1e3\nf: yes\ng: .inf\nh: 2024-01-02\ni: 0x1F\n",
        "- a\n-   b\n- - c\n  - d\n- k: v\n  l:\n  - m\n",
        "key:\n- a\n- b\nother:\n    - c\n",
        "a: &x {b: 1}\nc: *x\n",
        "selector:\n  matchLabels: &id001\n    app: x\ntemplate:\n  metadata:\n    labels: *id001\n",
        "base: &base\n  a: 1\n  b: [2]\nmore:\n  <<: *base\n  b: 3\n",
        "- &s text\n- *s\n- &n 5\n- *n\n- &e\n- *e\n- {*s : v}\n",
        "both: &two\n  <<: [{a: 1}, &m {b: 2}]\nagain: *m\n",
        "k1:\n- x\n-\nk2:\n  - - 0x1F\n    -\n  -\n  - y\n",  # an empty item starts just after its dash
    ],
)
def test_a_document_without_inner_comments_is_composed_as_ruamel_loads_it(text: str, tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(text)
    assert _check([path]) == (1, 0)


@pytest.mark.parametrize(
    "text",
    [
        "a: 1  # a comment ruamel keeps\n",
        "a: 1\n\nb: 2\n",  # ruamel keeps the blank line
        "# header\n\na: 1\n",  # the blank line joins the header comment
        "a: {b: , c: 1}\n",  # ruamel places the empty value just after its colon, libyaml at what follows
        "a: &x [1, *x]\n",  # an alias inside its own anchor's node
        "a: &x 1\nb: &x 2\n",  # an anchor named twice
        "a: !!str 5\n",
        "a: >\n  folded\n  text\n",
        "? [a]\n: 1\n",
        "%YAML 1.1\n---\na: 1\n",
        "a:\tb\n",
        "a: 1\nb\ufeff: 2\n",  # libyaml and ruamel count a byte-order mark inside the text differently
    ],
)
def test_what_the_events_cannot_carry_is_left_to_ruamel(text: str) -> None:
    with pytest.raises(Decline):
        compose_round_trip(text, _round_trip())


# Helm's rendered documents as a chart proof migrates them: the `# Source:` line, a template's comments, the blank
# and space-only lines its actions leave, and strings and keys its `quote` double-quotes
_RENDERED = [
    "# Source: app/templates/deployment.yaml\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\n"
    '  labels:\n\n    app: x\n  annotations:\n    "helm.sh/hook": "pre-install"\nspec:\n  template:\n'
    '    spec:\n      \n      # the model server\n      containers:\n      - name: "app"\n        args: ["--port", 8]\n'
    "        resources:\n          limits:\n            nvidia.com/gpu: 1  # one GPU\n\n",
    "a: 1\n\n# b\nb:\n  - c  # c\n\n  -\n  - d: |\n      line\n\n      after a blank\n    e: 010\n",
    "k1:\n# x\n- x\n-\nk2:\n\n  - - 0x1F\n    -\n  -\n  - y\nlast:\n",
]


@pytest.mark.parametrize("text", _RENDERED)
def test_a_render_read_as_objects_is_composed_with_ruamels_values_and_positions(text: str, tmp_path: Path) -> None:
    """A proof reads its migrations of Helm's renders as objects only: their comments and blank lines no longer send
    them to ruamel's pure-Python parser (most of a proof's migration time); every value, class, style and position
    is ruamel's, only the comments are left out. With comments kept, ruamel still parses them."""
    path = tmp_path / "x.yaml"
    path.write_text(text)
    assert _check([path], comments=False) == (1, 0)
    assert _check([path]) == (0, 1)


def test_documents_with_comments_read_as_objects_are_composed_as_ruamel_loads_them() -> None:
    kept, _ = _checked("fixtures")
    same, _ = _checked("fixtures", comments=False)
    assert same > kept  # the documents with comments or blank lines are composed too, as ruamel reads them


@pytest.mark.skipif(not CORPUS.is_dir(), reason=CORPUS_MISSING)
def test_corpus_documents_with_comments_read_as_objects_are_composed_as_ruamel_loads_them() -> None:
    kept, _ = _checked("corpus")
    same, _ = _checked("corpus", comments=False)
    assert same > kept


def test_helm_quoted_strings_and_keys_are_written_without_ruamels_emitter() -> None:
    """A rendered document double-quotes what a template's `quote` wrote, keys too (`"helm.sh/hook": ...`): ruamel
    keeps that style, and plain_dump writes it as ruamel's emitter does instead of declining the document."""
    data = _load(
        'metadata:\n  annotations:\n    "helm.sh/hook": "pre-install"\n    "prometheus.io/port": "8080"\n'
        '  labels:\n    app: "it\'s \\"x\\" \\\\ y"\nspec:\n  containers:\n  - name: "app"\n    args:\n    - "--port"\n'
    )
    for indent in (Indent(), Indent(2, 4, 2), Indent(4, 6, 4)):
        text = plain_dump(data, indent.mapping, indent.sequence, indent.offset)
        assert text is not None
        assert text == _ruamel_dump(data, indent)


def test_a_proof_document_changed_since_its_parse_gets_the_dump_of_its_own_data() -> None:
    """A proof migrates the same rendered documents once per value set; the dump of a tagged one before its edit (the
    base of the three-way merge) is kept by its text. A document whose data changed since its parse is dumped afresh,
    not given the dump of the text's parse."""
    from dramigrate.documents import parse_document, start_edit

    body = "kind: Pod\nmetadata:\n  name: first\nspec:\n  containers:\n  - name: c\n    image: !!str x\n"
    first, second = (
        split_documents("render.yaml", body.encode(), helm_render=True, comments=False).documents[0] for _ in range(2)
    )
    for doc in (first, second):
        parse_document("render.yaml", doc)
    start_edit(first)
    second.data["metadata"]["name"] = "second"
    start_edit(second)
    assert first.baseline == body
    assert second.baseline == body.replace("first", "second")


PROOF_RENDER = """\
---
# Source: chart/templates/job.yaml
apiVersion: batch/v1
kind: Job
metadata:
  name: "train"   # a comment a template wrote

  labels:
    app: 'train'
spec:
  backoffLimit: 2
  template:
    spec:
      containers:
      - image: trainer:2
        name: train
        command: ["sh", "-c", "#!/bin/sh\\n[ \\"$A\\" != 'on' ] && echo hi!"]
        env:
        - name: ENABLED
          value: "yes"
        resources:
          limits:
            nvidia.com/gpu: 2
      restartPolicy: OnFailure
---
# Source: chart/templates/tagged.yaml
apiVersion: v1
kind: Pod
metadata:
  name: tagged
spec:
  containers:
  - name: c
    image: !!str x
    resources:
      limits:
        nvidia.com/gpu: 1
"""


def test_a_proof_migration_reads_as_the_manifest_migration_without_dumping_the_unedited_documents(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A proof's migration of a render is read only as objects: an edited document without a tag is written as
    ruamel's whole dump of its edited data, with no dump of it before the edit nor a three-way merge, and it reads, as
    the proof reads renders (YAML 1.1), as the manifest migration's (`fix -`) text does; a tagged one keeps the
    merge."""
    from dramigrate import documents
    from dramigrate.config import Settings
    from dramigrate.helm import prove
    from dramigrate.migrate import Job, run_file
    from dramigrate.rules import load_rules
    from dramigrate.versions import Target

    migrated = {}
    for comments in (True, False):
        job = Job("render.yaml", PROOF_RENDER.encode(), True, suppressions=False, helm_render=True, comments=comments)
        result = run_file(job, load_rules(), Settings(), Target.parse("1.34"))
        assert result.rewritten is not None
        migrated[comments] = result.rewritten
    manifest, proof = migrated[True], migrated[False]
    assert list(prove.documents(proof)) == list(prove.documents(manifest))
    assert "# a comment a template wrote" in manifest and "# a comment a template wrote" not in proof
    assert "image: !!str x" in proof  # the tagged Pod's lines, kept by the merge
    dumped: list[Any] = []
    monkeypatch.setattr(documents, "dump_yaml", lambda data, indent=None: dumped.append(data) or "")
    monkeypatch.setattr(documents, "_BASELINES", {})
    for doc in split_documents("render.yaml", PROOF_RENDER.encode(), helm_render=True, comments=False).documents:
        documents.parse_document("render.yaml", doc)
        documents.start_edit(doc)
    assert [d["kind"] for d in dumped] == ["Pod"]  # only the tagged one is dumped before its edit
