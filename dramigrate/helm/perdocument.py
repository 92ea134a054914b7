"""A proof's migration of a rendered stream, document by document: each document migrated once per chart run.

The proof migrates the chart's render of every value set (run.py, `_fix`), and most documents are the same from one
value set to the next: adorsys-webank-training's 23 migrations held 199 documents, 39 of them distinct, and those
migrations were most of its fix time. Migrated one at a time, each document's result is kept by its text
(renderpool.run_core's memo) and put together again with the others. That is the whole stream's migration only when
no document's migration depends on another's: a stream is taken apart only when none can (`by_document`), and the
parts' results are checked for what would have differed (`_joined`); else the stream is migrated whole.
"""

from __future__ import annotations

from dataclasses import dataclass

from dramigrate.config import Settings
from dramigrate.documents import MAX_ROUND_TRIP_FILE_LINES, MAX_ROUND_TRIP_FILE_VALUES, split_documents
from dramigrate.fastyaml import fast_parse
from dramigrate.findings import Finding, InputError
from dramigrate.limits import MAX_DOCUMENTS, check_structure, nodes_and_recursive_alias
from dramigrate.migrate import FileResult
from dramigrate.rules import RuleSet
from dramigrate.versions import Target

# findings whose document makes the core treat the whole file otherwise: nothing written for it (rewrite-invalid,
# a template in it, a bug), or a finding of one document that a later document's rewrite marks fixed
_WHOLE_FILE = frozenset(
    {"rewrite-invalid", "internal-error", "templated-file", "templated-device-file", "extended-resource-beside-claim"}
)


def by_document(
    stream: str, name: str, rules: RuleSet, settings: Settings, target: Target, fix: bool
) -> FileResult | None:
    """The migration of a rendered stream read only as objects (run_core's `objects`), put together from the
    migrations of its documents, each done once a chart run; None when the stream must be migrated whole."""
    from dramigrate.helm.renderpool import run_core

    # the pods' claims are checked against the stream's claim templates; a suppression comment's decision names its
    # line; a stream of one document (a part migrated alone) is migrated as it is
    if "ResourceClaimTemplate" in stream or "dramigrate:" in stream or stream.find("\n---", 1) < 0:
        return None
    # the stream's structure (limits.check_structure) is checked document by document, each text once a run: the walk
    # starts afresh at each line that starts with `---`, so past the count of such lines it is each document's walk
    # (the whole stream's walk was once a value set: sm-realtime's 22 streams held 511 documents, 121 distinct)
    if stream.startswith("---") + stream.count("\n---") > MAX_DOCUMENTS:
        return None
    try:
        documents = split_documents(name, stream.encode("utf-8"), checked=stream, helm_render=True).documents
    except InputError:
        return None  # the whole stream's migration says why
    parts = [doc.head + doc.body for doc in documents]
    if len(parts) < 2 or "".join(parts) != stream or len(stream.encode("utf-8")) > settings.max_file_size:
        return None
    if not all(part.startswith("---") for part in parts[1:]) or not all(_structured(part, name) for part in parts):
        return None  # nested past the limits (the whole stream's migration says where), or a directive line before a
        # marker, walked with the document before it
    results, offset, values, lines = [], 0, 0, 0
    for part in parts:
        result = run_core(part, name, rules, settings, target, fix=fix, objects=True)
        read = _read(part, name)
        if result.findings or result.rewritten is not None or not read.fast:  # the full YAML reader may read it
            values, lines = values + read.values, lines + read.lines
        if not result.findings and not read.parses:
            return None  # the core passed over it alone; the whole stream's migration fails on it
        results.append((offset, result))
        offset += part.count("\n")
    if values > MAX_ROUND_TRIP_FILE_VALUES or lines > MAX_ROUND_TRIP_FILE_LINES:
        return None  # the whole stream's migration may stop at the limits it counts per file
    return _joined(stream, name, parts, results)


@dataclass(frozen=True)
class Read:
    """How the core reads a document of a stream it checks."""

    fast: bool  # libyaml reads it as the full YAML reader would (an alias bomb raises)
    values: int  # what the core counts against a file's limits for the full YAML reader
    lines: int  # (documents.MAX_ROUND_TRIP_FILE_VALUES, _LINES)
    # it parses (the core parses every document of a file it checks, one it passed over alone too): read with the
    # full YAML reader only where libyaml does not read it
    parses: bool


def _structured(part: str, name: str) -> bool:
    """Whether a rendered document is within the limits on nesting (limits.check_structure), known by its text for
    the chart run."""
    from dramigrate.helm.renderpool import CACHE

    known = CACHE[-1].structured
    if part not in known:
        try:
            check_structure(name, part)
            known[part] = True
        except InputError:
            known[part] = False
    return known[part]


def _read(part: str, name: str) -> Read:
    """How the core reads a rendered document, known by its text for the chart run."""
    from dramigrate.helm.renderpool import CACHE
    from dramigrate.pipeline import read_document

    known = CACHE[-1].reads
    if part not in known:
        docs = split_documents(name, part.encode("utf-8"), checked=part, helm_render=True, comments=False).documents
        values = sum(nodes_and_recursive_alias(d.tags + d.body, MAX_ROUND_TRIP_FILE_VALUES + 1)[0] for d in docs)
        try:
            fast = all([fast_parse(name, doc) for doc in docs])
        except InputError:
            fast = False  # an alias bomb: the full reader refuses it as well
        parses = fast
        if not fast:
            try:
                for doc in docs:
                    read_document(name, doc)
                parses = True
            except InputError:
                pass
        known[part] = Read(fast, values, sum(d.body.count("\n") for d in docs), parses)
    return known[part]


def _joined(stream: str, name: str, parts: list[str], results: list[tuple[int, FileResult]]) -> FileResult | None:
    """The whole stream's result from its documents' (each with the lines before it), without the decisions
    --verbose shows (a proof reads none); None when the whole stream's migration would differ: a document that
    failed or makes the core treat the whole file otherwise, or two documents that emit the same
    ResourceClaimTemplate (the whole stream's migration writes it once)."""
    joined = FileResult(name)
    texts, emitted = [], set()
    for part, (offset, result) in zip(parts, results, strict=True):
        if result.error is not None or any(f.rule in _WHOLE_FILE for f in (*result.findings, *result.suppressed)):
            return None
        for template in result.templates:
            meta = template.get("metadata") or {}
            key = (meta.get("namespace", ""), meta.get("name"))
            if key in emitted:
                return None
            emitted.add(key)
        for f in (*result.findings, *result.suppressed):
            _shift(f, name, offset)
        joined.findings += result.findings
        joined.suppressed += result.suppressed
        joined.classes.update(result.classes)
        joined.changes += result.changes
        joined.templates += result.templates
        texts.append(result.rewritten if result.rewritten is not None else part)
    rewritten = "".join(texts)
    if rewritten != stream:
        joined.rewritten, joined.original, joined.raw = rewritten, stream, stream.encode("utf-8")
    return joined


def _shift(finding: Finding, name: str, offset: int) -> None:
    if finding.line:
        finding.line += offset
    for where in finding.related:
        if where.file == name and where.line:
            where.line += offset
