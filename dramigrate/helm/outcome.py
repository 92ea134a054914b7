"""What a chart run is given and gives back, and how the proof compares renders: ChartOptions (the user's
render options), ChartOutcome (changes, findings, the value sets checked, or the manual-work reason), the Workdir
the proof renders in, and the comparisons every proof shares (_not_proven_on: an original render migrated with
the core against the rewritten chart's render; _not_identical: byte-identical renders with the switch off), with
the umbrella scopes and pattern hints the reports name. run.py, proveswitch.py, passthroughproof.py and
ownswitch.py build on it.
"""

from __future__ import annotations

import copy
import functools
import json
import posixpath
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from dramigrate.documents import chart_text, universal_newlines
from dramigrate.findings import RULES, Finding, InputError
from dramigrate.helm.findingmap import (
    named_pattern,
    read_text,
)
from dramigrate.helm.listindent import indented_tolerations
from dramigrate.helm.locate import stream_sources
from dramigrate.helm.prove import (
    ObjKey,
    _object_name,
    canonical_claims,
    documents,
    first_difference,
    new_duplicates,
    new_repeats,
    objects,
    same_text,
    strict_errors,
    volatile,
    without_nulls,
)
from dramigrate.helm.renderpool import (
    Render,
    cached_render,
    render_later,
    render_probed,
)
from dramigrate.helm.rewrite import Change, RewriteError, chart_dependencies, chart_name, with_line_ends
from dramigrate.helm.twins import archive_writes, binary_note
from dramigrate.helm.values import (
    ValueSources,
)
from dramigrate.limits import check_values_file, check_values_text
from dramigrate.rules import NATIVE_RESOURCES, RuleSet

ADDED_DEVICE = "added to every resources map of the values"  # the end of that proof value set's label


# a user's own toleration, of a taint no device plugin uses: what a DRA pod must add its device's toleration to (one
# key, one line of YAML: a chart that misindents a longer list renders it as badly without the rewrite)
OWN_TOLERATION = {"key": "example.com/dedicated"}
# the value set whose tolerations lists all hold OWN_TOLERATION alone (run._variations; proven again after the DRA
# values by passthroughproof._later_files)
OWN_LISTS = f"every tolerations list of the values set to [{OWN_TOLERATION['key']}]"


_UNCOVERED = (  # your values ask for devices through keys the DRA values files fix wrote leave as they are
    "with your values, the device request comes from values no DRA values file covers (the --set options choose "
    "device keys other than those values-dra.yaml migrates); put the device keys in a -f values file so fix can write "
    "its DRA variant"
)


ENGINE_HINT = "; fix it by hand (docs/helm.md) or run fix with --chart-style engine"  # ends a manual idiomatic fix
UNPROVEN = "fix writes nothing for this chart: "  # opens the chart-rewrite-unproven finding, the reason after it


@dataclass(frozen=True)
class ChartOptions:
    """The `helm template` options the user gave."""

    release: str = "release-name"
    values_files: tuple[Path, ...] = ()
    set_values: tuple[str, ...] = ()
    set_string_values: tuple[str, ...] = ()
    namespace: str | None = None
    kube_version: str | None = None
    api_versions: tuple[str, ...] = ()
    helm_binary: Path | None = None

    def render(self, values_files: tuple[Path, ...] | None = None, sets: bool = True) -> Any:
        from dramigrate.helm.render import RenderOptions

        return RenderOptions(
            release_name=self.release,
            namespace=self.namespace,
            values_files=self.values_files if values_files is None else values_files,
            set_values=self.set_values if sets else (),
            set_string_values=self.set_string_values if sets else (),
            kube_version=self.kube_version,
            api_versions=self.api_versions,
            helm_binary=self.helm_binary,
        )


ObjectName = tuple[str, str, str]  # kind, namespace, name


@dataclass
class Variation:
    label: str
    options: Any  # helm.RenderOptions
    invalid: str = ""  # why the original render is not installable for its device counts (the core's invalid-count)
    invalid_objects: frozenset[ObjectName] = frozenset()  # the objects of the original render holding those counts
    shipped: bool = False  # a values file the chart ships (shipped_files), not one the user named
    switches: bool = False  # a shipped values file with no device key of its own (switch_files)
    vendor: bool = False  # another branch of a vendor choice of the device key (vendor_flips): the DRA branch may fail
    tolerates: tuple[dict[str, str], ...] = ()  # the tolerations every values list is set to (the devices' taints)
    left: tuple[Finding, ...] = ()  # the migration's findings on the requests of the render it leaves as they are


