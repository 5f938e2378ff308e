"""A signal the script sends its own shell (`kill -USR1 $$`): bash runs the action of the trap
in force for that signal right after the `kill`, with the values, options and traps of that
moment; under `set -e` a failing command in it ends the script, an `exit` in it ends the
script there. The counter checks judge such a handler where the `kill` is by reading the
script with each such `kill` replaced by the action (`{ f; }`), on the same line
(handled_at_kills). A `kill` is read so only where bash surely runs it and nothing else can
change the trap in force there:

- the `kill` is a whole line of the script's own shell (no branch, loop, and-or list, group,
  subshell, function body, string or here-document), to `$$` with one signal other than `0`
  (`kill -USR1 $$`, `kill -s TERM "$$"`, `kill -n 10 $$`, `kill $$`: TERM) that a trap
  can catch (not `KILL`, `STOP`; `kill -0`, `kill -EXIT` send none);
- every `trap` that names the signal, or a parameter, anywhere in the script (a body, a
  branch, a subshell, a string) is a whole line of the script's own shell too: the trap in
  force at the `kill` is the last of them above it, and the script sources no file and
  evaluates no text (`source`, `.`, `eval`), where one may be set;
- that trap's action is plain text on one line, with no `return` and no expansion bash makes
  when it sets the trap (`trap f USR1`, `trap 'save; exit 0' TERM`).

Any other `kill` is left as it was read before (its trap's function runs on no normal run,
body_assignments.trap_action): a signal trap's `set -e` stop is missed, not reported where
bash does not stop. A signal Slurm sends the batch shell (`#SBATCH --signal=B:USR1@90`) comes
at a time no one knows and is not read here."""

from __future__ import annotations

import re

from bot.core.launcher_lint.branch_paths import path_index
from bot.core.launcher_lint.model import Scan
from bot.core.shell_lexer import COMMAND_AT, OPS, shell_words, split_top_level

#: Signal numbers bash's `kill` and `trap` take for names (Linux x86-64 and arm64).
_NUMBERS = {"1": "HUP", "2": "INT", "3": "QUIT", "6": "ABRT", "9": "KILL", "10": "USR1",
            "12": "USR2", "13": "PIPE", "14": "ALRM", "15": "TERM", "18": "CONT", "19": "STOP",
            "20": "TSTP"}
#: The signals a `kill` sends that a trap can catch (not `KILL`, `STOP`, nor `0` / `EXIT`,
#: which sends none).
_CAUGHT = frozenset({"HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "BUS", "FPE", "USR1", "SEGV",
                     "USR2", "PIPE", "ALRM", "TERM", "CHLD", "CONT", "TSTP", "TTIN", "TTOU",
                     "URG", "XCPU", "XFSZ", "VTALRM", "PROF", "WINCH", "IO", "PWR", "SYS"})
#: The script's own shell as `kill`'s one target.
_SELF = {"$$", '"$$"', "${$}", '"${$}"'}
#: An action bash takes as written: a plain word, or a quoted text bash expands nothing in.
_PLAIN_ACTION_RE = re.compile(r"[\w:./-]+|'([^'\n]*)'|\"([^\"\n$`\\]*)\"")
_TRAP_WORD_RE = re.compile(r"(?<![\w-])trap(?![\w-])")
#: What runs commands the script does not have as text: `source`, `.`, `eval`.
_ELSEWHERE_RE = re.compile(COMMAND_AT + r"(?:(?:builtin|command)[ \t]+)?(?:source|eval|\.)"
                           r"(?=[ \t])")


def signal_name(word: str) -> str:
    """A signal as bash names it, upper-case without `SIG` (`usr1`, `SIGUSR1`, `10`: USR1)."""
    word = word.upper().removeprefix("SIG")
    return _NUMBERS.get(word, word)


def _killed(words: list[str]) -> str | None:
    """The signal a `kill` command (its words) sends the script's own shell, or None (another
    target, several, `kill -0`, `-l`, a signal in a parameter, one no trap catches)."""
    args = words[1:]
    signal = "TERM"
    if args[:1] in (["-s"], ["-n"]) and len(args) == 3:
        signal, args = args[1], args[2:]
    elif len(args) == 2 and args[0].startswith("-") and len(args[0]) > 1:
        signal, args = args[0][1:], args[1:]
    if len(args) != 1 or args[0] not in _SELF or not re.fullmatch(r"[A-Za-z0-9]+", signal):
        return None
    name = signal_name(signal)
    return name if name in _CAUGHT else None


