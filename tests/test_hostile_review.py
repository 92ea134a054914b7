"""Hostile inputs of the seventh sweep (issue 11's checker, inputs not in the repo before): each in a folder of good
files, migrated exactly or named, nothing written or shown from outside the tree."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from conftest import ONE_GPU_POD, chart_with, run_dramigrate


def _lines_with_ends(data: bytes) -> list[tuple[bytes, bytes]]:
    """Each line of data with its own end (CRLF, LF or CR alone)."""
    out = []
    for line in data.splitlines(keepends=True):
        body = line.rstrip(b"\r\n")
        out.append((body, line[len(body) :]))
    return out


def test_a_file_mixing_crlf_and_lf_keeps_each_lines_end_and_a_cr_file_stays_cr(tmp_path: Path) -> None:
    """A CRLF file with one LF line (a comment added on another system) was written back all LF, every line
    changed; a file ending its lines in CR alone got LF lines in the middle. Each untouched line keeps its end, and
    the lines fix adds take the file's most common one (in a CR file, but the `---` before a document fix appends)."""
    lines = ONE_GPU_POD.format(name="mixed").splitlines()
    lines.insert(3, "  # added with LF")
    mixed = "".join(line + ("\n" if line.startswith("  #") else "\r\n") for line in lines).encode()
    (tmp_path / "mixed.yaml").write_bytes(mixed)
    (tmp_path / "cr.yaml").write_bytes(ONE_GPU_POD.format(name="cr").replace("\n", "\r").encode())
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    code, _, err = run_dramigrate(["fix", tmp_path])

    assert code == 0, err
    before = dict(_lines_with_ends(mixed))
    after = _lines_with_ends((tmp_path / "mixed.yaml").read_bytes())
    assert (b"  # added with LF", b"\n") in after
    assert all(end == before.get(body, b"\r\n") for body, end in after)  # kept, or CRLF for a line fix wrote
    assert [d["kind"] for d in yaml.safe_load_all((tmp_path / "mixed.yaml").read_bytes())] == [
        "Pod",
        "ResourceClaimTemplate",
    ]
    cr = (tmp_path / "cr.yaml").read_bytes()
    # every line keeps its CR but the separator of the template fix appends, ended in LF: kubectl and kustomize split
    # documents only at `---` lines ended by LF (test_hostile_sweep36_manifests)
    assert b"\n" not in cr.replace(b"\n---\n", b"") and b"ResourceClaimTemplate" in cr
    assert "ResourceClaimTemplate" in (tmp_path / "good.yaml").read_text()
    assert run_dramigrate(["diff", "--check", tmp_path])[0] == 0  # and a second fix changes nothing


def test_the_html_report_shows_control_and_bidi_characters_of_names_instead_of_holding_them(tmp_path: Path) -> None:
    """Every other format shows ESC, BEL and bidirectional overrides as \\xNN; the HTML report held them raw, so a
    right-to-left override in a file or container name showed it reversed to the reviewer."""
    name = "gpu\x1b[31m\u202eLMAY.yaml"
    (tmp_path / name).write_text(ONE_GPU_POD.format(name="p").replace("name: app", 'name: "app\\e[2J\\a\\u2066"'))
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    page = tmp_path / "report.html"

    code, _, err = run_dramigrate(["diff", tmp_path, "--html", page])

    assert code == 0, err
    html = page.read_text(encoding="utf-8")
    assert not [c for c in "\x1b\x07\u202e\u2066" if c in html]
    assert "gpu\\x1b[31m\\u202eLMAY.yaml" in html and "app\\x1b[2J\\x07\\u2066" in html
    assert "good.yaml" in html


