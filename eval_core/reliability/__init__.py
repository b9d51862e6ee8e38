"""Reliability of a golden set: topic set size, discriminative power, split-half stability and pool bias."""

from eval_core.reliability.discrimination import Correction
from eval_core.reliability.report import MetricReliability, ReliabilityReport, Settings, reliability, sentence

__all__ = ["Correction", "MetricReliability", "ReliabilityReport", "Settings", "reliability", "sentence"]
