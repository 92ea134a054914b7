"""Limits before work: hostile files in a folder of good ones are refused or skipped with a message, never read
when they are not regular files, never hang and never stop the run; hostile rule-pack regexes fail at load."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ONE_GPU_POD, RunCli, dramigrate_executable

from dramigrate.findings import InputError
from dramigrate.limits import Limits, check_structure, regex_problem
from dramigrate.sources import expand, walk

POD = ONE_GPU_POD


def _deep(top: Path, levels: int) -> Path:
    """levels nested folders named d under top (created one by one: pathlib's mkdir(parents=True) recurses;
    kept shallow enough for shutil.rmtree, which recurses too, to clean up)."""
    here = top
    for _ in range(levels):
        here = here / "d"
        os.mkdir(here)
    return here


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of good files beside a FIFO named *.yaml, a FIFO named kustomization.yaml, a symlink loop, a file
    over the size limit, a document nested 300 deep, and a good file 1000 folders down."""
    top = tmp_path_factory.mktemp("hostile")
    (top / "good.yaml").write_text(POD.format(name="good"))
    os.mkfifo(top / "pipe.yaml")
    os.mkfifo(top / "kustomization.yaml")
    os.symlink("loop.yaml", top / "loop.yaml")
    (top / "big.yaml").write_text(POD.format(name="big") + "#" * 3_000_000 + "\n")
    (top / "deep.yaml").write_text(POD.format(name="deep") + "---\nx: " + "[" * 300 + "]" * 300 + "\n")
    down = _deep(top, 300)
    (down / "far.yaml").write_text(POD.format(name="far"))
    return top


def test_hostile_folder_never_hangs_and_good_files_still_migrate(hostile: Path, run_cli: RunCli) -> None:
    code, out, err = run_cli(["lint", "--format", "json", "--max-file-size", "2Mi", hostile], timeout=60)
    assert code == 2, err  # bad input in some files, the rest still checked
    assert "Traceback" not in err and "internal error" not in err
    report = json.loads(out)
    bad = {Path(b["file"]).name: b["message"] for b in report["errors"]}
    assert bad["pipe.yaml"] == "a FIFO (named pipe), not a regular file; skipped (never read)"
    assert bad["kustomization.yaml"].startswith("a FIFO")
    assert bad["loop.yaml"].startswith("a symlink that cannot be followed")
    assert "larger than the 2 MiB limit" in bad["big.yaml"]
    assert "nested more than 100 levels deep" in bad["deep.yaml"]
    migrated = {f["name"] for f in report["findings"] if f["rule"] == "legacy-device-request"}
    assert migrated == {"good", "far"}


def test_size_is_checked_before_reading(tmp_path: Path) -> None:
    """A sparse 1 TiB file is refused at once from its stat, never read into memory."""
    from dramigrate.limits import read_regular

    huge = tmp_path / "huge.yaml"
    with open(huge, "wb") as fh:
        fh.truncate(1 << 40)
    with pytest.raises(InputError, match="larger than the 32 MiB limit"):
        read_regular(str(huge))


def test_walk_is_iterative_and_visits_each_folder_once(tmp_path: Path) -> None:
    deep = _deep(tmp_path, 300)
    (deep / "a.yaml").write_text("a: 1\n")
    os.symlink(tmp_path, deep / "up")  # a symlinked folder back to the top is not followed
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(150)  # os.walk recursed once per level: 990 levels crashed at the default limit
    try:
        found = expand([str(tmp_path)]).files
    finally:
        sys.setrecursionlimit(limit)
    assert found == [str(deep / "a.yaml")]
    assert sum(1 for _ in walk(tmp_path)) == 301


