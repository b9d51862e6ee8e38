"""The agreement table, once: every coefficient with one label, in one order, for the CLI and the page to render.

Chance-corrected coefficients sit beside raw agreement, so the kappa paradox (high raw agreement, low κ/α)
shows wherever the table is read.
"""

from __future__ import annotations

from eval_core.agreement.types import AgreementReport, Boundary, Coefficient

DIGITS = 3  # decimals of every coefficient and CI bound, in the CLI's text and the page's table alike


def coefficient_rows(report: AgreementReport) -> list[tuple[str, Coefficient]]:
    """(label, coefficient): α at every level, mean pairwise Cohen's κ per weighting, Fleiss' κ, Gwet's AC1
    and AC2, raw agreement."""
    pairs = " mean of pairs" if len(report.kappa) > 1 else ""
    rows = [(f"Krippendorff α ({level})", c) for level, c in report.alpha.items()]
    rows += [(f"Cohen's κ ({w}){pairs}", c) for w, c in report.light_kappa.items()]
    rows += [("Fleiss κ", report.fleiss_kappa), ("Gwet AC1", report.ac1)]
    rows += [(f"Gwet AC2 ({w})", c) for w, c in report.ac2.items()]
    rows.append(("Raw agreement", report.raw_agreement))
    return rows


def cut_rows(report: AgreementReport) -> list[tuple[str, Coefficient]]:
    """(label, α) of the scale binarised at each grade, labelled by the boundary it tests (e.g. 1|2)."""
    return [(f"α at boundary {Boundary(cut, 0.0).label}", c) for cut, c in report.cuts.items()]
