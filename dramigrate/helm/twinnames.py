"""Pattern E with the request and the limit named by values keys of their own (OpenVINO's ovms chart:
`{{ .Values.deployment_parameters.resources.limits.xpu_device }}: "{{ ...limits.xpu_device_quantity }}"` under
`if` that name, and the same from `.requests`, beside the container's cpu and memory keys). Kubernetes needs an
extended resource's request to name the resource its limit names, with an equal count: the claim is looked up by the
limit's name where the limit renders, else by the request's (a request alone is migrated as it is), and the claim
template fails the render when both render with different names (the device-plugin request was invalid)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dramigrate.helm.rewrite import RewriteError

if TYPE_CHECKING:
    from dramigrate.helm.model import Device


def unparenthesized(expr: str) -> str:
    """An expression without its parentheses: `(((.Values.r).limits).gpu)` and `.Values.r.limits.gpu` read alike
    (where both render: the first is empty, not failing, when a parent map is missing)."""
    return expr.replace("(", "").replace(")", "").replace("$.Values", ".Values").strip()


def _rendered_name(d: Device, shared: list[str]) -> str:
    """The key's name as a value that is false where the key does not render: the name under the conditions of its
    own, `(and <conditions> <name>)`, or the name alone when its one condition is the name being set."""
    from dramigrate.helm.goexpr import as_arg, grouped

    own = [c for c in d.conditions if c not in shared]
    if not own:
        return as_arg(d.name)
    if len(own) == 1 and unparenthesized(own[0]) == unparenthesized(d.name):
        return grouped(own[0])  # the chart's own spelling, which a missing parent map leaves empty, not failing
    return f"(and {' '.join(map(grouped, own))} {as_arg(d.name)})"


def one_name(rel: str, devices: list[Device], twins: dict[int, Device]) -> str:
    """The Go expression the pod's claim looks its device resource up by: the keys' one name, or, where each request
    and limit of a container (`twins`, request line -> limit key) name the resource by values keys of their own, the
    limit's name where it renders, else the request's. Raises RewriteError for keys of other names."""
    names = {d.name for d in devices if d.index not in twins}
    pairs = [(next(d for d in devices if d.index == index), limit) for index, limit in twins.items()]
    if len(names) != 1 or any(limit.name not in names for _, limit in pairs):
        found = ", ".join(dict.fromkeys(d.name for d in devices))
        raise RewriteError(f"{rel}: the pod's device keys are not all the one resource name from values ({found})")
    name = names.pop()
    for request, limit in pairs:
        if request.name == limit.name:
            continue
        shared = [c for c in limit.conditions if c in request.conditions]
        if shared == limit.conditions:
            continue  # the limit renders wherever the request does: its name is the claim's (names_check)
        if len(pairs) > 1:
            raise RewriteError(f"{rel}: several containers name their device's request and limit by values keys")
        name = f"or {_rendered_name(limit, shared)} {_rendered_name(request, shared)}"
    return name


def twin_names(devices: list[Device], twins: dict[int, Device]) -> dict[int, Device]:
    """The request keys of `twins` (request line -> limit key) that name their device by another expression than
    their limit's."""
    return {i: limit for i, limit in twins.items() if next(d for d in devices if d.index == i).name != limit.name}


def names_check(twins: dict[int, Device], devices: list[Device], cond: tuple[str, ...]) -> str:
    """Template text that fails the render when the DRA branch is on (`cond`), a request and its limit both render
    and they name different device resources (the claim asks for the limit's; the device-plugin request was
    invalid). The message is plain template text, without an apostrophe (see idiomatic._equal_check)."""
    from dramigrate.helm.goexpr import and_all, as_arg
    from dramigrate.helm.idiomatic import fail_when

    out = []
    for index, limit in twin_names(devices, twins).items():
        request = next(d for d in devices if d.index == index)
        own = [c for c in dict.fromkeys([*limit.conditions, *request.conditions]) if c not in cond]
        differ = f"(ne (toString {as_arg(limit.name)}) (toString {as_arg(request.name)}))"
        message = (
            f"the device resource the request names ({request.name_key or request.name}) differs from the one its "
            f"limit names ({limit.name_key or limit.name}): set them alike (Kubernetes needs the request of an "
            "extended resource equal to its limit, and the DRA claim asks for the device the limit names)"
        )
        out.append("\n".join(fail_when(and_all(*cond, *own, differ), message)) + "\n")
    return "".join(out)
