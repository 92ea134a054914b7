"""Device counts as Kubernetes reads them (sigs.k8s.io/yaml's YAML 1.1 decoder, then resource.ParseQuantity), and a
pod migrated whole or not at all."""

from __future__ import annotations

import pytest
from ruamel.yaml import YAML

from dramigrate.config import Settings
from dramigrate.documents import _round_trip
from dramigrate.migrate import Job, run_file
from dramigrate.quantity import INT64_MAX, device_count, plain_source
from dramigrate.rules import load_rules
from dramigrate.versions import Target

RULES = load_rules()

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  containers:
  - name: a
    image: a:1
    resources:
      limits:
        nvidia.com/gpu: {a}
  - name: b
    image: b:1
    resources:
      limits: {{nvidia.com/gpu: {b}, cpu: 1}}
"""


def _fix(text: str) -> tuple[str | None, list]:
    result = run_file(Job("pod.yaml", text.encode(), True), RULES, Settings(), Target.parse("1.36"))
    assert result.error is None, str(result.error)
    return result.rewritten, result.findings


def _loaded(value: str) -> tuple[object, str | None]:
    body = f"limits:\n  nvidia.com/gpu: {value}\n"
    data = _round_trip().load(body)  # the loader dramigrate reads files with (quotes kept)
    return data["limits"]["nvidia.com/gpu"], plain_source(body.splitlines(), data["limits"], "nvidia.com/gpu")


# (as written, devices Kubernetes gives) -- plain scalars resolved as YAML 1.1 (go-yaml v2), then the JSON number
# or string parsed as a resource.Quantity.
ACCEPTED = [
    ("2", 2),
    ('"2"', 2),
    ("010", 8),  # YAML 1.1 octal
    ('"010"', 10),  # a string: the quantity parser drops leading zeros
    ("0o10", 8),
    ("0x10", 16),
    ("1_000", 1000),
    ("+3", 3),
    ("09", 9),  # not octal: go-yaml reads it as the float 9
    ("2.0", 2),
    ('"2000m"', 2),
    ("1e3", 1000),
    ('"1e3"', 1000),
    ("1Ki", 1024),
    ("&n 010 # eight", 8),
    # Found by the wide fuzzer: an anchored plain scalar ruamel reads as text (Go's capital base prefixes) came back
    # as a PlainScalarString and was read as a quoted string, not a count: lint exit 0 while Kubernetes gives 3.
    ("&n 0X3", 3),
    ("&n 0B11", 3),
    ("&n 0O3", 3),
    ("!!str 010", 10),
    ("!Ref 010", 10),  # a tag go-yaml does not resolve keeps the text, a string: not YAML 1.1's octal 8
    ("! 010", 10),  # the non-specific tag too (ruamel reads it as the plain octal 8)
    ("0", 0),
]


@pytest.mark.parametrize(("written", "devices"), ACCEPTED)
def test_counts_kubernetes_accepts(written: str, devices: int) -> None:
    assert device_count(*_loaded(written)).value == devices


REFUSED = [
    ("2.5", "fraction"),
    ('"1500m"', "fraction"),
    ("-1", "negative"),
    ("yes", "boolean"),  # YAML 1.1 boolean
    ("&n yes", "boolean"),
    ("null", "null"),
    (".inf", "not-a-number"),
    (str(INT64_MAX), "too-large"),
    ("99999999999999999999999", "too-large"),
    ('"1Ei"', "too-large"),
    ("$GPU_PER_NODE", ""),
    ("!Ref 0x10", ""),  # the string "0x10" is no quantity
    ("! true", ""),  # the string "true", not a boolean
]


@pytest.mark.parametrize(("written", "kind"), REFUSED)
def test_counts_kubernetes_refuses(written: str, kind: str) -> None:
    count = device_count(*_loaded(written))
    assert count.value is None
    assert count.kind == kind


def test_octal_count_becomes_the_devices_kubernetes_gives() -> None:
    """`010` was migrated as count 10; the API server gives the container 8 GPUs."""
    out, findings = _fix(POD.format(a="010", b='"2000m"'))
    assert out is not None
    template = YAML(typ="safe").load(out.split("---\n")[1])
    counts = {r["name"]: r["exactly"]["count"] for r in template["spec"]["spec"]["devices"]["requests"]}
    assert counts == {"a-gpu": 8, "b-gpu": 2}
    messages = [f.message for f in findings if f.rule == "legacy-device-request"]
    assert any("010 (= 8 for Kubernetes)" in m for m in messages)


@pytest.mark.parametrize("bad", ["2.5", str(2**63), "$GPUS"])
def test_a_pod_with_a_count_that_cannot_migrate_is_left_whole(bad: str) -> None:
    """Claims beside device-plugin requests in one pod would be half a migration: nothing of the pod changes."""
    out, findings = _fix(POD.format(a="1", b=bad))
    assert out is None
    by_rule = {f.rule: f for f in findings}
    assert by_rule["invalid-count"].container == "b"
    kept = by_rule["legacy-device-request"]
    assert kept.container == "a" and not kept.fixable and not kept.fixed
    assert "container b's nvidia.com/gpu" in kept.message


def test_limits_and_requests_compared_as_quantities() -> None:
    """`2` and `"2000m"` are the same count for Kubernetes; `2` and `3` are not."""
    same = POD.replace("nvidia.com/gpu: {a}", "nvidia.com/gpu: 2\n      requests:\n        nvidia.com/gpu: 2000m")
    out, _ = _fix(same.format(b=1))
    assert out is not None and "count: 2" in out
    differ = POD.replace("nvidia.com/gpu: {a}", "nvidia.com/gpu: 2\n      requests:\n        nvidia.com/gpu: 3")
    out, findings = _fix(differ.format(b=1))
    assert out is None
    assert any("differ" in f.message for f in findings if f.rule == "invalid-count")


SHARED = """\
apiVersion: v1
kind: Pod
metadata: {name: p, labels: &lab {app: x}}
spec:
  containers:
  - &w
    name: a
    image: x
    resources: &r
      limits:
        nvidia.com/gpu: 1
  - <<: *w
    name: b
  - <<: *w
    name: c
    resources:
      limits:
        nvidia.com/gpu: 0
  - name: d
    image: x
    resources: *r
  nodeSelector: *lab
