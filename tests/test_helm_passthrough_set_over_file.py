"""A --set of a device key given with a values file that gets a DRA variant (pattern B): the variant writes null
where the map held the key, so Helm cannot parse the --set through it, and the key put back would ask twice. fix
says what to do (was: "the rewritten chart does not render: failed parsing --set data ... interface {} is nil").

Renders are real (the Helm engine embedded in helm-python-sdk).
"""

from __future__ import annotations

from pathlib import Path

from conftest import TOYAML_SERVER, RunCli, chart_with

DEVICE_SET = "resources.limits.nvidia\\.com/gpu=2"


def write(tmp_path: Path) -> tuple[Path, Path]:
    chart = chart_with(
        tmp_path,
        "server",
        {
            "templates/server.yaml": TOYAML_SERVER,
            "values.yaml": "resources:\n  requests:\n    cpu: 500m\n  limits:\n    nvidia.com/gpu: 1\n",
        },
    )
    example = tmp_path / "l4.yaml"
    example.write_text("resources:\n  limits:\n    nvidia.com/gpu: 1\n")
    return chart, example


def test_a_device_set_over_a_varied_values_file_says_to_put_it_in_a_file(run_cli: RunCli, tmp_path: Path) -> None:
    chart, example = write(tmp_path)
    code, _, err = run_cli(["fix", str(chart), "-f", str(example), "--set", DEVICE_SET])
    assert code != 0, err
    assert f"--set {DEVICE_SET} sets device keys that the DRA variants" in err, err
    assert "put those --set options in a -f values file" in err, err
    assert "failed parsing --set data" not in err, err
    assert not (tmp_path / "l4-dra.yaml").exists()


def test_the_advice_works_the_count_in_a_file_gets_its_variant(run_cli: RunCli, tmp_path: Path) -> None:
    chart, example = write(tmp_path)
    two = tmp_path / "two.yaml"
    two.write_text("resources:\n  limits:\n    nvidia.com/gpu: 2\n")
    code, _, err = run_cli(["fix", str(chart), "-f", str(example), "-f", str(two)])
    assert code == 0, err
    assert "count: 2" in (tmp_path / "two-dra.yaml").read_text()
