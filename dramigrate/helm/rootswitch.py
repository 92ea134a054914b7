"""Call sites that build a helper's argument with `dict` (coreweave's `include "cosmos3.resources" (dict "gpu" 8)`).

The pattern-D switch is read from the object the helper gets (`dig "dra" "enabled" true $`), which for an argument
built at the call site is no values object: no value could ever turn the switch. Such a call site passes the chart's
own `dra` values block in, as one more `dict` entry, so `dra.enabled` in values.yaml switches it, as it does a
pattern-A chart. A call site whose argument holds only literals always renders the helper the same way: when its
template renders and the migration adds no claim there (`(dict "gpu" 0)`), it never asks for the device and is left
as it is.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from dramigrate.helm.helper import _BUILT, CallSite, blocks, enclosing
from dramigrate.helm.idiomatic import define_once

_LITERAL = re.compile(r"""\(dict(?:\s+(?:"[^"\\]*"|-?\d+(?:\.\d+)?|true|false))*\s*\)""")
ROOT_DRA = '"dra" (dig "dra" (dict) $.Values.AsMap)'


def constant(arg: str) -> bool:
    """Whether the helper's argument is a `dict` of literals only."""
    return bool(_LITERAL.fullmatch(arg))


def thread(root: Path, site: CallSite) -> CallSite:
    """The call site with the chart's `dra` values passed in its `dict` argument; the site as it is when the argument
    is no `dict` built there, or the include sits in a `define` (where `$` is no chart root)."""
    if not _BUILT.fullmatch(site.arg) or '"dra"' in site.arg:
        return site
    text = (root / site.rel).read_text(encoding="utf-8")
    if any(b.word in ("define", "block") for b in enclosing(blocks(text), site.index)):
        return site
    return replace(site, arg=f"{site.arg[:-1].rstrip()} {ROOT_DRA})", given=site.arg)


def threaded_line(line: str, define: str, site: CallSite) -> str:
    """The call site's include line with the threaded argument."""
    return line.replace(f'include "{define}" {site.given}', f'include "{define}" {site.arg}', 1)


def shared(text: str, define: str, site: CallSite) -> str:
    """The workload template with the argument passed in (`dict "gpu" 8 "dra" (dig ...)`), which the call site, the
    pod's claim and toleration and the claim template each pass to the helper, built once in a variable
    (`$resourcesArgs`, after the helper's last name part) where every use sees it; as it is when written once."""
    if not site.given:
        return text
    spans = [(m.start(), m.end(), "") for m in re.finditer(re.escape(site.arg), text)]
    name = "$" + re.sub(r"\W", "", define.rsplit(".", 1)[-1]) + "Args"
    spans = [(start, stop, name) for start, stop, _ in spans]
    return define_once(text, spans, name, site.arg[1:-1].strip()) if len(spans) > 1 else text
