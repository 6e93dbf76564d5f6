"""Loaders for the data shipped in ``generators/data``: taxonomy and names (study designs: ``generators.designs``).

Files are read once, in sorted file-name order, and validated; the order of every list is the order in
the files, so sampling from them is stable across machines.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

_DATA = "data"


@dataclass(frozen=True)
class Subdomain:
    name: str
    description: str


@dataclass(frozen=True)
class Domain:
    name: str
    subdomains: tuple[Subdomain, ...]


@dataclass(frozen=True)
class Field:
    name: str
    slug: str
    domains: tuple[Domain, ...]


def _json_files(folder: str) -> list[tuple[str, Any]]:
    root = resources.files("generators").joinpath(_DATA, folder)
    names = sorted(entry.name for entry in root.iterdir() if entry.name.endswith(".json"))
    return [(name[: -len(".json")], json.loads(root.joinpath(name).read_text("utf-8"))) for name in names]


@cache
def taxonomy() -> tuple[Field, ...]:
    """Every field, sorted by file name, with its domains and subdomains in file order."""
    fields = []
    for slug, data in _json_files("taxonomy"):
        domains = tuple(
            Domain(d["name"], tuple(Subdomain(s["name"], s["description"]) for s in d["subdomains"]))
            for d in data["domains"]
        )
        fields.append(Field(data["field"], slug, domains))
    return tuple(fields)


@cache
def names() -> dict[str, tuple[str, ...]]:
    data = json.loads(resources.files("generators").joinpath(_DATA, "names.json").read_text("utf-8"))
    return {"first": tuple(data["first"]), "last": tuple(data["last"])}
