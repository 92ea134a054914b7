"""Session 35's red team on the inputs other than manifests and charts (issue 11): device inventories and classes files
for `fit` and `fix`, rule packs given with `--rules`, suppression comments and baselines. Each break as its smallest
input, in process where the process boundary is not what is tested."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from dramigrate.inventory import load_inventory

SLICES = """\
apiVersion: v1
kind: List
items:
- apiVersion: resource.k8s.io/v1
  kind: ResourceSlice
  metadata: {name: s}
  spec:
    driver: gpu.nvidia.com
    nodeName: node-a
    pool: {name: node-a}
    devices:
    - name: gpu-0
      attributes:
        type: {string: gpu}
    - name: gpu-1
      attributes:
        type: {bool: yes-please}
"""


def test_an_inventory_message_gives_the_line_of_the_value_at_fault(tmp_path: Path) -> None:
    """A bad attribute in a fleet's inventory (megabytes of ResourceSlices) was named by document, item and device
    (`slices.yaml: document 1, items[0] (ResourceSlice s): device gpu-1: ...`) but not by line: now file:line, the
    line of the attribute, as every other bad input."""
    path = tmp_path / "slices.yaml"
    path.write_text(SLICES)
    line = SLICES.splitlines().index("        type: {bool: yes-please}") + 1

    with pytest.raises(ValueError) as caught:
        load_inventory(path)

    assert str(caught.value).startswith(f"{path}:{line}: "), caught.value
    assert "device gpu-1" in str(caught.value)


def cli(args: list[str], cwd: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    """dramigrate ARGS in process, in cwd: (exit code, standard output and error)."""
    from typer.testing import CliRunner

    from dramigrate.cli import app

    monkeypatch.chdir(cwd)
    monkeypatch.setenv("NO_COLOR", "1")
    out = CliRunner().invoke(app, args)
    return out.exit_code, out.output


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32-be"])
def test_an_inventory_in_utf16_or_utf32_with_a_bom_is_read(tmp_path: Path, encoding: str) -> None:
    """PowerShell's `kubectl get resourceslices -o yaml > slices.yaml` writes UTF-16 with a byte-order mark: fit
    refused it as not UTF-8 text, where a manifest in that encoding is read. It is read as the same devices."""
    good = SLICES.replace("{bool: yes-please}", "{bool: true}")
    (tmp_path / "utf8.yaml").write_text(good)
    text = good if encoding == "utf-16" else "\ufeff" + good  # Python's utf-16 codec writes the BOM itself
    (tmp_path / "wide.yaml").write_bytes(text.encode(encoding))

    assert load_inventory(tmp_path / "wide.yaml") == load_inventory(tmp_path / "utf8.yaml")


NPU_PACK = """\
schemaVersion: 1
kind: RulePack
name: acme
description: d
resources:
  - {match: acme.example/npu, deviceClass: npu.acme.example, request: npu}
deviceClasses:
  - {name: npu.acme.example, driver: npu.acme.example}
"""

NPU_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  containers:
  - name: app
    image: app:1
    resources:
      limits:
        acme.example/npu: 1
"""

OTHER_CLASS = "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: other.acme.example\nspec: {}\n"


