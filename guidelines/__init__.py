"""The bundled grading guidelines and the model judge's prompt (Markdown), shipped in the wheel.

The store copies a guideline into a project as version 1 (`qrelkit project create`, the demo); from then on the
project's versions live in the store, and every judgment is stamped with the version it was made under.
"""

from pathlib import Path

DIR = Path(__file__).resolve().parent
GRADING = DIR / "grading-0-3.md"  # the neutral 0-3 template a new project starts from (no project's examples)
DEMO_AMBIGUOUS = DIR / "grading-0-3-v1-ambiguous.md"  # the demo's first, ambiguous version
DEMO_GRADING = DIR / "grading-0-3-demo.md"  # the demo's current version, with worked examples from its data
JUDGE_PROMPT = DIR / "judge-prompt.md"  # the default model-judge prompt template