@dataclass
class ChartOutcome:
    chart: Path
    display: str
    findings: list[Finding] = field(default_factory=list)
    error: InputError | None = None
    changes: list[Change] = field(default_factory=list)  # proven; written by fix, shown by diff
    writable: bool = True  # a chart folder (a packaged chart is not rewritten in place)
    manual: str = ""  # why the chart needs manual work
    patch: str = ""  # the suggested patch when it does
    patch_proven: bool = False  # a packaged chart: the patch was proven but cannot be written in place
    checked: list[str] = field(default_factory=list)  # value sets the proof rendered
    usage: str = ""  # how to use what the rewrite wrote, when the user's options change (a values file for --set)
    classes: dict[str, Any] = field(default_factory=dict)
    templates: list[dict[str, Any]] = field(default_factory=list)
    root: Path | None = None  # the chart folder rendered (a packaged chart's unpacked copy)
    left: str = ""  # why fix writes nothing: the migration leaves every device request as it is (leftwhy.py)
    rendered: str = ""  # the first render, which the findings are about

    @property
    def proven(self) -> bool:
        return bool(self.changes) and not self.manual

    def diff(self) -> str:
        from dramigrate.report.diff import unified

        text = "".join(unified(self.diff_name(c.rel), c.before or "", c.after) for c in self.changes)
        return text + "".join(binary_note(name) for name in self.archives())

    def archives(self) -> list[str]:
        """The subchart archives fix re-packs with the changes of their unpacked twins (twins.py), as diff names
        them."""
        return [self.diff_name(rel) for rel, _, _ in archive_writes(self.chart, self.changes)] if self.changes else []

    def diff_name(self, rel: str) -> str:
        """A changed file as the diff names it: a chart file under the chart's display name; a values file outside
        the chart (an -f file's DRA variant, held by its absolute path) from the working directory when it is under
        it and the chart is named so too, so the patch applies with `patch -p1` where fix would write it."""
        if not Path(rel).is_absolute():
            return f"{self.display}/{rel}"
        if Path(self.display).is_absolute():
            return rel
        try:
            return Path(rel).relative_to(Path.cwd()).as_posix()
        except ValueError:
            return rel

    def report(self) -> str:
        """What fix and diff say of the chart on standard error: each line starts with `dramigrate: `, whatever the
        chart's folder is named (a line break in it must not start a line GitHub Actions obeys), then the patch."""
        from dramigrate.report.escape import plain

        shown = plain(self.display, False)
        if self.manual:
            text = f"dramigrate: {shown}: needs manual work, nothing written: {plain(self.manual, False)}\n"
            if self.patch:
                text += ("patch (proven):\n" if self.patch_proven else "suggested patch (not proven):\n") + self.patch
            return text
        if self.changes:
            return (
                f"dramigrate: {shown}: rewrite proven on {len(self.checked)} value set(s): "
                + plain("; ".join(self.checked), False)
                + "\n"
                + (f"dramigrate: {shown}: {plain(self.usage, False)}\n" if self.usage else "")
            )
        if self.left:
            return f"dramigrate: {shown}: nothing to migrate: {plain(self.left, False)}\n"
        return ""


class Workdir:
    """Temporary files of one chart run: value files for probes, working copies."""

    def __init__(self) -> None:
        from dramigrate.lifetime import make_folder

        self.path = make_folder("dramigrate-chart-")  # removed even if dramigrate is killed
        self._n = 0

    def values_file(self, values: dict[str, Any]) -> Path:
        self._n += 1
        path = self.path / f"values-{self._n}.json"
        path.write_text(json.dumps(values, default=str), encoding="utf-8")
        return path

    def close(self) -> None:
        from dramigrate.lifetime import remove_behind

        remove_behind(self.path)


def _templates(root: Path, helpers: bool = False) -> list[str]:
    """The text of each workload template of the chart (helpers, `_*.tpl`, left out unless asked for; NOTES.txt,
    which renders no manifest, always)."""
    files = (root / "templates").rglob("*")
    paths = sorted(
        p
        for p in files
        if p.is_file() and not p.is_symlink() and (helpers or not p.name.startswith("_")) and p.name != "NOTES.txt"
    )
    return [t for p in paths if (t := read_text(p)) is not None]


def _merge(a: dict[Any, list[Any]], b: dict[Any, list[Any]]) -> dict[Any, list[Any]]:
    out = {k: list(v) for k, v in a.items()}
    for k, v in b.items():
        out.setdefault(k, []).extend(v)
    for docs in out.values():
        docs.sort(key=lambda d: json.dumps(d, sort_keys=True, default=str))
    return out


def _volatile(original: Any, again: Any) -> set[Any]:
    """Fields that differ between two renders of the original chart (randAlphaNum and the like): not compared."""
    if again.error:
        return set()
    return volatile(objects(original.stream + original.rest), objects(again.stream + again.rest))


