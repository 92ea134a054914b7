"""A helper that writes its device key in several branches of one `if`/`else if` chain, each branch with its own
count (coreweave's `cosmos3.resources`: `eq $gpu 1` writes `nvidia.com/gpu: "1"`, `eq $gpu 8` writes "8", and
`eq $gpu 0` no key at all).

At most one branch renders, so the helper's count is the count of the branch that does: `<helper>.draCount` replays
the helper's control and assignment lines and writes, in each branch, the count of that branch's key (its limits
key where the branch writes the key under `requests:` and `limits:`). Keys that could render together (one in an
outer branch, another inside it, or in a `range`) are not taken: the helper would request the device twice.
"""

from __future__ import annotations

import re

from dramigrate.helm.helper import Block, KeyLine, NotHelper, blocks, enclosing
from dramigrate.helm.locate import _ACTION
from dramigrate.helm.templatelines import section_of

Branch = tuple[tuple[int, int], ...]  # (block start line, branch number) from the outermost block in

_REPLAYED = re.compile(r"\{\{-?\s*(/\*|(if|else|end|range|with)\b|\$\w+\s*:?=)")


def branch_of(all_blocks: list[Block], define: Block, index: int) -> Branch:
    """Where line `index` sits inside the helper's define: each enclosing block and which of its branches."""
    out = []
    for b in enclosing(all_blocks, index):
        if b.start > define.start:
            out.append((b.start, sum(1 for at, _ in b.branches if at < index)))
    return tuple(out)


def _exclusive(a: Branch, b: Branch, words: dict[int, str]) -> bool:
    """Whether two lines can never both render: they part at two branches of one `if`."""
    for x, y in zip(a, b, strict=False):
        if x != y:
            return x[0] == y[0] and words[x[0]] == "if"
    return False


def per_branch(text: str, define: Block, keys: list[KeyLine]) -> dict[Branch, KeyLine] | None:
    """The key whose count each branch renders, when the helper's key lines sit in two or more branches that never
    render together with different counts; None when they sit in one branch or write one count (helper.build's own
    checks apply). NotHelper when the branches write different device resources, or two can render together."""
    all_blocks = blocks(text)
    lines = text.splitlines()
    groups: dict[Branch, list[KeyLine]] = {}
    for k in keys:
        groups.setdefault(branch_of(all_blocks, define, k.index), []).append(k)
    pair = sorted(section_of(lines, k.index) for k in keys) == ["limits", "requests"]
    if len(groups) < 2 or pair or len({(k.resource, k.name_expr, k.count) for k in keys}) == 1:
        return None  # one count (or vllm's requests and limits, each from its values key): helper.build's own path
    if len({(k.resource, k.name_expr) for k in keys}) != 1:
        raise NotHelper(f"{keys[0].file}: the helper's branches write different device keys")
    words = {b.start: b.word for b in all_blocks}
    chosen: dict[Branch, KeyLine] = {}
    for where, group in groups.items():
        counts = {k.count for k in group}
        sections = sorted(section_of(lines, k.index) for k in group)
        if len(counts) != 1 and sections != ["limits", "requests"]:
            raise NotHelper(f"{group[0].file}:{group[0].index + 1}: one branch of the helper writes several counts")
        chosen[where] = min(group, key=lambda k: (section_of(lines, k.index) != "limits", k.index))
    paths = sorted(chosen)
    for n, a in enumerate(paths):
        for b in paths[n + 1 :]:
            if not _exclusive(a, b, words):
                line = min(chosen[a].index, chosen[b].index) + 1
                raise NotHelper(f"{keys[0].file}:{line}: two of the helper's device keys can render together")
    return chosen


def count_define(text: str, define: str, block: Block, chosen: dict[Branch, KeyLine], part: str = "draCount") -> str:
    """`<helper>.draCount` for a helper that writes its key in several branches: the helper's control and assignment
    lines replayed, and in each branch the count of that branch's key (only when it names the device migrated);
    `<helper>.<part>` with what the keys hold as their count (helperchoice: each branch's device resource)."""
    lines = text.splitlines()
    at = {k.index: k for k in chosen.values()}
    body = []
    for i in range(block.start + 1, block.end):
        key = at.get(i)
        if key is not None:
            count = f"{{{{ {key.count} }}}}"
            if key.name_expr:
                count = f'{{{{- if eq ({key.name_expr} | toString) "{key.resource}" }}}}{count}{{{{- end }}}}'
            body.append(count)
            continue
        actions = _ACTION.findall(lines[i])
        if actions and not _ACTION.sub("", lines[i]).strip() and all(_REPLAYED.match(a) for a in actions):
            body.append(lines[i].strip())  # YAML the helper writes (`requests:`, `cpu: "8"`) is no part of the count
    return f'{{{{- define "{define}.{part}" -}}}}\n' + "\n".join(body) + "\n{{- end }}\n"