def test_a_bind_mount_back_to_the_top_is_walked_once(tmp_path: Path) -> None:
    """A folder mounted below itself (a bind mount, in a mount namespace of the test's own) is a loop that no symlink
    check sees: lint still reads each file once and ends. The walk skips its per-folder stat only when the mount
    table shows no mount point below the top."""
    top = tmp_path / "top"
    (top / "sub" / "loop").mkdir(parents=True)
    (top / "gpu.yaml").write_text(POD.format(name="gpu"))
    (top / "sub" / "b.yaml").write_text("a: 1\n")
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("no unshare(1) to make a mount namespace")
    mount_and_lint = 'mount --bind "$1" "$1/sub/loop" || exit 99; exec "$2" lint "$1" --format json'
    proc = subprocess.run(
        [unshare, "-rm", "sh", "-c", mount_and_lint, "sh", top, dramigrate_executable()],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if proc.returncode == 99 or "unshare:" in proc.stderr:
        pytest.skip(f"no bind mount in a user namespace here: {proc.stderr.strip()}")
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert report["summary"]["files"] == 2
    assert [f["file"] for f in report["findings"]] == [str(top / "gpu.yaml")]


@pytest.mark.parametrize(
    "text",
    [
        "a:\n" + "".join("  " * i + f"- k{i}:\n" for i in range(1, 80)),
        "a: " + "{b: " * 120 + "1" + "}" * 120 + "\n",
        "---\n" * 20,
    ],
)
def test_structure_limits(text: str) -> None:
    with pytest.raises(InputError, match="nested more than|YAML documents"):
        check_structure("f.yaml", text, Limits(max_depth=100, max_documents=10))


def test_block_scalars_are_text_not_nesting() -> None:
    text = "data:\n  script: |\n" + "".join("    " + " " * i + "x\n" for i in range(400)) + "b: 1\n"
    check_structure("f.yaml", text)


@pytest.mark.parametrize(
    ("pattern", "bad"),
    [
        (r"(a+)+\.com/y", True),
        (r"(\w*x)*", True),
        (r"(a+)++\.com/y", False),  # possessive: no backtracking into the group
        (r"nvidia\.com/mig-(?P<profile>[0-9]+g\.[0-9]+gb)", False),
        (r"(?:intel\.com|nvidia\.com)/[A-Za-z0-9_.-]*sriov[A-Za-z0-9_.-]*", False),
    ],
)
def test_regex_backtracking_check(pattern: str, bad: bool) -> None:
    assert bool(regex_problem(pattern)) is bad


def test_hostile_rule_pack_fails_at_load_not_during_lint(tmp_path: Path, run_cli: RunCli) -> None:
    pack = tmp_path / "evil.yaml"
    pack.write_text(
        "schemaVersion: 1\nkind: RulePack\nname: evil\ndescription: evil\nresources:\n"
        "  - regex: '(a+)+\\.com/y'\n    deviceClass: gpu.nvidia.com\n    request: gpu\n"
    )
    (tmp_path / "w.yaml").write_text(POD.format(name="w").replace("nvidia.com/gpu", "a" * 40 + ".com/x"))
    code, _, err = run_cli(["lint", "--rules", pack, tmp_path / "w.yaml"], timeout=30)
    assert code == 2
    assert "resources.0.regex: a repeat inside a repeat" in err


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda p: p.write_text("resources:\n" + "- {match: x}\n" * 1_500_000), "larger than"),  # 13 MB: minutes
        (lambda p: p.write_bytes("kind: RulePack\n".encode("utf-16")), "not UTF-8 text"),  # an internal error
        (lambda p: os.mkfifo(p), "not a regular file"),  # blocked for ever
    ],
)
def test_a_rule_pack_too_large_not_utf8_or_a_fifo_is_named_at_once(
    tmp_path: Path, run_cli: RunCli, make: Any, said: str
) -> None:
    pack = tmp_path / "pack.yaml"
    make(pack)
    (tmp_path / "w.yaml").write_text(POD.format(name="w"))
    code, _, err = run_cli(["lint", "--rules", pack, tmp_path / "w.yaml"], timeout=30)
    assert code == 2 and "pack.yaml" in err and said in err and "internal error" not in err, err
    # `rules validate` (a CI job checking the repository's packs) read it on its own: a FIFO blocked it for ever
    code, out, err = run_cli(["rules", "validate", pack], timeout=30)
    assert code == 2 and "pack.yaml" in out and said in out and "internal error" not in err, out + err


@pytest.mark.parametrize("limit", ["4Mi", "32Mi"])
def test_an_endless_standard_input_is_refused_at_the_size_limit(limit: str) -> None:
    """`yes | dramigrate lint -` was read until memory ran out: standard input is read one byte past the limit, and
    what was read is not split into lines once refused (32 MiB of short lines took 570 MB)."""
    measure = "import resource,subprocess,sys; subprocess.run(sys.argv[1:]); print(resource.getrusage(-1).ru_maxrss)"
    with subprocess.Popen(["yes", "a: b"], stdout=subprocess.PIPE) as endless:
        done = subprocess.run(
            [sys.executable, "-c", measure, dramigrate_executable(), "lint", "-", "--max-file-size", limit],
            stdin=endless.stdout,
            capture_output=True,
            timeout=60,
            check=False,
        )
        endless.kill()
    said = (done.stdout + done.stderr).decode()
    assert f"-: file is larger than the {limit.removesuffix('Mi')} MiB limit (--max-file-size)" in said, said
    assert int(said.split()[-1]) < 300 * 1024, said  # peak resident KiB of dramigrate


