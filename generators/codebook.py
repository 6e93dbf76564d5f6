"""``CODEBOOK.md`` of a messy repository (``--mess``): the columns with their units, how missing values are written,
and every change between files, as a lab would document them."""

from __future__ import annotations

from generators.mess import MISSING_TOKENS, SENTINEL, V2_SUFFIX, MessPlan
from generators.spec import Spec

_TOKEN_WORDS = {"": "an empty cell", "NA": "`NA`", "null": "`null`"}


def _number(value: float) -> str:
    return f"{value:g}"


def render_codebook(spec: Spec, plan: MessPlan) -> str:
    """The codebook: one table of columns, then missing values, changes between files and file versions."""
    lines = [
        "# Codebook",
        "",
        f"Data files: `.{spec.extension}` tables, one row per {spec.context.record or 'record'}.",
        "",
    ]
    lines += ["| column | description | unit |", "| --- | --- | --- |"]
    for variable in spec.variables:
        description = variable.description or variable.name
        lines.append(f"| `{variable.column}` | {description} | {variable.unit} |")
    lines += ["", "## Missing values", ""]
    token = _TOKEN_WORDS[MISSING_TOKENS[spec.extension]]
    lines.append(f"A value that was not recorded is written as {token}.")
    if plan.sentinel_columns:
        columns = ", ".join(f"`{c}`" for c in plan.sentinel_columns)
        lines.append(f"In {columns}, the code `{SENTINEL}` marks a value that was not recorded.")
    if plan.comments or plan.units_row:
        lines += ["", "## File headers", ""]
        if plan.comments:
            lines.append("Lines starting with `#` before the header are comments.")
        if plan.units_row:
            lines.append("The row right below the header gives each column's unit in square brackets; it is not data.")
    if plan.spelling:
        columns = ", ".join(f"`{c}`" for c in plan.spelling)
        lines += [
            "",
            "## Categories",
            "",
            f"Categories of {columns} were typed by hand: the same category may appear in another case or with a "
            "trailing space. The spelling of this codebook's values is the category's name.",
        ]
        for column in plan.spelling:
            values = ", ".join(f"`{c}`" for c in spec.variable(column).categories)
            lines.append(f"- `{column}`: {values}")
    changes = []
    if plan.drift is not None:
        d = plan.drift
        conversion = f"multiply by {_number(d.factor)}" if not d.offset else f"add {_number(d.offset)}"
        changes.append(
            f"- In {d.rule.text}, `{d.column}` is recorded in {d.file_unit} instead of {d.unit}: to get {d.unit}, "
            f"{conversion}."
        )
    if plan.rename is not None:
        r = plan.rename
        changes.append(
            f"- In {r.rule.text}, `{r.column}` is named `{r.new_name}`, and the columns are in another order."
        )
    if changes:
        lines += ["", "## Changes between files", "", *changes]
    if plan.v2 or plan.old:
        lines += ["", "## File versions", ""]
        if plan.v2:
            lines.append(
                f"A file `NAME{V2_SUFFIX}.{spec.extension}` is a corrected export that replaces "
                f"`NAME.{spec.extension}` in the same folder; the older file is kept but superseded."
            )
        if plan.old:
            lines.append(f"`{plan.old_dir}/` holds superseded copies of files; the current versions are elsewhere.")
    return "\n".join(lines) + "\n"
