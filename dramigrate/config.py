"""Settings: defaults, then `.dramigrate.yaml` or `[tool.dramigrate]` in pyproject.toml, then flags."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from dramigrate.findings import InputError
from dramigrate.limits import (
    MAX_FILE_BYTES,
    SETTINGS,
    NotRegular,
    check_structure,
    expands_within,
    nodes_upto,
    read_regular,
    repeated_key,
)
from dramigrate.longints import guard_pyyaml, long_int_at
from dramigrate.mergeorder import guard_pyyaml_merges
from dramigrate.quantity import QuantityError, parse_quantity
from dramigrate.tagfit import guard_pyyaml_tags

# every command and worker imports this module before it reads a file: from here on, PyYAML's loaders refuse an
# integer too long for Python to convert at its line (longints), and merge keys as YAML and Kubernetes merge them
# (mergeorder; ruamel's round-trip constructors, which lint of a clean tree never loads, guard themselves in longints)
guard_pyyaml()
guard_pyyaml_tags()
guard_pyyaml_merges()

CONFIG_NAMES = (".dramigrate.yaml", ".dramigrate.yml")
SHARING_MODES = ("none", "time-slicing", "mps", "mig-single")
ALIGN_NICS = ("off", "preferred", "required")
MAX_EXCLUDES = 256  # a repository's excludes, each matched against every file (real configs hold a few)
# Characters of one exclude, and of all: fnmatch compiles a glob in time quadratic in its length (one of 20,000 `[`
# kept lint 49 s and fix past a minute before any file was read); a path is rarely a tenth of PATH_MAX.
MAX_EXCLUDE_CHARS = 1024
MAX_EXCLUDES_CHARS = 8 * 1024
MAX_CONFIG_VALUES = 10_000  # a config holds tens of settings; more is an alias bomb


@dataclass
class Settings:
    kube_version: str = "1.36"
    assume_dra_enabled: bool = False
    # --strategy extended-resource on 1.34/1.35: the DRAExtendedResource gate is on in every component.
    assume_extended_resource_enabled: bool = False
    rules: tuple[Path, ...] = ()
    exclude: tuple[str, ...] = ()
    classes_file: Path | None = None
    # The cluster's device-plugin sharing per resource: {"nvidia.com/gpu": "time-slicing"}.
    sharing: dict[str, str] = field(default_factory=dict)
    drop_legacy_quota: bool = False
    remove_node_selectors: bool = False
    drop_tolerations: bool = False
    # Write out the toleration the ExtendedResourceToleration admission plugin added for each removed request.
    # The plugin is not in the default admission set (GKE enables it); without it the toleration only widens
    # placement. On by default, the safe side: a pod on a cluster with the plugin keeps landing on tainted nodes.
    extended_resource_toleration: bool = True
    # SR-IOV VFs (review A1): report-only unless the cluster runs the SR-IOV DRA driver in STANDALONE mode with
    # pools named after the device-plugin resources (k8s.cni.cncf.io/resourceName, as Multus matches it against the
    # NAD); then a VF whose network the pod's annotation names is migrated with VfConfig{netAttachDefName}.
    sriov_vf_config: bool = False
    crds: Path | None = None  # --crds: `kubectl get crd -o yaml`, to check that CRDs keep the claim fields
    # Node taints the cluster removes when it moves to DRA (`key` or `key=value`): only their tolerations go.
    removed_taints: tuple[str, ...] = ()
    # GPU/NIC pcieRoot pairing: off (the device plugin's placement), preferred (firstAvailable with an
    # unaligned fallback) or required (a hard matchAttribute constraint).
    align_nics: str = "off"
    named_classes: bool = False  # --classes: recurring selectors become named DeviceClasses
    strategy: str = "claims"  # or extended-resource
    chart_style: str = "idiomatic"  # or engine: how fix rewrites a Helm chart
    opt_in: bool = False  # chart rewrites leave their DRA switch off by default
    fail_on: str = "error"
    disable: tuple[str, ...] = ()  # finding rule ids not reported (--disable; `enable` turns them on again)
    enable: tuple[str, ...] = ()
    config_file: Path | None = None
    max_file_size: int = MAX_FILE_BYTES  # bytes; files larger are refused (checked with stat, before reading)

    def merge(self, values: dict[str, Any], base: Path) -> None:
        names = {f.name for f in fields(self)}
        for raw_key, value in values.items():
            if not isinstance(raw_key, str):  # `~:`, `1:`, `true:` or a date as a YAML key
                raise InputError(f"a setting's name must be text, not {_kind(raw_key)}", str(self.config_file or ""))
            key = raw_key.replace("-", "_")
            if key not in names or key == "config_file":
                import difflib

                known = [f.name.replace("_", "-") for f in fields(self) if f.name != "config_file"]
                near = difflib.get_close_matches(str(raw_key), known, 1)
                hint = f" (did you mean `{near[0]}`?)" if near else f"; the settings are {', '.join(known)}"
                raise InputError(f"unknown setting `{raw_key}`{hint}", str(self.config_file or ""))
            if key == "rules":
                value = tuple((base / v).resolve() for v in _strings(value, raw_key, str(self.config_file or "")))
            elif key in ("exclude", "removed_taints", "disable", "enable"):
                value = _strings(value, raw_key, str(self.config_file or ""))
                if key in ("disable", "enable"):
                    _known_rules(value, raw_key, str(self.config_file or ""))
                if key == "exclude":
                    _bounded_excludes(value, str(self.config_file or ""))
            elif key == "align_nics":
                value = "off" if value is False else value  # YAML 1.1 reads a bare `off` as false
                if value not in ALIGN_NICS:
                    raise InputError(
                        f"`align-nics` must be one of {', '.join(ALIGN_NICS)}, not {value!r}", str(self.config_file)
                    )
            elif key in ("classes_file", "crds") and value is not None:
                if not isinstance(value, (str, int, float)) or isinstance(value, bool):
                    raise InputError(f"`{raw_key}` must be a file path, not {_kind(value)}", str(self.config_file))
                value = (base / str(value)).resolve()
            elif isinstance(getattr(Settings, key, None), bool) and not isinstance(value, bool):
                # a quoted "false" is a string, and any string is true: `assume-dra-enabled: "false"` turned it on
                raise InputError(f"`{raw_key}` must be true or false, not {_kind(value)}", str(self.config_file))
            elif key == "max_file_size":
                value = parse_size(value, str(self.config_file or ""))
            elif key == "kube_version":
                value = _kube_version(value, str(self.config_file or ""))
            elif key == "strategy" and value not in ("claims", "extended-resource"):
                raise InputError(
                    f"`strategy` must be claims or extended-resource, not {value!r}", str(self.config_file)
                )
            elif key == "chart_style" and value not in ("idiomatic", "engine"):
                raise InputError(f"`chart-style` must be idiomatic or engine, not {value!r}", str(self.config_file))
            elif key == "fail_on" and value not in ("error", "warning", "info"):
                raise InputError(f"`fail-on` must be error, warning or info, not {value!r}", str(self.config_file))
            elif key == "sharing":
                if not isinstance(value, dict):
                    raise InputError("`sharing` must map resource names to a mode", str(self.config_file))
                for res, mode in value.items():
                    if mode not in SHARING_MODES:
                        raise InputError(
                            f"sharing mode for {res} must be one of {', '.join(SHARING_MODES)}, not {mode!r}",
                            str(self.config_file),
                        )
                value = {str(k): str(v) for k, v in value.items()}
            setattr(self, key, value)


def _bounded_excludes(globs: tuple[str, ...], origin: str) -> None:
    """Refuse excludes too many or too long to match against every file of a run in reasonable time."""
    if len(globs) > MAX_EXCLUDES:  # each is matched against every file of the run
        raise InputError(
            f"`exclude` holds {len(globs):,} patterns, more than {MAX_EXCLUDES} (9,000 of them ran lint of 2,000 "
            "files for 48 s); merge them into fewer globs",
            origin,
        )
    longest = max(globs, key=len, default="")
    if len(longest) > MAX_EXCLUDE_CHARS or sum(map(len, globs)) > MAX_EXCLUDES_CHARS:
        raise InputError(
            f"`exclude` holds a pattern of {len(longest):,} characters ({sum(map(len, globs)):,} in all), more than "
            f"{MAX_EXCLUDE_CHARS:,} ({MAX_EXCLUDES_CHARS:,} in all): a glob takes time to compile that grows with the "
            "square of its length; write shorter globs",
            origin,
        )


def _strings(value: Any, key: str, where: str) -> tuple[str, ...]:
    """A setting that is a list of strings (or one string); numbers are taken as written."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list):
        raise InputError(f"`{key}` must be a list of strings, not {_kind(value)}", where)
    odd = next((v for v in items if not isinstance(v, (str, int, float))), None)
    if odd is not None or None in items:
        raise InputError(f"`{key}` must be a list of strings, and one of its items is {_kind(odd)}", where)
    return tuple(str(v) for v in items)


