"""Questions with exact ground truth, paraphrases and grading. Imports ``generators``, never ``sgfs``."""
