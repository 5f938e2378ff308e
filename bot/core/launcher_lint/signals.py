"""The signals a launcher may get while it runs, whose traps then run: those the script sends
itself (`kill -USR1 $$`, `kill -s TERM $$`, `kill -TERM 0`: bash runs the trap's action right
after the `kill`) and the one Slurm sends the batch shell before the time limit
(`#SBATCH --signal=B:USR1@90`: at a time the script does not know). A trap on any other
signal runs on no normal run (body_assignments.trap_action)."""

from __future__ import annotations

import re

from bot.core.launcher_lint.paths import unquote

#: Signal numbers bash's `kill` and `trap` take for names (Linux x86-64 and arm64).
_NUMBERS = {"1": "HUP", "2": "INT", "3": "QUIT", "6": "ABRT", "9": "KILL", "10": "USR1",
            "12": "USR2", "13": "PIPE", "14": "ALRM", "15": "TERM", "18": "CONT", "19": "STOP",
            "20": "TSTP"}

#: A `kill` command where a command may start, and its words up to the command's end.
_KILL_RE = re.compile(r"(?:^|(?<=[;&|({\n])|(?<=\bthen)|(?<=\bdo)|(?<=\belse))[ \t]*"
                      r"kill[ \t]+([^;&|\n)}]*)", re.MULTILINE)
#: The targets that are the script's own shell: its pid (`$$`, `${$}`), its process group
#: (`0`, `-$$`).
_SELF_RE = re.compile(r"-?(?:\$\$|\$\{\$\})|0")
#: A directive sbatch reads that has Slurm signal the batch shell (`B:`, `RB:`) before the
#: time limit: `#SBATCH --signal=B:USR1@90`, `--signal B:SIGTERM@120`, `--signal=RB:10`.
_BATCH_SIGNAL_RE = re.compile(r"#SBATCH[ \t]+--signal(?:=|[ \t]+)[\"']?(?:R?BR?):([\w+-]+?)"
                              r"(?:@\d+)?[\"']?[ \t]*$")


def signal_name(word: str) -> str:
    """A signal as bash names it without `SIG`, upper-case (`usr1`, `SIGUSR1`, `10`: USR1)."""
    word = word.upper().removeprefix("SIG")
    return _NUMBERS.get(word, word)


def self_kills(code: str) -> dict[str, list[int]]:
    """Where `code` (the script without comments) signals its own shell, by signal
    (signal_name's): the offsets of its `kill` commands to `$$` or its process group (`kill
    -USR1 $$`, `kill -s TERM "$$"`, `kill -n 10 $$`, `kill -TERM 0`, `kill $$`: TERM)."""
    found: dict[str, list[int]] = {}
    if "kill" not in code:
        return found
    for m in _KILL_RE.finditer(code):
        words = [unquote(w) for w in m.group(1).split()]
        signal, targets, k = "TERM", [], 0
        while k < len(words):
            word = words[k]
            if word in ("-s", "-n") and k + 1 < len(words):
                signal, k = words[k + 1], k + 2
                continue
            if word == "--":
                targets += words[k + 1:]
                break
            if word.startswith("-") and not _SELF_RE.fullmatch(word) and len(word) > 1:
                signal = word[1:]
            else:
                targets.append(word)
            k += 1
        if any(_SELF_RE.fullmatch(t) for t in targets):
            found.setdefault(signal_name(signal), []).append(m.start(1) - len("kill "))
    return found


def batch_signals(script_text: str) -> frozenset[str]:
    """The signals `#SBATCH --signal=B:SIG` has Slurm send the batch shell (signal_name's),
    from the directives sbatch reads: at the first column, before the first command."""
    found: set[str] = set()
    if "--signal" not in script_text:
        return frozenset()
    for line in script_text.split("\n"):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            break  # (sbatch reads no directive after the first command)
        if m := _BATCH_SIGNAL_RE.match(line):
            found.add(signal_name(m.group(1)))
    return frozenset(found)