def _not_identical(case: str, original: Any, again: Any, new: Any, unordered: bool = False) -> str:
    """Proof L for one value set: '' when the rewritten chart renders byte for byte what the original did (text that
    differs between two renders of the original aside; with `unordered`, a template's documents in another order,
    prove.same_text); else why not (the chart is then manual work)."""
    difference = same_text(original.manifests, original.manifests, new.manifests)  # identical: no second render read
    if difference:
        twice = again.manifests if not again.error else original.manifests
        difference = same_text(original.manifests, twice, new.manifests, unordered)
    return f"{case}, the render is not byte-identical: {difference}" if difference else ""


def _not_proven_on(
    case: str,
    original: Any,
    again: Any,
    want: str,
    on: Any,
    left_out: frozenset[ObjectName] = frozenset(),
    root: Path | None = None,
    passthrough: bool = False,
    left: tuple[Finding, ...] = (),
) -> str:
    """Proof D for one value set: '' when the migrated chart's render equals the migration of the original render
    (fields that differ between two renders of the original masked) and is strict-valid; else why not. `left_out`:
    objects (kind, namespace, name) not compared. `root`: the chart, whose template line writing a device label the
    rewrite left on the pods the reason names (labelwhy.py; `passthrough`: the rewrite passes resources maps
    through). `left`: the migration's findings on requests it leaves as they are, which the reason names when the
    rewritten chart migrates one (leftwhy.py)."""

    def kept(objs: dict[ObjKey, list[Any]]) -> dict[ObjKey, list[Any]]:
        return {k: docs for k, docs in objs.items() if k[1:] not in left_out}

    expected = without_nulls(canonical_claims(kept(_merge(objects(want), objects(original.rest)))))
    got = without_nulls(canonical_claims(kept(objects(on.stream + on.rest))))
    diff = first_difference(expected, got)  # equal: the second render (what to mask) is not read
    if diff:
        diff = first_difference(expected, got, _volatile(original, again))
    if diff and (repeat := new_repeats(on.stream, original.stream)):  # a key written twice: the cause, said first
        return f"{case}, the render is not valid: {_repeated(repeat)}"
    if diff:
        from dramigrate.helm.leftwhy import left_refusal

        why = left_refusal(left, expected, got)
        where = diff.split(": ", 2)[1] if diff.count(": ") > 1 else diff
        if not why and re.search(r"\.(nodeSelector|affinity)\b", where):
            from dramigrate.helm.labelwhy import label_refusal

            why = (label_refusal(root, original.stream, want, passthrough) if root else "") or (
                "the pods select nodes by a device label that a template writes itself (the migration moves it into "
                "CEL selectors of the claim; the rewrite leaves the node selection of the chart as it is): translate "
                "the label by hand; "
            )
        kept = _kept_requests(expected, objects(on.stream))
        differs = "the rewritten chart renders differently from the migrated original rendering"
        return f"{why}{case}, {differs}: {diff}{kept}"
    invalid = strict_errors(on.stream, ("1.34", "1.36"), original.stream)
    if not invalid and (repeat := new_repeats(on.stream, original.stream)):
        invalid = _repeated(repeat)
    invalid = invalid or new_duplicates(on.manifests, original.manifests)
    return f"{case}, the render is not valid: {invalid}" if invalid else ""


def _not_proven_later(
    root: Path, options: Any, check: Callable[..., str], again: Render, masked: list[str] | None = None
) -> str:
    """`check(again=...)` with the original's second render, and, when that fails for a chart that reads the clock,
    with a third render of it made now (render_later): '' when either proves. With `masked`, when it fails still:
    with the original rendered with one more value (render_probed), whose differences are fields derived from the
    values as a whole, which values that differ (the DRA values) cannot leave as they were; proven so, `masked` gets
    WHOLE_VALUES."""
    why = check(again=again)
    if why and (later := render_later(root, options)) is not None:
        why = check(again=later)
    if why and masked is not None and not (probed := render_probed(root, options)).error and not check(again=probed):
        masked.append(WHOLE_VALUES)
        return ""
    return why


# what a proof said it did not compare, when _not_proven_later proved with the original's render_probed
WHOLE_VALUES = "fields derived from the values as a whole (changed by any value: a hash of .Values) not compared"


def _repeated(repeat: str) -> str:
    return (
        f"{repeat}, which the original render does not repeat (Helm keeps the last one; strict readers such as "
        "`kubectl apply --server-side` and Flux refuse the render)"
    )


