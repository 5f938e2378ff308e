"""The shell lexer as it was before its scans were rewritten for speed: the oracle the property
tests compare bot.core.shell_lexer with (same results on any text)."""

from __future__ import annotations

import re

#: Operators that end a command, an and-or element or a pipeline element.
OPS = ("&&", "||", ";;", "|", ";", "&", "\n")

#: Ends of quoted strings and substitutions already scanned: absolute start -> absolute end.
#: Callers that lex slices of one text pass one Memo with each slice's base offset, so nested
#: constructs are scanned once in all, not once per nesting level.
Memo = dict[int, int]

_DQ_STOP = re.compile(r'[\\"$`]')
_BAL_STOP = re.compile(r"[\\'\"`$#(){}]")
_DQ = 0
_BAL = 1


def _skip_backtick(text: str, i: int) -> int:
    """Index just past the backtick that closes the one at text[i] (escaped ones skipped)."""
    j, n = i + 1, len(text)
    while j < n:
        k = text.find("`", j)
        if k < 0:
            return n
        back = k - 1
        while back > i and text[back] == "\\":
            back -= 1
        if (k - 1 - back) % 2 == 0:
            return k + 1
        j = k + 1
    return n


def _scan(text: str, j: int, stack: list[tuple[int, int, str, str]], base: int,
          memo: Memo | None) -> int:
    """Scan from text[j] until every frame on `stack` is closed; the index just past the last
    close, or len(text) if one never closes. A frame is (kind, start, opener, closer): _DQ for
    a double-quoted string, _BAL for `( … )`, `$( … )`, `${ … }`, `{ … }`. Each nested opener
    gets its own frame, so its end is memoised too and a later scan jumps over it."""
    n = len(text)
    dq_search = _DQ_STOP.search
    bal_search = _BAL_STOP.search
    known = memo.get if memo is not None else None
    while stack:
        if j >= n:
            return n
        frame = stack[-1]
        if frame[0] == _DQ:
            m = dq_search(text, j)
            if m is None:
                return n
            j = m.start()
            c = text[j]
            if c == "\\":
                j += 2
            elif c == '"':
                stack.pop()
                j += 1
                if memo is not None:
                    memo[base + frame[1]] = base + j
            elif c == "`":
                j = _skip_backtick(text, j)
            elif j + 1 < n and text[j + 1] in "({":
                end = known(base + j) if known is not None else None
                if end is not None:
                    j = min(end - base, n)
                else:
                    o = text[j + 1]
                    stack.append((_BAL, j, o, ")" if o == "(" else "}"))
                    j += 2
            else:
                j += 1
            continue
        m = bal_search(text, j)
        if m is None:
            return n
        j = m.start()
        c = text[j]
        if c == "\\":
            j += 2
        elif c == "'":
            k = text.find("'", j + 1)
            j = n if k < 0 else k + 1
        elif c == '"' or (c == "$" and j + 1 < n and text[j + 1] in "({") or (
            c == frame[2] and c in "({"
        ):
            end = known(base + j) if known is not None else None
            if end is not None:
                j = min(end - base, n)
            elif c == '"':
                stack.append((_DQ, j, '"', '"'))
                j += 1
            elif c == "$":
                o = text[j + 1]
                stack.append((_BAL, j, o, ")" if o == "(" else "}"))
                j += 2
            else:
                stack.append((_BAL, j, c, frame[3]))
                j += 1
        elif c == "`":
            j = _skip_backtick(text, j)
        elif c == "#" and (j == 0 or text[j - 1] in " \t\n;"):
            k = text.find("\n", j)
            j = n if k < 0 else k
        elif c == frame[3]:
            stack.pop()
            j += 1
            if memo is not None:
                memo[base + frame[1]] = base + j
        else:
            j += 1
    return min(j, n)