def test_a_classes_file_in_utf16_with_a_bom_is_appended_to_in_utf16(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A classes file PowerShell wrote (UTF-16 with a BOM) was bad input to fix (`not UTF-8 text`), and, walked by
    `fix .`, refused as holding other things than DeviceClasses. fix appends the class and writes it back in UTF-16."""
    (tmp_path / "acme.yaml").write_text(NPU_PACK)
    (tmp_path / "pod.yaml").write_text(NPU_POD)
    (tmp_path / "classes.yaml").write_bytes(OTHER_CLASS.encode("utf-16"))

    code, out = cli(["fix", "--rules", "acme.yaml", "--classes-file", "classes.yaml", "."], tmp_path, monkeypatch)

    assert code == 0, out
    written = (tmp_path / "classes.yaml").read_bytes()
    assert written.startswith(b"\xff\xfe"), written[:8]
    assert written.decode("utf-16").startswith(OTHER_CLASS)
    assert "name: npu.acme.example" in written.decode("utf-16")
    assert "resourceClaimTemplateName" in (tmp_path / "pod.yaml").read_text()


CLASS_LIST = """\
apiVersion: {api}
items:
- apiVersion: resource.k8s.io/v1
  kind: DeviceClass
  metadata:
    name: npu.acme.example
  spec:
    selectors:
    - cel:
        expression: device.driver == 'npu.acme.example' && device.attributes['npu.acme.example'].model == 'x2'
kind: {kind}
metadata:
  resourceVersion: ""
"""


@pytest.mark.parametrize(("api", "kind"), [("v1", "List"), ("resource.k8s.io/v1", "DeviceClassList")])
def test_a_classes_file_kubectl_wrote_as_a_list_is_read_as_its_classes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, api: str, kind: str
) -> None:
    """`kubectl get deviceclasses -o yaml > classes.yaml` writes a `kind: List` (a DeviceClassList from the API):
    fix did not see the class among its items and appended a second npu.acme.example, with the pack's selectors,
    which `kubectl apply -f` then put in place of the admin's own. The file's classes are read from the list, and
    `fix .` walking it takes it as a classes file."""
    (tmp_path / "acme.yaml").write_text(NPU_PACK)
    (tmp_path / "pod.yaml").write_text(NPU_POD)
    text = CLASS_LIST.format(api=api, kind=kind)
    (tmp_path / "classes.yaml").write_text(text)

    code, out = cli(["fix", "--rules", "acme.yaml", "--classes-file", "classes.yaml", "."], tmp_path, monkeypatch)

    assert code == 0, out
    assert (tmp_path / "classes.yaml").read_text() == text
    assert "resourceClaimTemplateName" in (tmp_path / "pod.yaml").read_text()


ONE_SLICE = """\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: s}
spec:
  driver: gpu.nvidia.com
  nodeName: node-a
  pool: {name: node-a}
  devices:
  - name: gpu-0
"""

GPU_POD = NPU_POD.replace("acme.example/npu: 1", "nvidia.com/gpu: {count}")


def test_fit_and_lint_agree_on_a_request_no_claim_can_hold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A container asking for 33 GPUs: one claim holds at most 32 devices, so fix writes nothing (rewrite-invalid).
    lint called the request fixable and exited 1, while fit said "no claim to check" and exited 0, as if the paths
    held no device request. fit now names the request it cannot check and why, and exits 1; lint says fix leaves
    it, and why."""
    (tmp_path / "pod.yaml").write_text(GPU_POD.format(count=33))
    (tmp_path / "slices.yaml").write_text(ONE_SLICE)

    fit, fit_out = cli(["fit", "--inventory", "slices.yaml", "pod.yaml"], tmp_path, monkeypatch)
    lint, lint_out = cli(["lint", "pod.yaml", "--format", "json"], tmp_path, monkeypatch)

    assert (fit, lint) == (1, 1), (fit_out, lint_out)
    assert "the paths have no device request" not in fit_out
    assert "pod.yaml:" in fit_out and "at most 32" in fit_out, fit_out
    [request] = [f for f in json.loads(lint_out)["findings"] if f["rule"] == "legacy-device-request"]
    assert not request["fixable"] and "at most 32" in request["message"], request


class CountedRegex:
    """A pack's regex that counts its runs."""

    def __init__(self, pattern: str, runs: list[str]) -> None:
        self.pattern = pattern
        self._compiled = re.compile(pattern)
        self.groupindex = dict(self._compiled.groupindex)
        self._runs = runs

    def fullmatch(self, text: str) -> re.Match[str] | None:
        self._runs.append(self.pattern)
        return self._compiled.fullmatch(text)


