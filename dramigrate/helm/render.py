"""Render Helm charts as `helm template` does, with the Helm engine embedded in helm-python-sdk.

The SDK (import name `helm_python`) wraps Helm's Go SDK in a shared library, so no `helm` binary, no
network and no cluster are involved. `render_chart` reproduces what `helm template` adds around the
engine: the values from `-f`, `--set` and `--set-string`, the check that declared dependencies are in
`charts/`, `--kube-version` and `--api-versions`, and the output: every document with its
`# Source:` path, ordered by kind, hooks last, NOTES.txt left out. With `RenderOptions.helm_binary` an
external `helm template` runs instead and its output is split on the `# Source:` comments.

Known differences from `helm template`, all in the SDK: values cross into the engine as JSON, so an
integer from `--set` reaches templates as float64 where Helm has int64 (`kindIs "int64"` is false, and
integers of a million and more print in exponent form, `1e+06`; numbers from values files are float64 in Helm too);
dependencies are processed with chartutil.ProcessDependencies where `helm template` uses
ProcessDependenciesWithMerge, which differs only for null values in import-values.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from dramigrate.helm.sandbox import (
    ChartRefused,
    RenderLimit,
    check_render_size,
    render_memory_mb,
    render_timeout,
    scrub,
)
from dramigrate.memo import remember


@dataclass(frozen=True)
class RenderOptions:
    release_name: str = "release-name"
    namespace: str | None = None
    values_files: tuple[Path, ...] = ()
    set_values: tuple[str, ...] = ()  # like --set a.b=1,c=2
    set_string_values: tuple[str, ...] = ()  # like --set-string
    kube_version: str | None = None  # e.g. "1.36" -> .Capabilities.KubeVersion
    api_versions: tuple[str, ...] = ()  # like -a/--api-versions
    helm_binary: Path | None = None  # use an external `helm template` instead of the SDK
    timeout: float = field(default_factory=render_timeout)  # seconds per render (sandbox.py)
    memory_mb: int = field(default_factory=render_memory_mb)  # address space of the render process


@dataclass(frozen=True)
class RenderedManifest:
    source: str  # the template path as in "# Source: chart/templates/x.yaml"
    text: str  # the YAML text of that manifest (one or more documents)


class HelmError(Exception):
    """A chart that does not render; the message is Helm's own and names the template file."""


__all__ = ["ChartRefused", "HelmError", "RenderLimit", "RenderOptions", "RenderedManifest", "render_chart"]


def is_chart(path: Path) -> bool:
    """Whether `path` is a chart folder (it has a Chart.yaml) or a packaged chart (.tgz)."""
    if path.is_dir():
        return (path / "Chart.yaml").is_file()
    if path.suffix != ".tgz" or not path.is_file():
        return False
    import tarfile
    import zlib

    from dramigrate.helm.tararchive import open_packed

    try:
        with open_packed(path) as archive:
            # Helm reads `<top folder>/Chart.yaml`; `helm package` writes it first (a bomb is not read through).
            for count, member in enumerate(archive):
                if member.name.split("/")[1:] == ["Chart.yaml"]:
                    return True
                if count >= 1000:
                    return False
            return False
    except (OSError, EOFError, tarfile.TarError, zlib.error):
        return False


def render_chart(chart: Path, options: RenderOptions) -> list[RenderedManifest]:
    """Render a chart folder or packaged chart as `helm template` prints it."""
    if options.helm_binary is not None:
        return _render_with_binary(chart, options)
    files = _render_with_sdk(chart, options)
    unsafe = next((name for name in sorted(files) if _NOT_IN_A_COMMENT.search(name)), None)
    if unsafe is not None:
        raise HelmError(unsafe_template_name(unsafe))
    check_render_size(
        sum(text.count("\n---") + 1 for text in files.values()), sum(len(text) for text in files.values())
    )
    try:
        return _order_like_helm_template(files)
    except HelmError as exc:  # a YAML error can quote rendered text, which can come from chart files
        raise HelmError(scrub(str(exc), chart)) from None