def skip_quoted(text: str, i: int, base: int = 0, memo: Memo | None = None) -> int:
    """Index just past the quoted string / substitution / backtick / `( … )` that starts at
    text[i]; `base` is text's offset in the text `memo` was built on."""
    c = text[i]
    n = len(text)
    if c == "'":
        j = text.find("'", i + 1)
        return n if j < 0 else j + 1
    if c == "`":
        return _skip_backtick(text, i)
    if memo is not None and base + i in memo:
        return min(memo[base + i] - base, n)
    if c == '"':
        return _scan(text, i + 1, [(_DQ, i, '"', '"')], base, memo)
    if c == "$" and i + 1 < n and text[i + 1] in "({":
        close = ")" if text[i + 1] == "(" else "}"
        return _scan(text, i + 2, [(_BAL, i, text[i + 1], close)], base, memo)
    if c == "(":
        return _scan(text, i + 1, [(_BAL, i, "(", ")")], base, memo)
    raise ValueError(f"no quote or substitution starts at {c!r}")


def skip_balanced(text: str, j: int, open_: str, close: str) -> int:
    """Index just past the `close` that balances an `open_` before text[j] (quotes, escapes,
    substitutions and comments skipped); len(text) when it never closes."""
    return _scan(text, j, [(_BAL, j - 1, open_, close)], 0, None)


def skip_group(text: str, i: int, base: int = 0, memo: Memo | None = None) -> int:
    """Index just past the `}` that closes the brace group / function body opening at
    text[i] == "{"; len(text) when it never closes."""
    if memo is not None and base + i in memo:
        return min(memo[base + i] - base, len(text))
    return _scan(text, i + 1, [(_BAL, i, "{", "}")], base, memo)


def word_start(text: str, i: int) -> bool:
    """Does a shell word start at text[i] (a comment `#` or a `{` keyword only count there)?"""
    return i == 0 or text[i - 1] in " \t\n;|&({"


def _after_definition(text: str, i: int) -> bool:
    """Is the `{` at text[i] right after a function definition's `()` (`f(){`, `f ( ){`)?"""
    return re.search(r"[\w:-][ \t]*\([ \t]*\)\Z", text[:i]) is not None


_COMMENT_STOP = re.compile(r"[\\'\"`#]|\$[({]")


def strip_comments(text: str) -> str:
    """Blank out comments (keeping offsets and newlines) so later scans ignore them."""
    parts: list[str] = []
    done = 0
    i, n = 0, len(text)
    memo: Memo = {}
    while i < n:
        m = _COMMENT_STOP.search(text, i)
        if m is None:
            break
        i = m.start()
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "#":
            if word_start(text, i):
                j = text.find("\n", i)
                j = n if j < 0 else j
                parts.append(text[done:i])
                parts.append(" " * (j - i))
                done = i = j
            else:
                i += 1
            continue
        if c == "$" and not (i + 1 < n and text[i + 1] in "({"):
            i += 1
            continue
        i = skip_quoted(text, i, 0, memo)
    parts.append(text[done:])
    return "".join(parts)


#: A here-document's `<<` / `<<-` (not a here-string's `<<<`, not a shift in an arithmetic
#: expression: _here_documents) and its delimiter's word (`EOF`, `'EOF'`, `\\EOF`,
#: `E"OF"`, `END-OF`: bash's word, up to a blank or an operator's character; a carriage
#: return is the word's, as bash reads it: `<<EOF\r` ends at the line `EOF\r`).
_HEREDOC_RE = re.compile(
    r"(?<!<)<<(?!<)(-?)[ \t]*((?:[^ \t\n|&;()<>'\"\\]|\\.|'[^'\n]*'|\"[^\"\n]*\")+)")
_DELIMITER_QUOTES_RE = re.compile(r"\\(.)|'([^']*)'|\"([^\"]*)\"")


def _here_documents(line: str) -> list[tuple[bool, str]]:
    """The here-documents a line opens, in order: whether each strips its body's leading tabs
    (`<<-`) and its delimiter with its quotes removed (bash's: `<<'EOF'`, `<<\\EOF`,
    `<<E"OF"` end at the line `EOF`). None where the `<<` is in a quoted string (`echo "cat
    <<EOF"`) or an arithmetic expression (`((m = 1 << b))`, `$((1<<b))`) on the line."""
    found = []
    for m in _HEREDOC_RE.finditer(line):
        before = line[:m.start()]
        if before.count("((") > before.count("))") or _in_quotes(before):
            continue
        delim = _DELIMITER_QUOTES_RE.sub(lambda q: next(g for g in q.groups() if g is not None),
                                         m.group(2))
        found.append((m.group(1) == "-", delim))
    return found