def test_a_pack_of_thousands_of_regexes_runs_only_those_a_name_may_match() -> None:
    """A user's pack of 2,800 regexes (`acme\\.example/r1-[a-z]+`, ...) over 4,000 resource names took lint 55 s:
    each name ran every regex, eleven million matches. A name now runs only the regexes whose literal start it has
    (here one, or none), and gets the same rule as before."""
    from dramigrate.rules import ResourceRule, RuleSet

    runs: list[str] = []
    rules = RuleSet(
        resources=[
            ResourceRule("big", regex=CountedRegex(rf"acme\.example/r{i}-[a-z]+", runs), device_class=f"r{i}.acme")
            for i in range(1400)
        ]
    )
    names = {f"acme.example/r{i}-x": f"r{i}.acme" for i in range(0, 1400, 7)}
    names |= {f"acme.example/q{i}-x": None for i in range(200)}

    found = {n: m.rule.device_class if (m := rules.lookup(n)) else None for n in names}

    assert found == names
    assert len(runs) <= len(names), f"{len(runs):,} regex runs for {len(names)} names"


# Regexes of every shape the index reads differently: a literal start, literal text inside only, an alternation at the
# top, case-insensitive, a `match` after a regex that takes the same name.
SHAPES = [
    ("", r"(foo|bar)\.example/npu"),
    ("", r"foo\.example/vpu|bar\.example/vpu"),
    ("", r"(?i)Acme\.example/TPU"),
    ("", r"ba?r\.example/(?P<kind>[a-z]+)-dev"),
    ("", r"acme\.example/r1-[a-z]+"),
    ("acme.example/r1-x", ""),
    ("", r"\w+\.example/gpu"),
    ("nvidia.com/gpu", ""),
]


def test_the_rule_a_name_gets_is_the_first_in_pack_order_that_matches_as_before() -> None:
    """The index of rules by literal text gives every name the rule a try of each rule in order gave: over the
    shipped packs with a user's pack of every shape in front, on the shipped names and near misses."""
    from dramigrate.rules import ResourceRule, load_rules

    rules = load_rules(())
    user = [
        ResourceRule("user", match=m, regex=re.compile(r) if r else None, device_class=f"c{i}")
        for i, (m, r) in enumerate(SHAPES)
    ]
    rules.resources = user + rules.resources
    names = {r.match for r in rules.resources if r.match} | {
        "foo.example/npu", "bar.example/npu", "baz.example/npu", "foo.example/vpu", "bar.example/vpu",
        "acme.example/tpu", "ACME.EXAMPLE/TPU", "br.example/x-dev", "bar.example/x-dev", "bxr.example/x-dev",
        "acme.example/r1-x", "acme.example/r1-", "x.example/gpu", "nvidia.com/mig-1g.10gb", "nvidia.com/mig-7g.80gb",
        "nvidia.com/gpu.shared", "amd.com/gpu", "example.com/gpu", "",
    }  # fmt: skip

    def first(name: str) -> tuple[str, str] | None:
        for rule in rules.resources:
            if rule.match and rule.match == name or not rule.match and rule.regex and rule.regex.fullmatch(name):
                return rule.pack, rule.device_class
        return None

    got = {n: (m.rule.pack, m.rule.device_class) if (m := rules.lookup(n)) else None for n in names}
    assert got == {n: first(n) for n in names}
    assert len({v for v in got.values() if v and v[0] == "user"}) == len(SHAPES) - 1  # r1-x goes to the regex


