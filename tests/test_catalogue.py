"""The finding rule catalogue (rules/findings.yaml): every rule id the code or the tests use is declared, the file
is valid against its schema, and each entry's docs anchor is a heading that exists."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import jsonschema
import yaml

from dramigrate.catalogue import catalogue, catalogue_path

ROOT = Path(__file__).resolve().parent.parent
RULE_ID = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)+$")
# In test sources and expected outputs: the JSON "rule"/"ruleId" value, the text report's "severity [rule]".
USED_IN_OUTPUT = re.compile(
    r"""["']rule(?:Id)?["']\s*:\s*["']([a-z][a-z0-9-]+)["']"""
    r"""|\b(?:error|warning|info|note)\s+\[([a-z][a-z0-9]*(?:-[a-z0-9]+)+)\]"""
    r"""|\.rule\s*==\s*["']([a-z][a-z0-9-]+)["']"""
)


def _rule_params(trees: list[ast.Module]) -> set[str]:
    """Names of functions whose first parameter (after self) is `rule`: calls to them emit their first argument."""
    names = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                params = [a.arg for a in node.args.args if a.arg not in ("self", "cls")]
                if params[:1] == ["rule"]:
                    names.add(node.name)
    return names


def _callee(node: ast.Call) -> str:
    f = node.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def emitted_in_code() -> dict[str, str]:
    """Rule ids the package emits or refers to, each with one place it does: rule= arguments, the first argument of
    functions that take a rule (and of `report` callbacks), RULES[...] lookups, comparisons with a finding's rule,
    "rule"/"ruleId" keys, and the members of *_RULES sets."""
    files = sorted((ROOT / "dramigrate").rglob("*.py"))
    trees = {p: ast.parse(p.read_text(encoding="utf-8")) for p in files}
    takes_rule = _rule_params(list(trees.values())) | {"report", "Finding"}
    found: dict[str, str] = {}

    def add(node: ast.AST | None, path: Path) -> None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and RULE_ID.match(node.value):
            found.setdefault(node.value, f"{path.relative_to(ROOT)}:{node.lineno}")

    for path, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                for kw in node.keywords:
                    if kw.arg in ("rule", "rule_id"):
                        add(kw.value, path)
                if _callee(node) in takes_rule and node.args:
                    add(node.args[0], path)
            elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "RULES":
                add(node.slice, path)
            elif isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                if any(isinstance(s, ast.Attribute) and s.attr == "rule" for s in sides):
                    for s in sides:
                        add(s, path)
                        for elt in getattr(s, "elts", []):
                            add(elt, path)
            elif isinstance(node, ast.Dict):
                for k, v in zip(node.keys, node.values, strict=True):
                    if isinstance(k, ast.Constant) and k.value in ("rule", "ruleId"):
                        add(v, path)
            elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id.endswith("_RULES") for t in node.targets
            ):
                for sub in ast.walk(node.value):
                    add(sub, path)
    return found


def used_in_tests() -> dict[str, str]:
    """Rule ids that tests and expected outputs (fixtures, golden files, docs) assert on."""
    found: dict[str, str] = {}
    roots = [ROOT / "tests", ROOT / "fixtures", ROOT / "docs", ROOT / "examples"]
    suffixes = {".py", ".json", ".yaml", ".yml", ".txt", ".sarif", ".xml", ".md", ".diff", ".out"}
    for root in roots:
        for path in sorted(root.rglob("*")):
            if not path.is_file() or path.suffix not in suffixes or path.stat().st_size > 2_000_000:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            for m in USED_IN_OUTPUT.finditer(text):
                rid = next(g for g in m.groups() if g)
                found.setdefault(rid, f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}")
    return found


def test_every_rule_id_in_the_code_is_declared() -> None:
    emitted = emitted_in_code()
    # the scan sees the ways findings are made: a detector call, a selectors callback, a recast, a lookup
    assert {"legacy-device-request", "inexact-label", "extended-resource", "class-conflict", "bad-input"} <= set(
        emitted
    )
    undeclared = {rid: where for rid, where in emitted.items() if rid not in catalogue()}
    assert not undeclared, f"declare these rule ids in {catalogue_path().name}: {undeclared}"


def test_every_rule_id_in_tests_and_docs_is_declared() -> None:
    used = used_in_tests()
    assert "legacy-device-request" in used
    undeclared = {rid: where for rid, where in used.items() if rid not in catalogue()}
    assert not undeclared, f"declare these rule ids in {catalogue_path().name}: {undeclared}"


def test_catalogue_is_valid_against_its_schema() -> None:
    schema = yaml.safe_load((ROOT / "rules" / "findings.schema.json").read_text(encoding="utf-8"))
    data = yaml.safe_load((ROOT / "rules" / "findings.yaml").read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(data)]
    assert not errors


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation but - and _ dropped, spaces to -."""
    out = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^#{1,6}\s+(.*)$", line)
        if m:
            out.add(re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-"))
    return out


def test_every_docs_anchor_exists() -> None:
    missing = []
    for r in catalogue().values():
        page, _, anchor = r.docs.partition("#")
        path = ROOT / "docs" / page
        if not path.is_file() or anchor not in _anchors(path):
            missing.append(f"{r.id}: docs/{r.docs}")
    assert not missing, "no such heading: " + ", ".join(missing)
