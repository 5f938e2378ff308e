"""A small shell lexer for batch scripts: what the launcher checks need, with offsets into the
original text so that findings can name the line."""

from __future__ import annotations

import re

#: Operators that end a command, an and-or element or a pipeline element.
OPS = ("&&", "||", ";;", "|", ";", "&", "\n")


def skip_quoted(text: str, i: int) -> int:
    """Index just past the quoted string / substitution / backtick that starts at text[i]."""
    c = text[i]
    n = len(text)
    if c == "'":
        j = text.find("'", i + 1)
        return n if j < 0 else j + 1
    if c == '"':
        j = i + 1
        while j < n:
            if text[j] == "\\":
                j += 2
                continue
            if text[j] == '"':
                return j + 1
            if text[j] == "$" and j + 1 < n and text[j + 1] in "({":
                j = skip_quoted(text, j)
                continue
            if text[j] == "`":
                j = skip_quoted(text, j)
                continue
            j += 1
        return n
    if c == "`":
        j = i + 1
        while j < n and text[j] != "`":
            j += 2 if text[j] == "\\" else 1
        return min(n, j + 1)
    if c == "$" and i + 1 < n and text[i + 1] in "({":
        close = ")" if text[i + 1] == "(" else "}"
        return skip_balanced(text, i + 2, "(" if close == ")" else "{", close)
    if c == "(":
        return skip_balanced(text, i + 1, "(", ")")
    raise AssertionError(c)


def skip_balanced(text: str, j: int, open_: str, close: str) -> int:
    """Index just past the `close` that balances an `open_` before text[j] (quotes, escapes,
    substitutions and comments skipped); len(text) when it never closes."""
    depth = 1
    n = len(text)
    while j < n:
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c in "'\"`" or (c == "$" and j + 1 < n and text[j + 1] in "({"):
            j = skip_quoted(text, j)
            continue
        if c == "#" and (j == 0 or text[j - 1] in " \t\n;"):
            nl = text.find("\n", j)
            j = n if nl < 0 else nl
            continue
        if c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return n


def word_start(text: str, i: int) -> bool:
    """Does a shell word start at text[i] (a comment `#` or a `{` keyword only count there)?"""
    return i == 0 or text[i - 1] in " \t\n;|&({"


def strip_comments(text: str) -> str:
    """Blank out comments (keeping offsets and newlines) so later scans ignore them."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c in "'\"`" or (c == "$" and i + 1 < n and text[i + 1] in "({"):
            i = skip_quoted(text, i)
            continue
        if c == "#" and word_start(text, i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            for k in range(i, j):
                out[k] = " "
            i = j
            continue
        i += 1
    return "".join(out)


_HEREDOC_RE = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\2")


def blank_heredocs(text: str) -> str:
    """Blank heredoc bodies (keeping newlines): their lines are data, not commands."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        for m in _HEREDOC_RE.finditer(line):
            strip_tabs, delim = m.group(1) == "-", m.group(3)
            while i < len(lines):
                body = lines[i].lstrip("\t") if strip_tabs else lines[i]
                out.append("" if body != delim else lines[i])
                i += 1
                if body == delim:
                    break
    return "\n".join(out)


def split_top_level(text: str, base: int, ops: tuple[str, ...]) -> list[tuple[str, int, str]]:
    """Split at top-level operators in `ops`: [(piece, absolute offset, operator after it)]."""
    pieces: list[tuple[str, int, str]] = []
    start = 0
    i, n = 0, len(text)
    brace_depth = 0
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c in "'\"`" or (c == "$" and i + 1 < n and text[i + 1] in "({"):
            i = skip_quoted(text, i)
            continue
        if c == "(":
            i = skip_quoted(text, i)
            continue
        if c == "{" and word_start(text, i) and i + 1 < n and text[i + 1] in " \t\n":
            brace_depth += 1
            i += 1
            continue
        if c == "}" and brace_depth and word_start(text, i):
            brace_depth -= 1
            i += 1
            continue
        if brace_depth == 0:
            matched = next((op for op in OPS if text.startswith(op, i)), None)
            redirect = c == "&" and (
                (i > 0 and text[i - 1] in "<>") or (i + 1 < n and text[i + 1] == ">")
            )
            redirect = redirect or (c == "|" and i > 0 and text[i - 1] == ">")
            if matched and not redirect:
                end = i + len(matched)
                if matched in ("&&", "||", "|"):  # a line break after these continues the list
                    while end < n and text[end] in " \t\n":
                        end += 1
                if matched in ops:
                    pieces.append((text[start:i], base + start, matched))
                    start = end
                i = end
                continue
        i += 1
    pieces.append((text[start:], base + start, ""))
    return pieces


def shell_words(cmd: str) -> list[str]:
    """Shell words of a simple command, quotes kept (so globs inside quotes stay visible)."""
    words: list[str] = []
    i, n = 0, len(cmd)
    cur_start: int | None = None
    while i < n:
        c = cmd[i]
        if c in " \t\n":
            if cur_start is not None:
                words.append(cmd[cur_start:i])
                cur_start = None
            i += 1
            continue
        if cur_start is None:
            cur_start = i
        if c == "\\":
            i += 2
            continue
        if c in "'\"`" or (c == "$" and i + 1 < n and opens_subst(cmd, i)):
            i = skip_quoted(cmd, i)
            continue
        i += 1
    if cur_start is not None:
        words.append(cmd[cur_start:])
    return words


def opens_subst(text: str, i: int) -> bool:
    """Does the `$` at text[i] open `$(…)` or `${…}`?"""
    return i + 1 < len(text) and text[i + 1] in "({"


def has_glob(word: str) -> bool:
    """True if the word has an unquoted `*`, `?` or `[…]` outside substitutions."""
    i, n = 0, len(word)
    while i < n:
        c = word[i]
        if c == "\\":
            i += 2
            continue
        if c in "'\"`" or (c == "$" and opens_subst(word, i)):
            i = skip_quoted(word, i)
            continue
        if c in "*?" or (c == "[" and "]" in word[i + 1 :]):
            return True
        i += 1
    return False


def substitutions(word: str) -> list[tuple[str, int]]:
    """Top-level `$(…)` / backtick bodies in a word (also inside double quotes): (body, offset)."""
    subs: list[tuple[str, int]] = []
    i, n = 0, len(word)
    in_dq = False
    while i < n:
        c = word[i]
        if c == "\\":
            i += 2
            continue
        if c == "'" and not in_dq:
            i = skip_quoted(word, i)
            continue
        if c == '"':
            in_dq = not in_dq
            i += 1
            continue
        if c == "$" and word.startswith("$((", i):
            i = skip_quoted(word, i)
            continue
        if c == "$" and i + 1 < n and word[i + 1] == "(":
            end = skip_quoted(word, i)
            subs.append((word[i + 2 : end - 1], i + 2))
            i = end
            continue
        if c == "`":
            end = skip_quoted(word, i)
            subs.append((word[i + 1 : end - 1], i + 1))
            i = end
            continue
        if c == "$" and i + 1 < n and word[i + 1] == "{":
            i = skip_quoted(word, i)
            continue
        i += 1
    return subs


def word_offsets(cmd: str, words: list[str]) -> list[int]:
    """The offset in `cmd` of each of its `shell_words`."""
    positions: list[int] = []
    pos = 0
    for w in words:
        pos = cmd.find(w, pos)
        positions.append(pos)
        pos += len(w)
    return positions