def test_a_regex_past_its_slow_match_budget_fails_only_the_names_it_must_be_tried_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once a user regex had spent its 2 s of slow matches, every later file with any device request failed as bad
    input naming it, a pod asking for nvidia.com/gpu too: the regex was consulted first on every name. It is tried
    now only on names it may match (its literal start), and the file that fails is one asking for such a name,
    which the message gives."""
    from dramigrate import limits
    from dramigrate.findings import InputError
    from dramigrate.rules import load_rules

    (tmp_path / "pack.yaml").write_text(
        "schemaVersion: 1\nkind: RulePack\nname: acme\ndescription: d\nresources:\n"
        "  - {regex: 'acme\\.example/(a|aa)+x', deviceClass: npu.acme.example, request: npu}\n"
    )
    rules = load_rules((tmp_path / "pack.yaml",))
    monkeypatch.setattr(limits, "REGEX_BUDGET", -1.0)  # spent: what 2 s of slow matches leave

    match = rules.lookup("nvidia.com/gpu")
    with pytest.raises(InputError) as caught:
        rules.lookup("acme.example/aaa")

    assert match is not None and match.rule.device_class == "gpu.nvidia.com"
    assert repr("acme\\.example/(a|aa)+x") in caught.value.message, caught.value.message
    assert "'acme.example/aaa'" in caught.value.message


class LoadedClock:
    """The clocks of a loaded machine (CI runners share cores): each reading of the wall clock 0.5 s after the last,
    the process waiting for its turn; the CPU clocks as they are."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        self.now += 0.5
        return self.now

    def __getattr__(self, name: str) -> object:
        import time

        return getattr(time, name)


def test_a_fast_regex_is_never_called_catastrophic_on_a_loaded_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """A regex's slow matches were timed by the wall clock: on a loaded machine (load 10 on two cores here) the
    pack of 2,800 plain regexes `acme\\.example/rN-[a-z]+` had seven files of 100 failed as bad input, the regex
    `took more than 2 s in all ... (catastrophic backtracking)`: its microsecond matches counted the time the
    process waited for a core. They are timed by the CPU time of the thread that runs them."""
    from dramigrate import limits
    from dramigrate.limits import BoundedRegex

    regex = BoundedRegex(r"acme\.example/r0-[a-z]+", "pack.yaml")
    monkeypatch.setattr(limits, "time", LoadedClock())

    assert all(regex.fullmatch(f"acme.example/r0-{'x' * n}") for n in range(1, 20))


RAY = """\
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: r
spec:
  headGroupSpec:
    rayStartParams: {{}}
    template:
      spec:
        containers:
        - name: ray-head
          image: rayproject/ray:2.9.0
  workerGroupSpecs:
  - groupName: gpu-workers
    rayStartParams: {params}
    template:
      spec:
        containers:
        - name: ray-worker
          image: rayproject/ray:2.9.0-gpu
          resources:
            limits:
              nvidia.com/gpu: 1
"""


def run(text: str, fix: bool) -> Any:
    from dramigrate.config import Settings
    from dramigrate.migrate import Job, run_file
    from dramigrate.rules import load_rules
    from dramigrate.versions import Target

    settings = Settings()
    return run_file(Job("ray.yaml", text.encode(), fix), load_rules(settings.rules), settings, Target.parse("1.36"))


@pytest.mark.parametrize("params", ['"num-cpus=4"', "[num-cpus]", "4"])
def test_a_ray_group_whose_ray_start_params_is_no_map_is_left_not_half_migrated(params: str) -> None:
    """`rayStartParams: "num-cpus=4"` on a GPU worker group: diff said `rayStartParams num-gpus is set to "1"`
    (would fix) but set nothing there, as it is no map; the GPU went into a claim, and KubeRay, which derives
    `ray start --num-gpus` from the container's limits, would have started Ray with no GPU. Such a group is left as
    it is, and lint and fix say why."""
    text = RAY.format(params=params)

    lint, fix = run(text, fix=False), run(text, fix=True)

    assert fix.rewritten is None
    for result in (lint, fix):
        [request] = [f for f in result.findings if f.rule == "legacy-device-request"]
        assert not request.fixable and "rayStartParams" in request.message, request
        assert not [f for f in result.findings if f.fixed or f.would_fix]


PATCH = """\
apiVersion: v1
kind: Pod
metadata:
  name: pod
spec:
  containers:
  - name: app
    resources:
      limits:
        nvidia.com/gpu: 4
"""