def _known_rules(ids: tuple[str, ...], key: str, where: str) -> None:
    """Refuse a config's `disable`/`enable` naming a rule that does not exist, at its line, as a config that does not
    load (every report still comes out). Was: checked after loading, with neither the file nor a report: `--format
    json` and `github` printed nothing at all, and the message named no config file."""
    from dramigrate.catalogue import catalogue

    unknown = sorted({p.strip() for v in ids for p in v.split(",") if p.strip()} - set(catalogue()))
    if unknown:
        raise InputError(f"`{key}`: no finding rule {', '.join(unknown)}; `dramigrate rules list` lists them", where)


def _kube_version(value: Any, where: str) -> str:
    """A config's `kube-version`, checked where it is written (as _known_rules): an unknown or too old version was
    reported as a `--kube-version` flag nobody gave, with no report in the format asked for."""
    from dramigrate.versions import Target

    text = str(value)
    try:
        Target.parse(text)
    except InputError as exc:
        raise InputError(exc.message.replace("--kube-version", "`kube-version`", 1), where) from None
    return text


class ConfigError(InputError):
    """The config file does not load: nothing is checked (a run never goes on without the repository's config)."""


def _kind(value: Any) -> str:
    """What a YAML value is, in words (for a message that must not quote a value of any size)."""
    if value is None:
        return "empty"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, (int, float)):
        return "a number"
    return {dict: "a mapping", list: "a list", str: "a string"}.get(type(value), f"a {type(value).__name__}")


