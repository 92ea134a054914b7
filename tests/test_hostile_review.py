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
    the lines fix adds take the file's most common one."""
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
    assert b"\n" not in cr and b"ResourceClaimTemplate" in cr
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
    """--backup replaced whatever held the backup's name: with --backup=.yaml, the backup of a.yaml overwrote
    a.yaml.yaml, another manifest of the same run, and a file of notes named like a backup was lost too. Such a
    file is refused by name, untouched with what holds its backup's name; the others are migrated and backed up."""
    (tmp_path / "a.yaml").write_text(ONE_GPU_POD.format(name="a"))
    (tmp_path / "a.yaml.yaml").write_text(ONE_GPU_POD.format(name="other"))
    (tmp_path / "b.yaml").write_text(ONE_GPU_POD.format(name="b"))
    (tmp_path / "b.yaml.yaml").write_text("# my notes\n")
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    code, _, err = run_dramigrate(["fix", "--backup=.yaml", tmp_path])

    assert code == 2
    assert (tmp_path / "b.yaml.yaml").read_text() == "# my notes\n"
    assert (tmp_path / "b.yaml").read_text() == ONE_GPU_POD.format(name="b")
    assert "b.yaml: not written: --backup: b.yaml.yaml exists" in err
    assert (tmp_path / "a.yaml").read_text() == ONE_GPU_POD.format(name="a")
    assert "name: other" in (tmp_path / "a.yaml.yaml").read_text()  # its own manifest, migrated or not, not a's
    assert "ResourceClaimTemplate" in (tmp_path / "good.yaml").read_text()
    assert (tmp_path / "good.yaml.yaml").read_text() == ONE_GPU_POD.format(name="good")
