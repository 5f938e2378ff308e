"""A small shell lexer for batch scripts: what the launcher checks need, with offsets into the
original text so that findings can name the line. Iterative: nesting depth costs no stack."""

from __future__ import annotations

import re
from collections.abc import Callable
from itertools import repeat
from operator import itemgetter

#: Operators that end a command, an and-or element or a pipeline element.
OPS = ("&&", "||", ";;", "|", ";", "&", "\n")
#: The operators that end a `case` branch: `;;`, and bash's `;&` (fall through: the next
#: branch's commands run too) and `;;&` (test the next patterns too).
CASE_BRANCH_ENDS = (";;", ";&", ";;&")

#: Ends of quoted strings and substitutions already scanned: absolute start -> absolute end.
#: Callers that lex slices of one text pass one Memo with each slice's base offset, so nested
#: constructs are scanned once in all, not once per nesting level.
Memo = dict[int, int]
#: Only constructs nested at most this deep inside a scan are memoised: the lint's walk never
#: looks deeper (its own cap is 40 levels), and a construct missing from the memo is rescanned.
MEMO_DEPTH = 64

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


#: The characters a scan stops at: an escape with the character it escapes, `$(` / `${`, and
#: each quote, comment sign, parenthesis and brace. Which of them matter depends on the frame.
_TOKEN_RE = re.compile(r"\\.|\$[({]|[\\'\"`#(){}]", re.S)


def _token_search(text: str, pos: int) -> Callable[[], re.Match[str] | None]:
    """The next stop character from `pos` on, one per call: CPython's `Pattern.scanner`
    (stateful, no new search set up per token; not in the typeshed stubs)."""
    return _TOKEN_RE.scanner(text, pos).search  # type: ignore[attr-defined]


#: Text a `( … )` frame passes over, then a run of openers / closers with only such text between
#: them: deep nesting is read a run at a time, each run's frames made in C, not one per loop.
_PLAIN = r"[^\\'\"`#(){}$]*+(?:\$(?![({])[^\\'\"`#(){}$]*+)*+"
_OPEN_RUN_RE = re.compile(r"(?:" + _PLAIN + r"\$?\()*+")
_OPENER_RE = re.compile(r"\$?\(")
_CLOSE_RUN_RE = re.compile(r"(?:" + _PLAIN + r"\))*+")
_CLOSER_RE = re.compile(r"\)")
_match_start = re.Match.start
_match_end = re.Match.end
_frame_start = itemgetter(1)


def _run_end(run_re: re.Pattern[str], text: str, j: int) -> int:
    m = run_re.match(text, j)
    return m.end() if m else j


