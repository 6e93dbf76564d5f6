"""A repository's name ends with the year its data begin: a study started in December whose files, named by date,
all fall in the next year is not named by the year before (issue 24: a reviewer read "...-2023" over interviews
all dated 2024)."""

from __future__ import annotations

from generators.builders import procedural


def test_the_name_carries_the_year_of_the_first_dated_file() -> None:
    later = 0
    for seed in range(1, 400):
        spec = procedural.build_spec(seed)
        year = spec.project.repo_name.rsplit("-", 1)[1]
        if spec.dates:
            assert year == min(spec.dates)[:4], (seed, spec.project.repo_name, spec.dates[:3])
            later += min(spec.dates)[:4] != spec.start_date[:4]
        else:
            assert year == spec.start_date[:4], (seed, spec.project.repo_name, spec.start_date)
    assert later >= 5  # studies started late in a year whose dated files begin the next: the case this is for
