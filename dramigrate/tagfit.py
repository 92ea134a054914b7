"""Values that do not fit their explicit tag (`!!int abc`, `!!bool maybe`, `!!timestamp 2`): PyYAML's safe
constructors raise ValueError, KeyError, IndexError (`!!int +`: the digit after a sign that has none) or
AttributeError for them, not a YAML error, so every reader of a config,
rule pack, kustomization, values file or inventory ended in an internal error. guard_pyyaml_tags makes them a
ConstructorError at the node, which each reader already reports as invalid YAML at its file:line."""

from __future__ import annotations

from typing import Any


def _fitting(construct: Any) -> Any:
    """construct, raising a ConstructorError at the node where it raised anything else."""
    from yaml.constructor import ConstructorError

    def construct_tagged(self: Any, node: Any) -> Any:
        try:
            return construct(self, node)
        except (ValueError, TypeError, LookupError, AttributeError) as exc:
            why = f"{node.value!r} does not fit its tag {node.tag}"
            raise ConstructorError(None, None, why, node.start_mark) from exc

    construct_tagged.fitting = True  # type: ignore[attr-defined]
    return construct_tagged


def guard_pyyaml_tags() -> None:
    """PyYAML's safe constructor (SafeLoader, CSafeLoader and the subclasses made after this) refuses a scalar that
    does not fit its tag with a ConstructorError. Idempotent."""
    from yaml.constructor import SafeConstructor

    for name in ("int", "float", "bool", "timestamp"):  # the scalar tags whose constructors convert the text
        tag = f"tag:yaml.org,2002:{name}"
        current = SafeConstructor.yaml_constructors[tag]
        if not getattr(current, "fitting", False):
            SafeConstructor.add_constructor(tag, _fitting(current))
