"""Explicitly tagged values (`!!binary`, `!!str`, `!!int`, `!!null`, a custom `!Tag`, a tagged mapping) beside a
device request: fix changes the device lines as it does in the same document without the tag, and keeps every other
line byte for byte. A `!!binary` value anywhere in a Deployment made fix write the whole document again (ruamel
writes bytes back as a fresh `!!binary |` block, so its dump no longer matched the file line for line), re-spacing
lines the migration has nothing to do with: `image:   "app:1"` became `image: "app:1"`."""

from __future__ import annotations

import pytest

from dramigrate.config import Settings
from dramigrate.migrate import Job, run_file
from dramigrate.rules import load_rules
from dramigrate.versions import Target

# {first} goes beside the GPU request, {last} at the end of the document (after it, fix adds resourceClaims)
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app   # keep
spec:
  selector:
    matchLabels: {{app: app}}
  template:
    metadata:
      labels: {{app: app}}
    spec:
      containers:
        - name: app
          image:   "app:1"
          {first}
          resources:
            limits:
              nvidia.com/gpu: 1
              cpu:   "1"
        - name: side
          image:   'side:1'
          {last}
"""

TAGGED = {
    "binary": "data: !!binary aGVsbG8gd29ybGQ=",
    "binary-quoted": "data: !!binary 'aGVsbG8gd29ybGQ='",
    "binary-block": "data: !!binary |\n            aGVsbG8gd29ybGQ=",
    "str": "data: !!str 5",
    "str-two-lines": "data: !!str two\n            lines",
    "int": "data: !!int 5",
    "null": "data: !!null",
    "custom": "data: !Secret db-password",
    "custom-mapping": "data: !Config\n            key: value",
    "tagged-mapping": "data: !!map\n            key: value",
}


def _fix(text: str) -> str:
    settings = Settings()
    result = run_file(Job("app.yaml", text.encode(), True), load_rules(settings.rules), settings, Target.parse("1.36"))
    assert result.error is None, result.error
    assert result.rewritten is not None
    return result.rewritten


@pytest.mark.parametrize("where", ["first", "last"])
@pytest.mark.parametrize("value", list(TAGGED.values()), ids=list(TAGGED))
def test_fix_keeps_every_line_of_a_document_with_a_tagged_value(value: str, where: str) -> None:
    plain = {"first": "data: first-plain", "last": "data: last-plain"}
    tagged = DEPLOYMENT.format(**{**plain, where: value})

    fixed = _fix(tagged)

    # The device edit is the untagged document's, and every other line is the input's, spacing included.
    assert fixed == _fix(DEPLOYMENT.format(**plain)).replace(plain[where], value)
    assert '          image:   "app:1"\n' in fixed


def test_a_tagged_value_fix_cannot_keep_refuses_its_document_at_its_line() -> None:
    """Where the minimal edit cannot be placed (a pod spec ending in a two-line `!!str` before another, each written
    on one line by ruamel), fix names the tagged value's line and writes nothing, not a re-spelled document."""
    text = (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n    - name: app\n"
        '      image:   "app:1"\n      resources:\n        limits:\n          nvidia.com/gpu: 1\n'
        "  hostname: !!str two\n    words\nstatus: !!str more\n  words\n"
    )
    settings = Settings()

    result = run_file(Job("pod.yaml", text.encode(), True), load_rules(settings.rules), settings, Target.parse("1.36"))

    assert result.rewritten is None
    assert result.error is not None and result.error.line == text.splitlines().index("  hostname: !!str two") + 1
    assert "!!str" in result.error.message and "nothing written" in result.error.message