def _kept_requests(expected: dict[ObjKey, list[Any]], on: dict[ObjKey, list[Any]]) -> str:
    """Where the switch-on render still asks for an extended resource that the migration took into a claim (clause
    text for the proof's failure, '' when it does not): the request comes from a part of the template the DRA branch
    does not reach (clusterjellyfin's `toYaml .Values.workers.resources` in the `else` of its GPU switch, where the
    values give nvidia.com/gpu too), which the difference alone does not tell."""
    for key in sorted(set(expected) & set(on)):
        for want, got in zip(expected[key], on[key], strict=False):
            mine = dict(_extended(want))
            for path, names in _extended(got):
                for name in (n for n in names if n not in mine.get(path, ())):
                    return (
                        f"; with the switch on it still asks the device plugin for {name} at {key[1]} "
                        f"{_object_name(key[3])}: {path}, which the migration takes into a claim: a part of the "
                        "template the DRA branch does not reach writes it (a values map in another branch of an `if` "
                        "beside the chart's own device setting): take the device out of that map, or fix the chart "
                        "by hand"
                    )
    return ""


def _extended(node: Any, path: str = "") -> Iterator[tuple[str, list[str]]]:
    """Each `limits`/`requests` map of an object (its path) with the extended resources it names."""
    if isinstance(node, dict):
        for k, v in node.items():
            here = f"{path}.{k}" if path else str(k)
            if k in ("limits", "requests") and isinstance(v, dict) and path.endswith("resources"):
                yield here, [str(n) for n in v if "/" in str(n) and not NATIVE_RESOURCES.match(str(n))]
            else:
                yield from _extended(v, here)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _extended(v, f"{path}[{i}]")


def _not_proven_apart_from_invalid(case: str, original: Any, again: Any, want: str, on: Any, v: Variation) -> str:
    """Proof D for a value set whose original render is not installable for a device count: that render proves
    nothing about the objects holding the invalid count (nor about the claim templates only they name: frigate's
    i915 limit beside a null request, whose pod the rewrite gives a claim), but the other objects of the set must
    still prove ('' when they do, or when the switch-on render fails as a whole and so cannot be compared object by
    object)."""
    if on.error:
        return ""
    found = objects(on.stream + on.rest)
    named: dict[bool, set[str]] = {True: set(), False: set()}  # by whether a left-out object names the template
    for key, docs in found.items():
        named[key[1:] in v.invalid_objects].update(
            re.findall(r'"resourceClaimTemplateName": "([^"]+)"', json.dumps(docs))
        )
    templates = {k[1:] for k in found if k[1] == "ResourceClaimTemplate" and k[3] in named[True] - named[False]}
    return _not_proven_on(case, original, again, want, on, v.invalid_objects | templates, left=v.left)


def _finish(renders: Iterator[Any]) -> None:
    """Wait for the renders left in a proof's stream (render_each): a render past its limits raises here, before
    the chart is called manual work, as when every render of the proof was awaited before any comparison."""
    for _ in renders:
        pass


def _manual(outcome: ChartOutcome, reason: str, patch: str) -> None:
    from dramigrate.helm.sandbox import hide_chart_data

    reason = hide_chart_data(reason, outcome.root or outcome.chart)  # a rendered value can be a chart file's text
    outcome.manual = reason
    outcome.patch = patch
    outcome.changes = []
    outcome.findings.append(
        Finding(
            "chart-rewrite-unproven",
            RULES["chart-rewrite-unproven"][0],
            f"{UNPROVEN}{reason}",
            outcome.display,
        )
    )
    for f in outcome.findings:
        f.fixed = False


def fixed_marks(findings: list[Finding]) -> list[tuple[Finding, bool]]:
    """Each finding with whether it says fixed, taken before a rewrite is tried: _manual clears them all when the try
    fails, and restore_fixed gives them back for the rewrite tried next (which writes what the core migrated)."""
    return [(f, f.fixed) for f in findings]


def restore_fixed(marks: list[tuple[Finding, bool]]) -> None:
    for f, was in marks:
        f.fixed = was


def _in_chart(root: Path, path: Path) -> str:
    """A Change's name for a file given by a path from the working directory (an -f file's DRA variant): relative to
    the chart when the file is in it, else absolute (a Change's relative name is read from the chart root)."""
    path, top = path.absolute(), root.absolute()
    return path.relative_to(top).as_posix() if path.is_relative_to(top) else str(path)


def _with_switch(options: Any, on: bool, key: str = "dra.enabled") -> Any:
    import dataclasses

    return dataclasses.replace(options, set_values=(*options.set_values, f"{key}={'true' if on else 'false'}"))


def _subchart_scopes(root: Path, leaf: Path) -> list[tuple[str, ...]]:
    """The values keys under which an umbrella chart passes values to its subchart `leaf` (its aliases, else its
    name; one chart included twice, `llm` and `embed`, has two; a subchart's subchart, charts/mid/charts/deep, the
    keys of each level: `mid.deep`); [()] for the chart itself."""
    if leaf == root:
        return [()]
    child = root / Path(*leaf.relative_to(root).parts[:2])  # charts/<folder>: the subchart `leaf` is in or is
    name = chart_name(child)
    deps = [d for d in chart_dependencies(root) if d.get("name") == name]
    keys = sorted({str(d.get("alias") or name) for d in deps}) or [name]  # a vendored chart not listed: its name
    return [(k, *inner) for k in keys for inner in _subchart_scopes(child, leaf)]