def _scan(text: str, j: int, stack: list[tuple[int, int, str, str]], base: int,
          memo: Memo | None) -> int:
    """Scan from text[j] until every frame on `stack` is closed; the index just past the last
    close, or len(text) if one never closes. A frame is (kind, start, opener, closer): _DQ for
    a double-quoted string, _BAL for `( … )`, `$( … )`, `${ … }`, `{ … }`. Each nested opener
    gets its own frame, so its end is memoised too and a later scan jumps over it.

    One regex scanner walks the stop characters; it is restarted only where the scan jumps
    (a single-quoted string, backticks, a comment, a construct already in the memo)."""
    n = len(text)
    known = memo.get if memo is not None else None
    search = _token_search(text, j)
    while stack:
        m = search()
        if m is None:
            return n
        tok = m[0]
        j = m.start()
        kind, start, opener, closer = stack[-1]
        c = tok[0]
        if c == "\\":
            if len(tok) == 1:
                return n
            continue
        if kind == _DQ:
            if c == '"':
                stack.pop()
                j += 1
                if memo is not None and len(stack) < MEMO_DEPTH:
                    memo[base + start] = base + j
            elif c == "`":
                j = _skip_backtick(text, j)
                search = _token_search(text, j)
            elif c == "$":
                end = known(base + j) if known is not None else None
                if end is not None:
                    j = min(end - base, n)
                    search = _token_search(text, j)
                else:
                    o = tok[1]
                    stack.append((_BAL, j, o, ")" if o == "(" else "}"))
            continue
        if c == "'":
            k = text.find("'", j + 1)
            if k < 0:
                return n
            j = k + 1
            search = _token_search(text, j)
        elif c == '"' or c == "$" or (tok == opener and c in "({"):
            end = known(base + j) if known is not None else None
            if end is not None:
                j = min(end - base, n)
                search = _token_search(text, j)
            elif c == '"':
                stack.append((_DQ, j, '"', '"'))
            else:
                o = tok[1] if c == "$" else c
                if c == "$":
                    closer = ")" if o == "(" else "}"
                stack.append((_BAL, j, o, closer))
                if closer == ")":  # deep `( ( (` / `$($(`: push the whole run at once
                    j = m.end()
                    run_end = _run_end(_OPEN_RUN_RE, text, j)
                    if run_end > j:
                        starts = map(_match_start, _OPENER_RE.finditer(text, j, run_end))
                        stack.extend(zip(repeat(_BAL), starts, repeat("("), repeat(")")))
                        j = run_end
                        search = _token_search(text, j)
        elif c == "`":
            j = _skip_backtick(text, j)
            search = _token_search(text, j)
        elif c == "#":
            if j == 0 or text[j - 1] in " \t\n;":
                k = text.find("\n", j)
                if k < 0:
                    return n
                j = k
                search = _token_search(text, j)
        elif c == closer:
            stack.pop()
            j += 1
            if memo is not None and len(stack) < MEMO_DEPTH:
                memo[base + start] = base + j
            if c == ")" and stack and stack[-1][3] == ")":  # `) ) )`: the whole run at once
                run_end = _run_end(_CLOSE_RUN_RE, text, j)
                if run_end > j:
                    ends = list(map(_match_end, _CLOSER_RE.finditer(text, j, run_end)))
                    depth = len(stack)
                    k, most = 0, min(len(ends), depth)
                    while k < most and stack[depth - 1 - k][3] == ")":
                        k += 1
                    closed = stack[depth - k:]
                    del stack[depth - k:]
                    j = ends[k - 1]
                    kept = MEMO_DEPTH - (depth - k)  # the closed frames shallow enough to memoise
                    if memo is not None and kept > 0:
                        closed = closed[:kept]
                        memo.update(zip(map(base.__add__, map(_frame_start, reversed(closed))),
                                        map(base.__add__, ends[k - len(closed):k]),
                                        strict=True))
                    search = _token_search(text, j)
    return min(j, n)


def _body(stops: str) -> str:
    """Text with none of `stops`, backslashes, quotes, `#` or `$(` / `${` in it."""
    plain = "[^" + stops + "\\\\'\"`#$]*+"
    return plain + r"(?:\$(?![({])" + plain + ")*+"


#: A `case` that may be a command (subshell_spans decides): its patterns' `)` are no closers.
_CASE_WORD = r"(?<![^ \t\n;|&(){])case(?=[ \t\n])"
#: A construct with nothing inside that a scan would stop at: `"…"`, `( … )`, `$( … )`,
#: `{ … }`, `${ … }`. Matched in one step; anything else goes through _scan. A `( … )` with a
#: `case` before its first `)` is not simple: that `)` may be a pattern's (the lint's walk has
#: the subshell's true end in its memo, from subshell_spans).
_SIMPLE_RE = re.compile(
    '"' + _body('"') + '"' + r"|\$?\((?![^()]*?" + _CASE_WORD + ")" + _body("()") + r"\)"
    + r"|\$?\{" + _body("{}") + r"\}"
)


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
    simple = _SIMPLE_RE.match(text, i) if c != "{" else None
    if simple:
        return simple.end()
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
    simple = _SIMPLE_RE.match(text, i)
    if simple:
        return simple.end()
    return _scan(text, i + 1, [(_BAL, i, "{", "}")], base, memo)


