"""Target Kubernetes versions: which resource.k8s.io API to emit and which features are on by default."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Any

import yaml

from dramigrate.findings import InputError


@cache
def _table() -> dict[str, Any]:
    text = files("dramigrate.rules_data").joinpath("kube-versions.yaml").read_text("utf-8")
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _parse(version: str) -> tuple[int, int]:
    m = re.fullmatch(r"v?(\d+)\.(\d+)(\.\d+)?(-.*)?", version.strip())
    if not m:
        raise InputError(f"--kube-version must look like 1.36, not {version!r}")
    return int(m.group(1)), int(m.group(2))


@dataclass(frozen=True)
class Target:
    major: int
    minor: int

    @property
    def text(self) -> str:
        return f"{self.major}.{self.minor}"

    def at_least(self, version: str) -> bool:
        return (self.major, self.minor) >= _parse(version)

    @property
    def api(self) -> dict[str, str]:
        best: dict[str, str] = {}
        for since, info in sorted(_table()["api"].items(), key=lambda kv: _parse(kv[0])):
            if self.at_least(since):
                best = info
        return best

    @property
    def api_version(self) -> str:
        return self.api["version"]

    @property
    def needs_gate(self) -> bool:
        """Below 1.34 the DRA gate and beta API group are off by default."""
        return "gate" in self.api

    def enabled(self, feature: str) -> bool:
        since = _table()["features"].get(feature)
        return since is not None and self.at_least(since)

    def exists(self, feature: str) -> bool:
        since = _table()["introduced"].get(feature) or _table()["features"].get(feature)
        return since is not None and self.at_least(since)

    @property
    def unreleased(self) -> bool:
        return self.at_least(_table()["newest"]) and not Target.parse(_table()["default"]).at_least(self.text)

    def gate_advice(self) -> str:
        api = self.api
        return (
            f"Kubernetes {self.text} serves DRA only as a beta API that is off by default: enable the "
            f"{api['gate']} feature gate and --runtime-config={api['runtimeConfig']} on the API server "
            "(without them the API server silently drops the claims and pods lose their devices), "
            "then pass --assume-dra-enabled"
        )

    def extended_resource_advice(self) -> str:
        """Why --strategy extended-resource needs a confirmation on targets where DRAExtendedResource is off."""
        since = _table()["features"]["DRAExtendedResource"]
        return (
            f"Kubernetes {self.text} has DeviceClass.spec.extendedResourceName (KEP-5004) only behind the "
            f"DRAExtendedResource feature gate, off by default before {since}: enable it on kube-apiserver, "
            "kube-controller-manager, kube-scheduler and kubelet (without it the API server drops "
            "extendedResourceName from the classes, and pods keep asking for a device plugin that is gone), "
            "then pass --assume-extended-resource-enabled"
        )

    @staticmethod
    def parse(version: str | None) -> Target:
        table = _table()
        major, minor = _parse(version or table["default"])
        target = Target(major, minor)
        if not target.at_least(table["oldest"]):
            raise InputError(
                f"--kube-version {target.text}: DRA (resource.k8s.io) needs Kubernetes {table['oldest']} or newer"
            )
        if target.at_least(table["newest"]) and target.text != table["newest"]:
            raise InputError(f"--kube-version {target.text}: the newest version dramigrate knows is {table['newest']}")
        return target