"""


def test_anchors_and_merge_keys_unshared_so_each_container_keeps_its_own_devices() -> None:
    """A resources map shared through an anchor or a merge key gave every container every container's claims."""
    out, _ = _fix(SHARED)
    assert out is not None
    pod, template = YAML(typ="safe").load_all(out)
    claims = {c["name"]: c.get("resources", {}).get("claims") for c in pod["spec"]["containers"]}
    assert claims == {
        "a": [{"name": "gpu", "request": "a-gpu"}],
        "b": [{"name": "gpu", "request": "b-gpu"}],
        "c": None,
        "d": [{"name": "gpu", "request": "d-gpu"}],
    }
    assert all("limits" not in c.get("resources", {}) for c in pod["spec"]["containers"])
    counts = {r["name"]: r["exactly"]["count"] for r in template["spec"]["spec"]["devices"]["requests"]}
    assert counts == {"a-gpu": 1, "b-gpu": 1, "d-gpu": 1}
    assert "labels: &lab {app: x}" in out and "nodeSelector: *lab" in out  # anchors elsewhere are kept


SHARED_WITH_A_POD_WITHOUT_DEVICES = """\
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: rc}
spec:
  headGroupSpec:
    rayStartParams: &p {dashboard-host: 0.0.0.0}
    template:
      spec:
        tolerations: &t [{key: a, operator: Exists}]
        nodeSelector: &ns {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB, pool: x}
        containers:
        - name: head
          image: ray
  workerGroupSpecs:
  - groupName: g
    replicas: 1
    rayStartParams: *p
    template:
      spec:
        tolerations: *t
        nodeSelector: *ns
        containers:
        - name: w
          image: ray
          resources:
            limits: {nvidia.com/gpu: 2}
"""


