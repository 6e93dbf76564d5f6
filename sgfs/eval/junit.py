"""JUnit XML: one test case per question (and variant), a failure for each wrong answer."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any


def write_junit(path: Path, records: list[dict[str, Any]], name: str = "sgfs eval") -> None:
    failures = sum(not r["correct"] for r in records)
    total_time = sum(float(r.get("time_s") or 0.0) for r in records)
    suites = ET.Element("testsuites", name=name, tests=str(len(records)), failures=str(failures))
    suite = ET.SubElement(
        suites, "testsuite", name=name, tests=str(len(records)), failures=str(failures), errors="0",
        time=f"{total_time:.3f}",
    )  # fmt: skip
    for record in records:
        variant = record.get("variant", "template")
        case_name = record["id"] if variant == "template" else f"{record['id']} [{variant}]"
        case = ET.SubElement(
            suite,
            "testcase",
            classname=f"sgfs.{record['category'].replace(' ', '_')}.{record['type']}",
            name=case_name,
            time=f"{float(record.get('time_s') or 0.0):.3f}",
        )
        if not record["correct"]:
            status = record.get("status", "ok")
            if status == "ok":
                message = f"wrong answer: {str(record.get('answer'))[:200]}"
            else:
                message = f"{status} (exit code {record.get('exit_code')})"
            failure = ET.SubElement(case, "failure", message=message, type=status if status != "ok" else "wrong")
            tail = record.get("stderr_tail")
            if tail:
                failure.text = str(tail)
    tree = ET.ElementTree(suites)
    ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)