def _with_switches(options: Any, on: bool, keys: list[str]) -> Any:
    for key in keys:
        options = _with_switch(options, on, key)
    return options


def _switches_usage(keys: list[str], opt_in: bool) -> str:
    """What the report says of several DRA switches (one per chart of an umbrella, or per alias of a subchart)."""
    each = "each" if len(keys) > 1 else "it"
    how = f"off by default (--opt-in), set {each} to true for the DRA" if opt_in else f"on by default, set {each}"
    how += "" if opt_in else " to false for the device-plugin"
    return f"the DRA switch{'es' * (len(keys) > 1)} {', '.join(keys)}: {how} request"


def _file_source(root: Path, leaf: Path) -> Path | None:
    """The folder a subchart in charts/ was built from, when the umbrella names it with a `file://` repository."""
    from dramigrate.helm.rewrite import chart_name

    for dep in chart_dependencies(root):
        repo = str(dep.get("repository", ""))
        if repo.startswith("file://") and dep.get("name") == chart_name(leaf):
            source = (root / repo.removeprefix("file://")).resolve()
            if source.is_dir() and source != leaf.resolve():
                return source
    return None


def _in_umbrella(root: Path, sub: str, changes: list[Change]) -> list[Change]:
    """A subchart's changes as the umbrella's: paths under charts/<sub>/, the same change to the `file://`
    folder the subchart is built from (whose files must match the copy in charts/), and the version bump on the
    umbrella's Chart.yaml instead of the subchart's (its version is pinned in the umbrella's dependencies)."""
    if not sub:
        return changes
    from dramigrate.helm.conventions import bump_version

    leaf = root / sub
    source = _file_source(root, leaf)
    out = []
    for c in changes:
        if Path(c.rel).is_absolute():
            out.append(c)
            continue
        if c.rel == "Chart.yaml":
            continue
        if c.rel.startswith("../"):  # a define of the umbrella itself (passthrough.parent_templates)
            out.append(Change(posixpath.normpath(f"{sub}/{c.rel}"), c.before, c.after))
            continue
        out.append(Change(f"{sub}/{c.rel}", c.before, c.after))
        if source is not None:
            out.append(_at_source(source, c, sub))
    if all(c.before == c.after for c in out):  # the subchart as fix left it: no second bump (fix twice)
        return out
    text = (root / "Chart.yaml").read_text(encoding="utf-8")
    bumped_text = bump_version(text)
    if bumped_text != text:
        out.append(Change("Chart.yaml", text, bumped_text))
    return out


def _at_source(source: Path, c: Change, sub: str) -> Change:
    """The change `c` of the subchart copy charts/.../`sub` written to the `file://` folder it is built from, whose
    file must match the copy's."""
    before = read_text(source / c.rel)  # the rewrite's text has LF line ends; the write keeps the file's
    read = () if before is None else (before, chart_text(before), universal_newlines(before))
    if c.before not in read and not (before is None and c.before is None):
        raise RewriteError(
            f"{sub}/{c.rel} differs from its file:// source {source / c.rel}: run `helm dependency build` and fix again"
        )
    return Change(str(source / c.rel), c.before, c.after)


def in_dependency_sources(root: Path, changes: list[Change]) -> list[Change]:
    """The changes of a chart, with each one in a dependency unpacked in its charts/ (a library chart's define the
    chart's template includes) written to the `file://` folder that dependency is built from too, as an umbrella's
    subchart is (_in_umbrella): the next `helm dependency build` copies that folder over charts/."""
    out = list(changes)
    for c in changes:
        parts = Path(c.rel).parts
        if len(parts) > 2 and parts[0] == "charts" and (root / "charts" / parts[1] / "Chart.yaml").is_file():
            source = _file_source(root, root / "charts" / parts[1])
            if source is not None:
                own = Change(Path(*parts[2:]).as_posix(), c.before, c.after)
                out.append(_at_source(source, own, f"charts/{parts[1]}"))
    return out


def _by_template(text: str, chart: str) -> dict[str, list[dict[str, Any]]]:
    """The objects of a rendered stream per template path of the root chart (`templates/x.yaml`)."""
    out: dict[str, list[dict[str, Any]]] = {}
    lines = text.splitlines()
    for part in stream_sources(text):
        source = part.source.split("/", 1)[-1] if part.source.startswith(chart + "/") else part.source
        try:
            # prove.documents parses each text once for the whole run (the proof reads the same template's output in
            # each value set's render and its migration); the copy is the caller's own to change
            docs = copy.deepcopy(list(documents("\n".join(lines[part.start - 1 : part.end]))))
        except yaml.YAMLError:
            continue
        out.setdefault(source, []).extend(d for d in docs if isinstance(d, dict))
    return out


