"""pyproject's license metadata in the form setuptools 77+ reads without a deprecation warning (PEP 639): an SPDX
string and license-files, with a build requirement that understands it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_license_is_an_spdx_string_with_its_file() -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    project = meta["project"]
    # a table ({text = …} or {file = …}) makes setuptools >= 77 print "`project.license` as a TOML table is deprecated"
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE"]
    assert "Apache License" in (ROOT / "LICENSE").read_text(encoding="utf-8")[:200]
    # a License :: classifier beside an SPDX expression is an error in setuptools >= 77
    assert not [c for c in project.get("classifiers", []) if c.startswith("License ::")]


def test_build_requires_a_setuptools_that_reads_spdx_licenses() -> None:
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["build-system"]["requires"]
    pins = [r for r in requires if r.startswith("setuptools")]
    assert len(pins) == 1
    match = re.fullmatch(r"setuptools>=(\d+)(\.\d+)*", pins[0])
    assert match and int(match[1]) >= 77, pins