_SOURCE_HEADER = re.compile(r"^---[ \t]*\n# Source: (.*)$", re.MULTILINE)
# what a template's path cannot hold in the rendered output's `# Source:` comment: a character YAML refuses anywhere
# (ESC, BEL, DEL, C1 controls), or a line break, which would start a line of YAML in the output
_NOT_IN_A_COMMENT = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff]")


def unsafe_template_name(name: str) -> str:
    """Why a chart whose template path holds such a character is refused. lint called such a chart's request
    fixable while fix refused it (`would not parse back`); now lint, diff and fix all refuse it, by this name."""
    from dramigrate.report.escape import plain

    return (
        f"the template file name {plain(name, False)} holds a control character or a line break: Helm writes it into "
        "the rendered output's `# Source:` comment, where YAML refuses it (a line break would start a line of YAML); "
        "dramigrate checks no such chart: rename the file"
    )


def split_template_output(text: str) -> list[RenderedManifest]:
    """Split the output of `helm template` on its `# Source:` comments; empty manifests are dropped. A template may
    print such a comment itself: one naming a path Helm never gives a template (absolute, or with a `..`, `.` or
    empty segment) is not Helm's: the document after it is the previous template's, as the embedded engine gives
    it, never a file dramigrate opens to place its findings (a FIFO or /dev/zero outside the chart held lint for
    ever)."""
    parts = _SOURCE_HEADER.split(text)
    out: list[RenderedManifest] = []
    path = ""
    for source, body in zip(parts[1::2], parts[2::2], strict=True):
        named = source.strip()
        if not path or not (named.startswith("/") or {"", ".", ".."} & set(named.split("/"))):
            path = named
        if body.strip():
            out.append(RenderedManifest(path, body.strip() + "\n"))
    return out


# --- rendering ---------------------------------------------------------------------------------------


def _render_with_sdk(chart: Path, options: RenderOptions) -> dict[str, str]:
    """Template path -> rendered text, from the SDK's native `helm_render`, run in the sandbox's child
    process (sandbox.py) after the chart's symlinks are checked; Helm's own messages are scrubbed of
    anything that is not template text.

    The SDK's public `Chart.render()` does not take the capabilities; its native call does (options
    JSON: name, namespace, kube_version, api_versions). It runs the dependency conditions, tags and
    import-values, coalesces values and validates them against values.schema.json, as an install does.
    """
    import helm_python as sdk

    from dramigrate.helm.sandbox import chart_for_render, render_in_child, scrub
    from dramigrate.helm.schemarefs import localize_schema_refs
    from dramigrate.helm.storedarchives import store_packed

    try:
        sdk.validate_release_name(options.release_name)
    except sdk.HelmError as exc:
        raise HelmError(f"release name {json.dumps(options.release_name)}: {exc}") from None
    values = _user_values(options)
    native_options: dict[str, Any] = {"name": options.release_name}
    if options.namespace:
        native_options["namespace"] = options.namespace
    if options.kube_version:
        native_options["kube_version"] = options.kube_version
    # `-a` is a string slice flag: "a/v1,b/v1" is two versions.
    api_versions = [api for entry in options.api_versions for api in entry.split(",") if api]
    if api_versions:
        native_options["api_versions"] = api_versions
    with chart_for_render(chart) as safe:  # a private copy: no link reaches Helm, even one swapped in since
        localize_schema_refs(Path(safe))  # a library's schema URLs read from the chart's own files, not fetched
        store_packed(Path(safe))  # packed subcharts Helm need not inflate at each render
        payload = {"chart": str(Path(safe).absolute()), "values": values, "options": native_options}
        reply = render_in_child(payload, options.timeout, options.memory_mb)
        if "helm" in reply:
            raise HelmError(scrub(reply["helm"], safe) + _set_integers_note(reply["helm"], options))
    if "error" in reply:
        raise HelmError(reply["error"])
    files: dict[str, str] = reply["files"]
    return files


