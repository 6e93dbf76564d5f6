"""A design file of one field whose first design is the small tensile-test fixture (derived_design.json): the design
schema tests edit it and load it as the loader loads a real file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from generators.data_files import taxonomy
from generators.designs import Design, load_file

FIELD = "engineering-chemical-materials"


def fixture_file() -> dict[str, Any]:
    """The field's design file with the fixture design, renamed to the field's first subdomain, in first place."""
    data: dict[str, Any] = json.loads(
        (Path(__file__).resolve().parents[2] / "generators" / "data" / "designs" / f"{FIELD}.json").read_text()
    )
    design = json.loads((Path(__file__).with_name("derived_design.json")).read_text("utf-8"))["designs"][0]
    data["designs"][0] = design | {"subdomain": data["designs"][0]["subdomain"]}
    return data


def load_fixture(data: dict[str, Any]) -> Design:
    """The first design of ``data`` as the loader reads it (raises DesignError)."""
    field = next(f for f in taxonomy() if f.slug == FIELD)
    return load_file(json.dumps(data), field, f"{FIELD}.json")[0]