def _every_by_template(render: Render, chart: str) -> dict[str, list[dict[str, Any]]]:
    """Every object of a render per template path, the ones that cannot hold device requests too (Render.rest)."""
    return _by_template(render.stream + render.rest, chart)


def _defaults_cover(edits: list[Any], default_edits: list[Any], copts: ChartOptions) -> bool:
    """Whether values-dra.yaml, written for the chart defaults' map edits, migrates the user's values too: the user's
    --set options set no device key and pick only maps whose device keys the defaults' edits drop (goend-ark-ai's
    `--set modelConfig.current.serviceType=vllm`, served by the same resources map)."""
    if _device_sets(copts, edits):
        return False
    dropped = {(e.path, section, k) for e in default_edits for section, keys in e.removed.items() for k in keys}
    return bool(edits) and all(
        (e.path, section, k) in dropped for e in edits for section, keys in e.removed.items() for k in keys
    )


def _device_sets(copts: ChartOptions, edits: list[Any]) -> list[str]:
    """The user's --set and --set-string options that set a device key of the map edits."""
    from dramigrate.helm import passthrough as pt

    plain, strings = (
        pt.device_sets(copts.set_values, False, edits)[0],
        pt.device_sets(copts.set_string_values, True, edits)[0],
    )
    return [*plain, *strings]


def _uncovered(edits: list[Any], default_edits: list[Any], copts: ChartOptions) -> str:
    """Why values-dra.yaml, written for the chart defaults' map edits, does not migrate the user's values, and what
    to do: the --set options set device keys it drops, or ask for devices through maps it leaves as they are
    (learnwith-llm-inference's `vllm.enabled=true sglang.enabled=false` turns on vllm.resources, values-dra.yaml
    migrates sglang.resources)."""
    from dramigrate.helm.values import display

    setting = _device_sets(copts, edits)
    ours = {e.path for e in default_edits}
    migrated = ", ".join(sorted(display(p) for p in ours))
    if setting:
        how = f"--set {' '.join(setting)} sets device keys over those values-dra.yaml ({migrated}) drops"
    else:
        given = [*(f"--set {x}" for x in copts.set_values), *(f"--set-string {x}" for x in copts.set_string_values)]
        left = sorted(display(e.path) for e in edits if e.path not in ours)
        through = ", ".join(left or sorted(display(e.path) for e in edits))
        how = (
            f"with {' '.join(given)} the pods ask for devices through {through}, "
            + ("which" if left else "device keys that")
            + f" values-dra.yaml (the chart defaults' DRA values: {migrated}) leaves as it is"
        )
    return (
        f"with your values, the device request comes from values no DRA values file covers: {how}; put those --set "
        "options in a -f values file and run fix with it, which writes that file's DRA variant"
    )


def _edits_in_file(edits: list[Any], sources: ValueSources) -> list[Any]:
    """The map edits (pattern B) whose device keys a values file sets (`sources`: the chart defaults and the file)."""
    from dramigrate.helm.values import get_path

    return [
        e
        for e in edits
        if any(
            isinstance(own := get_path(sources.merged, e.section_path(section)), dict) and set(keys) & set(own)
            for section, keys in e.removed.items()
        )
    ]


def _hints(outcome: ChartOutcome, root: Path, sub: str, rels: set[str], rules: RuleSet) -> dict[str, Any]:
    """The pattern of the first device request the findings map to in each template of `rels` (relative to the
    chart `sub`, "" for the chart itself); in a template no finding maps to, of its first device line."""
    from dramigrate.helm.idiomatic import first_device_line
    from dramigrate.helm.passthrough import map_helpers

    prefix = f"{sub}/" if sub else ""
    leaf = root / sub if sub else root
    hints: dict[str, Any] = {}
    helpers = functools.cache(lambda: map_helpers(leaf))
    copied = functools.cache(lambda: _copied_keys(leaf))
    copying: set[str] = set()  # templates whose hint so far is a helper's copy of a map's device key
    for f in sorted(outcome.findings, key=lambda f: f.line):
        rel = f.file[len(outcome.display) + 1 :]
        if f.rule == "unknown-kind":  # a kind the migration leaves as is (a KaiwoJob wrapping the chart's Job in a
            continue  # define): not the shape the rewrite changes; the kind guard keeps the switch off there
        if sub and f.resource and (outside := _tree_define(outcome, root, sub, rels, f)):
            hints.setdefault(*outside)  # a define of the parent chart (Helm shares defines across the chart tree)
            continue
        if f.resource and f.line and rel.startswith(prefix) and rel[len(prefix) :] in rels:
            rel = rel[len(prefix) :]
            if rel not in hints or rel in copying:  # the first request of each template (setdefault read and
                # classified every one); a helper's copy of a values map's device key gives way to the container
                # that takes the map (B, C): the pass-through gives the copy the map's claims
                pattern = _classified((leaf / rel).read_text(encoding="utf-8"), f, helpers)
                if rel in copying and pattern.letter not in ("B", "C"):
                    continue
                hints[rel] = pattern
                copying.discard(rel)
                if pattern.letter == "D" and f.resource in copied():
                    copying.add(rel)
    for rel in sorted(rels - hints.keys()):  # asks for devices only in value sets the findings do not come from
        try:
            hints[rel] = first_device_line((leaf / rel).read_text(encoding="utf-8"), rules)
        except (OSError, UnicodeDecodeError):
            continue
    return hints


