"""The remote command string: an argv (and environment values) as one string that every login
shell hands to /bin/sh unchanged.

sshd runs a command as `$SHELL -c STRING` with the user's login shell, whatever it is (sh, dash,
bash, zsh, csh, tcsh, fish), and each shell expands a different set of characters. The argv,
quoted for /bin/sh, therefore travels base64-encoded inside a string of letters, digits, `+/=`,
spaces and single quotes, which all of them pass on untouched, so every argument from a user or
the config reaches the remote program byte for byte (no expansion, no history `!`, no
injection). Environment values (tokens) never appear on the command line: they travel on the
channel's stdin, ahead of the caller's stdin (`env_stdin`), and the remote /bin/sh exports them
before `exec`. Pure functions: bot.cluster.ssh sends what they build.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping, Sequence

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# csh refuses a word longer than ~8 KiB ("Word too long"): the encoded script is cut into
# words of this size. The whole string is one argv word of the login shell, which Linux caps
# at 128 KiB (MAX_ARG_STRLEN): about 95 KiB of quoted argv.
_B64_WORD = 4000
# Exit status of the remote wrapper when the environment did not arrive on stdin.
ENV_NOT_RECEIVED = 125


def build_command(argv: Sequence[str], env: Mapping[str, str] | None = None) -> str:
    """The exact string sshd hands to the login shell (`$SHELL -c STRING`) to run `argv`.

    It is `exec /bin/sh -c '<decoder>' trainbot '<base64>'...`: only letters, digits, `+/=`,
    spaces and single quotes, which sh, dash, bash, zsh, csh, tcsh and fish all pass on as
    is. /bin/sh decodes the script: for each name of `env`, one line of stdin holding the
    value (base64) is read and exported (see `env_stdin`), then `exec argv`, every word
    single-quoted. Values never appear here, only names. An argv word may hold any byte
    but NUL (a str is encoded as UTF-8, surrogate escapes giving back raw bytes).
    """
    words = [_word_bytes(a) for a in argv]
    if not words:
        raise ValueError("empty argv: nothing to run")
    lines: list[bytes] = []
    for key in env or {}:
        if not _ENV_NAME.match(key):
            raise ValueError(f"environment variable name {key!r} is not a valid shell name")
        # `&& echo x` then `%x`: command substitution would eat a value's trailing newlines.
        lines.append(
            b"IFS= read -r trainbot_v && "
            + f'{key}=$(printf %s "$trainbot_v" | base64 -d && echo x) && '
            f'{key}=${{{key}%x}} && export {key} || '
            f'{{ echo "trainbot: environment variable {key} not received on stdin" >&2; '
            f"exit {ENV_NOT_RECEIVED}; }}".encode()
        )
    lines.append(b"exec " + b" ".join(_sh_quote(w) for w in words))
    encoded = base64.b64encode(b"\n".join(lines)).decode("ascii")
    chunks = [encoded[i : i + _B64_WORD] for i in range(0, len(encoded), _B64_WORD)]
    decoder = 'eval "$(printf %s "$@" | base64 -d)"'
    return f"exec /bin/sh -c '{decoder}' trainbot " + " ".join(f"'{c}'" for c in chunks)


def env_stdin(env: Mapping[str, str] | None) -> bytes:
    """What `build_command(argv, env)` reads from stdin first: one base64 line per value, in
    the order of `env`. The caller's own stdin follows it."""
    out = []
    for key, value in (env or {}).items():
        raw = value if isinstance(value, bytes) else str(value).encode("utf-8", "surrogateescape")
        if b"\0" in raw:  # the message names the variable, never its value
            raise ValueError(f"environment variable {key!r} holds a NUL byte")
        out.append(base64.b64encode(raw) + b"\n")
    return b"".join(out)


def _word_bytes(value: str | bytes) -> bytes:
    raw = value if isinstance(value, bytes) else str(value).encode("utf-8", "surrogateescape")
    if b"\0" in raw:
        raise ValueError(f"{value!r} holds a NUL byte, which no command line can carry")
    return raw


def _sh_quote(word: bytes) -> bytes:
    """`word` as one single-quoted sh word (an assignment-looking `A=b` stays a word)."""
    return b"'" + word.replace(b"'", b"'\\''") + b"'"