def _set_integers_note(message: str, options: RenderOptions) -> str:
    """The SDK's known difference, named when a render fails on a float64 and `--set` gives integers: Helm reads
    `--set maxWorkers=1` as int64 (`gt .Values.maxWorkers 0` renders), the SDK hands it to templates as float64
    (`incompatible types for comparison: float64 and int`). No SDK call takes the --set text for Helm's own parser,
    so the note says how to render with Helm itself."""
    if "float64" not in message:
        return ""
    found: list[str] = []
    for expression in options.set_values:
        parsed: dict[str, Any] = {}
        _SetParser(expression, False).parse_into(parsed)
        found += [f"{key}={value}" for key, value in _leaves(parsed) if type(value) is int]
    if not found:
        return ""
    return (
        f" (--set {', '.join(found)}: the Helm engine embedded in dramigrate passes integers given with --set to "
        "templates as float64, where helm has int64; give --helm-binary to render with helm itself)"
    )


def _leaves(data: Any, path: str = "") -> list[tuple[str, Any]]:
    """(dotted key, value) of each scalar in parsed --set values."""
    if isinstance(data, dict):
        return [leaf for k, v in data.items() for leaf in _leaves(v, f"{path}.{k}" if path else str(k))]
    if isinstance(data, list):
        return [leaf for i, v in enumerate(data) for leaf in _leaves(v, f"{path}[{i}]")]
    return [(path, data)]


def render_native(chart: Path, values: dict[str, Any], native_options: dict[str, Any]) -> dict[str, Any]:
    """In the render process: {"files": template path -> text}, {"helm": Helm's message} or {"error": ours}."""
    import helm_python as sdk
    from helm_python import _native

    try:
        with sdk.Chart.load(chart) as loaded:
            _check_installable(loaded.metadata, loaded.dependencies)
            rendered = _native.call_string("helm_render", loaded._raw(), json.dumps(values), json.dumps(native_options))
    except sdk.HelmError as exc:
        return {"helm": str(exc)}
    except HelmError as exc:
        return {"error": str(exc)}
    return {"files": json.loads(rendered)}


def _check_installable(metadata: dict[str, Any], loaded: list[dict[str, Any]]) -> None:
    """What `helm template` checks before rendering and the SDK does not."""
    chart_type = metadata.get("type") or "application"
    if chart_type != "application":
        raise HelmError(f"{chart_type} charts are not installable")
    # action.CheckDependencies: every declared dependency is in charts/, by name (aliases and
    # conditions do not matter).
    present = {str(dependency.get("name")) for dependency in loaded}
    declared = [str(dependency.get("name")) for dependency in metadata.get("dependencies") or []]
    missing = [name for name in declared if name not in present]
    if missing:
        raise HelmError(
            "An error occurred while checking for chart dependencies. You may need to run "
            "`helm dependency build` to fetch missing dependencies: found in Chart.yaml, but missing "
            f"in charts/ directory: {', '.join(missing)}"
        )


def _render_with_binary(chart: Path, options: RenderOptions) -> list[RenderedManifest]:
    from dramigrate.helm.sandbox import chart_for_render

    with chart_for_render(chart) as safe:  # a private copy: no link reaches helm, even one swapped in since
        return _run_binary(safe, options)


