"""Agreement between annotators: κ, α, AC1/AC2, bootstrap CIs and diagnostics."""
