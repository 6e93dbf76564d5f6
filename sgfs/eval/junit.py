"""JUnit XML: one test case per question (and variant), a failure for each wrong answer."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from qa.result_record import ResultRecord


def write_junit(path: Path, records: Sequence[ResultRecord], name: str = "sgfs eval") -> None:
    failures = sum(not r.correct for r in records)
    total_time = sum(r.time_s or 0.0 for r in records)
    suites = ET.Element("testsuites", name=name, tests=str(len(records)), failures=str(failures))
    suite = ET.SubElement(
        suites, "testsuite", name=name, tests=str(len(records)), failures=str(failures), errors="0",
        time=f"{total_time:.3f}",
    )  # fmt: skip
    for record in records:
        variant = record.variant
        case_name = record.id if variant == "template" else f"{record.id} [{variant}]"
        case = ET.SubElement(
            suite,
            "testcase",
            classname=f"sgfs.{record.category.replace(' ', '_')}.{record.type}",
            name=case_name,
            time=f"{record.time_s or 0.0:.3f}",
        )
        if not record.correct:
            details = record.details
            status = record.status or "ok"
            if status == "ok":
                message = f"wrong answer: {str(record.answer)[:200]}"
            else:
                message = f"{status} (exit code {details.exit_code if details else None})"
            failure = ET.SubElement(case, "failure", message=message, type=status if status != "ok" else "wrong")
            if details is not None and details.stderr_tail:
                failure.text = details.stderr_tail
    tree = ET.ElementTree(suites)
    ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)