def test_a_report_or_baseline_path_linked_out_of_the_tree_is_not_written_through(tmp_path: Path) -> None:
    """A checkout may hold `dramigrate.sarif -> ~/.bashrc` where CI writes its report: the report, the HTML page and
    the baseline were written through the link into the file outside. The link is refused by name; a link that
    stays in the tree is still written through."""
    outside, repo = tmp_path / "home", tmp_path / "repo"
    outside.mkdir()
    repo.mkdir()
    (repo / "pod.yaml").write_text(ONE_GPU_POD.format(name="p"))
    for name in ("r.sarif", "r.html", "base.json"):
        (outside / name).write_text("mine\n")
        (repo / name).symlink_to(outside / name)
    (repo / "inside.json").write_text("")
    (repo / "in.json").symlink_to("inside.json")
    runs = [
        ["lint", ".", "--format", "sarif=r.sarif"],
        ["diff", ".", "--html", "r.html"],
        ["lint", ".", "--write-baseline", "base.json"],
    ]

    for args in runs:
        code, _, err = run_dramigrate(args, cwd=repo)
        assert code == 2 and "a symlink whose target is outside the tree; not written through it" in err, err
    (repo / "base.json").unlink()  # a .json in the folder is linted: a link out of the tree is bad input (exit 2)
    code, _, err = run_dramigrate(["lint", ".", "--write-baseline", "in.json"], cwd=repo)

    assert code == 1, err
    assert all((outside / name).read_text() == "mine\n" for name in ("r.sarif", "r.html", "base.json"))
    assert '"legacy-device-request"' in (repo / "inside.json").read_text()


def test_a_template_that_includes_itself_is_named_in_one_short_message(tmp_path: Path) -> None:
    """Helm's message for `{{ define "x" }}{{ include "x" . }}{{ end }}` repeats the same link a thousand times:
    97 KB in one error line of every report. Each run of equal links is given once, with its count."""
    chart_with(
        tmp_path,
        "loop",
        {
            "templates/_h.tpl": '{{ define "x" }}{{ include "x" . }}{{ end }}',
            "templates/cm.yaml": 'kind: ConfigMap\nmetadata:\n  name: loop\ndata:\n  a: {{ include "x" . }}\n',
        },
    )
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    code, out, _ = run_dramigrate(["lint", tmp_path, "--format", "json"])

    assert code == 2
    report = json.loads(out)
    (message,) = [e["message"] for e in report["errors"] if e["file"].endswith("loop")]
    assert len(message) < 1000
    assert 'loop/templates/_h.tpl:1:19: executing "x" at <include "x" .> (1001 times): error calling include' in message
    assert any(f["file"].endswith("good.yaml") for f in report["findings"])


def test_a_backup_name_held_by_a_file_is_never_replaced(tmp_path: Path) -> None:
    """--backup replaced whatever held the backup's name: a file of notes named like a backup was lost. Such a
    file is refused by name, untouched with what holds its backup's name; the others are migrated and backed up.
    (The review's case, --backup=.yaml overwriting a.yaml.yaml, another manifest of the run, is now refused before
    any work: test_writes.py.)"""
    (tmp_path / "b.yaml").write_text(ONE_GPU_POD.format(name="b"))
    (tmp_path / "b.yaml.orig").write_text("# my notes\n")
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    code, _, err = run_dramigrate(["fix", "--backup=.orig", tmp_path])

    assert code == 2
    assert (tmp_path / "b.yaml.orig").read_text() == "# my notes\n"
    assert (tmp_path / "b.yaml").read_text() == ONE_GPU_POD.format(name="b")
    assert "b.yaml: not written: --backup: b.yaml.orig exists" in err, err
    assert "ResourceClaimTemplate" in (tmp_path / "good.yaml").read_text()
    assert (tmp_path / "good.yaml.orig").read_text() == ONE_GPU_POD.format(name="good")


INVENTORY_WITH_A_HOSTILE_NODE_NAME = """\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: s}
spec:
  driver: gpu.nvidia.com
  nodeName: "node\\e[31m\\u202eRED\\n::error::forged"
  pool: {name: p, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    attributes:
      productName: {string: NVIDIA A100}
      type: {string: gpu}
"""