def find_config(start: Path) -> Path | None:
    """The nearest `.dramigrate.yaml`, or pyproject.toml with [tool.dramigrate], from start upward to the root of
    the repository start is in (the folder with .git): a config above it is not the repository's (a shared runner's
    work folder, /tmp), and one there excluded every file of the checkout. A config name that is there but is no
    file (a folder, a FIFO, a dangling link) is the config all the same, which load_settings refuses: skipped, it
    left the run without the repository's settings, or with a parent folder's, and nothing said so."""
    for folder in (start, *start.parents):
        for name in CONFIG_NAMES:
            if os.path.lexists(folder / name):
                return folder / name
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file() and _declares_settings(pyproject):
            return pyproject
        if (folder / ".git").exists():
            break
    return None


def _declares_settings(pyproject: Path) -> bool:
    """Whether a pyproject.toml holds [tool.dramigrate]. One larger than a config may be counts as holding it, so
    that load_settings refuses it by its size, before reading it: it was read whole to look, and a sparse 8 GiB
    pyproject.toml (8 MB in a git pack) in a pull request took the gate's memory."""
    try:
        if pyproject.stat().st_size > SETTINGS.max_bytes:
            return True
        return b"[tool.dramigrate]" in read_regular(str(pyproject), SETTINGS)
    except (OSError, InputError):  # gone, or no longer a regular file, since is_file(): not a config
        return False


