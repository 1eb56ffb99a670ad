"""The book's reference pages cover what the package holds.

Every public module of ``helpers`` has a section in the API reference
(appendix/api.md), so a reader who meets a function in a chapter can look it up.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))
import api_pages  # noqa: E402


def test_every_helpers_module_is_in_the_api_reference():
    """appendix/api.md documents each helpers/<module>.py with automodule."""
    api = api_pages.reference_text(
        ROOT
    )  # appendix/api.md and its generated module pages
    modules = sorted(
        p.stem for p in (ROOT / "helpers").glob("*.py") if not p.stem.startswith("_")
    )
    missing = [m for m in modules if f".. automodule:: helpers.{m}\n" not in api]
    assert missing == [], f"modules missing from appendix/api.md: {missing}"


def test_import_helpers_does_not_import_torch():
    """Chapters run in the browser, where torch does not exist: `import helpers` must not need it."""
    import subprocess
    import sys

    code = "import sys, helpers; assert 'torch' not in sys.modules, 'helpers imported torch'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