def group_end(text: str, open_at: int, base: int, memo: Memo) -> int:
    """Index just past the group / body that opens at text[open_at] (`{` or `(`)."""
    if text[open_at] == "(":
        return skip_quoted(text, open_at, base, memo)
    return skip_group(text, open_at, base, memo)


#: Where a simple command may start in a script's text: its start, after an operator, an
#: opening parenthesis / brace / backtick, a line break, `then` / `do` / `else`, or a `case`
#: pattern's `)` (`a) trap … ;;`, `(a|b) set -e ;;`, `0) exit 0 ;;`). A prefix: put the command
#: word after it.
COMMAND_AT = r"(?:^|(?<=[;&|{()`\n])|(?<=\bthen)|(?<=\bdo)|(?<=\belse))[ \t]*"


def word_start(text: str, i: int) -> bool:
    """Does a shell word start at text[i] (a comment `#` or a `{` keyword only count there)?"""
    return i == 0 or text[i - 1] in " \t\n;|&({"


def opens_group(text: str, i: int) -> bool:
    """Does the `{` at text[i] open a brace group or a function's body: a word of its own with
    a blank after it (`{ a; }`, `f() { a; }`), or right after a function definition's `()`,
    which bash takes as a body too (`f(){ a; }`, `function f(){ a; }`; `$(){` / `arr=(){`
    are not definitions)."""
    if i + 1 >= len(text) or text[i + 1] not in " \t\n":
        return False
    if word_start(text, i):
        return True
    if text[i - 1] != ")":
        return False
    j = i - 2
    while j >= 0 and text[j] in " \t":
        j -= 1
    if j < 0 or text[j] != "(":
        return False
    j -= 1
    while j >= 0 and text[j] in " \t":
        j -= 1
    return j >= 0 and (text[j].isalnum() or text[j] in "_:-")


_COMMENT_START_RE = re.compile(r"(?<![^ \t\n;|&({])#")
_COMMENT_STOP = re.compile(r"[\\'\"`#]|\$[({]")


def strip_comments(text: str) -> str:
    """Blank out comments (keeping offsets and newlines) so later scans ignore them."""
    last = -1  # comments can start only where a `#` begins a word; none after the last one
    for sign in _COMMENT_START_RE.finditer(text):
        last = sign.start()
    if last < 0:
        return text
    parts: list[str] = []
    done = 0
    i, n = 0, len(text)
    memo: Memo = {}
    while i <= last:
        m = _COMMENT_STOP.search(text, i, last + 1)
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


_PAREN_STOP = re.compile(
    r"\\.|\$[({]|[\\'\"`()]|;;&?|;&"
    r"|" + _CASE_WORD + r"|(?<![^ \t\n;|&(){])esac(?![^ \t\n;|&)])", re.S)
#: What a frame of subshell_spans is: a `( … )` / `$( … )` subshell, a `(` that opens none
#: (`arr=(…)`, `f()`), a double-quoted string, and a `case` before a pattern's `)` / after it.
_SUB, _PAREN, _DQUOTE, _CASE_PATTERN, _CASE_BODY = range(5)
#: The words after which a `case` is a command, not an argument.
_COMMAND_WORDS = frozenset({"then", "do", "else", "elif", "if", "while", "until", "!", "time"})


def _at_command(text: str, i: int) -> bool:
    """Does the word at text[i] stand where a command starts (after an operator, an opening
    parenthesis or brace, a newline, or a keyword such as `then`)?"""
    j = i
    while j > 0 and text[j - 1] in " \t":
        j -= 1
    if j == 0 or text[j - 1] in "\n;&|({)":
        return True
    k = j
    while k > 0 and not text[k - 1].isspace() and text[k - 1] not in ";&|(){}":
        k -= 1
    return text[k:j] in _COMMAND_WORDS


