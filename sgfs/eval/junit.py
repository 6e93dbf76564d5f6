"""JUnit XML: one test case per question (and variant), a failure for each wrong answer."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from qa.result_record import ResultRecord

# Terminal escape sequences (colours, cursor moves) and the characters XML 1.0 cannot hold at all.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(text: str) -> str:
    """``text`` as XML 1.0 can hold it: escape sequences dropped, other forbidden characters as U+FFFD."""
    return _NOT_XML.sub("\ufffd", _ANSI.sub("", text))


def write_junit(path: Path, records: Sequence[ResultRecord], name: str = "sgfs eval") -> None:
    failures = sum(not r.correct for r in records)
    total_time = sum(r.time_s or 0.0 for r in records)
    name = xml_text(name)
    suites = ET.Element("testsuites", name=name, tests=str(len(records)), failures=str(failures))
    suite = ET.SubElement(
        suites, "testsuite", name=name, tests=str(len(records)), failures=str(failures), errors="0",
        time=f"{total_time:.3f}",
    )  # fmt: skip
    for record in records:
        variant = record.variant
        case_name = record.id if variant == "template" else f"{record.id} [{variant}]"
        if record.condition is not None:  # a twin is asked in two conditions: one case each
            case_name += f" ({record.condition})"
        case = ET.SubElement(
            suite,
            "testcase",
            classname=xml_text(f"sgfs.{record.category.replace(' ', '_')}.{record.type}"),
            name=xml_text(case_name),
            time=f"{record.time_s or 0.0:.3f}",
        )
        if not record.correct:
            details = record.details
            status = record.status or "ok"
            if status == "ok":
                message = f"wrong answer: {str(record.answer)[:200]}"
            else:
                message = f"{status} (exit code {details.exit_code if details else None})"
            kind = xml_text(status) if status != "ok" else "wrong"
            failure = ET.SubElement(case, "failure", message=xml_text(message), type=kind)
            if details is not None and details.stderr_tail:
                failure.text = xml_text(details.stderr_tail)
    tree = ET.ElementTree(suites)
    ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)