def test_fit_shows_a_node_name_from_the_inventory_instead_of_obeying_it(tmp_path: Path) -> None:
    """fit's text printed node names as the inventory held them: a terminal escape, a right-to-left override and a
    line of its own, which the GitHub Actions log runs as a workflow command (`::error::forged`)."""
    (tmp_path / "inventory.yaml").write_text(INVENTORY_WITH_A_HOSTILE_NODE_NAME)
    (tmp_path / "pod.yaml").write_text(ONE_GPU_POD.format(name="p"))

    code, out, err = run_dramigrate(["fit", tmp_path / "pod.yaml", "--inventory", tmp_path / "inventory.yaml"])

    assert code == 0, err
    assert "fits on 1 node(s): node\\x1b[31m\\u202eRED\\n::error::forged" in out
    assert not any(c in out for c in "\x1b\u202e") and not any(line.startswith("::") for line in out.splitlines())


def test_rules_list_shows_a_packs_text_instead_of_obeying_it(tmp_path: Path) -> None:
    """`rules list --rules pack.yaml` printed a pack's description and resource names raw: a repository's pack could
    clear the terminal or start a line of its own (a workflow command in the GitHub Actions log)."""
    pack = tmp_path / "pack.yaml"
    pack.write_text(
        "schemaVersion: 1\nkind: RulePack\nname: evil\n"
        'description: "Demo \\e[2J\\u202e\\n::error::forged"\n'
        'resources:\n  - match: "evil.com/gpu\\e[31m"\n    deviceClass: gpu.example.com\n    request: gpu\n'
        "deviceClasses:\n  - name: gpu.example.com\n    driver: gpu.example.com\n    shippedBy: a chart\n"
    )

    code, out, err = run_dramigrate(["rules", "list", "--rules", pack])

    assert code == 0, err
    assert "evil: Demo \\x1b[2J\\u202e\\n::error::forged" in out and "evil.com/gpu\\x1b[31m -> gpu.example.com" in out
    assert not any(c in out for c in "\x1b\u202e") and not any(line.startswith("::") for line in out.splitlines())


def test_a_config_that_switches_to_the_extended_resource_strategy_is_annotated_on_the_pull_request(
    tmp_path: Path,
) -> None:
    """`strategy: extended-resource` in a repository's config keeps the device-plugin requests and reports them as
    info: the gate went green and neither the log nor the GitHub report said why (excludes, disabled rules and
    report-only resources are annotated; this did the same and was not)."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "pod.yaml").write_text(ONE_GPU_POD.format(name="pod"))
    (tmp_path / ".dramigrate.yaml").write_text("strategy: extended-resource\n")

    code, out, err = run_dramigrate(["lint", ".", "--format", "github"], cwd=tmp_path)

    assert code == 0, err
    assert (
        "::warning file=.dramigrate.yaml,line=1,title=dramigrate config::config "
        f"{tmp_path / '.dramigrate.yaml'} (untrusted): strategy extended-resource (device-plugin requests stay; "
        "not reported as errors)"
    ) in out.splitlines()


def test_a_run_killed_between_its_backup_and_its_rename_is_finished_by_the_next_run(tmp_path: Path) -> None:
    """A kill -9 after --backup linked the original to its backup name and before the rename leaves the file with
    two hard links, one of them its own backup: the next run refused it as hard-linked. That link (or an equal
    copy) is the backup already made; any other file there is still never replaced."""
    pod = tmp_path / "pod.yaml"
    pod.write_text(ONE_GPU_POD.format(name="pod"))
    (tmp_path / "pod.yaml.orig").hardlink_to(pod)
    copy = tmp_path / "copy.yaml"
    copy.write_text(ONE_GPU_POD.format(name="copy"))
    (tmp_path / "copy.yaml.orig").write_text(ONE_GPU_POD.format(name="copy"))

    code, _, err = run_dramigrate(["fix", "--backup", tmp_path])

    assert code == 0, err
    for name in ("pod", "copy"):
        assert "ResourceClaimTemplate" in (tmp_path / f"{name}.yaml").read_text()
        assert (tmp_path / f"{name}.yaml.orig").read_text() == ONE_GPU_POD.format(name=name)
    assert (tmp_path / "pod.yaml").stat().st_nlink == 1
