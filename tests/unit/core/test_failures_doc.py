"""docs/failures.md is made from the catalogue and kept up to date with it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from bot.core.catalogue import Catalogue
from bot.core.catalogue.docs import failures_markdown

REPO = Path(__file__).resolve().parents[3]
FAILURES_MD = REPO / "docs" / "failures.md"


def test_docs_failures_md_is_what_the_catalogue_says():
    assert FAILURES_MD.read_text(encoding="utf-8") == failures_markdown(Catalogue.load()), (
        "docs/failures.md is out of date with bot/core/catalogue/catalogue.yaml: "
        "run python docs/gen_failures.py"
    )


def test_every_class_has_a_section_and_a_row():
    text = FAILURES_MD.read_text(encoding="utf-8")
    for class_id in Catalogue.load().classes:
        assert f"\n## {class_id}\n" in text
        assert f"| [`{class_id}`](#{class_id}) |" in text


def test_a_class_reads_with_its_patterns_accounting_and_handling():
    site = textwrap.dedent("""\
        classes:
          disk_full:
            title: Disk full | quota
            explanation: The job's filesystem ran out of space.
            action: ask
            retryable: false
            charges_budget: true
            priority: 65
            hint: Clean old checkpoints.
            patterns:
              primary: ['No space left on device']
              hints: ['Disk quota exceeded']
            accounting: {exit_codes: [28], states: [FAILED]}
        """)
    cat = Catalogue.from_texts([("site.yaml", site)])
    text = failures_markdown(cat)
    assert "| [`disk_full`](#disk_full) | Disk full \\| quota | ask | no | yes | 65 |" in text
    section = text.split("\n## disk_full\n", 1)[1]
    assert "**Disk full | quota.** The job's filesystem ran out of space." in section
    assert "What to do: Clean old checkpoints." in section
    assert "Deciding log patterns:\n\n- `No space left on device`" in section
    assert "Supporting log patterns:\n\n- `Disk quota exceeded`" in section
    assert "Slurm accounting: decided by State `FAILED`; supported by exit code 28." in section
    assert "never resubmitted automatically; a resubmit charges the retry budget" in section


def test_the_generator_script_checks_the_file():
    done = subprocess.run([sys.executable, str(REPO / "docs" / "gen_failures.py"), "--check"],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
