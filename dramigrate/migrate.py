"""One file through dramigrate: read it, triage its bytes, and only when they may matter run the pipeline
(pipeline.py: documents -> detect -> plan -> emit -> apply -> validate), which a lint of files without devices
never imports. A failure on the file becomes its result, never the run's end.

lint, diff and fix all run this one code path; only fix and diff keep the rewritten text.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dramigrate.findings import RULES, Finding, InputError
from dramigrate.limits import Limits, read_regular_at, size_message
from dramigrate.triage import may_matter
from dramigrate.writer import bom_encoding, bomless_encoding

if TYPE_CHECKING:
    from dramigrate.config import Settings
    from dramigrate.rules import DeviceClassInfo, RuleSet
    from dramigrate.versions import Target


@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)
    raw: bytes | None = None  # the bytes read, to refuse writing over a file that changed since
    original: str | None = None
    rewritten: str | None = None  # None when nothing changes
    error: InputError | None = None
    classes: dict[str, DeviceClassInfo] = field(default_factory=dict)  # DeviceClasses no chart ships, to emit
    changes: list[str] = field(default_factory=list)
    templates: list[dict[str, Any]] = field(default_factory=list)  # ResourceClaimTemplates emitted (fix mode)
    not_written: bool = False  # fix had a rewrite for it that could not be written
    stopped: str = ""  # fix was stopped before this file's write began: why it is not written (it is not bad input)
    together: str = ""  # files written all or none (a kustomize graph): the graph's name
    decisions: list[str] = field(default_factory=list)  # --verbose: why each thing was done or left alone
    suppressed: list[Finding] = field(default_factory=list)  # findings its suppression comments hid (not rewritten)
    # False: its bytes hold no `dramigrate:`, so no suppression comment, and the report need not read it again
    comments: bool = True
    opened: str = ""  # the real path of the file read (limits.read_regular_at), checked against the walk's

    @property
    def failed(self) -> bool:
        """The file could not be processed (bad input, a limit, an OS error or a bug): it counts toward exit 2."""
        return self.error is not None or any(f.rule == "internal-error" for f in self.findings)


@dataclass(frozen=True)
class Job:
    path: str
    raw: bytes | None  # None: read the file when the job runs (memory grows with the largest file only)
    fix: bool
    report_only_reason: str = ""  # set for kustomize patches and the bases overlays patch
    # Block and file comments in the text suppress findings; not in a rendered chart, whose comments come from many
    # templates (its findings are matched to each template's and values file's comments after mapping, suppress.py)
    suppressions: bool = True
    helm_render: bool = False  # a chart's rendered output: a repeated key is read as Helm reads it (the last wins)
    # False: the rewritten text is read only as objects (a chart proof's migration of a render): an edited document
    # may lose its comments and blank lines, read much faster (documents.Document.comments)
    comments: bool = True


REPORT_HINT = "set DRAMIGRATE_DEBUG=1 for the traceback and please report it"


def run_file(job: Job, rules: RuleSet, settings: Settings, target: Target) -> FileResult:
    """One file's result, whatever happens: a failure on this file is this file's finding, never the run's end."""
    try:
        return _run_file(job, rules, settings, target)
    except Exception as exc:
        return failed_file(job.path, exc)


def failed_file(path: str, exc: BaseException, what: str = "") -> FileResult:
    """The result of a file whose processing raised: OS errors and limits are bad input, anything else a bug."""
    prefix = f"{what}: " if what else ""
    if isinstance(exc, InputError):
        error = InputError(prefix + exc.message, exc.file or path, exc.line, exc.column, exc.rule)
        return FileResult(path, error=error)
    if isinstance(exc, OSError):
        reason = exc.strerror or type(exc).__name__
        if exc.filename and os.fspath(exc.filename) != path:  # a file the check read beside it: which one
            reason += f": {os.fspath(exc.filename)}"
        return FileResult(path, error=InputError(f"{prefix or 'cannot process: '}{reason}", path))
    if isinstance(exc, RecursionError):
        return FileResult(path, error=InputError(f"{prefix}nested too deeply to process", path))
    return FileResult(path, findings=[internal_error(path, exc, what)])


def internal_error(path: str, exc: BaseException, what: str = "") -> Finding:
    """A bug met on one file: its finding names the file, says how to report it, and the traceback goes to
    stderr only with DRAMIGRATE_DEBUG=1."""
    if os.environ.get("DRAMIGRATE_DEBUG"):
        import traceback

        print(f"dramigrate: internal error on {path}:", file=sys.stderr)
        traceback.print_exception(exc, file=sys.stderr)
    detail = " ".join(str(exc).split())[:200]
    return Finding(
        "internal-error",
        RULES["internal-error"][0],
        f"internal error{' while ' + what if what else ''}: {type(exc).__name__}"
        f"{': ' + detail if detail else ''}; this file was left alone ({REPORT_HINT})",
        path,
        1,
        1,
    )


def _run_file(job: Job, rules: RuleSet, settings: Settings, target: Target) -> FileResult:
    raw = job.raw
    limits = Limits(max_bytes=settings.max_file_size)
    opened = ""
    if raw is None:
        try:
            raw, opened = read_regular_at(job.path, limits)
        except OSError as exc:
            return FileResult(job.path, error=InputError(f"cannot read: {exc.strerror}", job.path))
    elif len(raw) > limits.max_bytes:
        return FileResult(job.path, error=InputError(size_message(len(raw), limits), job.path))
    result = FileResult(job.path, raw=raw, opened=opened)  # the bytes as read: a write checks them, keeps encoding
    result.comments = b"dramigrate:" in raw  # as suppress.FileSuppressions reads the file
    if (encoding := bom_encoding(raw)) is not None:  # UTF-16/32 with a BOM: processed as text, written back in it
        try:
            raw = raw.decode(encoding).encode("utf-8")
        except UnicodeDecodeError:
            return FileResult(job.path, error=InputError(f"not valid {encoding.upper()} text", job.path))
    elif (
        raw[:4].count(0)  # UTF-16/32 without a byte-order mark: kubectl cannot read it, so its devices are named
        and (encoding := bomless_encoding(raw)) is not None
        and may_matter(raw.decode(encoding, "replace").encode("utf-8"), rules)
    ):
        return FileResult(
            job.path,
            error=InputError(
                f"{encoding.upper()} text without a byte-order mark, which kubectl reads as UTF-8 and refuses: "
                "add the byte-order mark or convert the file to UTF-8; not processed",
                job.path,
            ),
        )
    if not may_matter(raw, rules):
        result.raw = None
        result.decisions.append(f"{job.path}: nothing to check: no device resource name or device field in its bytes")
        return result
    from dramigrate.pipeline import process  # past triage only: lint of files without devices loads none of it

    return process(job, raw, result, rules, settings, target, limits)