def subshell_spans(text: str, memo: Memo | None = None) -> list[tuple[int, int]]:
    """Where the subshells of `text` (comments blanked) start and end: `( … )`, `$( … )` (also
    inside double quotes) and backticks, as (index of `(` / `$` / the backtick, index just
    past `)` / the closing backtick), in order of their start; one that never closes ends at
    len(text). A `(` that does not start a word (`arr=(…)`, `f()`) opens no subshell, nor does
    a `case` pattern's `(` or `)`; single-quoted strings and `${ … }` are passed over whole. One
    pass, a stack of open frames (double-quoted strings and `case`s among them): any depth
    costs no recursion and no rescan (backticks, which do not nest unescaped, are read once
    more for what they hold)."""
    spans: list[tuple[int, int]] = []
    stack: list[list[int]] = []  # [start, kind]
    i, n = 0, len(text)
    search = _PAREN_STOP.search
    while True:
        m = search(text, i)
        if m is None:
            break
        i = m.start()
        tok = m.group()
        c = tok[0]
        kind = stack[-1][1] if stack else _SUB
        if c == "\\":
            i += len(tok)
        elif c == "`":
            end = _skip_backtick(text, i)
            inner_end = end - 1 if end - 1 > i and text[end - 1] == "`" else end
            spans.append((i, end))
            spans.extend((i + 1 + a, i + 1 + b)
                         for a, b in subshell_spans(text[i + 1 : inner_end]))
            i = end
        elif tok == "$(":
            stack.append([i, _SUB])
            i += 2
        elif tok == "${":
            i = skip_quoted(text, i, 0, memo)
        elif kind == _DQUOTE:
            if c == '"':
                stack.pop()
            i += 1
        elif c == '"':
            stack.append([i, _DQUOTE])
            i += 1
        elif c == "'":
            i = skip_quoted(text, i, 0, memo)
        elif c == "(":
            if kind != _CASE_PATTERN:  # (a pattern's optional `(`)
                stack.append([i, _SUB if word_start(text, i) else _PAREN])
            i += 1
        elif c == ")":
            if kind == _CASE_PATTERN:
                stack[-1][1] = _CASE_BODY
            elif stack and kind != _CASE_BODY:  # (a stray `)` closes nothing)
                start, _ = stack.pop()
                if kind == _SUB:
                    spans.append((start, i + 1))
            i += 1
        elif c == ";":
            if kind == _CASE_BODY:
                stack[-1][1] = _CASE_PATTERN
            i += len(tok)
        elif tok == "case":
            if _at_command(text, i):
                stack.append([i, _CASE_PATTERN])
            i += 4
        else:  # esac
            if kind in (_CASE_PATTERN, _CASE_BODY):
                stack.pop()
            i += 4
    spans.extend((start, n) for start, kind in stack if kind == _SUB)
    spans.sort()
    return spans


def seed_subshells(text: str, memo: Memo) -> list[tuple[int, int]] | None:
    """The subshells of `text` (subshell_spans), their ends put in `memo`: every split and
    skip of the lint's walk then takes a `( … )` / `$( … )` to end where subshell_spans says, past a
    `case` pattern's `)` (which the lexer's plain scan takes for the closer), so a subshell's
    `set` is scoped to the same span as its `trap`. Only where a `case` is (None elsewhere):
    without one the plain scan ends every subshell where subshell_spans does."""
    if "case" not in text:
        return None
    spans = subshell_spans(text, memo)
    memo.update((start, end) for start, end in spans if text[start] != "`")
    return spans


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


def heredoc_body_lines(text: str) -> list[int]:
    """The 0-based numbers of the lines of `text` that are heredoc bodies (not their
    delimiters): their lines are data, not commands."""
    lines = text.split("\n")
    bodies: list[int] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if "<<" not in line:
            continue
        for strip_tabs, delim in _here_documents(line):
            while i < len(lines):
                body = lines[i].lstrip("\t") if strip_tabs else lines[i]
                i += 1
                if body == delim:
                    break
                bodies.append(i - 1)
    return bodies


