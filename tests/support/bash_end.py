"""Scripts real bash runs to their end that the launcher lint must not fail: `runs_to_the_end`
runs one with real bash and checks the lint's counter checks fail nothing in it. Shared by
test_launcher_lint_runs_to_the_end.py and test_launcher_lint_review_scripts.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

from bot.core.launcher_lint import CHECK_ARITH_UNSET, CHECK_ARITH_ZERO, lint_launcher


def runs_to_the_end(tmp_path: Path, body: str) -> None:
    """`#!/bin/bash` then `body`, run by bash in `tmp_path`, exits 0 printing `done` last, and
    neither counter check (`CHECK_ARITH_ZERO`, `CHECK_ARITH_UNSET`) fails any line of it."""
    script = "#!/bin/bash\n" + body
    (tmp_path / "launch.sh").write_text(script)
    ran = subprocess.run(["bash", "launch.sh"], capture_output=True, text=True, timeout=20,
                         cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}, start_new_session=True)
    assert (ran.returncode, ran.stdout.split()[-1:]) == (0, ["done"]), ran
    said = [(f.check, f.level, f.line) for f in lint_launcher(script)
            if f.check in (CHECK_ARITH_ZERO, CHECK_ARITH_UNSET) and f.level == "fail"]
    assert said == []
