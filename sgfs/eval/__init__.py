"""The evaluation harness: run any agent on mounted repositories, grade, audit, report and gate (docs/eval.md)."""
