"""What the batched reader (bot.cluster.tail.ShellTailReader) says when its command's answer
cannot be used: sentences in English and Korean that name the cluster, the path and the fix,
never an exception's repr."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from bot.cluster.errors import ClusterError
from bot.cluster.ssh import Exchange
from bot.cluster.tail import ShellTailReader
from bot.core.tail import ReadRequest
from bot.core.text import render_text
from bot.slack.render import translator

LOG = "/scratch/alice/runs/mix/slurm-88154.out"


class Answering:
    """A runner whose read command answers `answer` (the Exchanger the reader needs)."""

    def __init__(self, answer: Exchange) -> None:
        self.answer = answer

    def exchange(self, argv: Sequence[str], *, stdin: bytes, timeout: float) -> Exchange:
        return self.answer


def failure(answer: Exchange) -> ClusterError:
    reader = ShellTailReader(Answering(answer), where="gpu-a")
    with pytest.raises(ClusterError) as err:
        reader.read([ReadRequest(LOG)])
    return err.value


def korean(err: ClusterError) -> str:
    return render_text(err.text, translator("ko").gettext)


def test_a_greeting_printed_by_the_login_shell_is_blamed_on_the_startup_files() -> None:
    """A ~/.bashrc that echoes in every shell puts its words before the script's frames."""
    err = failure(Exchange(b"Welcome to gpu-a\n", b"", 0))
    said = str(err)
    assert said.startswith("reading files on gpu-a: the answer is not the read script's ("), said
    assert "Welcome to gpu-a" in said and "its error output: no message" in said
    assert "make it print nothing when the shell is not interactive" in said
    ko = korean(err)
    assert ko.startswith("gpu-a에서 파일을 읽는 중: 응답이 읽기 스크립트의 것이 아닙니다"), ko
    assert "~/.bashrc" in ko and "메시지 없음" in ko and "아무것도 출력하지 않게 하세요" in ko
    assert "FramingError(" not in said + ko


def test_a_script_that_could_not_make_its_temporary_file_says_to_check_tmp() -> None:
    """tail_read.sh exits 90 when mktemp fails (a full or read-only /tmp), before any answer."""
    err = failure(Exchange(b"", b"mktemp: failed to create file via template: No space left",
                           90))
    said = str(err)
    assert said.startswith(f"reading files on gpu-a: the read script stopped (exit 90) before "
                           f"answering for {LOG}: it could not create a temporary file "
                           "(mktemp: failed"), said
    assert "($TMPDIR, else /tmp) is writable and not full" in said
    ko = korean(err)
    assert ko.startswith(f"gpu-a에서 파일을 읽는 중: 읽기 스크립트가 {LOG}에 응답하기 전에 "
                         "멈췄습니다 (종료 코드 90)"), ko
    assert "No space left" in ko and "$TMPDIR, 없으면 /tmp" in ko


def test_a_script_that_stopped_otherwise_quotes_its_error_output() -> None:
    err = failure(Exchange(b"", b"", 137))
    assert str(err) == (f"reading files on gpu-a: the read script stopped (exit 137) before "
                        f"answering for {LOG}: no message. Its error output says why; the "
                        "files are read again next tick.")
    ko = korean(err)
    assert ko == (f"gpu-a에서 파일을 읽는 중: 읽기 스크립트가 {LOG}에 응답하기 전에 멈췄습니다 "
                  "(종료 코드 137): 메시지 없음. 이유는 오류 출력에 있습니다. 파일은 다음 틱에 "
                  "다시 읽습니다.")


def test_without_a_cluster_name_the_login_node_is_said_in_the_users_language() -> None:
    reader = ShellTailReader(Answering(Exchange(b"", b"", 137)))
    with pytest.raises(ClusterError) as err:
        reader.read([ReadRequest(LOG)])
    assert str(err.value).startswith("reading files on the login node: ")
    assert korean(err.value).startswith("로그인 노드에서 파일을 읽는 중: ")


def test_a_greeting_is_quoted_as_its_text_escaped_and_cut_short_never_as_bytes() -> None:
    """A motd in colour (ANSI escapes), in Korean, with a byte that is not UTF-8 and a long
    second line: the error quotes its first 40 characters as text, control characters
    escaped, a `…` saying more followed; not Python's b'\\x1b[1m\\xec\\x95…' bytes repr."""
    greeting = ("\x1b[1m안녕하세요, gpu-a\x1b[0m\n".encode() +
                b"\xff Last login: Sun Dec  6 09:00:00 2026 from 10.0.0.7\n")
    err = failure(Exchange(greeting, b"", 0))
    quoted = r"'\x1b[1m안녕하세요, gpu-a\x1b[0m\n� Last login: Sun D'…"
    said = str(err)
    assert said.startswith("reading files on gpu-a: the answer is not the read script's "
                           f"(unexpected byte at 0: {quoted}; its error output: no message)"), said
    ko = korean(err)
    assert ko.startswith("gpu-a에서 파일을 읽는 중: 응답이 읽기 스크립트의 것이 아닙니다 "
                         f"(unexpected byte at 0: {quoted}; 오류 출력: 메시지 없음)"), ko
    assert "b'" not in said + ko and "\x1b" not in said + ko
