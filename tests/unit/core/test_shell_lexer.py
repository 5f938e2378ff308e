"""The shell lexer the launcher lint reads batch scripts with (bot.core.shell_lexer)."""

from __future__ import annotations

import pytest

from bot.core.shell_lexer import (
    CASE_BRANCH_ENDS,
    blank_heredocs,
    has_glob,
    shell_words,
    skip_quoted,
    split_top_level,
    strip_comments,
    subshell_spans,
    substitutions,
    word_offsets,
)


@pytest.mark.parametrize(("text", "end"), [
    ("'a b' x", 5),
    ('"a \\" $(echo ")") b" x', 20),
    ("`ls \\` x` y", 9),
    ("$(a $(b) 'c)' \"d)\") e", 19),
    ("${X:-}} x", 6),
    ("'never closed", 13),
])
def test_skip_quoted_ends_just_past_the_quote_or_substitution(text, end):
    assert skip_quoted(text, 0) == end


def test_comments_are_blanked_but_not_inside_quotes_or_words():
    text = "echo a#b '# no' # yes\nx=1 # two"
    out = strip_comments(text)
    assert out == "echo a#b '# no'      \nx=1      "
    assert len(out) == len(text)


def test_heredoc_bodies_are_blanked_with_their_offsets_kept():
    text = "cat <<-'EOF' > f\n\tgrep x *.log\n\tEOF\nls *.ckpt\n"
    out = blank_heredocs(text)
    assert out == "cat <<-'EOF' > f\n" + " " * 13 + "\n\tEOF\nls *.ckpt\n"
    assert len(out) == len(text)


def test_split_top_level_keeps_offsets_and_skips_nested_operators():
    text = 'a && b | c; d "x;y" $(e; f) || { g; h; }\nk'
    pieces = split_top_level(text, 100, ("\n", ";"))
    assert [(p.strip(), off, op) for p, off, op in pieces] == [
        ("a && b | c", 100, ";"),
        ('d "x;y" $(e; f) || { g; h; }', 111, "\n"),
        ("k", 141, ""),
    ]
    assert split_top_level("a 2>&1 | b >| c", 0, ("|",))[0][0] == "a 2>&1 "
    # `|&` pipes stderr too: one pipe, not a pipe and a background `&`
    assert split_top_level("a |& tee x & b", 0, ("&", "|")) == [
        ("a ", 0, "|"), ("tee x ", 5, "&"), (" b", 12, "")]
    # bash's `;&` and `;;&` end a case branch as `;;` does, when asked for
    assert split_top_level("a) x ;& b) y ;;& c) z ;; esac", 0, ("\n", ";", "&", *CASE_BRANCH_ENDS)
                           ) == [("a) x ", 0, ";&"), (" b) y ", 7, ";;&"), (" c) z ", 16, ";;"),
                                 (" esac", 24, "")]
    assert split_top_level("a) x ;& b", 0, (";", "&")) == [
        ("a) x ", 0, ";"), ("", 6, "&"), (" b", 7, "")]


@pytest.mark.parametrize("definition", [
    "f(){ a; b; }", "f() { a; b; }", "function f(){ a; b; }", "f ( ){ a; b; }", "f()\t{ a; b; }"])
def test_a_function_body_right_after_its_parentheses_is_one_group(definition):
    # bash reads `f(){ a; b; }` as `f() { a; b; }` (`bash -c 'f(){ echo in; }; f'` says "in")
    assert split_top_level(definition + ";c", 0, (";",)) == [
        (definition, 0, ";"), ("c", len(definition) + 1, "")]


def test_a_brace_after_other_parentheses_is_still_text():
    # `$(…){` and `arr=(){` define no function: their `{` is a word's text, as in bash
    assert split_top_level("echo $(x){ a; b", 0, (";",)) == [
        ("echo $(x){ a", 0, ";"), (" b", 13, "")]
    assert split_top_level("x=(){ a; b", 0, (";",))[0] == ("x=(){ a", 0, ";")


def test_words_keep_quotes_and_substitutions_whole():
    cmd = 'LATEST=$(ls -d "$D"/ckpt_* | tail -1) cat  "a b"/*.txt'
    words = shell_words(cmd)
    assert words == ['LATEST=$(ls -d "$D"/ckpt_* | tail -1)', "cat", '"a b"/*.txt']
    assert word_offsets(cmd, words) == [0, 38, 43]


@pytest.mark.parametrize(("word", "globbed"), [
    ("ckpt_*", True),
    ("iter_[0-9]", True),
    ('"ckpt_*"', False),
    ("$(ls *)", False),
    ("\\*", False),
])
def test_has_glob_only_counts_unquoted_patterns(word, globbed):
    assert has_glob(word) is globbed


def test_substitutions_are_found_also_inside_double_quotes_but_not_arithmetic():
    word = '"$(ls -d a*)"`date`$((1+2))\'$(no)\''
    assert substitutions(word) == [("ls -d a*", 3), ("date", 14)]


def test_subshell_spans_are_the_subshells_and_substitutions_only():
    text = ('a=(x y); ( trap "exit 0" EXIT; f() ( echo $(date) ); echo "(no) $(no)" ); '
            "echo \\( '(' `(no)`; g() { :; }")
    assert [text[a:b] for a, b in subshell_spans(text)] == [
        '( trap "exit 0" EXIT; f() ( echo $(date) ); echo "(no) $(no)" )',
        "( echo $(date) )", "$(date)", "$(no)", "`(no)`", "(no)"]
    assert subshell_spans("( echo open") == [(0, 11)]
    assert subshell_spans("case $x in a) ( : ) ;; esac") == [(14, 19)]


@pytest.mark.parametrize(("text", "spans"), [
    # a case pattern's `)` (and its optional `(`) inside a subshell closes nothing
    ("( case $1 in a) echo a ;; (b|c) echo b ;;& *) : ;; esac; trap 'exit 0' EXIT )",
     ["( case $1 in a) echo a ;; (b|c) echo b ;;& *) : ;; esac; trap 'exit 0' EXIT )"]),
    ("( case $1 in\n  a) ( : ) ;;\nesac\n)", ["( case $1 in\n  a) ( : ) ;;\nesac\n)",
                                              "( : )"]),
    ("( echo case a) )", ["( echo case a)"]),  # an argument named case opens no case
    # a substitution inside double quotes, and one in backticks, is a subshell
    ('X="$(trap \'exit 0\' EXIT; cmd)"', ["$(trap 'exit 0' EXIT; cmd)"]),
    ('echo "a ${x:-")"} $(y "$(z)")"', ['$(y "$(z)")', "$(z)"]),
    ("X=`trap 'exit 0' EXIT; cmd`", ["`trap 'exit 0' EXIT; cmd`"]),
    ('X="`a $(b)`"', ["`a $(b)`", "$(b)"]),
])
def test_subshell_spans_see_case_patterns_quoted_substitutions_and_backticks(text, spans):
    assert [text[a:b] for a, b in subshell_spans(text)] == spans
    deep = "( " * 100_000 + ")" * 100_000  # no recursion, no rescan
    assert len(subshell_spans(deep)) == 100_000
