"""Kustomize: a generated source like Helm. Discover every kustomization and its graph, build with the real
kustomize, migrate bases and overlays together, and write only what the builds prove.

Public API: `scan` (no builds; what the run must leave to the kustomize flow, and lint's findings),
`run_kustomize` (fix and diff: rewrite, prove, report).
"""

from dramigrate.kustomize.graph import NAMES, repo_root
from dramigrate.kustomize.scan import Scan, patch_findings, scan

__all__ = ["NAMES", "Scan", "patch_findings", "repo_root", "scan"]
