"""Helm charts a kustomization inflates (`helmCharts:`, and the deprecated `helmChartInflationGenerator:`).

kustomize runs helm when it builds such a kustomization (`--enable-helm`), so what the chart renders is in no file
dramigrate reads: a GPU chart pulled by kustomize passed the gate without a word. Each entry of a kustomization
under the given paths is now said. A chart in the repository, where kustomize looks for it (`<chartHome>/<name>`,
or `<chartHome>/<name>-<version>/<name>` when the entry names a version and a repo; chartHome defaults to
`charts`), is rendered with the real Helm engine with the entry's values (valuesFile, valuesInline and
valuesMerge, additionalValuesFiles), release name and namespace, and its findings are placed at the entry's line,
with the template as a related location. Any other chart (pulled at build time, outside the repository, missing)
is a `kustomize-helm-chart` warning naming it. Nothing is written: fix leaves a chart kustomize inflates as it is.

Safety: nothing outside the repository that holds the kustomization is read (chartHome, the chart folder and the
values files are resolved first, and must stay in it and out of `.git`); values files must be regular files.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from dramigrate.findings import RULES, Finding, InputError, Location
from dramigrate.kustomize.graph import (
    HELM_GENERATOR,
    HELM_KEYS,
    MAX_KUSTOMIZATION_VALUES,
    Kustomization,
    generator_texts,
    repo_root,
    under,
)
from dramigrate.limits import expands_within, is_regular, nodes_upto

if TYPE_CHECKING:
    from dramigrate.config import Settings
    from dramigrate.kustomize.scan import Scan
    from dramigrate.migrate import FileResult
    from dramigrate.rules import RuleSet
    from dramigrate.versions import Target

DEFAULT_CHART_HOME = "charts"  # kustomize's types.HelmDefaultHome
MERGES = ("override", "merge", "replace")  # valuesMerge; override is kustomize's default
MAX_INLINE_VALUES = 20_000  # as a values file holds at most (limits.check_values_text)
MAX_CHART_RUNS = 32  # distinct charts and value sets linted in one run (each renders the chart a few times)
# the deprecated helmChartInflationGenerator's keys, as kustomize maps them onto a helmCharts entry
_OLD_KEYS = {
    "chartName": "name",
    "chartVersion": "version",
    "chartRepoUrl": "repo",
    "values": "valuesFile",
    "valuesLocal": "valuesInline",
    "valuesMerge": "valuesMerge",
    "releaseName": "releaseName",
}


@dataclass
class HelmEntry:
    """One chart a kustomization inflates, as kustomize would look for it."""

    owner: Path  # the kustomization file
    key: str  # helmCharts or helmChartInflationGenerator
    line: int  # the entry's line in the kustomization
    name: str  # the chart's name as written ("" when it has none)
    where: str = ""  # the chart folder kustomize reads, as the kustomization writes it (relative to its folder)
    chart: Path | None = None  # that folder, resolved, when dramigrate renders it
    why: str = ""  # why the chart is not checked ("" when it is rendered)
    release: str = "release-name"
    namespace: str | None = None
    values: list[Path | None] = field(default_factory=list)  # the -f files in order; None: the inline values
    inline: dict[str, Any] | None = None
    kube_version: str | None = None
    api_versions: tuple[str, ...] = ()


def helm_entries(k: Kustomization) -> list[HelmEntry]:
    """Every chart k inflates, each with where kustomize finds it or why dramigrate does not check it."""
    out: list[HelmEntry] = []
    globals_ = k.data.get("helmGlobals")
    home = globals_.get("chartHome") if isinstance(globals_, dict) else None
    for key in HELM_KEYS:
        value = k.data.get(key)
        if value is None:
            continue
        if not isinstance(value, list):
            out.append(HelmEntry(k.file, key, k.line_of(key), "", why=f"{key} is not a list (kustomize refuses it)"))
            continue
        for i, raw in enumerate(value):
            entry = HelmEntry(k.file, key, k.item_line(key, i), "")
            if not isinstance(raw, dict):
                entry.why = f"the {key} entry is not a mapping (kustomize refuses it)"
            else:
                if key == "helmChartInflationGenerator":
                    own_home = raw.get("chartHome")
                    raw = {new: raw[old] for old, new in _OLD_KEYS.items() if old in raw}
                    home = own_home if isinstance(own_home, str) and own_home else home
                entry.why = _read_entry(k, entry, raw, home)
            out.append(entry)
    for i, text in generator_texts(k):  # a generator configuration of kind HelmChartInflationGenerator
        if HELM_GENERATOR not in text:
            continue
        line = k.item_line("generators", i)
        try:
            if nodes_upto(text, MAX_KUSTOMIZATION_VALUES) > MAX_KUSTOMIZATION_VALUES:
                raise ValueError(f"holds more than {MAX_KUSTOMIZATION_VALUES:,} values")
            docs = [d for d in yaml.safe_load_all(text) if isinstance(d, dict) and d.get("kind") == HELM_GENERATOR]
        except (yaml.YAMLError, RecursionError, ValueError) as exc:
            why = str(exc) if isinstance(exc, ValueError) else "is not YAML it can read"
            out.append(HelmEntry(k.file, "generators", line, "", why=f"its generator configuration {why}"))
            continue
        for doc in docs:
            entry = HelmEntry(k.file, "generators", line, "")
            own_home = doc.get("chartHome")
            entry.why = _read_entry(k, entry, doc, own_home if own_home else home)
            out.append(entry)
    return out


def _read_entry(k: Kustomization, e: HelmEntry, raw: dict[str, Any], home: Any) -> str:
    """Fill e from the entry raw; the reason the chart is not checked, "" when it can be rendered."""
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        return "the entry has no chart name (kustomize refuses it)"
    e.name = name
    texts = {key: raw.get(key) for key in ("version", "repo", "releaseName", "namespace", "valuesFile", "kubeVersion")}
    for key, value in texts.items():
        if value is not None and not isinstance(value, (str, int, float)):
            return f"its {key} is not a string (kustomize refuses it)"
    version, repo = str(texts["version"] or ""), str(texts["repo"] or "")
    if home is not None and not isinstance(home, str):
        return "helmGlobals.chartHome is not a string (kustomize refuses it)"
    base = home or DEFAULT_CHART_HOME
    if "\0" in name + version + base:  # no path holds one (the file system refuses it)
        return "its chart name, version or chartHome holds a NUL character"
    rel = os.path.join(base, f"{name}-{version}", name) if version and repo else os.path.join(base, name)
    e.where = rel
    repository = os.path.realpath(repo_root(k.dir))
    chart = os.path.realpath(os.path.join(k.dir, rel))
    if _outside(chart, repository):
        return f"its chart folder {rel} leads outside the repository; not read"
    if not os.path.isdir(chart):
        if repo:
            return (
                f"kustomize pulls it from {repo} when it builds (with --enable-helm), and dramigrate fetches nothing; "
                f"vendor the chart at {rel} (helm pull --untar) to have it checked"
            )
        return f"there is no chart folder at {rel} and no repo to pull it from (kustomize's build fails)"
    if not is_regular(os.path.join(chart, "Chart.yaml")):
        return f"{rel} holds no Chart.yaml"
    merge = raw.get("valuesMerge") or "override"
    if merge not in MERGES:
        return "its valuesMerge is none of merge, override, replace (kustomize refuses it)"
    inline = raw.get("valuesInline")
    if inline is not None and not isinstance(inline, dict):
        return "its valuesInline is not a mapping (kustomize refuses it)"
    if inline and not expands_within(inline, MAX_INLINE_VALUES):  # written out for Helm, aliases expand
        return f"its valuesInline expands to more than {MAX_INLINE_VALUES:,} values (a YAML alias bomb?); not rendered"
    files: list[Path | None] = []
    if texts["valuesFile"]:
        path, why = _values_file(k, str(texts["valuesFile"]), repository, "valuesFile")
        if why:
            return why
        files.append(path)
    if inline:  # kustomize merges the inline values into the values file (override: the inline ones win)
        files = [None] if merge == "replace" else [*files, None] if merge == "override" else [None, *files]
    more = raw.get("additionalValuesFiles") or []
    if not isinstance(more, list) or not all(isinstance(f, str) for f in more):
        return "its additionalValuesFiles is not a list of paths (kustomize refuses it)"
    for extra in more:
        path, why = _values_file(k, extra, repository, "additionalValuesFiles entry")
        if why:
            return why
        files.append(path)
    apis = raw.get("apiVersions") or []
    if not isinstance(apis, list) or not all(isinstance(a, str) for a in apis):
        return "its apiVersions is not a list of strings (kustomize refuses it)"
    e.chart = Path(chart)
    e.release = str(texts["releaseName"] or "release-name")
    e.namespace = str(texts["namespace"]) if texts["namespace"] else None
    e.values = files
    e.inline = inline or None
    e.kube_version = str(texts["kubeVersion"]) if texts["kubeVersion"] else None
    e.api_versions = tuple(apis)
    return ""


def _values_file(k: Kustomization, entry: str, repository: str, what: str) -> tuple[Path | None, str]:
    """A values file an entry names, resolved; or why it is not read."""
    if "://" in entry:
        return None, f"its {what} {entry} is a URL, which dramigrate does not fetch"
    if "\0" in entry:
        return None, f"its {what} holds a NUL character"
    real = os.path.realpath(os.path.join(k.dir, entry))
    if _outside(real, repository):
        return None, f"its {what} {entry} leads outside the repository; not read"
    try:
        mode = os.stat(real).st_mode
    except OSError as exc:
        return None, f"its {what} {entry} cannot be read ({exc.strerror}; kustomize's build fails)"
    if not stat.S_ISREG(mode):
        return None, f"its {what} {entry} is not a regular file; never read"
    return Path(real), ""


def _outside(real: str, repository: str) -> bool:
    """real (resolved) is not in the repository, or is inside a .git folder (a CI checkout keeps its token there)."""
    return not under(real, {repository}) or ".git" in Path(os.path.relpath(real, repository)).parts


# --- checking the charts ----------------------------------------------------------------------------------------


def check_helm_charts(kz: Scan, rules: RuleSet, settings: Settings, target: Target) -> list[FileResult]:
    """The findings (and the bad input) of every chart the kustomizations under the given paths inflate, one result
    per kustomization that has any; [] when none inflates a chart."""
    from dramigrate.migrate import FileResult

    results: list[FileResult] = []
    done: dict[tuple[Any, ...], tuple[Any, set[str]]] = {}  # each distinct chart and options, linted once
    for folder in sorted(kz.graph.nodes):
        node = kz.graph.nodes[folder]
        if node.file not in kz.inflates:
            continue
        shown = kz.display(node.file)
        result = FileResult(shown)
        for e in helm_entries(node):
            if e.chart is None:
                result.findings.append(_unchecked(e, shown))
                continue
            try:
                result.findings.extend(_render(e, kz, shown, rules, settings, target, done))
            except InputError as exc:
                if result.error is None:  # the first chart that cannot be rendered: the kustomization's bad input
                    result.error = exc
        if result.findings or result.error is not None:
            results.append(result)
    return results


def _unchecked(e: HelmEntry, shown: str) -> Finding:
    what = f"the Helm chart {e.name}" if e.name else "a Helm chart"
    return Finding(
        "kustomize-helm-chart",
        RULES["kustomize-helm-chart"][0],
        f"{what} that kustomize inflates here ({e.key}) is not checked: {e.why}",
        shown,
        e.line,
        1,
    )


def _render(
    e: HelmEntry,
    kz: Scan,
    shown: str,
    rules: RuleSet,
    settings: Settings,
    target: Target,
    done: dict[tuple[Any, ...], tuple[Any, set[str]]],
) -> list[Finding]:
    """Lint the entry's chart with its options (the real Helm engine); its findings placed at the entry. done: the
    chart runs of the run so far, by chart and options (an entry repeated a thousand times is linted once)."""
    from dramigrate.terminal import MESSAGES

    assert e.chart is not None
    chart_shown = kz.display(e.chart)
    inline = json.dumps(e.inline, sort_keys=True, default=str)
    key = (e.chart, e.release, e.namespace, tuple(e.values), inline, e.kube_version, e.api_versions)
    if key not in done:
        if len(done) >= MAX_CHART_RUNS:  # each run renders the chart a few times: a thousand would take an hour
            raise InputError(
                f"the kustomizations under the paths inflate more than {MAX_CHART_RUNS} distinct Helm charts or "
                "value sets; the others, this one among them, are not checked (run dramigrate on fewer paths)",
                shown,
                e.line,
                1,
            )
        done[key] = _lint(e, kz, chart_shown, rules, settings, target)
    outcome, inline_names = done[key]
    here = f"{shown}:{e.line} valuesInline"
    if outcome.error is not None:
        message = outcome.error.message
        for name in inline_names:
            message = message.replace(name, here)
        where = outcome.error.file if outcome.error.file not in inline_names else here
        raise InputError(
            f"the Helm chart {e.name} that kustomize inflates here ({e.key}) does not render with this entry's "
            f"values: {where}: {message}",
            shown,
            e.line,
            1,
            rule=outcome.error.rule,
        )
    if not outcome.findings:
        MESSAGES.explain(f"{shown}:{e.line}: the Helm chart {chart_shown} with this entry's values: no finding")
    return [_placed(f, e, shown, chart_shown, inline_names) for f in outcome.findings]


def _lint(
    e: HelmEntry, kz: Scan, chart_shown: str, rules: RuleSet, settings: Settings, target: Target
) -> tuple[Any, set[str]]:
    """The chart run (helm.outcome.ChartOutcome, lint mode) of an entry, and the names its inline values file went
    by."""
    from dramigrate.helm.outcome import ChartOptions
    from dramigrate.helm.run import run_chart
    from dramigrate.helm.sandbox import prestart
    from dramigrate.lifetime import temporary_folder

    with temporary_folder("dramigrate-kustomize-values-") as tmp:
        inline = tmp / "valuesInline.json"
        if e.inline is not None:
            inline.write_text(json.dumps(e.inline, default=str), encoding="utf-8")
        values = tuple(inline if p is None else Path(kz.display(p)) for p in e.values)
        copts = ChartOptions(
            release=e.release,
            values_files=values,
            namespace=e.namespace,
            kube_version=e.kube_version,
            api_versions=e.api_versions,
        )
        prestart()
        outcome = run_chart(Path(chart_shown), copts, rules, settings, target, "lint")
        inline_names = {str(inline), inline.as_posix()}
    return outcome, inline_names


def _placed(f: Finding, e: HelmEntry, shown: str, chart_shown: str, inline_names: set[str]) -> Finding:
    """A finding of the chart's render, at the entry's line: not fixable (fix leaves an inflated chart as it is); a
    request fix would have rewritten in the chart becomes a kustomize-helm-device error."""
    source = f"{f.file}:{f.line}" if f.line else f.file
    origin = f"in the Helm chart {chart_shown} kustomize inflates here ({e.key}), rendered with this entry's values"
    related = [Location(f.file, f.line, f.column, "the chart's template that renders it")]
    for r in f.related:
        inline = r.file in inline_names
        related.append(
            Location(
                shown if inline else r.file,
                e.line if inline else r.line,
                1 if inline else r.column,
                ("valuesInline: " if inline else "") + r.note,
            )
        )
    if f.fixable:
        head = f.message.split("; fix ", 1)[0]
        message = (
            f"{head} ({source}), {origin}; fix does not rewrite a chart kustomize inflates: migrate the chart and "
            "this entry's values by hand"
        )
        rule = "kustomize-helm-device"
    else:
        message, rule = f"{f.message} ({source}, {origin})", f.rule
    return replace(
        f,
        rule=rule,
        severity=RULES[rule][0],
        message=message,
        file=shown,
        line=e.line,
        column=1,
        fixable=False,
        fixed=False,
        would_fix=False,
        related=related,
    )
