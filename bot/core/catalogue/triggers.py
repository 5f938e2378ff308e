"""Literal triggers: the pieces of text the block scanner searches for instead of running
every pattern, chosen so that they are rare in progress output and few."""

from __future__ import annotations

import heapq
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import chain
from typing import Any

from bot.core.catalogue.dialect import INTERVAL_RE, QUANT_START, required_runs

# Typical progress output: triggers found here would make most lines candidates.
_PROGRESS_SAMPLE = """\
 iteration      100/    8000 | consumed samples:         6400 | elapsed time per iteration (ms):
 4512.3 | learning rate: 1.000000E-04 | global batch size:    64 | lm loss: 7.081234E-01 |
 loss scale: 1.0 | grad norm: 0.812 | number of skipped iterations:   0 | number of nan
 iterations:   0 | throughput per GPU (TFLOP/s/GPU): 181.2 |
{'loss': 0.5213, 'grad_norm': 1.2345, 'learning_rate': 4.9e-05, 'epoch': 0.12}
{'train_runtime': 1234.5, 'train_samples_per_second': 12.3, 'train_steps_per_second': 0.81}
2024-05-01 19:08:57,123 INFO step=3470 iter=3470 loss=0.5123 lr=1.0e-04 s/iter=4.51
host_rss=72.4GiB rss: 45.1 GB mem=48123MiB gpu_mem=61.2GiB max_allocated=70.1GB time=4.48s
[2024-05-01 19:08:57] Epoch 3:  45%|####5     | 3600/8000 [4:30:00<5:30:00,  4.51s/it,
loss=0.512, v_num=12, train_loss_step=0.498, val_loss=0.601, lr-AdamW=0.0001]
Saving checkpoint to /scratch/run/checkpoints/iter_0003000 ... saved checkpoint in 47.2 s
Loading checkpoint from latest_checkpoint.txt: iter_000001000, resuming training
| epoch 001 | loss 2.183 | ppl 4.54 | wps 12345 | ups 1.23 | wpb 8192 | bsz 64 | num_updates
 1200 | lr 0.0003 | gnorm 0.456 | train_wall 123 | gb_free 10.2 | wall 456
Train Epoch: 3 [12800/60000 (21%)]	Loss: 0.123456 Step time 0.451 samples/sec 1419.2
2025-05-20 00:00:04,001 INFO [train.py:412] [rank0] iter=1/9000 loss=0.6123 gpu_util=89%
2025-05-20 00:00:08,501 WARNING [trainer.py:88] step 2 | loss 0.6021 | lr=1.0e-04
"""
_LEAD_MAX_FREQ = 3  # occurrences in the sample above (about 0.25 %)
# Frequent in real progress output all the same: brackets of tqdm and logger prefixes, and
# the letters of `INFO`, `1.0E-04`, `GiB` and `train.py:412`, which many frameworks print
# on every line.
_NEVER_LEAD = frozenset("()[]<>{}%#\tEFGINOy")
_SAMPLE_FREQ: dict[str, int] = {}
for _ch in _PROGRESS_SAMPLE:
    _SAMPLE_FREQ[_ch] = _SAMPLE_FREQ.get(_ch, 0) + 1


def _in_sample(text: str) -> bool:
    return text in _PROGRESS_SAMPLE


def is_lead(ch: str) -> bool:
    """Characters rare in progress output: the block scanner's sentinel pass looks for them."""
    return (
        ch.isascii()
        and ch.isprintable()
        and ch not in _NEVER_LEAD
        and _SAMPLE_FREQ.get(ch, 0) <= _LEAD_MAX_FREQ
    )


