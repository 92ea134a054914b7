"""A pod's `tolerations:` list that the chart writes at less indent than its key, so that any list a user sets fails
to render.

A CronJob template copied from a Deployment keeps the Deployment's `{{- toYaml . | nindent 8 }}` under a
`tolerations:` key that now sits at column 10 (under `jobTemplate.spec.template.spec`): the list's items land at
column 8, outside the key, and the render is a YAML parse error whenever the list is not empty. The DRA values
add the device plugin's toleration to that list (the manifest migration adds it to the pod), so the pass-through
indents the list under its key, two columns deeper. With the list empty, as in every render that worked before, the
block renders nothing: the chart renders as it did.
"""

from __future__ import annotations

import re

# what the proof says of a value set only the indented list renders
INDENTED = "a `tolerations:` list the chart wrote outside its key, which the rewrite indents under it"
_KEY = re.compile(r"( *)tolerations:\s*")
_BODY = re.compile(r"(\s*\{\{-\s*toYaml\s+\S+\s*\|\s*nindent\s+)(\d+)(\s*-?\}\})\s*")


def indented_tolerations(text: str) -> str:
    """The template with each `tolerations:` key whose next line is `{{- toYaml X | nindent N }}`, N less than the
    key's column, given N = that column + 2 (a list that renders some other way the proof compares as usual)."""
    lines = text.split("\n")
    for i in range(len(lines) - 1):
        key, body = _KEY.fullmatch(lines[i]), _BODY.fullmatch(lines[i + 1])
        if key and body and int(body.group(2)) < len(key.group(1)):
            lines[i + 1] = f"{body.group(1)}{len(key.group(1)) + 2}{body.group(3)}"
    return "\n".join(lines)
