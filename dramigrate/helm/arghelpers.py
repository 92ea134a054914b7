"""Pattern B through a helper's argument: a helper that writes a container's `resources:` from the `resources` map
of the context it is called with (`{{- include "sim.resources" .Values.ollama | nindent 10 }}`, the define writing
`resources:` and then `toYaml .resources.limits` and `toYaml .resources.requests`, each under its own key).

Seen through the call site's argument, that is the values map `ollama.resources` passed through: the pass-through
rewrite (passthrough.py) reads the call as `toYaml .Values.ollama.resources`, and the helper gets the map's `claims`
under its `resources:` key (`{{- with .resources.claims }}`), which renders nothing for the other maps the helper is
called with (they have no claims).

The pod's tolerations may come from such a helper too (`{{- include "sim.tolerations" .Values.ollama | nindent 6 }}`,
the define writing `tolerations:` from `.tolerations`): tolerations_helpers finds those, whose call the pass-through
gives the argument with its list joined to the DRA values' (a second `tolerations:` key beside the call would clash
with the helper's)."""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from dramigrate.helm.helper import blocks
from dramigrate.helm.templatelines import is_key

# a field of `.` (`.resources`), not of a variable or of a call's result
_FIELD = re.compile(r"(?<![\w$)\]])\.([A-Za-z_]\w*)")
_WRITE = re.compile(r"\btoYaml\s+\.resources(?:\.(limits|requests))?(?![.\w])")
# a call with a values path (`include "sim.resources" .Values.ollama`, `$.Values.ollama`)
_CALL = re.compile(r'\b(?:include|template)\s+"([^"]+)"\s+\$?(\.Values(?:\.[A-Za-z_]\w*)+)(?=[\s|)}])')


@dataclass(frozen=True)
class ArgHelper:
    """A helper that writes `resources:` from its argument's `resources` map and reads nothing else of it."""

    rel: str  # the template file that defines it
    section: int  # 0-based line of its first `toYaml .resources.<section>`; -1 when it writes the map whole


def arg_helpers(templates: dict[str, str]) -> dict[str, ArgHelper]:
    """The chart's helpers (name -> ArgHelper) that write `resources:` from `.resources` of their argument alone."""
    out = {}
    for rel, text in templates.items():
        lines = text.splitlines()
        for b in blocks(text):
            name = re.fullmatch(r'"([^"]+)"', b.cond)
            body = lines[b.start + 1 : b.end]
            if b.word != "define" or name is None or set(_FIELD.findall("\n".join(body))) != {"resources"}:
                continue
            writes = [(b.start + 1 + j, m) for j, line in enumerate(body) if (m := _WRITE.search(line))]
            if not writes and _with_whole(body):
                writes = [(b.start, None)]
            if writes and any(is_key(line, "resources") for line in body):
                section = next((j for j, m in writes if m is not None and m.group(1)), -1)
                out[name.group(1)] = ArgHelper(rel, section)
    return out


# `{{- with .resources }}` then `{{- toYaml . | nindent 2 }}` and its `end`: the map written whole
_WITH_FIELD = re.compile(r"\{\{-?\s*with\s+\.resources\s*-?\}\}")
_TOYAML_DOT = re.compile(r"\{\{-?\s*toYaml\s+\.(?:\s*\|\s*n?indent\s+\d+)?\s*-?\}\}")
# a call with a dict whose `resources` is a values map (`include "app.resources" (dict "resources"
# .Values.worker.resources "context" $)`), the dict's other entries one term each
_DICT_CALL = re.compile(
    r'\b(?:include|template)\s+"([^"]+)"\s+\(\s*dict((?:\s+"[\w-]+"\s+[^\s()"]+)*?)'
    r'\s+"resources"\s+(\$?\.Values(?:\.[A-Za-z_]\w*)+|\$\w+(?:\.[A-Za-z_]\w*)+)((?:\s+"[\w-]+"\s+[^\s()"]+)*)\s*\)'
)


def _with_whole(body: list[str]) -> bool:
    """Whether the define writes its argument's `resources` map whole under `with .resources` (`toYaml .` on the next
    line)."""
    return any(
        _WITH_FIELD.fullmatch(line.strip()) and _TOYAML_DOT.fullmatch(after.strip())
        for line, after in zip(body, body[1:], strict=False)
    )


def expand_calls(text: str, helpers: Collection[str]) -> str:
    """The template with each call of an arg helper with a values path read as the `toYaml` of that path's
    `resources` map (`include "sim.resources" .Values.ollama` -> `toYaml .Values.ollama.resources`), and each call
    with a dict whose `resources` is a values map as the `toYaml` of that map (`include "app.resources" (dict
    "resources" .Values.worker.resources)` -> `toYaml .Values.worker.resources`), line for line."""
    if not helpers:
        return text
    text = _CALL.sub(lambda m: f"toYaml {m.group(2)}.resources" if m.group(1) in helpers else m.group(0), text)
    return _DICT_CALL.sub(lambda m: f"toYaml {m.group(3)}" if m.group(1) in helpers else m.group(0), text)


def called_maps(text: str, helpers: Collection[str]) -> set[tuple[str, tuple[str, ...]]]:
    """(helper, the values path of the `resources` map) for each call of an arg helper with a values path, or with a
    dict whose `resources` is a values map, in `text`."""
    paths = {(m.group(1), (*m.group(2).split(".")[2:], "resources")) for m in _CALL.finditer(text)}
    paths |= {
        (m.group(1), tuple(m.group(3).split(".")[2:]))
        for m in _DICT_CALL.finditer(text)
        if m.group(3).lstrip("$").startswith(".Values.")
    }
    return {(name, path) for name, path in paths if name in helpers}


def tolerations_helpers(templates: dict[str, str]) -> frozenset[str]:
    """The chart's helpers that write a pod's `tolerations:` key from the `tolerations` list of their argument in a
    shape the pass-through joins another list to (a `toYaml .tolerations` under the key, alone or under
    `if .tolerations`, or `toYaml .` under `with .tolerations`), whatever else they read of it."""
    from dramigrate.helm.passthrough import _joinable_list

    out = set()
    for text in templates.values():
        lines = text.splitlines()
        for b in blocks(text):
            name = re.fullmatch(r'"([^"]+)"', b.cond)
            body = lines[b.start + 1 : b.end]
            if b.word != "define" or name is None or not any(_TOLERATIONS_KEY.fullmatch(line) for line in body):
                continue
            # the body as a pod spec's keys (one level in), so that the pod-level shapes read it
            shifted = ["spec:", *(f"  {line}" for line in body)]
            head = next(f"  {line}" for line in body if _TOLERATIONS_KEY.fullmatch(line))
            found = _joinable_list(shifted, 0, head)
            if found is not None and found[2].group(2) == ".tolerations":
                out.add(name.group(1))
    return frozenset(out)


_TOLERATIONS_KEY = re.compile(r"tolerations:\s*")
