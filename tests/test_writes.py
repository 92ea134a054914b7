"""Safe writes: fix keeps what a file was (owner, group, mode, extended attributes, symlinks, encoding, JSON),
refuses files it should not replace unless forced, keeps backups on request and cleans its own stale temp files."""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path

import pytest
import yaml
from conftest import ONE_GPU_POD, RunCli

from dramigrate.findings import InputError
from dramigrate.writer import write_atomic

POD = ONE_GPU_POD
JSON_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "j"},
    "spec": {"containers": [{"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
}
OTHER_UID = 4242
DEAD_PID = 2**22 + 12345  # above pid_max: no such process


def _migrated(raw: bytes | str) -> bool:
    text = raw if isinstance(raw, str) else raw.decode("utf-8")
    return "nvidia.com/gpu: 1" not in text and "resourceClaimTemplateName" in text


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory, run_cli: RunCli) -> tuple[Path, Path, int, str, str]:
    """One fix --backup run over a folder holding every kind of file a careful operator cares about."""
    top = tmp_path_factory.mktemp("writes")
    outside = tmp_path_factory.mktemp("outside")
    for name in ("kept", "readonly", "linked", "others", "target"):
        (top / f"{name}.yaml").write_text(POD.format(name=name))
    os.chmod(top / "kept.yaml", 0o640)
    try:
        os.setxattr(top / "kept.yaml", "user.owner-note", b"platform-team")
    except OSError as exc:  # pragma: no cover - file systems without user xattrs
        if exc.errno not in (errno.ENOTSUP, errno.EOPNOTSUPP):
            raise
    os.chmod(top / "readonly.yaml", 0o444)
    os.link(top / "linked.yaml", top / "link2.yaml")
    if os.geteuid() == 0:
        os.chown(top / "others.yaml", OTHER_UID, OTHER_UID)
    os.symlink("target.yaml", top / "alias.yaml")
    (outside / "secret.yaml").write_text(POD.format(name="secret"))
    os.symlink(outside / "secret.yaml", top / "escape.yaml")
    (top / "manifest.json").write_text(json.dumps(JSON_POD, indent=4) + "\n")
    (top / "wide.yaml").write_bytes(POD.format(name="wide").encode("utf-16"))
    (top / f".kept.yaml.{DEAD_PID}.abc123.dramigrate").write_text("half a write from a killed run")
    code, out, err = run_cli(["fix", "--backup", top], timeout=120)
    return top, outside, code, out, err


def test_mode_and_extended_attributes_kept(tree: tuple[Path, Path, int, str, str]) -> None:
    top, *_ = tree
    kept = top / "kept.yaml"
    assert _migrated(kept.read_bytes())
    assert stat.S_IMODE(kept.stat().st_mode) == 0o640
    if "user.owner-note" in os.listxattr(top / "kept.yaml.orig"):
        assert os.getxattr(kept, "user.owner-note") == b"platform-team"


def test_refused_files_are_named_and_untouched(tree: tuple[Path, Path, int, str, str]) -> None:
    top, _, code, _, err = tree
    assert code == 2
    for name, why in (("readonly", "read-only file"), ("link2", "has 2 hard links")):
        assert f"{name}.yaml: {why}" in err
        assert not _migrated((top / f"{name}.yaml").read_bytes())
    assert os.stat(top / "linked.yaml").st_ino == os.stat(top / "link2.yaml").st_ino
    if os.geteuid() == 0:
        assert f"others.yaml: owned by user {OTHER_UID}, not by you; not written" in err
        assert not _migrated((top / "others.yaml").read_bytes())


def test_a_file_hard_linked_under_two_names_is_refused_once_naming_both(
    tree: tuple[Path, Path, int, str, str],
) -> None:
    """Both names were checked, reported and refused apart, each refusal said three times (the report, `not
    written:` and `failed:`); the file is now checked once, under its first name, its refusal names the other, and
    the summary lists it under `not written:` alone (its request, not fixable, says why: lint and diff say so too)."""
    top, _, _, _, err = tree
    other = f"({top / 'linked.yaml'}: the same file, hard-linked, left as it is too)"
    assert f"{top / 'link2.yaml'}: has 2 hard links" in err and other in err, err
    request = [line for line in err.splitlines() if "link2.yaml:" in line and "[legacy-device-request]" in line]
    assert len(request) == 1 and "(fixable)" not in request[0] and "has 2 hard links" in request[0], err
    assert err.count("has 2 hard links") == 3, "said as bad input, by the request, and in `not written:` only"
    assert f"{top / 'linked.yaml'}:" not in err.replace(other, ""), "no finding nor refusal of its own"
    assert "link2.yaml" not in err.split("\nfailed:")[-1], "named in the one list of files not written"


def test_force_writes_them_keeping_the_owner(tmp_path: Path, run_cli: RunCli) -> None:
    f = tmp_path / "f.yaml"
    f.write_text(POD.format(name="f"))
    os.chmod(f, 0o444)
    if os.geteuid() == 0:
        os.chown(f, OTHER_UID, OTHER_UID)
    code, _, err = run_cli(["fix", "--force", f])
    assert code == 0, err
    assert _migrated(f.read_bytes())
    st = f.stat()
    assert stat.S_IMODE(st.st_mode) == 0o444
    if os.geteuid() == 0:
        assert (st.st_uid, st.st_gid) == (OTHER_UID, OTHER_UID)


def test_symlinks_written_through_inside_the_tree_only(tree: tuple[Path, Path, int, str, str]) -> None:
    top, outside, *_ = tree
    assert (top / "alias.yaml").is_symlink()
    assert _migrated((top / "target.yaml").read_bytes())
    assert (top / "escape.yaml").is_symlink()
    assert not _migrated((outside / "secret.yaml").read_bytes())


def test_backup_and_stale_temp_files(tree: tuple[Path, Path, int, str, str], tmp_path: Path, run_cli: RunCli) -> None:
    top, *_ = tree
    assert (top / "kept.yaml.orig").read_text() == POD.format(name="kept")
    assert not list(top.glob(".kept.yaml.*.dramigrate"))
    f = tmp_path / "g.yaml"
    f.write_text(POD.format(name="g"))
    code, _, err = run_cli(["fix", "--backup=.before-dra", f])
    assert code == 0, err
    assert (tmp_path / "g.yaml.before-dra").read_text() == POD.format(name="g")
    # a suffix holding a folder separator is refused before any work (each file failed with "Not a directory")
    h = tmp_path / "h.yaml"
    h.write_text(POD.format(name="h"))
    for suffix in ("/../../x", ""):  # an empty one (`--backup=$UNSET`) wrote no backup and said nothing
        code, _, err = run_cli(["fix", f"--backup={suffix}", h])
        assert code == 2 and "--backup takes a non-empty suffix for each file's name, without a '/'" in err
        assert h.read_text() == POD.format(name="h")


def test_a_backup_suffix_naming_a_manifest_is_refused_before_any_work(tmp_path: Path, run_cli: RunCli) -> None:
    """--backup=.yaml kept `a.yaml.yaml` beside each file: a manifest the next lint failed on (the legacy request is
    still in it) and the next fix migrated, with a backup of the backup. Such a suffix is now a usage error before
    anything is read or written."""
    f = tmp_path / "a.yaml"
    f.write_text(POD.format(name="a"))
    for suffix in (".yaml", ".bak.yml", ".JSON", "-old.Yaml"):
        code, out, err = run_cli(["fix", f"--backup={suffix}", tmp_path])
        assert code == 2, err
        assert f"--backup={suffix}: each backup would be named like a manifest" in err, err
        assert "Traceback" not in err + out
        assert [p.name for p in tmp_path.iterdir()] == ["a.yaml"]
        assert f.read_text() == POD.format(name="a")
    code, _, err = run_cli(["fix", "--backup=.yaml-before-dra", f])  # not a manifest's name: kept as asked
    assert code == 0, err
    assert (tmp_path / "a.yaml.yaml-before-dra").read_text() == POD.format(name="a")


def test_json_manifest_in_a_folder_stays_json(tree: tuple[Path, Path, int, str, str]) -> None:
    top, *_ = tree
    data = json.loads((top / "manifest.json").read_text())
    assert data["kind"] == "List"
    kinds = [i["kind"] for i in data["items"]]
    assert kinds == ["Pod", "ResourceClaimTemplate"]
    assert "limits" not in data["items"][0]["spec"]["containers"][0]["resources"]
    assert (top / "manifest.json").read_text().startswith('{\n    "apiVersion"')  # its own indentation


def test_utf16_manifest_migrated_and_written_back_in_utf16(tree: tuple[Path, Path, int, str, str]) -> None:
    top, *_ = tree
    raw = (top / "wide.yaml").read_bytes()
    assert raw.startswith(b"\xff\xfe")
    objects = list(yaml.safe_load_all(raw.decode("utf-16")))
    assert [o["kind"] for o in objects] == ["Pod", "ResourceClaimTemplate"]


def test_a_file_changed_since_it_was_read_is_not_overwritten(tmp_path: Path) -> None:
    f = tmp_path / "f.yaml"
    f.write_text("a: 1\n")
    with pytest.raises(InputError, match="changed since it was read"):
        write_atomic(f, "a: 2\n", expected=b"a: 0\n")
    assert f.read_text() == "a: 1\n"
    assert os.listdir(tmp_path) == ["f.yaml"]


def test_a_backup_name_taken_by_a_folder_is_that_files_failure_and_nothing_leaves_the_tree(
    tmp_path: Path, run_cli: RunCli
) -> None:
    """--backup onto a folder copied the original into it, through a symlink planted there: out of the tree."""
    top, outside = tmp_path / "top", tmp_path / "outside"
    top.mkdir()
    outside.mkdir()
    for name in ("a", "b"):
        (top / f"{name}.yaml").write_text(POD.format(name=name))
    (top / "b.yaml.orig").mkdir()
    (top / "b.yaml.orig" / "b.yaml").symlink_to(outside / "leak.yaml")
    code, _, err = run_cli(["fix", "--backup", top])
    assert code == 2, err
    assert not list(outside.iterdir())
    assert "b.yaml" in err and "b.yaml.orig is a folder" in err
    assert (top / "b.yaml").read_text() == POD.format(name="b")  # the bad one untouched
    assert _migrated((top / "a.yaml").read_bytes()) and (top / "a.yaml.orig").read_text() == POD.format(name="a")