def _run_binary(chart: Path, options: RenderOptions) -> list[RenderedManifest]:
    # An absolute chart path cannot be taken for a flag, nor can a `--flag=value` value starting with "-".
    binary = options.helm_binary
    if binary is not None and binary.parent == Path(".") and binary.is_file():
        binary = binary.absolute()  # `./helm` (Path drops the `./`) is that file, not a `helm` looked up on PATH
    command = [str(binary), "template", options.release_name, str(chart.absolute())]
    if options.namespace:
        command.append(f"--namespace={options.namespace}")
    command += [f"--values={path}" for path in options.values_files]
    command += [f"--set={expression}" for expression in options.set_values]
    command += [f"--set-string={expression}" for expression in options.set_string_values]
    if options.kube_version:
        command.append(f"--kube-version={options.kube_version}")
    command += [f"--api-versions={api}" for api in options.api_versions]
    from dramigrate.lifetime import reap, spawn

    try:  # in a process group the janitor kills should dramigrate die first, plugins and post-renderers too
        process = spawn(
            command,
            memory_mb=options.memory_mb,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            encoding="utf-8",
            errors="replace",
        )
    except OSError as exc:
        raise HelmError(f"cannot run {options.helm_binary}: {exc.strerror or exc}") from None
    try:
        stdout, stderr = process.communicate(timeout=options.timeout)
    except subprocess.TimeoutExpired:
        raise RenderLimit(f"`helm template` took longer than {options.timeout:g} s (the time limit)") from None
    finally:
        reap(process)
    done = subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
    if done.returncode < 0:
        raise RenderLimit(f"`helm template` was killed by signal {-done.returncode} (the memory limit?)")
    if done.returncode != 0:
        message = done.stderr.strip().removeprefix("Error: ")
        status = f"`helm template` failed with exit status {done.returncode}"
        raise HelmError(scrub(message, chart) if message else status)
    check_render_size(done.stdout.count("\n---"), len(done.stdout))
    return split_template_output(done.stdout)


# --- values: -f, --set, --set-string -----------------------------------------------------------------


def _user_values(options: RenderOptions) -> dict[str, Any]:
    """The values `helm template` hands to the chart (pkg/cli/values.Options.MergeValues): the `-f`
    files merged in order, then every `--set`, then every `--set-string`, each parsed into the result.
    """
    import helm_python as sdk

    values: dict[str, Any] = {}
    for path in options.values_files:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise HelmError(f"cannot read values file {path}: {exc}") from None
        try:
            values = _merge_maps(values, sdk.values_from_yaml(text))  # Helm's own YAML reading
        except sdk.HelmError as exc:
            raise HelmError(f"failed to parse {path}: {exc}") from None
    for flag, expressions, as_string in (
        ("--set", options.set_values, False),
        ("--set-string", options.set_string_values, True),
    ):
        for expression in expressions:
            try:
                _SetParser(expression, as_string).parse_into(values)
            except _SetError as exc:
                raise HelmError(f"failed parsing {flag} data: {exc}") from None
    return values


