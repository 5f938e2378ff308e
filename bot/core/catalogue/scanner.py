"""The scanners: the catalogue's compiled patterns run over log lines (`scan`) or whole blocks
(`scan_block`), with the same result."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from bot.core.catalogue.model import Match
from bot.core.catalogue.triggers import block_regex_source, is_lead, trie_regex
from bot.core.logprefix import ANSI_ESCAPE, LINE_PREFIXES, PREFIX_STARTS

#: A line shorter than this (normalized) is never joined with the next one as a hard wrap...
MIN_WRAP_WIDTH = 40
#: ... unless it ends in the head of a repr torch always splits over two lines: a plain
#: Parameter's (torch/nn/parameter.py, Parameter.__repr__: `"Parameter containing:\n" +
#: super().__repr__()`), its tensor on the next line (`loss: Parameter containing:`, then
#: `tensor(nan, device='cuda:0', requires_grad=True)`).
SPLIT_REPR_HEAD = "Parameter containing:"

_SENTINEL_CHUNK = 1 << 20

_ANSI_RE = re.compile(ANSI_ESCAPE)
_ANSI_RE_B = re.compile(ANSI_ESCAPE.encode("ascii"))
# Markdown's quoting of a line pasted into an issue or a chat, and a code block's indentation:
# at the start, blanks, blockquote markers (`> `) and the opening of inline code or emphasis
# (`` ` ``, `**`, `__`) before the message; at the end, the closing ones (`MemoryError\``,
# `**Killed**`); and quotes wrapping the whole message (`"MemoryError"`).
_QUOTED_START = re.compile(r"^[ \t]*(?:>[ \t]*)*((?:`+|\*\*?|__)(?=[^\s`*_]))?")
_QUOTED_END = re.compile(r"(?<=[^\s`*_])(`+|\*\*?|__)[ \t]*$")
_WRAPPING_QUOTES = re.compile(r"^([\"'])(?=\S)(.*\S)\1$")


def normalize_line(line: str) -> str:
    """The message a human sees: no line end, no ANSI colour codes, only the last tqdm
    carriage-return segment, no leading blanks, no per-rank launcher prefixes (`[rank3]:`,
    `[default0]:`, `rank3: `, srun's `0: `, `[2024-...][rank1]:`, Ray's `(WorkerDict pid=12,
    ip=...)`), no CI or task runner's prefix (taskcluster's `[task 2025-01-21T16:30:37.188Z]`,
    GitHub Actions' or kubectl's `2025-01-21T16:30:37.1234567Z `, kubectl's `[pod/NAME/C]`)
    and no markdown quoting around the message (`> `, `` `...` ``, `**...**`,
    `"..."`)."""
    line = line.rstrip("\r\n")
    if "\x1b" in line:
        line = _ANSI_RE.sub("", line)
    if "\r" in line:
        line = line.rsplit("\r", 1)[1]
    if line[:1] in (" ", "\t", ">", "`", "*", "_") and (start := _QUOTED_START.match(line)):
        # a backtick that opens a code span closed inside the line (`` `Trainer.fit` stopped``)
        # is the message's own, not a quote around the whole line: kept
        opener = start.group(1) or ""
        inline = opener[:1] == "`" and "`" in line[start.end():].rstrip(" \t`")
        line = line[start.start(1):] if inline else line[start.end():]
    if line[:1] in PREFIX_STARTS:
        line = LINE_PREFIXES.sub("", line, count=1)
    if line[-1:] in ("`", "*", "_", " ", "\t") and (end := _QUOTED_END.search(line)):
        # as is a backtick that closes a span the line opened (``failed in `foo` ``)
        inline = end.group(1)[:1] == "`" and "`" in line[:end.start()]
        line = line if inline else line[:end.start()]
    if line[:1] in ("\"", "'") and line[-1:] == line[:1]:
        line = _WRAPPING_QUOTES.sub(r"\2", line, count=1)
    return line


@dataclass(frozen=True)
class Signature:
    """One compiled pattern with what the scanners need to know about it."""

    class_id: str
    primary: bool
    regex: re.Pattern[str]
    triggers: tuple[str, ...]  # literal pieces of every match; the block scanner finds these
    needs_block_regex: bool  # some variant has only common literals: search its regex instead


class Scanner:
    """The compiled signatures of a catalogue, ready to scan; `order` ranks class ids (the
    most decisive first) and sorts the matches reported on one line."""

    def __init__(self, sigs: Sequence[Signature], order: Mapping[str, tuple[int, str]]) -> None:
        self.signatures = tuple(sigs)
        self._order = order
        triggers: dict[str, list[int]] = {}
        for k, sig in enumerate(self.signatures):
            for t in sig.triggers:
                triggers.setdefault(t, []).append(k)
        #: The literal strings the block scanner searches for, longest first: those starting
        #: with a rare character in one sentinel pass, the others one by one.
        self.triggers = tuple(sorted(triggers, key=len, reverse=True))
        self._trigger_sigs = {t: tuple(ks) for t, ks in triggers.items()}
        # Per line, only the triggers whose first character occurs in it are looked for.
        self._by_first: dict[str, list[str]] = {}
        for t in self.triggers:
            self._by_first.setdefault(t[0], []).append(t)
        self._always = tuple(k for k, sig in enumerate(self.signatures) if sig.needs_block_regex)
        self._all = tuple(range(len(self.signatures)))
        # Block scanning: every trigger's first character (its rarest) becomes byte 0x01 in a
        # translated copy of the block, so ONE regex with the literal prefix 0x01 finds all
        # triggers at C speed; collisions only add candidates, which are then verified.
        sentinel = [t for t in self.triggers if is_lead(t[0])]
        self._find_triggers = tuple(t.encode() for t in self.triggers if not is_lead(t[0]))
        table = bytearray(range(256))
        for ch in {t[0] for t in sentinel}:
            table[ord(ch)] = 1
        table[1] = 2  # a real 0x01 in a log must not look like a lead
        self._sentinel_table = bytes(table)
        encoded = [t.encode("utf-8").translate(self._sentinel_table) for t in sentinel]
        self._sentinel_re = re.compile(trie_regex(encoded)) if encoded else None
        self._max_trigger_bytes = max((len(t) for t in encoded), default=0)
        # Patterns without a rare literal: their tail from their best literal run, grouped by
        # the run's first three characters so that each group is one literal-prefix search.
        groups: dict[bytes, list[bytes]] = {}
        for k in self._always:
            src = block_regex_source(self.signatures[k].regex.pattern).encode("utf-8")
            groups.setdefault(src[:3], []).append(src)
        self._block_res = tuple(
            re.compile(b"|".join(srcs), re.MULTILINE) for srcs in groups.values()
        )

    def match_line(self, line: str, line_no: int = 1) -> list[Match]:
        """Signatures on one line on its own (no wrap joining)."""
        text = normalize_line(line)
        return self._emit({(line_no, cid): (text, prim) for cid, prim in self._hits(text).items()})

    def scan(
        self, lines: Iterable[str], first_line_no: int = 1, *, exhaustive: bool = False
    ) -> list[Match]:
        """Line-by-line scanner: every line normalized and matched, every pair of consecutive
        lines tried as a hard wrap. Only the patterns whose triggers occur on a line are run
        there; `exhaustive=True` runs every pattern on every line (the reference the tests hold
        both scanners to). Use `scan_block` for big logs; all give the same result."""
        fast = not exhaustive
        found: dict[tuple[int, str], tuple[str, bool]] = {}
        prev: str | None = None
        line_no = first_line_no - 1
        for line_no, raw in enumerate(lines, start=first_line_no):
            text = normalize_line(raw)
            for cid, prim in self._hits(text, fast=fast).items():
                _put(found, (line_no, cid), text, prim, wrapped=False)
            if prev is not None:
                for cid, (joined, prim) in self._wrap_hits(prev, text, fast=fast).items():
                    _put(found, (line_no - 1, cid), joined, prim, wrapped=True)
            prev = text
        return self._emit(found)

    def scan_block(self, block: str | bytes, first_line_no: int = 1) -> list[Match]:
        """Fast scanner for a block of complete lines ('\\n'-separated; the last may lack its
        '\\n'), same result as `scan(block.split("\\n"))`. Bytes are read as UTF-8 (bad bytes
        replaced); pass bytes straight from the file to skip a decode. Only lines holding a
        trigger are decoded and matched. A wrap across two blocks is not seen."""
        if isinstance(block, str):
            # surrogatepass round-trips any str, including lone surrogates from a decode
            # with errors="surrogateescape"
            data, errors = block.encode("utf-8", "surrogatepass"), "surrogatepass"
        else:
            data, errors = bytes(block), "replace"
        if not data:
            return []
        if b"\x1b" in data:
            data = _ANSI_RE_B.sub(b"", data)  # codes never span lines: line numbers are kept
        starts: set[int] = set()
        find, rfind = data.find, data.rfind
        if self._sentinel_re is not None:
            # In chunks of 1 MiB, overlapping by a trigger's length, so that the translated
            # copy stays in the CPU cache while the regex reads it.
            search, table = self._sentinel_re.search, self._sentinel_table
            size, overlap = _SENTINEL_CHUNK, self._max_trigger_bytes
            for base in range(0, len(data), size):
                chunk = data[base: base + size + overlap].translate(table)
                m = search(chunk)
                while m:
                    pos = base + m.start()
                    starts.add(rfind(b"\n", 0, pos) + 1)
                    end = find(b"\n", pos, base + len(chunk))
                    if end == -1:
                        break
                    m = search(chunk, end - base)
        for trig in self._find_triggers:
            pos = find(trig)
            while pos != -1:
                starts.add(rfind(b"\n", 0, pos) + 1)
                end = find(b"\n", pos)
                if end == -1:
                    break
                pos = find(trig, end)
        for regex in self._block_res:
            m = regex.search(data)
            while m:
                pos = m.start()
                starts.add(rfind(b"\n", 0, pos) + 1)
                end = find(b"\n", pos)
                if end == -1:
                    break
                m = regex.search(data, end)
        if not starts:
            return []
        found: dict[tuple[int, str], tuple[str, bool]] = {}
        norm_cache: dict[int, str] = {}

        def line_at(start: int) -> str:
            if start not in norm_cache:
                end = find(b"\n", start)
                raw = data[start:] if end == -1 else data[start:end]
                norm_cache[start] = normalize_line(raw.decode("utf-8", errors))
            return norm_cache[start]

        pairs: set[tuple[int, int, int]] = set()  # (line_no of first, start of first, start 2nd)
        line_no, last = first_line_no, 0
        for start in sorted(starts):
            line_no += data.count(b"\n", last, start)
            last = start
            cur = line_at(start)
            for cid, prim in self._hits(cur).items():
                _put(found, (line_no, cid), cur, prim, wrapped=False)
            if start > 0:
                pairs.add((line_no - 1, rfind(b"\n", 0, start - 1) + 1, start))
            end = find(b"\n", start)
            if end != -1 and end + 1 < len(data):
                pairs.add((line_no, start, end + 1))
        for first_no, a_start, b_start in sorted(pairs):
            for cid, (joined, prim) in self._wrap_hits(line_at(a_start), line_at(b_start)).items():
                _put(found, (first_no, cid), joined, prim, wrapped=True)
        return self._emit(found)

    # ------------------------------------------------------------------ internals

    def _hits(self, text: str, fast: bool = True) -> dict[str, bool]:
        """class id -> primary? for the signatures on one normalized line."""
        hits: dict[str, bool] = {}
        if not text:
            return hits
        for k in self._candidate_sigs(text) if fast else self._all:
            sig = self.signatures[k]
            if not hits.get(sig.class_id) and sig.regex.search(text):
                hits[sig.class_id] = sig.primary
        return hits

    def _candidate_sigs(self, *texts: str) -> list[int]:
        """Signatures that can match in `texts`: those whose trigger occurs there, and those
        without a rare literal (always tried)."""
        ks: set[int] = set(self._always)
        chars = set(texts[0]).union(*texts[1:]) if texts else set()
        for first in chars.intersection(self._by_first):
            for trig in self._by_first[first]:
                if any(trig in t for t in texts):
                    ks.update(self._trigger_sigs[trig])
        return sorted(ks)

    def _wrap_hits(self, a: str, b: str, fast: bool = True) -> dict[str, tuple[str, bool]]:
        """Signatures that appear only when `a` and the next line `b` are joined ("" for a
        fold inside a word, " " for a word wrap), with one of their triggers intact on a or b;
        a short `a` only when it ends in a repr's head split from its tensor
        (`SPLIT_REPR_HEAD`)."""
        hits: dict[str, tuple[str, bool]] = {}
        if (len(a) < MIN_WRAP_WIDTH and not a.endswith(SPLIT_REPR_HEAD)) or not b.strip():
            return hits
        for k in self._candidate_sigs(a, b) if fast else self._all:
            sig = self.signatures[k]
            if hits.get(sig.class_id, ("", False))[1]:
                continue
            if not any(t in a or t in b for t in sig.triggers):
                continue
            if sig.regex.search(a) or sig.regex.search(b):
                continue
            for sep in ("", " "):
                joined = a + sep + b
                if sig.regex.search(joined):
                    if sig.class_id not in hits or sig.primary:
                        hits[sig.class_id] = (joined, sig.primary)
                    break
        return hits

    def _emit(self, found: Mapping[tuple[int, str], tuple[str, bool]]) -> list[Match]:
        keys = sorted(found, key=lambda k: (k[0], self._order[k[1]]))
        return [Match(cid, no, found[(no, cid)][0], found[(no, cid)][1]) for no, cid in keys]


def _put(
    found: dict[tuple[int, str], tuple[str, bool]],
    key: tuple[int, str],
    text: str,
    primary: bool,
    wrapped: bool,
) -> None:
    """Record a hit; a primary one beats a hint, and a line on its own beats a wrap."""
    old = found.get(key)
    if old is None or (primary and not old[1]):
        found[key] = (text, primary)
    elif not wrapped and old[1] == primary:
        found[key] = (text, primary)