def _in_quotes(text: str) -> bool:
    """Does `text` end inside a quoted string it opens (`echo "a`, `x='b`)?"""
    quote = ""
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and quote != "'":
            i += 2
            continue
        if c in "'\"" and quote in ("", c):
            quote = "" if quote else c
        i += 1
    return bool(quote)


def blank_heredocs(text: str) -> str:
    """Blank heredoc bodies (each of their characters a space, newlines kept): their lines
    are data, not commands. Every offset of the text is the same offset of the result, so what
    is found in one is where it is in the other."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        if "<<" not in line:
            continue
        for strip_tabs, delim in _here_documents(line):
            while i < len(lines):
                body = lines[i].lstrip("\t") if strip_tabs else lines[i]
                out.append(" " * len(lines[i]) if body != delim else lines[i])
                i += 1
                if body == delim:
                    break
    return "\n".join(out)


_SPLIT_STOP = re.compile(r"[\\'\"`(){}&|;\n]|\$[({]")


def split_top_level(
    text: str, base: int, ops: tuple[str, ...], memo: Memo | None = None
) -> list[tuple[str, int, str]]:
    """Split at top-level operators in `ops`: [(piece, absolute offset, operator after it)]."""
    for op in ops:
        if op in text:
            break
    else:
        return [(text, base, "")]
    pieces: list[tuple[str, int, str]] = []
    start = 0
    i, n = 0, len(text)
    while i < n:
        m = _SPLIT_STOP.search(text, i)
        if m is None:
            break
        i = m.start()
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c in "'\"`(" or (c == "$" and i + 1 < n and text[i + 1] in "({"):
            i = skip_quoted(text, i, base, memo)
            continue
        if c == "{":
            if (word_start(text, i) or _after_definition(text, i)) and i + 1 < n and (
                    text[i + 1] in " \t\n"):
                i = skip_group(text, i, base, memo)
            else:
                i += 1
            continue
        if c in "$)}":
            i += 1
            continue
        if c == "\n":
            matched = "\n"
        else:
            two = text[i : i + 2]
            matched = two if two in ("&&", "||", ";;") else c
        redirect = c == "&" and (
            (i > 0 and text[i - 1] in "<>") or (i + 1 < n and text[i + 1] == ">")
        )
        redirect = redirect or (c == "|" and i > 0 and text[i - 1] == ">")
        if redirect:
            i += 1
            continue
        end = i + len(matched)
        if matched == "|" and text[end : end + 1] == "&":
            end += 1  # `|&`: a pipe of stdout and stderr, not a pipe then `&`
        if matched in ("&&", "||", "|"):  # a line break after these continues the list
            while end < n and text[end] in " \t\n":
                end += 1
        if matched in ops:
            pieces.append((text[start:i], base + start, matched))
            start = end
        i = end
    pieces.append((text[start:], base + start, ""))
    return pieces


_WORD_STOP = re.compile(r"[ \t\n\\'\"`]|\$[({]")


def shell_words(cmd: str, base: int = 0, memo: Memo | None = None) -> list[str]:
    """Shell words of a simple command, quotes kept (so globs inside quotes stay visible)."""
    words: list[str] = []
    i, n = 0, len(cmd)
    cur_start: int | None = None
    while i < n:
        m = _WORD_STOP.search(cmd, i)
        if m is None:
            if cur_start is None:
                cur_start = i
            break
        if cur_start is None and m.start() > i:
            cur_start = i
        i = m.start()
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
        if c in "'\"`" or (c == "$" and opens_subst(cmd, i)):
            i = skip_quoted(cmd, i, base, memo)
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


def substitutions(word: str, base: int = 0, memo: Memo | None = None) -> list[tuple[str, int]]:
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
            i = skip_quoted(word, i, base, memo)
            continue
        if c == "$" and i + 1 < n and word[i + 1] == "(":
            end = skip_quoted(word, i, base, memo)
            subs.append((word[i + 2 : end - 1], i + 2))
            i = end
            continue
        if c == "`":
            end = skip_quoted(word, i)
            subs.append((word[i + 1 : end - 1], i + 1))
            i = end
            continue
        if c == "$" and i + 1 < n and word[i + 1] == "{":
            i = skip_quoted(word, i, base, memo)
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