def load_settings(config: Path | None, cwd: Path, trusted: bool = True) -> Settings:
    """Settings from the config given, else the one found upward from cwd. An untrusted config that is a link to a
    file outside its repository is not read (its errors would quote a file from elsewhere)."""
    settings = Settings()
    path = config or find_config(cwd)
    if path is None:
        return settings
    settings.config_file = path
    if config is None and not trusted and path.is_symlink():
        try:
            path.resolve().relative_to(repository_of(path))
        except ValueError:
            raise InputError(
                "a link to a file outside the repository; not read (pass --trust-config to read it; never in CI "
                "or with --untrusted)",
                str(path),
            ) from None
    try:  # a size and a nesting checked before parsing: the parsers take minutes or recurse out of the stack
        text = read_regular(str(path), SETTINGS).decode("utf-8")
    except NotRegular as exc:
        raise InputError(f"config is {exc.what}, not a regular file; not read", str(path)) from exc
    except FileNotFoundError as exc:
        if not path.is_symlink():
            raise InputError(f"cannot read config: {exc.strerror}", str(path)) from exc
        raise InputError("config is a link to a file that does not exist; not read", str(path)) from exc
    except OSError as exc:
        raise InputError(f"cannot read config: {exc.strerror}", str(path)) from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"config is not UTF-8 text (byte {exc.start + 1})", str(path)) from exc
    check_structure(str(path), text)
    if path.name == "pyproject.toml":
        try:
            import tomllib  # type: ignore[import-not-found]
        except ModuleNotFoundError:  # Python 3.10
            import tomli as tomllib  # type: ignore[no-redef]
        try:
            values = tomllib.loads(text).get("tool", {}).get("dramigrate", {})
        except tomllib.TOMLDecodeError as exc:
            raise InputError(f"invalid TOML: {exc}", str(path)) from exc
        except ValueError as exc:  # an integer too long to convert: tomllib's int() says Python's own hint
            long = long_int_at(text)
            if long is None:
                raise
            raise InputError(f"invalid TOML: {long.message}", str(path), long.line, long.column) from exc
    else:
        if len(text) > MAX_CONFIG_VALUES and nodes_upto(text, MAX_CONFIG_VALUES) > MAX_CONFIG_VALUES:
            # counted before any value is built: a 1 MB list took 29 s of PyYAML's Python parser to be refused
            raise InputError(f"config holds more than {MAX_CONFIG_VALUES:,} values; not read", str(path), 1)
        try:
            values = yaml.safe_load(text) or {}
        except yaml.YAMLError as exc:  # the problem and its place only: PyYAML's own message quotes the line
            from dramigrate.documents import yaml_problem

            what, line, column = yaml_problem(text, exc)
            raise InputError(what, str(path), line, column) from exc
        if twice := _duplicate_key(text):
            key, line, column = twice
            raise InputError(
                f"`{key}` is set twice (the last one wins, and a reviewer reads the first); keep one",
                str(path),
                line,
                column,
            )
    if not isinstance(values, dict):
        raise InputError(f"config must be a mapping of settings, not {_kind(values)}", str(path), 1)
    if not expands_within(values, MAX_CONFIG_VALUES):  # every message that quotes a value would expand it
        raise InputError(f"config expands to more than {MAX_CONFIG_VALUES:,} values (YAML alias bomb?)", str(path), 1)
    for key, value in values.items():  # one setting at a time: a bad one is named at its own line
        try:
            settings.merge({key: value}, path.parent)
        except InputError as exc:
            if not exc.line:
                exc.file = exc.file or str(path)
                exc.line, exc.column = _key_position(text, key, path.name == "pyproject.toml")
            raise
    return settings


def _key_position(text: str, key: Any, toml: bool) -> tuple[int, int]:
    """(line, column), 1-based, of a top-level setting's key (as loaded: a key `~` is None) in the config's text;
    (1, 0) when it is not found."""
    if toml:
        import re

        section = re.search(r"^\s*\[tool\.dramigrate\]", text, re.MULTILINE)
        pattern = re.compile(rf"^[ \t]*[\"']?{re.escape(key)}[\"']?[ \t]*=", re.MULTILINE)
        m = pattern.search(text, section.end() if section else 0)
        return (text.count("\n", 0, m.start()) + 1, m.group(0).index(m.group(0).lstrip()[0]) + 1) if m else (1, 0)
    try:
        node = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return 1, 0
    if isinstance(node, yaml.MappingNode):
        for k, _ in node.value:
            if k.value == key or (not isinstance(key, str) and _loaded_key(k) == key):
                return k.start_mark.line + 1, k.start_mark.column + 1
    return 1, 0


def _loaded_key(node: yaml.Node) -> Any:
    """A key node as safe_load reads it (`~` is None, `1` is 1); a merge key `<<`, which is no value, as itself."""
    try:
        return yaml.SafeLoader("").construct_object(node)
    except yaml.YAMLError:
        return node.value


def _duplicate_key(text: str) -> tuple[str, int, int] | None:
    """The first key set a second time in one mapping of the config, with that second place (1-based). PyYAML keeps
    the last silently: `exclude: [vendor/]` on top and `exclude: ['**']` forty lines down turned the gate green,
    and the review of the pull request saw the first."""
    try:
        node = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return None
    twice = repeated_key(node) if node is not None else None
    return None if twice is None else (twice.value, twice.start_mark.line + 1, twice.start_mark.column + 1)


