"""Spec builders: from a seed (procedural, the embedded default) or, later, from an LLM."""
