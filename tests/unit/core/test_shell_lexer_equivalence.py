"""The shell lexer's fast scans agree with the previous implementation (tests/support/
shell_lexer_reference.py) on generated shell text full of quotes, substitutions, groups,
escapes and comments, with and without a shared memo."""

from __future__ import annotations

import os

import support.shell_lexer_reference as ref
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core import shell_lexer as lex
from bot.core.launcher_lint import commands

PIECES = ["$(", "${", "$((", "(", ")", "{ ", "{", "}", '"', "'", "`", "\\", "#", " ", "\n",
          ";", "&&", "||", "|", "&", ";;", "a", "ls *", "$", "x=", "<<EOF\n", "EOF\n", "\t",
          "> f", ">&2", "f() ", "f()", "\\\n", "$X", ";#", "(#", "{#", "a#", " # c )\n", "\\$(",
          "\\\"", "\\'", "\\`", "$'", "\"$(", ")\"", "$( (", ") )", "${#"]
EXAMPLES = int(os.environ.get("LEXER_EXAMPLES", "400"))
texts = st.lists(st.sampled_from(PIECES), min_size=4, max_size=80).map("".join)


@settings(max_examples=EXAMPLES, deadline=None)
@given(texts)
def test_skipping_any_construct_ends_where_it_did(text):
    memo: lex.Memo = {}
    ref_memo: ref.Memo = {}
    for i, c in enumerate(text):
        if c in "'\"`(" or (c == "$" and text[i + 1:i + 2] in ("(", "{")):
            assert lex.skip_quoted(text, i) == ref.skip_quoted(text, i)
            assert lex.skip_quoted(text, i, 0, memo) == ref.skip_quoted(text, i, 0, ref_memo)
        if c == "{":
            assert lex.skip_group(text, i) == ref.skip_group(text, i)
            assert lex.skip_group(text, i, 0, memo) == ref.skip_group(text, i, 0, ref_memo)
    assert memo.items() <= ref_memo.items()  # a cache: never a different end


@settings(max_examples=EXAMPLES, deadline=None)
@given(texts, st.integers(min_value=0, max_value=40))
def test_splitting_stripping_and_words_match(text, cut):
    assert lex.strip_comments(text) == ref.strip_comments(text)
    assert lex.blank_heredocs(text) == ref.blank_heredocs(text)
    for ops in (("\n", ";", "&", ";;"), ("&&", "||"), ("|",)):
        memo: lex.Memo = {}
        ref_memo: ref.Memo = {}
        assert lex.split_top_level(text, 0, ops, memo) == ref.split_top_level(text, 0, ops,
                                                                              ref_memo)
        # a slice lexed with the memo of the whole text, as the lint's walk does
        part = text[cut:]
        assert (lex.split_top_level(part, cut, ops, memo)
                == ref.split_top_level(part, cut, ops, ref_memo))
    assert lex.shell_words(text) == ref.shell_words(text)
    assert lex.substitutions(text) == ref.substitutions(text)
    assert lex.has_glob(text) == ref.has_glob(text)


WORDS = ["ls", "xls", "grep", "egrep", "rg", "cat", "concat", "let", "function", "set", "shopt",
         "reset", "sort_", "(", ")", "{", "}", "$(", " ", "\n", "( )", "((", "a", "-", "_"]


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.lists(st.sampled_from(WORDS), max_size=40).map("".join),
       st.integers(min_value=0, max_value=3000))
def test_the_walks_candidate_check_answers_as_its_patterns_do(text, pad):
    # the walk's shortcut for long lists (commands.has_candidate) against the patterns it stands
    # for, on short texts and on texts padded past its length threshold
    for t in (text, "$(" * pad + text + ")" * pad, text + " " * 2048):
        assert commands.has_candidate(t) == bool(commands._CANDIDATE_RE.search(t))
        assert commands.has_candidate(t, quick=True) == bool(commands._QUICK_RE.search(t))