def parse_size(value: Any, where: str = "") -> int:
    """A size in bytes, written as Kubernetes writes quantities: 33554432, 32Mi, 10M."""
    try:
        size = parse_quantity(str(value).strip())
    except QuantityError:
        size = None
    if size is None or size <= 0 or size != size.to_integral_value():
        raise InputError(f"`max-file-size` must be a positive size such as 32Mi or 10M, not {value!r}", where)
    return int(size)


CI_VARIABLES = ("CI", "GITHUB_ACTIONS", "GITLAB_CI", "BUILDKITE", "JENKINS_URL", "TF_BUILD")


def in_ci() -> bool:
    """A CI run (the variables CI services set): a repository's config is then never trusted."""
    return any(os.environ.get(v, "").lower() not in ("", "0", "false") for v in CI_VARIABLES)


def repository_of(config_file: Path) -> Path:
    """The repository that holds a config file (the file itself, not what a link to it names): the nearest folder
    above it with .git, else its own folder."""
    folder = config_file.absolute().parent.resolve()
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return folder


def confine_to_repository(settings: Settings, size_given: bool = False) -> list[tuple[str, str]]:
    """An untrusted config (CI, --untrusted, or no --trust-config) may name files only inside its repository and
    may not raise max-file-size: a rules pack, classes file or CRD file from elsewhere (another checkout, /etc, a
    home folder) is dropped from the settings, a larger size falls back to the default, and each one becomes bad
    input of the config file, (file, message): the run goes on without it (every other file still checked) and
    ends with exit 2. size_given: --max-file-size was passed, which decides the size whatever the config says."""
    if settings.config_file is None:
        return []
    repo = repository_of(settings.config_file)
    refused: list[tuple[str, str]] = []

    def inside(key: str, path: str | Path) -> bool:
        try:
            within = Path(path).resolve().relative_to(repo)
        except ValueError:
            where = f"outside the repository {repo}"
        else:
            if within.parts[:1] != (".git",):
                return True
            where = "in the repository's .git folder (git's own files, which fix must never write)"
        refused.append(
            (
                str(settings.config_file),
                f"`{key}` names {path}, {where}: not used; a repository's config may only name files inside it "
                "(pass --trust-config to allow it; never trusted in CI or with --untrusted)",
            )
        )
        return False

    # a pull request may not lift the bound on what is read
    if settings.max_file_size > MAX_FILE_BYTES and not size_given:
        refused.append(
            (
                str(settings.config_file),
                f"`max-file-size` of {settings.max_file_size:,} bytes is above the {MAX_FILE_BYTES >> 20} MiB default: "
                "not used; a repository's config may only lower it (pass --max-file-size or --trust-config to raise "
                "it; never trusted in CI or with --untrusted)",
            )
        )
        settings.max_file_size = MAX_FILE_BYTES
    settings.rules = tuple(p for p in settings.rules if inside("rules", p))
    if settings.classes_file is not None and not inside("classes-file", settings.classes_file):
        settings.classes_file = None
    if settings.crds is not None and not inside("crds", settings.crds):
        settings.crds = None
    return refused


def config_overview(settings: Settings, trusted: bool, overrides: list[str] | None = None) -> str:
    """What the config file changes about what is reported, for the reviewer of a gate that went green; overrides:
    what its rule files leave unmigrated (rules.report_only_overrides)."""
    if settings.config_file is None:
        return ""
    parts = []
    if settings.exclude:
        parts.append("excludes " + ", ".join(settings.exclude))
    if settings.disable:
        parts.append("disables rules " + ", ".join(settings.disable))
    if settings.sharing:
        parts.append(
            "report-only (shared) resources " + ", ".join(f"{k}: {v}" for k, v in sorted(settings.sharing.items()))
        )
    if settings.strategy != Settings.strategy:  # device requests stay in the pods: info findings, a green gate
        parts.append(f"strategy {settings.strategy} (device-plugin requests stay; not reported as errors)")
    parts.extend(overrides or ())
    if not parts:
        return ""
    return f"config {settings.config_file} ({'trusted' if trusted else 'untrusted'}): " + "; ".join(parts)