@pytest.mark.parametrize(
    "comment",
    [
        "nvidia.com/gpu: 4  # dramigrate: ignore",
        "# dramigrate: ignore=kustomize-device-patch\n        nvidia.com/gpu: 4",
    ],
    ids=["same-line", "line-above"],
)
def test_a_line_ignore_comment_silences_a_kustomize_device_patch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, comment: str
) -> None:
    """`# dramigrate: ignore` on the line of an overlay patch's device count (or the line above, naming the rule)
    did not silence `kustomize-device-patch`, where docs/getting-started.md says any finding is suppressed so
    (DESIGN.md: an inline `# dramigrate: ignore` comment); only `disable` blocks did. Now it does, and fix leaves
    the graph as it is, as for a block."""
    from conftest import base_and_overlay

    # a folder of its own: kustomize/run.py keeps the resolved path of each relative name for the process's life
    tree = "above" if comment.startswith("#") else "same"
    overlay = base_and_overlay(tmp_path / tree, "resources:\n- ../base\npatches:\n- path: gpus.yaml\n")
    (overlay / "gpus.yaml").write_text(PATCH.replace("nvidia.com/gpu: 4", comment))
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}

    code, out = cli(["lint", tree, "--format", "json"], tmp_path, monkeypatch)
    rules = [(f["rule"], f["file"]) for f in json.loads(out)["findings"]]
    fixed, log = cli(["fix", tree], tmp_path, monkeypatch)

    assert code == 1, out
    assert rules == [("legacy-device-request", f"{tree}/base/pod.yaml")], rules
    assert "suppressed" in log and {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before, log


def test_a_rules_file_that_sets_a_key_twice_is_refused_at_the_second(tmp_path: Path) -> None:
    """A pack with `resources:` twice: PyYAML keeps the last silently, so the reviewer of a pull request reads the
    first list (an NPU rule) while the run takes the second (nvidia.com/gpu report-only, lint green). The config
    file already refuses a key set twice for that reason; a rules file the config names did not."""
    from dramigrate.findings import InputError
    from dramigrate.rules import load_rules

    text = NPU_PACK + "resources:\n  - {match: nvidia.com/gpu, reportOnly: shared, advice: fine}\n"
    (tmp_path / "pack.yaml").write_text(text)

    with pytest.raises(InputError) as caught:
        load_rules((tmp_path / "pack.yaml",))

    assert caught.value.line == text.splitlines().index("resources:", 5) + 1, caught.value
    assert "resources" in caught.value.message and "twice" in caught.value.message


@pytest.mark.parametrize("twice", ["findings", "file"])
def test_a_baseline_that_sets_a_key_twice_is_refused(tmp_path: Path, twice: str) -> None:
    """A baseline (a file of the repository, which a pull request may change) with a second `findings` list, or an
    entry with a second `file`: JSON's reader kept the last silently, so the entries the run used were not the ones
    a reviewer read (`file: old.yaml` on top, the new GPU pod's file below). Refused as bad input, as a config or
    rules file that sets a key twice."""
    from dramigrate import baseline
    from dramigrate.findings import InputError

    entry = '{"file": "old.yaml", "kind": "Pod", "namespace": "", "name": "p", "container": "app", '
    entry += '"resource": "nvidia.com/gpu", "rule": "legacy-device-request", "count": 1}'
    if twice == "file":
        entry = entry.replace('"count"', '"file": "new.yaml", "count"')
    text = f'{{"version": 1, "tool": "dramigrate", "findings": [], "findings": [{entry}]}}'
    if twice == "file":
        text = text.replace('"findings": [], ', "")
    (tmp_path / "b.json").write_text(text)

    with pytest.raises(InputError) as caught:
        baseline.load(tmp_path / "b.json")

    assert f"`{twice}` twice" in caught.value.message, caught.value


def test_a_selector_is_not_cut_off_for_the_time_a_loaded_machine_kept_it_waiting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """fit stops a selector's evaluation after 2 s, a stand-in for Kubernetes' CEL cost limit, and then no longer
    evaluates that selector: timed by the wall clock, a light selector was cut off for the time the process waited
    for a core (or was stopped), and every device then failed to match it (FITS NOWHERE). It is timed in CPU time."""
    from dramigrate import cel

    selector = cel.compile_selector(f"[{', '.join(map(str, range(100)))}].all(x, x >= 0)")
    monkeypatch.setattr(cel, "time", LoadedClock())

    assert selector.matches("gpu.nvidia.com", {}, {})


def test_an_invalid_pack_of_thousands_of_errors_is_named_in_a_line_not_a_page(tmp_path: Path) -> None:
    """A user pack of 2,800 resource entries each missing `request` stopped lint with every schema error joined on
    one line, 160 KB, printed twice (the error and the summary's failed list). The first few are given, and how many
    more `rules validate` lists."""
    from dramigrate.findings import InputError
    from dramigrate.rules import load_rules

    entries = "".join(f"  - {{match: acme.example/r{i}, deviceClass: npu.acme.example}}\n" for i in range(300))
    (tmp_path / "pack.yaml").write_text(
        "schemaVersion: 1\nkind: RulePack\nname: acme\ndescription: d\nresources:\n" + entries
    )

    with pytest.raises(InputError) as caught:
        load_rules((tmp_path / "pack.yaml",))

    assert "resources.0: 'request' is a required property" in caught.value.message
    assert "295 more" in caught.value.message and len(caught.value.message) < 1000, len(caught.value.message)


def pairs_template(pairs: int) -> dict[str, Any]:
    """The claim `align-nics: preferred` makes of a container of GPUs and EFA NICs: each request a firstAvailable of
    `aligned` (under one PCIe root with its pair) and `unaligned`."""
    requests, constraints = [], []
    for i in range(pairs):
        for request, cls, count in (("gpu", "gpu.nvidia.com", 1), ("efa", "efa.networking.k8s.aws", 4)):
            subs = [{"name": n, "deviceClassName": cls, "count": count} for n in ("aligned", "unaligned")]
            requests.append({"name": f"{request}-{i}", "firstAvailable": subs})
        constraints.append(
            {"requests": [f"gpu-{i}/aligned", f"efa-{i}/aligned"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}
        )
    return {
        "metadata": {"name": "p5"},
        "spec": {"spec": {"devices": {"requests": requests, "constraints": constraints}}},
    }


def test_fit_of_a_claim_of_preferred_alignments_on_nodes_where_none_aligns_ends_in_seconds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`align-nics: preferred` on a pod of 8 GPUs and 32 EFA NICs (a p5 instance) gives a claim of 12 requests, each
    `aligned` or `unaligned`. On nodes whose NICs publish other PCIe roots than the GPUs, fit tried all 4,096
    combinations of alternatives per node, each solved from scratch: 3 nodes took 53 s of CPU (9 minutes on this
    machine), a fleet hours. An alternative no better than another on the node (the same devices or fewer, under
    more constraints) is not tried, and a partial choice that fails is not extended."""
    from dramigrate import fit
    from dramigrate.inventory import Device
    from dramigrate.rules import load_rules

    root = "resource.kubernetes.io"
    gpu = {"gpu.nvidia.com": {"type": "gpu"}}
    devices = [
        Device("gpu.nvidia.com", "n", "node-a", f"gpu-{g}", {root: {"pcieRoot": f"pci{g}"}, **gpu}) for g in range(8)
    ]
    devices += [
        Device("dra.net", "n", "node-a", f"efa-{e}", {root: {"pcieRoot": f"efa{e}"}, "dra.net": {"pciDevice": EFA}})
        for e in range(32)
    ]
    solved = []
    real = fit._fits_node
    monkeypatch.setattr(fit, "_fits_node", lambda *args: solved.append(1) or real(*args))

    result = fit.fit_claim(pairs_template(4), load_rules(()).classes, devices)

    assert result.nodes == ["node-a"]
    assert len(solved) <= 2 * 8, f"{len(solved):,} solves of 8 requests for one node"  # 86 for 4 pairs, 1,366 for 6


EFA = "Elastic Fabric Adapter (EFA)"
