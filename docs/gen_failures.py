"""Write docs/failures.md from the failure catalogue (bot/core/catalogue/catalogue.yaml).

    .venv/bin/python docs/gen_failures.py           # rewrite docs/failures.md
    .venv/bin/python docs/gen_failures.py --check   # exit 1 if it is out of date
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.core.catalogue import Catalogue  # noqa: E402
from bot.core.catalogue.docs import failures_markdown  # noqa: E402

FAILURES_MD = ROOT / "docs" / "failures.md"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check, write nothing")
    args = parser.parse_args(argv)
    text = failures_markdown(Catalogue.load())
    current = FAILURES_MD.read_text(encoding="utf-8") if FAILURES_MD.exists() else None
    if args.check:
        if current != text:
            print(f"{FAILURES_MD} is out of date: run python docs/gen_failures.py",
                  file=sys.stderr)
            return 1
        return 0
    if current != text:
        FAILURES_MD.write_text(text, encoding="utf-8")
        print(f"wrote {FAILURES_MD}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