def _tree_define(outcome: ChartOutcome, root: Path, sub: str, rels: set[str], f: Finding) -> tuple[str, Any] | None:
    """For a finding findingmap moved into a define outside the subchart `sub` (sensity-api's subcharts each
    `{{ include "sensity-api.deployment" . }}`, a define of the parent chart, as Helm shares defines across the chart
    tree): the subchart template of `rels` whose line includes it, and the pattern of the define's line, at the
    include line (the subchart's template passes the map through that define). None for any other finding."""
    prefix = f"{outcome.display}/{sub}/"
    if f.file.startswith(prefix) or not f.file.startswith(f"{outcome.display}/") or not f.line:
        return None
    via = next((r for r in f.related if r.note.startswith("this line includes ") and r.file.startswith(prefix)), None)
    if via is None or (rel := via.file[len(prefix) :]) not in rels:
        return None
    try:
        define_text = (root / f.file[len(outcome.display) + 1 :]).read_text(encoding="utf-8")
        include = (root / sub / rel).read_text(encoding="utf-8").splitlines()[via.line - 1].strip()
    except (OSError, UnicodeDecodeError, IndexError):
        return None
    from dramigrate.helm.passthrough import map_helpers

    pattern = _classified(define_text, f, functools.partial(map_helpers, root))
    return rel, replace(pattern, line=via.line, text=include)


def _classified(text: str, f: Finding, helpers: Callable[[], dict[str, str]]) -> Any:
    """The pattern of the device request of finding `f` at its line of the template `text` (findingmap.named_pattern,
    with the values keys its count comes from)."""
    return named_pattern(text, f.line, f.resource, helpers, _counted(f))


def _counted(f: Finding) -> tuple[str, ...]:
    """The values keys (dotted) attach_values found the finding's device count in."""
    return tuple(m.group(1) for r in f.related if (m := _COUNTED.match(r.note)))


_COUNTED = re.compile(r"([^\[:]+)(?:\[[^\]]*\])*: .* sets this device count$")  # attach_values' note: its key


def _copied_keys(root: Path) -> set[str]:
    """The device keys a template line of the chart copies from a values resources map (passthrough.copies)."""
    from dramigrate.helm.passthrough import copies

    try:
        return {c.key for c in copies(root)}
    except (OSError, UnicodeDecodeError):
        return set()


def _values_files(root: Path, copts: ChartOptions) -> list[Path]:
    """The values files every render of a chart run reads: the -f files, and the chart's and its unpacked subcharts'
    values.yaml (a shipped values file is checked when the proof takes it, other YAML of the chart never)."""
    own = [
        p
        for p in sorted(root.rglob("values.yaml"))
        if not {"templates", "crds", "tests"} & set(p.relative_to(root).parts[:-1])
    ]
    return [*copts.values_files, *own]


# a document's top-level `apiVersion:` and `kind:`: a Kubernetes object, which a values file is not
_MANIFEST_HEAD = re.compile(r"^apiVersion:[ \t]*[\w.-]+(?:/[\w.-]+)?[ \t]*$", re.M)


_MANIFEST_KIND = re.compile(r"^kind:[ \t]*[A-Z]\w*[ \t]*$", re.M)


def shipped_files(outcome: ChartOutcome, root: Path, copts: ChartOptions, rules: RuleSet) -> list[Path]:
    """The chart's own values files that name a device resource (`ci/gpu-values.yaml`, `values-gpu.yaml`; not
    values.yaml, templates/, charts/ or tests/, nor the -f files the user names), each checked as a values file:
    every rewrite's proof renders each (_fix), the pass-through writes a DRA variant of each that asks for devices."""
    out = []
    for path, rel, text in _own_values_files(root, copts):
        if not _names_device(text, rules):
            continue
        check_values_file(str(path), f"{outcome.display}/{rel.as_posix()}")  # a value set of the proof from here on
        out.append(path)
    return out