def _variant_triggers(runs: list[str]) -> list[str]:
    """Up to two disjoint literal pieces of one variant for the block scanner to look for.

    Preferred: pieces starting at a rare ("lead") character, rarest first, up to 10 chars,
    found together by the sentinel pass; two of them let a hard wrap break one and leave the
    other. Else the longest run not seen in progress output (one `find` pass). [] when every
    run appears in progress output: the pattern is then searched with its own regex."""
    cands: list[tuple[int, int, int, int, str]] = []
    for r, run in enumerate(runs):
        for i, ch in enumerate(run):
            if is_lead(ch) and len(run) - i >= 3:
                trig = run[i: i + 10]
                if not _in_sample(trig):
                    cands.append((_SAMPLE_FREQ.get(ch, 0), -len(trig), r, i, trig))
    if cands:
        cands.sort()
        best = cands[0]
        chosen = [best[4]]
        for c in cands[1:]:
            if c[2] != best[2] or c[3] >= best[3] + len(best[4]) or c[3] + len(c[4]) <= best[3]:
                chosen.append(c[4])
                break
        return chosen
    return []


def _cover(variants: Sequence[list[str]]) -> list[str]:
    """Greedy set cover for variants without a lead character: few substrings (4+ chars, not
    in progress output) such that every variant has one of them in one of its runs. Each is
    one `find` pass over the block. [] for a variant whose runs all appear in progress
    output: the caller falls back to the pattern's own regex.

    Each round takes the substring held by the most variants not covered yet (then the
    longest, then the last in code-point order). The counts are kept as the variants are
    covered; those held by two or more come from a heap whose stale entries go back with
    their count. Once none is held by two, each variant left has its own best substring, and
    they are taken in the order the rounds would take them."""
    fresh: dict[str, frozenset[str]] = {}
    subs_of = [frozenset().union(*(_fresh_substrings(run, fresh) for run in runs))
               for runs in variants]
    counts = Counter(chain.from_iterable(subs_of))
    shared = frozenset(x for x, n in counts.items() if n > 1)  # only these are counted on
    heap = [(-counts[x], -len(x), -r, x) for r, x in enumerate(sorted(shared))]  # last wins
    heapq.heapify(heap)
    todo = [k for k, subs in enumerate(subs_of) if subs]
    chosen: list[str] = []
    while todo and heap:
        n, length, r, best = heapq.heappop(heap)
        if -n != counts[best]:  # fewer variants hold it now than when it was pushed
            if counts[best] > 1:
                heapq.heappush(heap, (-counts[best], length, r, best))
            continue
        chosen.append(best)
        for k in todo:
            if best in subs_of[k]:
                counts.subtract(subs_of[k] & shared)
        todo = [k for k in todo if best not in subs_of[k]]
    own = [_longest_last(subs_of[k]) for k in todo]  # each held by its variant alone
    return chosen + sorted(own, key=lambda x: (len(x), x), reverse=True)


def _longest_last(subs: Iterable[str]) -> str:
    """The longest of `subs`, the last in code-point order among those as long."""
    subs = list(subs)
    longest = max(map(len, subs))
    return max(x for x in subs if len(x) == longest)


def _fresh_substrings(run: str, memo: dict[str, frozenset[str]]) -> frozenset[str]:
    """The substrings of `run` a `find` trigger may be: 4+ characters, neither starting nor
    ending with a blank, not in progress output. A substring's extensions to the right are in
    progress output only if it is, so each start's lengths are tried only until one is not."""
    if run in memo:
        return memo[run]
    out: set[str] = set()
    for a in range(len(run)):
        if run[a].isspace():
            continue
        b = a + 4
        while b <= len(run) and _in_sample(run[a:b]):
            b += 1
        out.update(run[a:e] for e in range(b, len(run) + 1) if not run[e - 1].isspace())
    memo[run] = frozenset(out)
    return memo[run]


def trie_regex(words: Iterable[bytes]) -> bytes:
    """A regex source matching any of `words`, as a trie so `re` tests one byte per level."""
    trie: dict[int, Any] = {}
    for w in words:
        node = trie
        for byte in w:
            node = node.setdefault(byte, {})
        node[-1] = {}

    def emit(node: dict[int, Any]) -> bytes:
        if -1 in node:
            return b""  # a shorter word ends here: it is enough for a candidate
        alts = [re.escape(bytes([k])) + emit(child) for k, child in sorted(node.items())]
        return alts[0] if len(alts) == 1 else b"(?:" + b"|".join(alts) + b")"

    return emit(trie)


