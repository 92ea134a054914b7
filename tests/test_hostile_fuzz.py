"""Inputs an external mutation fuzzer (good GPU manifests with tokens inserted, lines doubled, bytes flipped) found
to end in an internal error instead of a finding on their file."""

from __future__ import annotations

import pytest
from conftest import ONE_GPU_POD

from dramigrate.config import Settings
from dramigrate.migrate import Job, run_file
from dramigrate.rules import load_rules
from dramigrate.versions import Target


@pytest.mark.parametrize("fix", [False, True], ids=["lint", "fix"])
@pytest.mark.parametrize(
    "text",
    [
        ONE_GPU_POD.format(name="!!int pod"),  # a tag the value does not fit: the API server refuses it too
        ONE_GPU_POD.format(name="pod").replace("nvidia.com/gpu: 1", "!!float nvidia.com/gpu: 1"),
    ],
    ids=["int-tag-on-a-name", "float-tag-on-a-key"],
)
def test_a_value_that_does_not_fit_its_tag_is_bad_input_of_its_file(text: str, fix: bool) -> None:
    settings = Settings()

    result = run_file(Job("pod.yaml", text.encode(), fix), load_rules(settings.rules), settings, Target.parse("1.36"))

    assert [f.rule for f in result.findings if f.rule == "internal-error"] == []
    assert result.error is not None and "does not fit its tag" in result.error.message
    assert result.rewritten is None


QUOTA = "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: q\nspec:\n  hard:\n    requests.nvidia.com/gpu: 4\n"


@pytest.mark.parametrize(
    "text",
    [
        QUOTA.replace("spec:\n  hard:\n", "spec: text\nhard:\n"),  # the seventh sweep's mutation: `spec` a string
        QUOTA.replace("spec:\n  hard:\n", "spec:\n- hard:\n"),
    ],
    ids=["quota-spec-a-string", "quota-spec-a-list"],
)
def test_a_resource_quota_of_the_wrong_shape_is_left_to_the_api_server(text: str) -> None:
    """A ResourceQuota whose `spec` is not a mapping ended its file in an internal error (quota checks read
    spec.hard from it); it is left as it is, for the API server to refuse, and the pod beside it is migrated."""
    settings = Settings()
    raw = (text + "---\n" + ONE_GPU_POD.format(name="pod")).encode()

    result = run_file(Job("all.yaml", raw, True), load_rules(settings.rules), settings, Target.parse("1.36"))

    assert [f.message for f in result.findings if f.rule == "internal-error"] == []
    assert result.error is None
    assert result.rewritten is not None and "resourceClaimTemplateName" in result.rewritten
    assert result.rewritten.startswith(text)