def test_a_document_of_too_many_values_for_the_full_reader_is_named_before_it_is_built(
    tmp_path: Path, run_cli: RunCli
) -> None:
    """A pod whose document the fast reader declines (here a plain `y`, YAML 1.1's yes) holding a flow list of
    300,000 numbers was built by ruamel value by value (3 million: 70 s and 2.8 GB) and refused only past 2 million
    nodes; it is counted from libyaml's events first and named, and the good file beside it is still migrated."""
    from dramigrate.documents import MAX_ROUND_TRIP_VALUES

    big = POD.format(name="big") + "    env: [{name: a, value: y}]\n" + "x: [" + "1," * 300_000 + "1]\n"
    (tmp_path / "big.yaml").write_text(big)
    (tmp_path / "good.yaml").write_text(POD.format(name="good"))
    code, out, err = run_cli(["fix", tmp_path, "--format", "json"], timeout=60)
    assert code == 2, err
    (bad,) = json.loads(out)["errors"]
    assert bad["file"].endswith("big.yaml")
    assert f"this document holds more than {MAX_ROUND_TRIP_VALUES:,} values" in bad["message"]
    assert "resourceClaims" in (tmp_path / "good.yaml").read_text()
    assert (tmp_path / "big.yaml").read_text() == big


def test_the_full_reader_takes_a_bounded_number_of_values_from_one_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """Many documents under the per-document bound add up: the file's budget refuses the one that goes past it."""
    from dramigrate import documents

    monkeypatch.setattr(documents, "MAX_ROUND_TRIP_FILE_VALUES", 1_000)
    doc = "a: &x [" + "1," * 299 + "1]\nb: *x\n"  # an anchor: the fast reader declines it; ruamel reads it
    yf = documents.split_documents("many.yaml", (("---\n" + doc) * 5).encode())
    for d in yf.documents[:3]:
        documents.parse_document("many.yaml", d)
    with pytest.raises(
        InputError,
        match=r"documents of this file that need the full YAML reader \(anchors, tags, floats\) hold more than 1,000 ",
    ):
        documents.parse_document("many.yaml", yf.documents[3])


@pytest.mark.parametrize(
    "where",
    [f"{w}{how}" for w in ("kustomization", "config", "rules") for how in ("", ", a flow mapping")],
)
def test_settings_files_of_too_many_values_are_named_before_they_are_built(
    tmp_path: Path, run_cli: RunCli, where: str
) -> None:
    """A kustomization, a repository config or a rule pack holding a list of hundreds of thousands of values (under
    their size limits) was built value by value first: 20 s and 600 MB for a 3 MB kustomization, 29 s for a 1 MB
    config, 25 s and 700 MB for a 1 MiB pack, on every lint. Each is counted first and named. A kustomization is
    counted only when its length could pass the limit: a flow mapping of one-letter keys, a value a character, is
    still counted and named (a config or a pack of half the limit's length in characters passed it twice over)."""
    from dramigrate.config import MAX_CONFIG_VALUES
    from dramigrate.kustomize.graph import MAX_KUSTOMIZATION_VALUES
    from dramigrate.rules import MAX_RULE_FILE_VALUES

    mapping = where.endswith("flow mapping")
    where = where.split(",")[0]
    limit = {"kustomization": MAX_KUSTOMIZATION_VALUES, "config": MAX_CONFIG_VALUES, "rules": MAX_RULE_FILE_VALUES}
    many = "{" + "a," * (limit[where] // 2) + "a}" if mapping else "[" + "a," * limit[where] + "a]"
    (tmp_path / ".git").mkdir()
    (tmp_path / "good.yaml").write_text(POD.format(name="good"))
    args = ["lint", "good.yaml", "--format", "json"]
    if where == "kustomization":
        (tmp_path / "k").mkdir()
        (tmp_path / "k" / "pod.yaml").write_text(POD.format(name="k"))
        (tmp_path / "k" / "kustomization.yaml").write_text(f"resources: [pod.yaml]\nlabels: {many}\n")
        args = ["lint", ".", "--format", "json"]
        said = f"the kustomization holds more than {limit[where]:,} values"
    elif where == "config":
        (tmp_path / ".dramigrate.yaml").write_text(f"exclude: {many}\n")
        said = f".dramigrate.yaml:1: config holds more than {limit[where]:,} values; not read"
    else:
        (tmp_path / "pack.yaml").write_text(f"schemaVersion: 1\nkind: RulePack\nname: p\nresources: {many}\n")
        args += ["--rules", "pack.yaml"]
        said = f"pack.yaml: rules file holds more than {limit[where]:,} values"
    code, out, err = run_cli(args, cwd=tmp_path, timeout=60)
    assert code == 2 and said in out + err, out + err
    if where == "kustomization":  # bad input of its own file: the good file is still checked
        assert [f["name"] for f in json.loads(out)["findings"] if f["rule"] == "legacy-device-request"] == ["good"]
