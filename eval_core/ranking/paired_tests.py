"""The paired significance tests `compare` offers, by name (light, so the CLI lists them without SciPy)."""

TESTS = ("randomization", "t", "wilcoxon")
TEST_NAMES = {
    "randomization": "two-sided paired randomization test",
    "t": "paired t-test",
    "wilcoxon": "Wilcoxon signed-rank test",
}
