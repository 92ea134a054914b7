"""The namespaces the pass-through's claim-template file renders its ResourceClaimTemplates in, when the workloads that
take the values resources maps name different ones (jump-cannon: its RayCluster in `{{ $computeNamespace }}`, its
nightly CronJob in `{{ $performanceNamespace }}`).

A ResourceClaimTemplate is namespaced and a pod's claim template must be in the pod's namespace, so the file renders
each template once in every namespace a workload renders in: each namespace expression, with the assignments it reads,
appended to a list under the `if`s its workload renders in (a variable the template sets inside them is set there),
then the empty ones dropped and the same namespace once. With the default values every expression is usually the
release's namespace, and the file renders as the one-namespace form did."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from dramigrate.helm.rewrite import RewriteError, _actions
from dramigrate.helm.templatelines import action_body
from dramigrate.helm.values import with_paths

NAMESPACES = "$namespaces"  # the claim-template file's list of namespaces; `range $namespace := $namespaces`
EACH_NAMESPACE = "{{ $namespace }}"  # the namespace of one claim template of that range
_PLAIN = re.compile(r"^\$?[\w.]+$")  # a variable or a values key: an argument as it is
_ONE_ACTION = re.compile(r"^\{\{-?\s*(.*?)\s*-?\}\}$", re.S)


@dataclass(frozen=True)
class Namespaced:
    """A workload template's `namespace:` line: as written, as the claim-template file reads it (`$.Values`), where,
    and the assignments it reads (idiomatic._definitions: action bodies, with the blocks open at the line)."""

    own: str
    rooted: str
    rel: str
    line: int
    defs: tuple[str, ...]
    guards: tuple[str, ...] = ()  # the `if`/`with` blocks open at the line (guards), outermost first
    guarded_defs: tuple[str, ...] = ()  # the assignments it and its guards read


def guards(text: str, offset: int) -> tuple[str, ...]:
    """The bodies of the `if`/`with` blocks open at `offset` (`if .Values.a.enabled`), outermost first: the workload
    renders only where they do; () where another block is open there (a `range`, a define) or the line is in an
    `else` branch, which the claim-template file does not replay."""
    stack: list[tuple[str, bool]] = []  # (body, in an else)
    for start, end, word in _actions(text):
        if start >= offset:
            break
        if word in ("if", "with", "range", "define", "block"):
            stack.append((action_body(text[start:end]), False))
        elif word == "else" and stack:
            stack[-1] = (stack[-1][0], True)
        elif word == "end" and stack:
            stack.pop()
    if any(e or b.split(None, 1)[0] not in ("if", "with") for b, e in stack):
        return ()
    return tuple(b for b, _ in stack)


def many_namespaces(found: list[Namespaced]) -> tuple[str, str]:
    """What the claim-template file sets before its `range` over the templates, and the namespace of one: the one
    expression and the assignments it reads; for several, each one's assignments then the expression appended to
    `$namespaces` under the blocks its workload renders in (a variable set in two templates alike is declared again
    before the second), and `$namespace`, the item of a `range` over that list without empty or repeated namespaces.
    Raises RewriteError, with what to do by hand, where an expression of several is not one template action."""
    from dramigrate.helm.idiomatic import _carrying

    if len(found) == 1:
        return _carrying(list(found[0].defs), False), found[0].rooted
    out = f"{{{{- {NAMESPACES} := list }}}}\n"
    for n in found:
        one = _ONE_ACTION.match(n.rooted)
        if one is None or "{{" in one.group(1):
            raise RewriteError(
                f"{n.rel}:{n.line}: pattern B/C (values resources maps passed through): the workloads that take the "
                "resources maps name different namespaces ("
                + ", ".join(f"{x.rel}:{x.line} `{x.own}`" for x in found)
                + f"), and `{n.own}` is not one template action the claim-template file can list. By hand: beside "
                "each resources map, a resourceClaims list for its pods, and a ResourceClaimTemplate for each "
                "namespace that uses it, written where the workload is, with the workload's namespace; or keep the "
                "device-plugin requests and serve them with a DeviceClass with extendedResourceName (--strategy "
                "extended-resource, Kubernetes 1.34+)"
            )
        item = one.group(1) if _PLAIN.match(one.group(1)) else f"({one.group(1)})"
        before, inside = _set_inside(n.guarded_defs, n.guards)
        append = "".join(f"{{{{ {x} }}}}" for x in [*n.guards, *inside, f"{NAMESPACES} = append {NAMESPACES} {item}"])
        out += _carrying(before, False) + "{{-" + append[2:] + "{{ end }}" * len(n.guards) + "\n"
    return out, EACH_NAMESPACE


def _set_inside(defs: tuple[str, ...], openers: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """The assignments `defs` (idiomatic._definitions) to make before the workload's `openers`, and those to make
    inside them: a variable the template sets inside the same blocks, which _definitions declares empty above them
    and sets inside (`$ns := ""`, `if .Values.a.enabled`, `$ns = X`, `end`), is set there once (`$ns := X`)."""
    before, inside, k, i = [], [], len(openers), 0
    while i < len(defs):
        declared = re.fullmatch(r'\$(\w+) := ""', defs[i])
        body = defs[i + 1 + k] if i + 1 + k < len(defs) else ""
        if (
            k
            and declared
            and defs[i + 1 : i + 1 + k] == openers
            and body.startswith(f"${declared.group(1)} = ")
            and defs[i + 2 + k : i + 2 + 2 * k] == ("end",) * k
        ):
            inside.append(body.replace(" = ", " := ", 1))
            i += 2 + 2 * k
        else:
            before.append(defs[i])
            i += 1
    return before, inside


NAMESPACES_APART = "each namespace key of the values set to a namespace of its own"
_NAMESPACE_KEY = re.compile(r"(?i)namespace(override)?$")  # `namespace`, `computeNamespace`, `namespaceOverride`


def namespaces_apart(values: dict[str, Any]) -> dict[str, Any] | None:
    """The values with each string under a namespace key (`graphCompute.namespace`, `namespaceOverride`; not in a
    list) set to a namespace of its own, `dra-ns-1` on: the proof's value set where the workloads that name one are
    each in another namespace, and a claim template rendered in the wrong one, or missing from one, shows. None where
    the values have no such key."""
    paths: list[tuple[str, ...]] = []

    def walk(node: dict[str, Any], path: tuple[str, ...]) -> None:
        for key, value in node.items():
            if isinstance(value, dict):
                walk(value, (*path, str(key)))
            elif isinstance(value, str) and _NAMESPACE_KEY.search(str(key)) and str(key)[:1].isalpha():
                paths.append((*path, str(key)))

    walk(values, ())
    return with_paths(values, [(p, f"dra-ns-{i + 1}") for i, p in enumerate(paths)]) if paths else None
