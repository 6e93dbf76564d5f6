"""What a question over a messy repository (``--mess``) states about reading its files: the cleaning convention of
docs/generation.md, "Messy repositories", said in the question itself for the kinds of mess the repository has."""

from __future__ import annotations

from generators.mess import V2_SUFFIX, MessPlan

# Types that read rows, and types that count files.
_ROWS = (
    "count_rows",
    "univariate_single_file",
    "univariate_condition",
    "bivariate_statistic",
    "bivariate_hypothesis",
)
_FILES = ("prefix", "condition", *_ROWS)


def conventions(plan: MessPlan | None, qtype: str, extension: str) -> str:
    """The sentences a question of ``qtype`` adds in a repository with ``plan`` ("" where none applies)."""
    if plan is None:
        return ""
    kinds = plan.kinds
    said: list[str] = []
    if "superseded" in kinds and qtype in _FILES:
        folder = f" and files under `{plan.old_dir}/` are superseded copies" if plan.old else ""
        replaced = f"`NAME{V2_SUFFIX}.{extension}` replaces `NAME.{extension}`" if plan.v2 else ""
        said.append(
            "Only current data files count: "
            + (replaced + folder if replaced else folder.removeprefix(" and "))
            + "; CODEBOOK.md is not a data file."
        )
    elif qtype in _FILES:
        said.append("CODEBOOK.md is not a data file.")
    if qtype in _ROWS:
        if "header" in kinds:
            said.append("Comment lines (starting with `#`) and a units row below the header are not data rows.")
        said.append(
            "A missing value (a cell CODEBOOK.md declares as not recorded) is left out of every statistic, which uses"
            " only the rows that have a value in each column it analyses, and it meets no condition on its column."
        )
        if qtype != "count_rows":
            said.append('If the selected rows have no value in a column the statistic analyses, answer "not possible".')
        if "unit_drift" in kinds:
            said.append(
                "Values are in the unit CODEBOOK.md gives for their column, converted as it says where a file differs."
            )
        if "spelling" in kinds:
            said.append("Categories are compared ignoring case and surrounding spaces.")
        if "renamed" in kinds:
            said.append("A column that CODEBOOK.md says is renamed in some files is the same column there.")
    return " ".join(said)
