"""The failure signature catalogue: which log lines and Slurm states mean which failure class."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path

from bot.core.catalogue.dialect import literal_variants
from bot.core.catalogue.loading import compile_catalogue, read_catalogue_texts
from bot.core.catalogue.model import AccountingMatch, CatalogueError, FailureClass, Match
from bot.core.catalogue.scanner import Scanner, Signature
from bot.core.models import Accounting


@lru_cache(maxsize=8)
def _compiled(texts: tuple[tuple[str, str], ...]
              ) -> tuple[dict[str, FailureClass], tuple[Signature, ...]]:
    """compile_catalogue once per process for the same texts (a second or more each time):
    its classes and signatures are frozen, and each Catalogue copies the mapping. A site file
    whose text changed is compiled anew; one that does not compile is not remembered."""
    classes, sigs = compile_catalogue(texts)
    return classes, tuple(sigs)


#: How much of a deciding text a line cut off at the end of a log must hold to decide.
CUT_OFF_MIN = 24
# Where a deciding text goes on after a cut inside its clause: a word, or a space and a word.
_MID_SENTENCE = re.compile(r" ?[A-Za-z0-9_]")


class Catalogue:
    """The merged, compiled catalogue. Build it with `Catalogue.load()` or `from_texts()`."""

    def __init__(self, classes: Mapping[str, FailureClass], sigs: Sequence[Signature]) -> None:
        self.classes: dict[str, FailureClass] = dict(classes)
        self._order = {cid: (-fc.priority, cid) for cid, fc in self.classes.items()}
        self._scanner = Scanner(sigs, self._order)
        # the deciding texts a cut-off line may end with the start of (not a finished run's)
        self._literals = tuple(
            (text, fc.id) for fc in self.classes.values() if fc.id != "completed"
            for p in fc.primary for text in literal_variants(p.pattern)
            if len(text) > CUT_OFF_MIN)

    # ------------------------------------------------------------------ loading

    @classmethod
    def load(cls, extra_paths: Sequence[str | Path] = ()) -> Catalogue:
        """The packaged catalogue, extended by a site's own files in order."""
        return cls.from_texts(read_catalogue_texts(extra_paths))

    @classmethod
    def from_texts(cls, texts: Sequence[tuple[str, str]]) -> Catalogue:
        """Merge YAML documents given as (name, text); the first is the base catalogue."""
        return cls(*_compiled(tuple(texts)))

    # ------------------------------------------------------------------ queries

    def get(self, class_id: str) -> FailureClass:
        """The class with this id; KeyError names the known ids."""
        try:
            return self.classes[class_id]
        except KeyError:
            raise KeyError(
                f"unknown failure class {class_id!r}; known: {', '.join(sorted(self.classes))}"
            ) from None

    def grep_patterns(self) -> list[str]:
        """Every primary and hint pattern, as `grep -E -e P ...` takes them (the YAML patterns
        are written in the dialect both understand)."""
        return list(dict.fromkeys(sig.regex.pattern for sig in self._scanner.signatures))

    def triggers(self) -> tuple[str, ...]:
        """The literal strings the block scanner searches for (for benchmarks and debugging):
        those starting with a rare character in one sentinel pass, the others one by one."""
        return self._scanner.triggers

    def classify_state(
        self, state: str | None, exit_code: int | None = None, signal: int | None = None,
        *, exit_code_mod_128: bool = False,
    ) -> list[str]:
        """Class ids implied by sacct: deciding states first (e.g. OUT_OF_MEMORY -> host_oom),
        then exit-code / signal hints (137 or signal 9 -> host_oom)."""
        return list(dict.fromkeys(m.class_id for m in self.accounting_matches(
            state, exit_code, signal, exit_code_mod_128=exit_code_mod_128)))

    def accounting_matches(
        self, state: str | None, exit_code: int | None = None, signal: int | None = None,
        *, exit_code_mod_128: bool = False,
    ) -> list[AccountingMatch]:
        """Like `classify_state`, saying which of them decide (State) and which only hint.
        `exit_code_mod_128`: the code is as `sacct --parsable2` prints it, 128 off a status
        >= 128, so 9 hints at what 137 does (Accounting.exit_code_candidates)."""
        first = (state or "").split()[0].upper() if (state or "").strip() else ""
        acct = Accounting(exit_code=exit_code, exit_code_mod_128=exit_code_mod_128)
        out: list[AccountingMatch] = []
        for fc in sorted(self.classes.values(), key=lambda c: self._order[c.id]):
            if first and first in fc.states:
                out.append(AccountingMatch(fc.id, True, f"sacct State {first}"))
        for fc in sorted(self.classes.values(), key=lambda c: self._order[c.id]):
            status = next((c for c in acct.exit_code_candidates if c in fc.exit_codes), None)
            if status is not None:
                out.append(AccountingMatch(fc.id, False, acct.exit_code_reading(status)))
            elif signal is not None and signal in fc.signals:
                out.append(AccountingMatch(fc.id, False, f"signal {signal}"))
        return out

    def cut_off_class(self, line: str) -> str | None:
        """The class whose deciding text this normalized line ends with the start of, cut off
        before its end as a pasted excerpt is (`[Rank 6] Watchdog caught collective`): at least
        CUT_OFF_MIN characters of it, from the start of a word, cut inside a clause (the rest
        goes on with a word, not a `:` or a quote: `... No such file or directory` is a whole
        message, not a cut-off `No such file or directory: 'gcc'`), the rest holding no digit
        (a deciding figure such as `= 0` is never guessed). None when no class's text fits or
        several classes' do."""
        found = set()
        for text, class_id in self._literals:
            at = line.find(text[:CUT_OFF_MIN])
            while at >= 0:
                rest = text[len(line) - at:]
                if (text.startswith(line[at:]) and _MID_SENTENCE.match(rest)
                        and not any(c.isdigit() for c in rest)
                        and (at == 0 or not line[at - 1].isalnum())):
                    found.add(class_id)
                at = line.find(text[:CUT_OFF_MIN], at + 1)
        return next(iter(found)) if len(found) == 1 else None

    def rank(self, class_ids: Iterable[str]) -> list[str]:
        """Class ids, most decisive first (priority, then id)."""
        return sorted(dict.fromkeys(class_ids), key=lambda c: self._order[c])

    # ------------------------------------------------------------------ scanning
    # (bot.core.catalogue.scanner says how the two scanners work and why they agree)

    def match_line(self, line: str, line_no: int = 1) -> list[Match]:
        """Signatures on one line on its own (no wrap joining)."""
        return self._scanner.match_line(line, line_no)

    def scan(
        self, lines: Iterable[str], first_line_no: int = 1, *, exhaustive: bool = False
    ) -> list[Match]:
        """Line by line, every pair of consecutive lines also tried as a hard wrap;
        `exhaustive=True` runs every pattern on every line (the reference for the tests)."""
        return self._scanner.scan(lines, first_line_no, exhaustive=exhaustive)

    def scan_block(self, block: str | bytes, first_line_no: int = 1) -> list[Match]:
        """The same result as `scan(block.split("\\n"))`, fast: for big logs (bytes straight
        from the file are read as UTF-8)."""
        return self._scanner.scan_block(block, first_line_no)


__all__ = [
    "AccountingMatch",
    "Catalogue",
    "CatalogueError",
    "FailureClass",
    "Match",
]
