"""Model judges: the prompt, the strict answer parser, and calibration against people."""
