"""A hostile file's own characters in `diff` output: a reviewer reads the diff in a terminal or a CI log, where a CR
moves back over a line, ESC sequences clear the screen, retitle the window or hide a link, and bidirectional
overrides show text in another order than it is. diff shows them escaped, as every report shows input."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from conftest import ONE_GPU_POD, chart_with, run_dramigrate

# what no line of diff's output may hold as it is: C0 controls but tab and LF, DEL, C1, line and paragraph
# separators, bidirectional marks and overrides
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")

# A container whose comments and strings near its device request (inside the hunk's context) hold a CR alone
# (YAML reads it as a line break: `shown: ok` is a key of its own, the terminal draws it over the comment),
# bidirectional overrides and isolates, NEL and the Unicode line separators.
HOSTILE = ONE_GPU_POD.format(name="hostile").replace(
    "    resources:\n",
    '    env: ["nel\x85ls\u2028ps\u2029"]  # a comment\r    workingDir: /tmp\n'
    "    resources:  # \u202ednammoc\u202c \u2066isolated\u2069 \u2067rtl\u2069 \u2068first\u2069 \u200fmark\n",
)


def test_diff_shows_a_manifests_control_and_bidi_characters_escaped(tmp_path: Path) -> None:
    """A CR alone, U+202E, U+2066-2069 and NEL in a manifest's comments and strings reached the terminal as they were:
    the line after a CR was drawn over the comment before it (hiding that `workingDir` is a key, not a comment),
    and each CR, NEL or separator ended a diff line with `\\ No newline at end of file` in mid-file."""
    (tmp_path / "hostile.yaml").write_bytes(HOSTILE.encode())
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    code, out, err = run_dramigrate(["diff", tmp_path])

    assert code == 0, err
    assert not RAW.search(out), [line for line in out.splitlines() if RAW.search(line)]
    assert "No newline at end of file" not in out
    shown = out.split("hostile.yaml\n")[-1]  # the hostile file's hunks: shown as a reviewer must read them
    assert "\\u202ednammoc\\u202c \\u2066isolated\\u2069 \\u2067rtl\\u2069 \\u2068first\\u2069 \\u200fmark" in shown
    # two lines, as YAML reads them
    assert '     env: ["nel\\x85ls\\u2028ps\\u2029"]  # a comment\\r\n     workingDir: /tmp\n' in shown
    assert "hostile.yaml: the diff shows control characters" in err and "good.yaml: the diff" not in err
    assert (tmp_path / "hostile.yaml").read_bytes() == HOSTILE.encode()  # diff writes nothing


def test_the_diff_of_a_clean_crlf_file_still_applies(tmp_path: Path) -> None:
    """A CRLF file keeps its line ends in the diff (a CR before LF moves nothing on a terminal): `git apply` of
    diff's output writes what fix writes, and no note says otherwise."""
    (tmp_path / "crlf.yaml").write_bytes(ONE_GPU_POD.format(name="crlf").replace("\n", "\r\n").encode())
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)

    code, out, err = run_dramigrate(["diff", "."], cwd=tmp_path)

    assert code == 0 and "the diff shows" not in err, err
    (tmp_path / "d.patch").write_bytes(out.encode())
    subprocess.run(["git", "apply", "d.patch"], cwd=tmp_path, check=True)
    applied = {name: (tmp_path / name).read_bytes() for name in ("crlf.yaml", "good.yaml")}
    (tmp_path / "d.patch").unlink()
    assert run_dramigrate(["diff", "--check", "."], cwd=tmp_path)[0] == 0  # what fix would write, exactly
    assert b"resourceClaimTemplateName" in applied["crlf.yaml"]
    assert b"\n" not in applied["crlf.yaml"].replace(b"\r\n", b"")  # CRLF still


def test_diff_shows_terminal_escapes_of_a_chart_template_escaped(tmp_path: Path) -> None:
    """A template comment (which YAML never reads) held ESC [ 2J (clear screen), SGR colours, an OSC 8 hyperlink
    that hides its target, ESC ] 0 ; title BEL and a CR: diff printed them to the terminal, which obeyed."""
    hostile = (
        "  {{/* \x1b[2J\x1b[31mred\x1b[0m \x1b]8;;https://evil.example\x1b\\innocent\x1b]8;;\x1b\\ "
        "\x1b]0;pwned\x07 \x9b1m \rover \u202eabc */}}\n"
    )
    template = ONE_GPU_POD.format(name="{{ .Release.Name }}").replace("  containers:\n", hostile + "  containers:\n")
    chart = chart_with(tmp_path, "app", {"templates/pod.yaml": template})
    (tmp_path / "good.yaml").write_text(ONE_GPU_POD.format(name="good"))

    code, out, err = run_dramigrate(["diff", chart, tmp_path / "good.yaml"])

    assert code == 0, err
    assert not RAW.search(out), [line for line in out.splitlines() if RAW.search(line)]
    assert "\\x1b[2J\\x1b[31mred\\x1b[0m \\x1b]8;;https://evil.example\\x1b\\innocent" in out
    assert "\\x1b]0;pwned\\x07 \\x9b1m \\r" in out
    assert "templates/pod.yaml: the diff shows control characters" in err
    assert "good.yaml: the diff" not in err and "resourceClaimTemplateName: good-" in out
    assert (chart / "templates/pod.yaml").read_bytes() == template.encode()