def switch_files(root: Path, copts: ChartOptions, rules: RuleSet) -> list[Path]:
    """The chart's own values files (as shipped_files finds them, outside hidden folders) that name no device resource
    and are a values mapping: one may switch to another workload template (`mode: job`) that then asks for the
    defaults' devices, which the proof must render with the DRA values too (_fix keeps those whose render asks for
    devices in a template the user's values do not). A file too large or not YAML is left out, not refused: the
    chart never says it is a values file."""
    out = []
    for path, rel, text in _own_values_files(root, copts):
        if any(p.startswith(".") for p in rel.parts) or _names_device(text, rules):
            continue
        try:
            check_values_text(text.encode(), str(rel))
            values = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except (InputError, yaml.YAMLError):
            continue
        if isinstance(values, dict) and values:
            out.append(path)
    return out


def _own_values_files(root: Path, copts: ChartOptions) -> Iterator[tuple[Path, Path, str]]:
    """Each YAML file of the chart that may be a values file of its own (not values.yaml, Chart.yaml, a `-dra` variant,
    templates/, charts/ or tests/, deeper than two folders, a -f file the user names, nor Kubernetes objects), with
    its path in the chart and its text."""
    given = {p.resolve() for p in copts.values_files}
    for path in sorted([*root.rglob("*.yaml"), *root.rglob("*.yml")]):
        rel = path.relative_to(root)
        if rel.parts[0] in ("templates", "charts", "tests") or len(rel.parts) > 3 or path.resolve() in given:
            continue
        if rel.name in ("Chart.yaml", "values.yaml", "Chart.lock") or rel.stem.endswith("-dra"):
            continue
        text = read_text(path) or ""
        if _MANIFEST_HEAD.search(text) and _MANIFEST_KIND.search(text):
            continue  # Kubernetes objects (a render the chart ships, ai-workloads' out.yaml), not values
        yield path, rel, text


def _names_device(text: str, rules: RuleSet) -> bool:
    """Whether a text names a device resource the rule packs migrate."""
    names = re.findall(r"[\w.-]+\.[a-z]+/[\w.-]+", text)
    return any(rules.is_device_candidate(n) and rules.lookup(n) is not None for n in names)


def _rewritten_copy(
    root: Path, changes: list[Change], work: Workdir, skip: frozenset[str] = frozenset(), where: str = "rewritten"
) -> Path:
    """A copy of the chart in the proof's work folder (`where` in it) with the rewrite applied (files in `skip` left
    as they were)."""
    from dramigrate.helm.sandbox import private_copy

    copy_root = work.path / where / root.name
    copy_root.parent.mkdir(exist_ok=True)
    # Links (all inside the chart, checked in the copy) become plain files: no write below follows one, into the
    # chart or anywhere else, and Helm reads the same text through them.
    private_copy(root, copy_root)
    top = copy_root.resolve()
    for c in changes:
        if c.rel in skip:
            continue
        target = copy_root / c.rel
        if top not in target.resolve().parents:
            raise InputError(f"{c.rel} is not inside the chart", str(root))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(with_line_ends(target, c).after.encode("utf-8"))
    for rel, _, data in archive_writes(root, changes):  # a subchart's .tgz beside its changed folder (twins.py)
        (copy_root / rel).write_bytes(data)
    from dramigrate.helm.leftout import check_copy

    check_copy(copy_root)
    return copy_root


def rendered_once_indented(root: Path, own: list[Change], work: Workdir | None, v: Any, new: Render) -> str | None:
    """Proof L for a value set the original chart does not render but the rewritten one does, because the rewrite
    indented a `tolerations:` list the chart wrote outside its key (listindent.py): '' when the original chart with
    only those lines indented renders byte for byte what the rewritten one does, else why not; None when the rewrite
    indented no such list. `work`: the run's work folder (None: a folder of its own, removed after)."""
    indented = [Change(c.rel, c.before, indented_tolerations(c.before)) for c in own if c.before is not None]
    indented = [c for c in indented if c.after != c.before]
    if not indented:
        return None
    own_work = Workdir() if work is None else None
    try:
        fixed = _rewritten_copy(root, indented, work or own_work, where="indented")  # type: ignore[arg-type]
        before = cached_render(fixed, v.options)
    finally:
        if own_work is not None:
            own_work.close()
    if before.error:
        why = "neither the original chart nor it with its tolerations indented renders"
        return f"with {v.label}, {why}: {before.error}"
    return _not_identical(
        f"with {v.label} (values as they were, the chart's tolerations indented)", before, before, new
    )
