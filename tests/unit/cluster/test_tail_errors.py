"""What the batched reader (bot.cluster.tail.ShellTailReader) says when its command's answer
cannot be used: sentences in English and Korean that name the cluster, the path and the fix,
never an exception's repr."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from bot.cluster.errors import ClusterError
from bot.cluster.ssh import Exchange
from bot.cluster.tail import ShellTailReader
from bot.core.tail import READ, FileRead, ReadRequest, frame
from bot.core.text import render_text
from bot.slack.render import translator

LOG = "/scratch/alice/runs/mix/slurm-88154.out"


class Answering:
    """A runner whose read command answers `answer` (the Exchanger the reader needs)."""

    def __init__(self, answer: Exchange) -> None:
        self.answer = answer

    def exchange(self, argv: Sequence[str], *, stdin: bytes, timeout: float) -> Exchange:
        return self.answer


def failure(answer: Exchange, paths: Sequence[str] = (LOG,)) -> ClusterError:
    reader = ShellTailReader(Answering(answer), where="gpu-a")
    with pytest.raises(ClusterError) as err:
        reader.read([ReadRequest(p) for p in paths])
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
                           f"(stray output at byte 0: {quoted}; its error output: no message)"
                           ), said
    ko = korean(err)
    assert ko.startswith("gpu-a에서 파일을 읽는 중: 응답이 읽기 스크립트의 것이 아닙니다 "
                         f"(바이트 0에 예상하지 못한 출력: {quoted}; 오류 출력: 메시지 없음)"), ko
    assert "b'" not in said + ko and "\x1b" not in said + ko


OK = frame(1, FileRead(READ, 3, 1, 1, 0, b"abc"))  # a whole answer for LOG: 3 bytes
BUCKETED = b"G1 read 10 1 1 0 10 128\nB128 1 10\n0123456789"  # LOG's bytes in a bucket


@pytest.mark.parametrize(("out", "english", "korean_text"), [
    (b"Last login: Sun Dec  6\n", "stray output at byte 0: 'Last login: Sun Dec  6\\n'",
     "바이트 0에 예상하지 못한 출력: 'Last login: Sun Dec  6\\n'"),
    (OK + b"logout\n", "stray output at byte 28: 'logout\\n'",  # after LOG's answer
     "바이트 28에 예상하지 못한 출력: 'logout\\n'"),
    (b"Welcome to gpu-a", "stray output at byte 0, with no newline after it: "
     "'Welcome to gpu-a'", "바이트 0에 예상하지 못한 출력(뒤에 줄바꿈 없음): 'Welcome to gpu-a'"),
    (b"F1 read ten\n", "malformed header at byte 0: 'F1 read ten\\n'",
     "바이트 0의 헤더 형식이 잘못됨: 'F1 read ten\\n'"),
    (b"G1 read ten\n", "malformed header at byte 0: 'G1 read ten\\n'",
     "바이트 0의 헤더 형식이 잘못됨: 'G1 read ten\\n'"),
    (b"G1 read 10 1 1 0 10 128\nB128 one\n", "malformed header at byte 24: 'B128 one\\n'",
     "바이트 24의 헤더 형식이 잘못됨: 'B128 one\\n'"),
    (b"S\n", "malformed header at byte 0: 'S\\n'", "바이트 0의 헤더 형식이 잘못됨: 'S\\n'"),
    (OK.replace(b"E1 3 0\n", b"X1 3 0\n"),
     f"the answer for {LOG} has no end line after its 3 bytes",
     f"{LOG}의 응답에 3바이트 뒤의 끝 줄이 없음"),
    (OK.replace(b"E1 3 0", b"E1 4 0"),
     f"the answer for {LOG} ends with 'E1 4 0\\n', which does not match its header",
     f"{LOG}의 응답 끝 줄('E1 4 0\\n')이 헤더와 맞지 않음"),
    (b"G1 read 10 1 1 0 20 128\n",
     f"the answer for {LOG} announces 20 bytes in a bucket of 128 bytes, more than the bucket "
     "or the file holds",
     f"{LOG}의 응답이 128바이트 묶음에 20바이트가 있다고 알림: 묶음이나 파일이 담을 수 있는 양보다 "
     "많음"),
    (b"G1 read 10 1 1 0 10 128\nB128 2 10\n",
     "the bucket of 128 bytes announces 2 files and 10 bytes, which its files' headers do not "
     "add up to", "128바이트 묶음이 파일 2개, 10바이트라고 알리지만 그 파일들의 헤더와 합이 맞지 "
     "않음"),
    (BUCKETED + b"X128 10 0\n", "the bucket of 128 bytes has no end line after its 10 bytes",
     "128바이트 묶음에 10바이트 뒤의 끝 줄이 없음"),
    (BUCKETED + b"D128 11 0\n",
     "the bucket of 128 bytes ends with 'D128 11 0\\n', which does not match its header",
     "128바이트 묶음의 끝 줄('D128 11 0\\n')이 헤더와 맞지 않음"),
    (BUCKETED + b"D128 10 0\nSx 3\nabcX\n", "the stat part has no newline after its 3 bytes",
     "stat 부분에 3바이트 뒤의 줄바꿈이 없음"),
    (OK + OK, "answer 1 came where answer 2 of 2 was due",
     "2개 중 2번째 응답이 올 자리에 1번째 응답이 옴"),
])
def test_each_malformed_answer_says_what_is_wrong_and_where_in_both_languages(
        out: bytes, english: str, korean_text: str) -> None:
    """Whatever is wrong with the read script's answer (stray output, a part that does not
    read as one, a file's or a bucket's bytes that do not end where their header said, answers
    out of order), the notice says it in the user's language inside the reader's sentence,
    with the byte, the path or the bucket it concerns, never English inside Korean."""
    err = failure(Exchange(out, b"", 0), paths=(LOG, LOG + ".2"))
    said = str(err)
    assert f"the answer is not the read script's ({english}; its error output: no message)" \
        in said, said
    ko = korean(err)
    assert f"응답이 읽기 스크립트의 것이 아닙니다 ({korean_text}; 오류 출력: 메시지 없음)" in ko, ko