def blank_heredocs(text: str) -> str:
    """Blank heredoc bodies (each of their characters a space, newlines kept): their lines
    are data, not commands. Every offset of the text is the same offset of the result, so what
    is found in one is where it is in the other."""
    lines = text.split("\n")
    for i in heredoc_body_lines(text):
        lines[i] = " " * len(lines[i])
    return "\n".join(lines)


#: What a split passes over without a decision: plain text, `)` / `}`, a `$` opening nothing,
#: single-quoted strings, the simple constructs _SIMPLE_RE matches, and a `{` that is plain
#: text or opens a simple group (as split_top_level decides it below).
_SPLIT_SKIP = re.compile(
    r"(?:[^\\'\"`(){}&|;\n$]++|[)}]|\$(?![({])|'[^']*+'|" + _SIMPLE_RE.pattern.rsplit("|", 1)[0]
    + r"|\$\{" + _body("{}") + r"\}"
    # a `{` that opens no group (not a word, or no blank after it; after `)`, split_top_level
    # decides: opens_group), or a simple group
    + r"|\{(?![ \t\n])|(?<=[^ \t\n;|&({)])\{"
    + r"|(?<![^ \t\n;|&({])\{(?=[ \t\n])" + _body("{}") + r"\})*+"
)


def split_top_level(
    text: str, base: int, ops: tuple[str, ...], memo: Memo | None = None
) -> list[tuple[str, int, str]]:
    """Split at top-level operators in `ops`: [(piece, absolute offset, operator after it)]."""
    if len(text) < 4096:  # a short text without any of the operators is one piece
        for op in ops:
            if op in text:
                break
        else:
            return [(text, base, "")]
    pieces: list[tuple[str, int, str]] = []
    start = 0
    i, n = 0, len(text)
    skip = _SPLIT_SKIP.match
    while i < n:
        i = skip(text, i).end()  # type: ignore[union-attr]
        if i >= n:
            break
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c in "'\"`(" or (c == "$" and i + 1 < n and text[i + 1] in "({"):
            i = skip_quoted(text, i, base, memo)
            continue
        if c == "{":
            if opens_group(text, i):
                i = skip_group(text, i, base, memo)
            else:
                i += 1
            continue
        if c in "$)}":
            i += 1
            continue
        if c == "\n":
            matched = "\n"
        elif ";;&" in ops and text.startswith(";;&", i):
            matched = ";;&"
        else:  # (`;&` / `;;&` where `ops` has no such operator: `;` or `;;`, then `&`)
            two = text[i : i + 2]
            matched = two if two in ("&&", "||", ";;") or (two == ";&" and two in ops) else c
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


#: Last words after which a script's next line continues the same construct (they open a body)
#: and line ends after which it needs no separator (an operator waits for its right side, `;`
#: and `&` end a command already): the one-line form joins them with a blank.
_BODY_OPENERS = frozenset({"then", "do", "else", "{", "("})
_SEPARATED = ("|", "&", ";")
#: Words that close or carry on a construct a line opened: a `;` goes before them, not `&&`.
_CONSTRUCT_WORDS = frozenset({"fi", "done", "esac", "}", ")", "else", "elif", "then", "do"})


def one_line(script: str) -> str:
    """A multi-line shell snippet (a recipe's env_setup) as one command line running the same
    commands in the same order, each only after the one before succeeded: lines joined with
    ` && `, comments and blank lines dropped, a `\\` continuation joined with a blank, and an
    `if` / `for` / `{` … spanning lines joined as its one-line form (`if x; then a; fi`).
    A newline inside a quoted string is not handled (such a snippet is shown as it reads)."""
    lines = [line.strip() for line in strip_comments(script).splitlines()]
    out = ""
    for line in filter(None, lines):
        if not out:
            out = line
        elif out.endswith("\\"):
            out = out[:-1].rstrip() + " " + line
        elif out.endswith(_SEPARATED) or out.split()[-1] in _BODY_OPENERS:
            out += " " + line
        elif line.split(None, 1)[0].rstrip(";") in _CONSTRUCT_WORDS:
            out += "; " + line
        else:
            out += " && " + line
    return out
