"""A hostile `.gitignore` cannot slow the walk, and what it ignores is still ignored as git ignores it.

git's wildmatch tries every split of a name at each `*`: a repository whose `.gitignore` holds `*a*a*a*a*a*a*a*ab`
and a few files with long names kept `git check-ignore` busy past dramigrate's time limit (10 s), then again past
it with the fallback, and the run took 20 s only to lint every gitignored file as if nothing were ignored. When a
pattern is one git would match that slowly, dramigrate now matches the ignore files itself (gitignore.py), in time
bounded by the pattern and the path, and its answer is git's: compared here with `git check-ignore` itself on real
patterns (short names, where git answers at once).
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from conftest import ONE_GPU_POD, run_dramigrate

from dramigrate.sources import git_timeout

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

HOSTILE = "*a*a*a*a*a*a*a*ab"  # no file name here ends in b: every name is a miss, which wildmatch pays for

# real patterns of the kinds GitHub's gitignore templates and Helm/kustomize repositories use
PATTERNS = """\
/build
!/build/keep.yaml
docs/**/a.yaml
[Bb]in/
out/**
!out/b/
a/**/c.yaml
tmp*/
**/deep/*.yaml
x/*/z.yaml
sub/
[[:digit:]]*.yaml
*.y?l
**/*secret*.yaml
*-values*.yaml
!keep-values.yaml
nested/*
!nested/n
trail.yaml   
\\#hash.yaml
"""
NESTED = {"x/.gitignore": "!y/z.yaml\n", "docs/.gitignore": "*.yaml\n!a.yaml\n", "p/.gitignore": "/q.yaml\n"}
FILES = [
    "build/x.yaml",
    "build/keep.yaml",
    "x/build/y.yaml",
    "docs/a.yaml",
    "docs/b.yaml",
    "docs/x/y/a.yaml",
    "Bin/t.yaml",
    "bin/t.yaml",
    "out/a.yaml",
    "out/b/c.yaml",
    "a/c.yaml",
    "a/b/c.yaml",
    "a/x/b/c.yaml",
    "tmp1/a.yaml",
    "tmpfile.yaml",
    "p/deep/q.yaml",
    "deep/q.yaml",
    "p/q.yaml",
    "x/y/z.yaml",
    "x/y/w/z.yaml",
    "sub/a.yaml",
    "s/sub/b.yaml",
    "1.yaml",
    "c.yml",
    "my-secret-1.yaml",
    "app-values-prod.yaml",
    "keep-values.yaml",
    "nested/n/a.yaml",
    "nested/m/a.yaml",
    "trail.yaml",
    "#hash.yaml",
    "plain.yaml",
    "tracked-values.yaml",
]


def _repository(root: Path, gitignore: str) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".gitignore").write_text(gitignore)
    for name, text in NESTED.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    for i, name in enumerate(FILES):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(ONE_GPU_POD.format(name=f"p{i}"))
    # tracked: git never ignores a file in its index, whatever a pattern says
    subprocess.run(["git", "-C", str(root), "add", "-f", "tracked-values.yaml"], check=True)


def _linted(root: Path, folder: str = ".") -> tuple[set[str], str, float]:
    """The files lint of folder (from root) reported, its standard error (--verbose), and the seconds it took."""
    start = time.monotonic()
    code, out, err = run_dramigrate(["lint", folder, "--format", "json", "--verbose"], cwd=root)
    took = time.monotonic() - start
    assert code == 1 and "Traceback" not in err and "internal" not in err, err
    return {f["file"] for f in json.loads(out)["findings"]}, err, took


def _git_ignores(root: Path) -> set[str]:
    proc = subprocess.run(
        ["git", "-C", str(root), "check-ignore", "-z", "--stdin"],
        input="".join(f"{n}\0" for n in FILES),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return {n for n in proc.stdout.split("\0") if n}


def _long_names(root: Path) -> set[str]:
    """Files with names long enough for wildmatch to take seconds on each (no pattern here ignores them)."""
    names = {f"{'a' * (60 + i)}.yaml" for i in range(8)}
    for name in names:
        (root / name).write_text(ONE_GPU_POD.format(name=f"long{len(name)}"))
    return names


def test_with_a_hostile_pattern_the_ignore_files_still_ignore_what_git_ignores(tmp_path: Path) -> None:
    _repository(tmp_path, PATTERNS + HOSTILE + "\n")
    ignored = _git_ignores(tmp_path)  # git answers at once: these names are short
    assert 0 < len(ignored) < len(FILES) - 5 and "tracked-values.yaml" not in ignored  # the patterns do decide
    long_names = _long_names(tmp_path)
    linted, err, took = _linted(tmp_path)
    want = set(FILES) - ignored | long_names  # was: every file linted, nothing ignored, after 20 s
    assert linted == want, (sorted(linted - want), sorted(want - linted))
    assert "did not say" not in err and took < git_timeout(), (took, err)
    # a folder below the top of the work tree: the .gitignore files above it and in it still decide
    linted, err, took = _linted(tmp_path, "x")
    want = {n for n in FILES if n.startswith("x/") and n not in ignored}
    assert linted == want and took < git_timeout(), (sorted(linted ^ want), took, err)


def test_a_hostile_pattern_does_not_slow_the_walk(tmp_path: Path) -> None:
    _repository(tmp_path, f"{HOSTILE}\nsecret*.yaml\n")
    long_names = _long_names(tmp_path)
    (tmp_path / "secret-1.yaml").write_text(ONE_GPU_POD.format(name="secret"))
    linted, err, took = _linted(tmp_path)
    assert "secret-1.yaml" not in linted and long_names <= linted
    assert "did not say" not in err and took < git_timeout(), (took, err)  # was 20 s: git's limit, twice
    assert f"skipped git check-ignore: .gitignore:1 holds the pattern {HOSTILE!r}" in err, err  # --verbose


def test_the_matcher_answers_as_git_check_ignore_on_mixed_patterns(tmp_path: Path) -> None:
    """Random mixes of the real patterns (and the hostile one), negations across them included, over the same
    names: the files gitignore.py ignores are the files git ignores, mix by mix."""
    from dramigrate.gitignore import Ignores, parse

    lines = [*PATTERNS.splitlines(), HOSTILE, "*a*e*.yaml", "!*s*e*"]
    rng = random.Random(7)
    for mix in range(40):
        chosen = rng.sample(lines, rng.randint(2, 8))
        root = tmp_path / str(mix)
        root.mkdir()
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        (root / ".gitignore").write_text("\n".join(chosen) + "\n")
        proc = subprocess.run(
            ["git", "-C", str(root), "check-ignore", "--no-index", "-z", "--stdin"],
            input="".join(f"{n}\0" for n in FILES),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        git = {n for n in proc.stdout.split("\0") if n}
        top = parse("\n".join(chosen) + "\n", "", ".gitignore")
        ours = {n for n in FILES if Ignores([], lambda folder, top=top: top if not folder else []).ignored(n)}
        assert ours == git, (chosen, sorted(ours - git), sorted(git - ours))


def test_the_matcher_is_bounded_on_a_long_name() -> None:
    """A pattern git would try for longer than anyone waits, against a name of the longest a file system takes."""
    from dramigrate.gitignore import name_matches, units

    start = time.monotonic()
    assert not name_matches(units("*a" * 40 + "b"), "a" * 255)
    assert name_matches(units("*a" * 40 + "*"), "a" * 255)
    assert time.monotonic() - start < 1.0
