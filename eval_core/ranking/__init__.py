"""Ranking evaluation: metrics, their registry, evaluate(), diagnostics and paired tests."""