def _top_alternatives(pattern: str) -> list[list[tuple[str, str | None]]]:
    """The pattern's top-level alternatives as atoms: (source incl. quantifier, literal char
    when the atom is one unquantified literal character else None)."""
    alts: list[list[tuple[str, str | None]]] = [[]]
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "|":
            alts.append([])
            i += 1
            continue
        start = i
        lit: str | None = None
        if c == "\\":
            lit = pattern[i + 1]
            i += 2
        elif c == "[":
            i = pattern.index("]", i + 1) + 1
        elif c == "(":
            depth = 0
            while True:
                ch = pattern[i]
                if ch == "\\":
                    i += 2
                    continue
                if ch == "[":
                    i = pattern.index("]", i + 1) + 1
                    continue
                depth += {"(": 1, ")": -1}.get(ch, 0)
                i += 1
                if depth == 0:
                    break
        else:
            lit = c if c not in ".^$" else None
            i += 1
        if i < n and pattern[i] in QUANT_START:
            lit = None
            if pattern[i] == "{":
                m = INTERVAL_RE.match(pattern, i)
                assert m is not None
                i = m.end()
            else:
                i += 1
        alts[-1].append((pattern[start:i], lit))
    return alts


def block_regex_source(pattern: str) -> str:
    """A regex that matches somewhere in every line the pattern matches, starting with the
    pattern's rarest literal run so that `re` can search for it at C speed: the pattern's
    tail from that run on, per top-level alternative; negated classes never cross lines."""
    parts = []
    for atoms in _top_alternatives(pattern):
        best: tuple[bool, int, int] | None = None
        k = 0
        while k < len(atoms):
            if atoms[k][1] is None:
                k += 1
                continue
            j = k
            while j < len(atoms) and atoms[j][1] is not None:
                j += 1
            run = "".join(a[1] or "" for a in atoms[k:j])
            if len(run) >= 3:
                key = (not _in_sample(run), len(run), -k)
                if best is None or key > best:
                    best = key
            k = j
        start = -best[2] if best else 0
        parts.append(_line_bound("".join(a[0] for a in atoms[start:])))
    return "|".join(parts) if len(parts) == 1 else "|".join(f"(?:{p})" for p in parts)


def _line_bound(src: str) -> str:
    """`src` made safe to search a block of lines with re.MULTILINE: negated classes never
    match a newline, and `$` also matches before a CRLF's `\\r` (normalized lines have none)."""
    out: list[str] = []
    i = 0
    while i < len(src):
        c = src[i]
        if c == "\\":
            out.append(src[i: i + 2])
            i += 2
        elif c == "[":
            j = src.index("]", i + 1)
            body = src[i + 1: j]
            out.append("[^\\n" + body[1:] + "]" if body.startswith("^") else src[i: j + 1])
            i = j + 1
        elif c == "$":
            out.append("\\r?$")
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def assign_triggers(patterns: Sequence[str]) -> list[tuple[list[str], bool]]:
    """For each pattern: its triggers, and whether some variant has none (only literals seen
    in progress output), in which case the block scanner runs the pattern's own regex and
    does not look for it across a hard wrap. `find` triggers are chosen for all patterns at
    once so that they are few."""
    variants = [required_runs(p) for p in patterns]
    lead = [[_variant_triggers(runs) for runs in vs] for vs in variants]
    rest = [runs for vs, ls in zip(variants, lead, strict=True)
            for runs, chosen in zip(vs, ls, strict=True) if not chosen]
    cover = _cover(rest)
    out: list[tuple[list[str], bool]] = []
    for vs, ls in zip(variants, lead, strict=True):
        trigs: list[str] = []
        ok = True
        for runs, chosen in zip(vs, ls, strict=True):
            if not chosen:
                found = next((t for t in cover if any(t in run for run in runs)), None)
                chosen = [found] if found is not None else []
            ok = ok and bool(chosen)
            trigs.extend(chosen)
        out.append((list(dict.fromkeys(trigs)), False) if ok else ([], True))
    return out