def test_a_pod_sharing_its_tolerations_selector_and_ray_params_keeps_them_when_its_neighbour_is_migrated() -> None:
    """The head shares its tolerations, nodeSelector and rayStartParams with the GPU worker through anchors: fix
    edited the shared objects in place, so the head got the GPU toleration and num-gpus and lost its node pinning."""
    out, _ = _fix(SHARED_WITH_A_POD_WITHOUT_DEVICES)
    assert out is not None
    cluster, _template = YAML(typ="safe").load_all(out)
    head, worker = cluster["spec"]["headGroupSpec"], cluster["spec"]["workerGroupSpecs"][0]
    assert head["rayStartParams"] == {"dashboard-host": "0.0.0.0"}
    assert head["template"]["spec"]["tolerations"] == [{"key": "a", "operator": "Exists"}]
    assert head["template"]["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "pool": "x"}
    assert worker["rayStartParams"] == {"dashboard-host": "0.0.0.0", "num-gpus": "2"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in worker["template"]["spec"][
        "tolerations"
    ]
    assert worker["template"]["spec"]["nodeSelector"] == {"pool": "x"}


ONE_SPEC_TWO_PODS = """\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: c}
  spec: &s
    containers:
    - name: c1
      image: x
      resources:
        limits: {nvidia.com/gpu: 1}
- apiVersion: v1
  kind: Pod
  metadata: {name: d}
  spec: *s
"""


def test_two_pods_holding_one_spec_through_an_anchor_are_named_for_what_they_are() -> None:
    """`spec: *s` made fix edit the one spec twice and report `duplicate claim name 'gpu'`, an error the user
    never wrote; the file is still left whole, and the finding says the spec is shared and what to do."""
    out, findings = _fix(ONE_SPEC_TWO_PODS)
    assert out is None
    (invalid,) = [f for f in findings if f.rule == "rewrite-invalid"]
    assert invalid.name == "d" and "same YAML node as Pod/c spec" in invalid.message
    assert "duplicate" not in invalid.message


def test_a_comment_below_an_anchored_count_stays_once_above_its_line() -> None:
    """Found by the wide fuzzer: ruamel hands the comment below `nvidia.com/gpu: &n 1` to every key that aliases the
    count too, so when fix removed the device line the comment went (or went again) under the alias's key."""
    text = (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: a\n    image: x\n"
        "    resources:\n      requests:\n        nvidia.com/gpu: &n 1\n        # below\n        cpu: '1'\n"
        "  terminationGracePeriodSeconds: *n\n  # last\n  restartPolicy: Always\n"
    )
    fixed, _ = _fix(text)
    assert fixed is not None
    lines = fixed.splitlines()
    for comment, above in (("# below", "cpu: '1'"), ("# last", "restartPolicy: Always")):
        assert fixed.count(comment) == 1, fixed
        assert lines[lines.index(next(x for x in lines if x.strip() == comment)) + 1].strip() == above, fixed
    assert "terminationGracePeriodSeconds: &n 1" in lines[lines.index("  # last") - 1], fixed


def test_end_of_line_comments_of_an_anchored_count_and_its_alias_are_kept() -> None:
    """Found by the wide fuzzer: ruamel gives `# first` to both keys and puts the alias's own `# second` at the end
    of the container list, so the dump had one line more than the file and fix wrote ruamel's whole dump: `# first`
    was lost and `# second` went to column 25 under the pod's last line."""
    text = (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: i\n    image: x\n"
        "    resources:\n      limits:\n        nvidia.com/gpu: &n 3  # first\n        amd.com/gpu: *n  # second\n"
        "  restartPolicy: Always\n"
    )
    fixed, _ = _fix(text)
    assert fixed is not None
    lines = fixed.splitlines()
    for comment in ("# first", "# second"):
        (line,) = [x for x in lines if comment in x]
        assert lines.index(line) < lines.index("  restartPolicy: Always"), fixed
        assert line.strip() == comment and line.startswith("      "), fixed  # own line, inside the container


def test_comments_around_an_anchored_count_whose_alias_fix_keeps() -> None:
    """Found by the wide fuzzer: a count anchored on a device line and aliased by a field fix keeps. The anchor moves
    to the alias (`terminationGracePeriodSeconds: &n 0`); ruamel's dump wrote the alias's comment at the anchor, so the
    merge could not place the edit and the whole dump lost the comments of the removed lines."""
    text = (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: a\n    image: x\n"
        "    resources:  # mine\n      requests:\n        # above\n        nvidia.com/gpu: &n 1\n"
        "  terminationGracePeriodSeconds: *n  # grace\n  restartPolicy: Always\n"
    )
    fixed, _ = _fix(text)
    assert fixed is not None
    for comment in ("# mine", "# above", "# grace"):
        assert fixed.count(comment) == 1, fixed
    lines = fixed.splitlines()
    assert lines.index("  terminationGracePeriodSeconds: &n 1") < lines.index("  restartPolicy: Always"), fixed


def test_a_comment_on_an_anchored_key_next_to_a_rewritten_line_stays_on_its_line() -> None:
    """Found by the wide fuzzer: ruamel writes `env: &e  # shared` as `env:` and the comment on a line of its own,
    so the merge could not place the edit of the device line above it (`1_`, which ruamel writes `1`) and fix wrote
    ruamel's whole dump: the anchor was gone and the comment sat on its own line."""
    text = (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: a\n    image: x\n"
        "    resources:\n      limits:\n        amd.com/gpu: 1_\n    env: &e  # shared\n    - name: A\n      value: b\n"
    )
    fixed, _ = _fix(text)
    assert fixed is not None and "    env: &e  # shared\n    - name: A\n" in fixed, fixed


def test_comment_lines_below_an_anchored_count_are_kept() -> None:
    """Found by the wide fuzzer: ruamel reads `gpu: &n 1  # eol` and the comment lines below it as one token; the
    comments of such a line must not take the lines below with them."""
    text = (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: a\n    image: x\n"
        "    resources:\n      limits:\n        amd.com/gpu: &n 1  # eol\n    # below\n    env:\n    - name: A\n"
        "      value: b\n  - name: b\n    image: x\n    resources:\n      limits:\n        nvidia.com/gpu: *n\n"
    )
    fixed, _ = _fix(text)
    assert fixed is not None
    lines = fixed.splitlines()
    assert fixed.count("# eol") == 1 and fixed.count("# below") == 1, fixed
    assert lines[lines.index("    # below") + 1] == "    env:", fixed