def _merge_maps(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Helm's mergeMaps: maps merge key by key, anything else (lists too) is replaced."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge_maps(merged[key], value)
        else:
            merged[key] = value
    return merged


class _SetError(Exception):
    """A malformed `--set` expression, with the message Helm gives."""


class _End(Exception):
    """End of the expression (io.EOF in the Go parser): not an error."""


_MAX_INDEX = 65536
_MAX_NESTED_NAME_LEVEL = 30
_INTEGER = re.compile(r"[+-]?[0-9]+")


class _SetParser:
    """Helm's `--set`/`--set-string` parser (pkg/strvals ParseInto/ParseIntoString), ported.

    The SDK only parses an expression into an empty map, while Helm parses it into the values from
    the `-f` files, and that differs for lists: `a[0].b=x` edits the first item a file gave instead of
    replacing the list. Differences from the SDK's parser on an empty map are bugs (see the tests).
    """

    def __init__(self, text: str, as_string: bool) -> None:
        self._text = text
        self._pos = 0
        self._as_string = as_string

    def parse_into(self, data: dict[str, Any]) -> None:
        try:
            while True:
                self._key(data, 0)
        except _End:
            return

    def _read(self) -> str | None:
        if self._pos >= len(self._text):
            return None
        self._pos += 1
        return self._text[self._pos - 1]

    def _until(self, stop: str) -> tuple[str, str | None]:
        """The text up to a stop character (None at the end), with backslash escapes resolved."""
        out: list[str] = []
        while (char := self._read()) is not None:
            if char in stop:
                return "".join(out), char
            if char == "\\" and (char := self._read()) is None:
                break
            out.append(char)
        return "".join(out), None

    def _key(self, data: dict[str, Any], level: int) -> None:
        key, last = self._until("=[,.")
        if last is None:
            if key:
                raise _SetError(f"key {_quote(key)} has no value")
            raise _End
        if last == "[":
            index = self._index()
            items = _expect(data.get(key, []), list)
            try:
                items = self._list_item(items, index, level)
            finally:
                _set(data, key, items)
        elif last == "=":
            try:
                _set(data, key, self._list_or_value())
            except _End:
                _set(data, key, "")
                raise
        elif last == ",":
            _set(data, key, "")
            raise _SetError(f"key {_quote(key)} has no value (cannot end with ,)")
        else:  # "."
            level += 1
            if level > _MAX_NESTED_NAME_LEVEL:
                raise _SetError(
                    "value name nested level is greater than maximum supported nested level of "
                    f"{_MAX_NESTED_NAME_LEVEL}"
                )
            inner = _expect(data.get(key, {}), dict)
            try:
                self._key(inner, level)
            except _End:
                if inner:
                    _set(data, key, inner)
                raise
            if not inner:
                raise _SetError(f"key map {_quote(key)} has no value")
            _set(data, key, inner)

    def _list_item(self, items: list[Any], index: int, level: int) -> list[Any]:
        if index < 0:
            raise _SetError(f"negative {index} index not allowed")
        rest, last = self._until("[.=")
        if rest:
            raise _SetError(f"unexpected data at end of array index: {_quote_runes(rest)}")
        if last is None:
            raise _End
        if last == "=":
            try:
                value = self._list_or_value()
            except _End:
                value = ""
            return _set_index(items, index, value)
        if last == "[":
            inner_index = self._index()
            current = items[index] if index < len(items) else None
            inner = [] if current is None else _expect(current, list)
            return _set_index(items, index, self._list_item(inner, inner_index, level))
        # ".": a map inside the list; a value of another type there is replaced.
        inner: dict[str, Any] = {}
        if index < len(items):
            if not isinstance(items[index], dict):
                items[index] = {}
            inner = items[index]
        self._key(inner, level)
        return _set_index(items, index, inner)

    def _index(self) -> int:
        text, last = self._until("]")
        if last is None:
            raise _End  # Helm wraps io.EOF here, and its parse loop then ends without an error
        if not _INTEGER.fullmatch(text):
            raise _SetError(f"error parsing index: strconv.Atoi: parsing {_quote(text)}: invalid syntax")
        return int(text)

    def _list_or_value(self) -> Any:
        """`{a,b}` as a list, else the value up to the next comma."""
        first = self._read()
        if first is None:
            raise _End
        if first != "{":
            self._pos -= 1
            return self._typed(self._until(",")[0])
        items: list[Any] = []
        while True:
            text, last = self._until(",}")
            if last is None:
                raise _SetError("list must terminate with '}'")
            items.append(self._typed(text))
            if last == "}":
                if self._read() not in (",", None):
                    self._pos -= 1
                return items

    def _typed(self, text: str) -> Any:
        if self._as_string:
            return text
        folded = text.casefold()
        if folded in ("true", "false"):
            return folded == "true"
        if folded == "null":
            return None
        if text == "0":
            return 0
        if text and text[0] != "0" and _INTEGER.fullmatch(text) and -(2**63) <= int(text) < 2**63:
            return int(text)
        return text


def _set(data: dict[str, Any], key: str, value: Any) -> None:
    if key:
        data[key] = value


def _set_index(items: list[Any], index: int, value: Any) -> list[Any]:
    if index < 0:
        raise _SetError(f"negative {index} index not allowed")
    if index > _MAX_INDEX:
        raise _SetError(f"index of {index} is greater than maximum supported index of {_MAX_INDEX}")
    items.extend([None] * (index + 1 - len(items)))
    items[index] = value
    return items


def _expect(value: Any, kind: type) -> Any:
    """The Go parser's type assertion: a value of another type is an error."""
    if isinstance(value, kind):
        return value
    want = "map[string]interface {}" if kind is dict else "[]interface {}"
    raise _SetError(f"unable to parse key: interface conversion: interface {{}} is {_go_type(value)}, not {want}")


def _go_type(value: Any) -> str:
    if value is None:
        return "nil"
    for python_type, go_type in ((bool, "bool"), (int, "int64"), (float, "float64"), (str, "string")):
        if isinstance(value, python_type):
            return go_type
    return "[]interface {}" if isinstance(value, list) else "map[string]interface {}"


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # close to Go's %q


def _quote_runes(text: str) -> str:
    return "[" + " ".join(f"'{char}'" for char in text) + "]"  # Go's %q of a []rune


# --- output: what `helm template` prints ---------------------------------------------------------------

# releaseutil.InstallOrder; unknown kinds go last, sorted by kind.
_INSTALL_ORDER = {
    kind: rank
    for rank, kind in enumerate(
        (
            "PriorityClass",
            "Namespace",
            "NetworkPolicy",
            "ResourceQuota",
            "LimitRange",
            "PodSecurityPolicy",
            "PodDisruptionBudget",
            "ServiceAccount",
            "Secret",
            "SecretList",
            "ConfigMap",
            "StorageClass",
            "PersistentVolume",
            "PersistentVolumeClaim",
            "CustomResourceDefinition",
            "ClusterRole",
            "ClusterRoleList",
            "ClusterRoleBinding",
            "ClusterRoleBindingList",
            "Role",
            "RoleList",
            "RoleBinding",
            "RoleBindingList",
            "Service",
            "DaemonSet",
            "Pod",
            "ReplicationController",
            "ReplicaSet",
            "Deployment",
            "HorizontalPodAutoscaler",
            "StatefulSet",
            "Job",
            "CronJob",
            "IngressClass",
            "Ingress",
            "APIService",
            "MutatingWebhookConfiguration",
            "ValidatingWebhookConfiguration",
        )
    )
}
_HOOK_EVENTS = frozenset(
    {
        "pre-install",
        "post-install",
        "pre-delete",
        "post-delete",
        "pre-upgrade",
        "post-upgrade",
        "pre-rollback",
        "post-rollback",
        "test",
        "test-success",  # Helm 2 tests
    }
)
_SEPARATOR_SPACE = frozenset("\t\n\f\r ")  # Go's \s


def split_documents(text: str) -> list[str]:
    r"""The documents of a template's output as Helm splits them (releaseutil.SplitManifests), the text split on
    `(?:^|\s*\n)---\s*` (Go's \s is [\t\n\f\r ]): a `---` at the start of the text or after a line break, with the
    blanks before that line break (back to the end of the previous separator) and all the blanks after it. Found by
    looking for each `\n---`, not with Python's regex, which tries `[\t\n\f\r ]*\n` from every blank of every
    indentation (quadratic in its width: 9 ms of each render of loom's 500 KB output)."""
    out: list[str] = []
    start = 0  # where the next document starts: the end of the last separator
    if text.startswith("---"):
        out.append("")
        start = _blanks_end(text, 3)
    while (line_break := text.find("\n---", start)) >= 0:
        begin = line_break
        while begin > start and text[begin - 1] in _SEPARATOR_SPACE:
            begin -= 1
        out.append(text[start:begin])
        start = _blanks_end(text, line_break + 4)
    out.append(text[start:])
    return out


def _blanks_end(text: str, at: int) -> int:
    while at < len(text) and text[at] in _SEPARATOR_SPACE:
        at += 1
    return at


_YAML_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
# Only kind and annotations are read: untyped, any tag accepted, so nothing Helm accepts is refused.
_HEAD_LOADER = getattr(yaml, "CBaseLoader", yaml.BaseLoader)


def _order_like_helm_template(files: dict[str, str]) -> list[RenderedManifest]:
    """Documents in `helm template` order (releaseutil.SortManifests): templates by path, documents
    in file order, then a stable sort by kind; hooks the same way, after everything else."""
    manifests: list[tuple[str, RenderedManifest]] = []
    hooks: list[tuple[str, RenderedManifest]] = []
    for path in sorted(files):
        if path.endswith("NOTES.txt") or path.rpartition("/")[2].startswith("_"):
            continue
        text = files[path].lstrip()
        # most templates hold one document and no `---` (the separator's search costs 5 ms a render on z2jh)
        for document in split_documents(text) if "---" in text else [text]:
            if not document.strip():
                continue
            kind, annotations = _head(path, document)
            item = (kind, RenderedManifest(path, document.strip() + "\n"))
            hook = annotations.get("helm.sh/hook")
            if hook is None:
                manifests.append(item)
            elif _known_hook(hook):
                hooks.append(item)
    return [manifest for _, manifest in sorted(manifests, key=_kind_rank)] + [
        hook for _, hook in sorted(hooks, key=_kind_rank)
    ]


def _known_hook(events: Any) -> bool:
    """Whether Helm knows every event a helm.sh/hook annotation names; it leaves other hooks out."""
    return isinstance(events, str) and all(event.strip().lower() in _HOOK_EVENTS for event in events.split(","))


def _kind_rank(item: tuple[str, RenderedManifest]) -> tuple[int, int, str]:
    kind = item[0]
    return (0, _INSTALL_ORDER[kind], "") if kind in _INSTALL_ORDER else (1, 0, kind)


_HEADS: dict[str, tuple[str, dict[str, Any]]] = {}  # document text -> kind and annotations (read-only)
_HEADS_MAX = 20000


def _head(path: str, document: str) -> tuple[str, dict[str, Any]]:
    """The kind and annotations of a rendered document; a document that is not YAML fails as in Helm. Only
    composed (libyaml), never constructed: a chart renders thousands of documents per proof, and building each
    one's objects in Python only to read two fields was most of a large chart's render time. Most documents are
    the same in every render of a proof, so each text is composed once."""
    known = _HEADS.get(document)
    if known is None:
        known = remember(_HEADS, document, _compose_head(path, document), _HEADS_MAX)
    return known


def _compose_head(path: str, document: str) -> tuple[str, dict[str, Any]]:
    loader = _HEAD_LOADER(document)
    try:
        head = loader.get_node() if loader.check_node() else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        raise HelmError(f"YAML parse error on {path}: {where}{getattr(exc, 'problem', None) or 'not YAML'}") from None
    finally:
        loader.dispose()
    if head is None or (isinstance(head, yaml.ScalarNode) and head.value in _YAML_NULLS):
        return "", {}
    if not isinstance(head, yaml.MappingNode):
        raise HelmError(f"YAML parse error on {path}: a document must be a mapping")
    kind = _field(head, "kind")
    annotations = _field(_field(head, "metadata"), "annotations")
    return (
        kind.value if isinstance(kind, yaml.ScalarNode) else "",
        {k.value: v.value for k, v in annotations.value if isinstance(v, yaml.ScalarNode)}
        if isinstance(annotations, yaml.MappingNode)
        else {},
    )


def _field(node: Any, key: str) -> Any:
    """The value node of a key in a mapping node (the last one, as a constructed mapping keeps), or None."""
    if not isinstance(node, yaml.MappingNode):
        return None
    return next((v for k, v in reversed(node.value) if isinstance(k, yaml.ScalarNode) and k.value == key), None)