def _trap_set(words: list[str]) -> tuple[str | None, set[str]] | None:
    """What a `trap` command (its words) sets: its action (None: the signals' own, ignored,
    or not one bash takes as written) and its signals (signal_name's); None where it sets
    nothing (`trap -p`, `trap -l`, `trap`) and "" in the signals where one is a parameter."""
    args = words[1:]
    if args[:1] == ["--"]:
        args = args[1:]
    if not args or args[0] in ("-p", "-l"):
        return None
    on = {"" if "$" in w or "`" in w else signal_name(w) for w in args[1:] or args}
    if len(args) == 1:
        return None, on  # (`trap USR1`: the signal's own action again)
    m = _PLAIN_ACTION_RE.fullmatch(args[0])
    action = None if m is None else (m.group(1) if m.group(1) is not None
                                     else m.group(2) if m.group(2) is not None else m.group())
    if action is not None:
        action = action.strip().rstrip(";").strip()
        if not action or action == "-" or "#" in action or action.endswith("&") or re.search(
                r"(?<![\w-])return(?![\w-])", action):
            action = None
    return action, on


#: A replacement in the script: its start, its end, the text put there.
Edit = tuple[int, int, str]


def handled_at_kills(blanked: str, scan: Scan) -> list[Edit]:
    """Each `kill` in `blanked` (the script without comments, its here-documents blanked) of a
    signal to the script's own shell that bash surely runs, and whose trap in force is surely
    read, with that trap's action in its place (`{ f; }`, on the same line). See the module's
    docstring."""
    if "kill" not in blanked or "trap" not in blanked:
        return []
    path_of, _nested = path_index(scan.constructs)
    spans = [*scan.bodies.values(), *scan.uncalled_bodies, *scan.never_run, *scan.piped]
    kills: list[tuple[int, int, str]] = []
    traps: list[tuple[int, str | None, set[str]]] = []
    whole: set[int] = set()
    pieces = split_top_level(blanked, 0, OPS)
    for k, (piece, at, op) in enumerate(pieces):
        before = pieces[k - 1][2] if k else "\n"
        text = piece.strip()
        if before != "\n" or op not in ("\n", "") or not text:
            continue
        start = at + piece.index(text)
        if path_of(start) != () or any(s <= start < e for s, e in spans):
            continue
        words = shell_words(text, start)
        if words[:1] == ["kill"] and (signal := _killed(words)) is not None:
            kills.append((start, start + len(text), signal))
        elif words[:1] == ["trap"] and (set_ := _trap_set(words)) is not None:
            traps.append((start, *set_))
            whole.add(start)
    if not kills:
        return []
    # the signals a `trap` read nowhere above may set (`f() { trap g USR1; }`, `if …; then
    # trap g USR1; fi`, `( trap g USR1 )`, `echo "trap g USR1"`): none of their `kill`s is
    # read; nor any where one's signal is a parameter (`trap g "$SIG"`)
    unsure: set[str] = set()
    for m in _TRAP_WORD_RE.finditer(blanked):
        if m.start() in whole:
            continue
        line_end = blanked.find("\n", m.start())
        rest = blanked[m.start(): len(blanked) if line_end < 0 else line_end]
        unsure |= {signal_name(w) for w in re.findall(r"[\w+-]+", rest)}
        if "$" in rest or "`" in rest or not re.match(r"trap[ \t]", rest):
            return []  # (`trap g "$SIG"`, `t=trap; $t g USR1`)
    if _ELSEWHERE_RE.search(blanked):
        return []  # (a trap set in a file it sources, or in text it evaluates)
    if any("" in on for _at, _action, on in traps):
        return []
    edits: list[Edit] = []
    for start, end, signal in kills:
        if signal in unsure:
            continue
        in_force = [action for at, action, on in traps if at < start and signal in on]
        if not in_force or in_force[-1] is None:
            continue  # (no trap: the signal ends the script; `trap '' USR1`: ignored)
        edits.append((start, end, "{ " + in_force[-1] + "; }"))
    return edits


def edited(text: str, edits: list[Edit]) -> str:
    """`text` with `edits` (handled_at_kills's, in order) made."""
    out: list[str] = []
    done = 0
    for start, end, put in edits:
        out += [text[done:start], put]
        done = end
    return "".join([*out, text[done:]])
