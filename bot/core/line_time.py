"""A log line's time and where its message starts (pure; no I/O).

The time at the start of a line (an ISO time with its zone, Paddle's slashed date, glog's and
mmengine's month and day, a bare `HH:MM:SS`, or a runner's timed prefix) read as monotonic
seconds by `LogClock`; an ISO time given alone (`iso_time`); a line split into its launcher's,
process's and runner's prefixes and its message (`split_line`, `clean_line`), and the message
after its time (`message_after_time`), where bot.core.training_lines' grammar reads it.
"""

from __future__ import annotations

import calendar
import re
from datetime import UTC, datetime

from bot.core.logprefix import ANSI_ESCAPE, LINE_PREFIXES, PREFIX_STARTS, TIMED_PREFIXES

_ANSI = re.compile(ANSI_ESCAPE)
# A time at the start of a line, also in a task runner's bracket (`[task 2025-01-21T16:30:37Z]`)
_DATE_TIME = r"(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,](\d+))?"
# ... or with slashes, as Paddle's loggers print it (`[2024/10/18 17:05:14] ppocr INFO:`,
# datefmt `%Y/%m/%d %H:%M:%S`): a log's, never a time given alone
_LOG_DATE_TIME = r"(\d{4})([-/])(\d\d)\2(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,](\d+))?"
_ISO = re.compile(r"^\[?(?:[A-Za-z][\w.-]* )?" + _LOG_DATE_TIME)
_ISO_TIME = re.compile(_DATE_TIME)  # a time given alone (`iso_time`)
# A month and day with no year: glog's `I0514 16:10:00.123`, mmengine's `05/14 16:10:00`
# (MMFormatter's datefmt `%m/%d %H:%M:%S`)
_GLOG = re.compile(r"^\[?(?:[IWEF](\d\d)(\d\d)|(\d\d)/(\d\d)) (\d\d):(\d\d):(\d\d)(?:[.,](\d+))?")
_HMS = re.compile(r"^\[?(\d\d):(\d\d):(\d\d)(?:[.,](\d+))?(?![\d:])")
# What glog and absl put after their time, before the message: the thread's id and the source
# file's name and line (`I1207 12:34:56.789012 12345 train.py:42] `, C++'s `solver.cpp:411] `)
_GLOG_SOURCE = re.compile(r"[ \t]*\d+[ \t]+[\w.-]+:\d+\][ \t]*")
# An ISO time's zone after it: UTC (`Z`) or its offset from UTC, right after it (`+02:00`,
# `-0500`) or after a space, as `%z` and Go print it (`19:08:57 -0500`, `19:08:57 -0500 EST`):
# there exactly 4 digits or HH:MM, then a blank, a bracket or the end, so a number the message
# starts with is not one (`19:08:57 -1 loss`, `19:08:57 -0.52`), and a zone name after it.
_ZONE = re.compile(r"(?P<utc>Z)|(?P<sign>[+-])(?P<hours>\d\d):?(?P<minutes>\d\d)"
                   r"|(?P<spaced> )(?P<sign_>[+-])(?P<hours_>\d\d):?(?P<minutes_>\d\d)"
                   r"(?=[ \t\]]|$)(?: [A-Z]{3,5}(?=[ \t\]]|$))?")
# A zone's name alone after a time (`2024-03-01 12:00:00 PST`, strftime's `%Z`): its offset
# from UTC in seconds, for the names that mean one zone (standard and daylight time).
_ZONE_NAMES = {
    "UTC": 0, "GMT": 0, "UT": 0, "WET": 0, "WEST": 3600, "CET": 3600, "CEST": 7200,
    "MET": 3600, "MEST": 7200, "EET": 7200, "EEST": 10800, "MSK": 10800,
    "EST": -18000, "EDT": -14400, "MST": -25200, "MDT": -21600, "PST": -28800, "PDT": -25200,
    "AKST": -32400, "AKDT": -28800, "HST": -36000, "NST": -12600, "NDT": -9000,
    "JST": 32400, "KST": 32400, "HKT": 28800, "SGT": 28800, "PKT": 18000,
    "AWST": 28800, "ACST": 34200, "ACDT": 37800, "AEST": 36000, "AEDT": 39600,
    "NZST": 43200, "NZDT": 46800,
}
# Names several zones print (CST: US Central, China, Cuba; IST: India, Israel, Ireland; BST:
# British Summer, Bangladesh; AST/ADT: Atlantic, Arabia; GST: Gulf, South Georgia): their
# offset from UTC is not known, and such a time is read as written, as a time with no zone (the
# watcher puts the log's clock on its own by the file's mtime: bot.services.watch.logs), never
# as a guess at one of them. A daylight name is its standard name's hour after it in each of
# its zones (CST -> CDT, AST -> ADT), so the hour a change of daylight time shows is no gap.
_AMBIGUOUS_ZONE_NAMES = {"CST": 0, "CDT": 3600, "IST": 0, "BST": 0, "AST": 0, "ADT": 3600,
                         "GST": 0}
_ZONE_NAME = re.compile(r" (?P<name>[A-Z]{2,4})(?=[ \t\]]|$)")
# What closes a time the clock reads at the start of a message after its zone: its bracket,
# blanks.
_TIME_CLOSE = re.compile(r"\]?[ \t]*")


class LogClock:
    """Turns leading timestamps into monotonic float seconds (see docs/architecture.md): UTC's,
    an ISO time's zone read (`2025-05-20T21:08:57+02:00`, `2025-05-20 14:08:57 -0500 EST` and
    `2025-05-20 12:08:57 PDT` are 19:08:57 UTC; Paddle's `2025/05/20 19:08:57` reads as the
    ISO one), a time printed with no zone, or a zone's name several zones print (`CST`:
    `_zone`), read as written (as UTC), or, a month and day with no year (glog's `I0520
    19:08:57`, mmengine's `05/20 19:08:57`) and a bare `HH:MM:SS`, in the zone of the last ISO
    time (their date's: the process's local time, as the dated lines print it)."""

    def __init__(self) -> None:
        self.last: float | None = None
        self._base_day: float | None = None  # epoch of midnight of the latest known date
        self._year: int | None = None
        self._bare_day = 0  # day index for bare HH:MM:SS when no date was ever seen
        self._date: tuple[str, ...] = ()  # the last ISO date seen (as printed)
        self._offset = 0  # the last ISO time's offset from UTC in seconds (0: UTC or none)

    def parse_line(self, raw: str) -> float | None:
        """The time of a raw log line (`parse_split` of its `split_line`), or None."""
        return self.parse_split(*split_line(raw))

    def parse_split(self, prefix: str, message: str) -> float | None:
        """The time of a line split by `split_line`: its first timed prefix's (a runner's,
        torchrun's dated one), else the one at the start of its message, or None."""
        timed = TIMED_PREFIXES.search(prefix) if prefix else None
        return self.parse(prefix[timed.start():] if timed else message)

    def parse(self, line: str) -> float | None:
        """The time at the start of `line` (prefix and ANSI already removed), or None."""
        if not line or not (line[0].isdigit() or line[0] == "["):
            return None
        m = _ISO.match(line)
        if m:
            g = m.group(1, 3, 4, 5, 6, 7, 8)  # year, month, day, H, M, S, fraction
            date = g[:3]
            base_day = self._base_day
            if date != self._date or base_day is None:  # one timegm per day, not per line
                self._date = date
                base_day = self._base_day = float(calendar.timegm(
                    (int(g[0]), int(g[1]), int(g[2]), 0, 0, 0)))
                self._year = int(g[0])
            self._offset = _zone(line, m.end())[0] or 0
            t = (base_day + int(g[3]) * 3600 + int(g[4]) * 60 + int(g[5]) + _frac(g[6])
                 - self._offset)
            return self._accept(t, rollover=False)
        m = _GLOG.match(line)
        if m and self._year is not None:
            mo, d = (int(x) for x in (m.group(1, 2) if m.group(1) else m.group(3, 4)))
            hh, mm, ss = (int(x) for x in m.group(5, 6, 7))
            sod = hh * 3600 + mm * 60 + ss + _frac(m.group(8))
            # glog prints no year: the year of the dated lines, or the one before or after it
            # when that is nearer the log's last time (a line past New Year's midnight)
            try:
                days = [float(calendar.timegm((year, mo, d, 0, 0, 0)))
                        for year in (self._year - 1, self._year, self._year + 1)]
            except ValueError:
                return None  # not a month
            near = self.last if self.last is not None else days[1]
            t = min((day + sod - self._offset for day in days), key=lambda c: abs(c - near))
            return self._accept(t, rollover=False)
        m = _HMS.match(line) or (_GLOG.match(line) if self._year is None else None)
        if m:
            groups = m.groups()
            hh, mm, ss = (int(x) for x in groups[-4:-1])
            if hh > 23 or mm > 59 or ss > 60:
                return None
            sod = hh * 3600 + mm * 60 + ss + _frac(groups[-1])
            if self._base_day is not None:
                t = self._base_day + sod - self._offset
            else:
                t = self._bare_day * 86400 + sod
            return self._accept(t, rollover=True)
        return None

    def _accept(self, t: float, *, rollover: bool) -> float:
        if rollover and self.last is not None and t < self.last - 43200:
            t += 86400  # past midnight
            if self._base_day is not None:
                self._base_day += 86400
                self._date = ()  # the cached ISO date no longer matches _base_day
            else:
                self._bare_day += 1
        if self.last is None or t > self.last:
            self.last = t
        return t


def iso_time(text: str) -> float | None:
    """`text`, all of it, as an ISO date and time in epoch seconds, its zone read as a log
    time's (`2025-05-14T14:14:00-05:00`, `…-0500`, `2025-05-14 14:14:00 -0500`, `…Z`; none:
    UTC); None when it is not one, or names a day, time or offset there is not."""
    m = _ISO_TIME.match(text)
    if m is None:
        return None
    offset, end = _zone(text, m.end())
    if offset is None or end != len(text):
        return None
    y, mo, d, hh, mm, ss = (int(x) for x in m.groups()[:6])
    try:
        t = datetime(y, mo, d, hh, mm, ss, tzinfo=UTC)
    except ValueError:
        return None
    return t.timestamp() + _frac(m.group(7)) - offset


def _zone(line: str, end: int) -> tuple[int | None, int]:
    """The zone of the time ending at `end` in `line`: its offset from UTC in seconds
    (`+02:00` is 7200, `-0500` -18000; 0 for `Z` or none) and where the zone ends (`end` when
    there is none). An offset no zone has (past ±14:00, minutes not a quarter hour) is None
    right after the time, and none after a space: there it is the message's number. A zone's
    name alone after a space is its offset (`PST` -28800, `CET` 3600: `_ZONE_NAMES`); one
    several zones print (`CST`, `IST`: `_AMBIGUOUS_ZONE_NAMES`) is read as written, its
    daylight name an hour ahead; another word there is the message's."""
    m = _ZONE.match(line, end)
    if m is None:
        named = _ZONE_NAME.match(line, end)
        if named is not None:
            name = named.group("name")
            offset = _ZONE_NAMES.get(name, _AMBIGUOUS_ZONE_NAMES.get(name))
            if offset is not None:
                return offset, named.end()
        return 0, end
    if m.group("utc"):
        return 0, m.end()
    spaced = m.group("spaced") is not None
    sign, hours, minutes = (m.group("sign_", "hours_", "minutes_") if spaced
                            else m.group("sign", "hours", "minutes"))
    offset = int(hours) * 3600 + int(minutes) * 60
    if offset > 14 * 3600 or int(minutes) % 15:
        return (0, end) if spaced else (None, m.end())
    return (offset if sign == "+" else -offset), m.end()


def _frac(text: str | None) -> float:
    return float("0." + text) if text else 0.0


def split_line(line: str) -> tuple[str, str]:
    """The prefixes and the message of a line as a reader sees it (last carriage-return
    segment, after the line's own time and prefixes: `_last_draw`; no ANSI): the launcher's,
    process's and runner's prefixes the catalogue's scanner strips too (bot.core.logprefix),
    then the message, stripped of blanks."""
    line = _visible(_last_draw(line) if "\r" in line else line)
    m = LINE_PREFIXES.match(line) if line[:1] in PREFIX_STARTS else None
    if m:
        return line[:m.end()], line[m.end():].strip()
    return "", line.strip()


def _visible(text: str) -> str:
    """`text` without ANSI escapes and leading blanks."""
    return (_ANSI.sub("", text) if "\x1b" in text else text).lstrip()


def _last_draw(line: str) -> str:
    """The last carriage-return segment of a line with more than blanks (tqdm redraws a bar in
    place after a carriage return: a line may hold many draws), after the prefixes and the time
    the line starts with, unless the segment has its own: what writes the log puts them once,
    before the first draw (`2025-05-14 16:10:00 ` or srun --label's `0: `, then the draws), and
    the line's time is the one the last draw gets (when the line started: the nearest known)."""
    parts = [p for p in line.split("\r") if p.strip()]
    if len(parts) < 2:
        return parts[0] if parts else ""
    first, last = _visible(parts[0]), _visible(parts[-1])
    lead = first[:_lead_end(first)]
    return lead + last if lead and not _lead_end(last) else parts[-1]


def _lead_end(text: str) -> int:
    """Where the prefixes and the time at the start of `text` (ANSI and blanks removed) end:
    the launcher's, process's and runner's prefixes (bot.core.logprefix), then a time
    (`_time_end`); 0 when it starts with neither."""
    m = LINE_PREFIXES.match(text) if text[:1] in PREFIX_STARTS else None
    end = m.end() if m is not None else 0
    return end + _time_end(text[end:])


def message_after_time(message: str) -> str:
    """A line's message (`clean_line`, the catalogue scanner's `normalize_line`) after the
    time it starts with and the launcher's prefixes after that time (`_time_end`), where a
    progress bar's label starts: `2025-05-14 16:10:00 [rank3]: Map: 100%|…` is read as
    `Map: 100%|…`; the message itself when it starts with no time."""
    return message[_time_end(message):]


def _time_end(message: str) -> int:
    """Where the time at the start of a message ends (0: it starts with none): a time the clock
    reads (`2025-05-14 16:10:00,123`, `2025-05-14T16:10:00+02:00`, `[2025-05-14 16:10:00]`,
    `16:10:00`, glog's `I0514 16:10:00.123`) with its zone (`Z`, `+02:00`, ` -0500 EST`:
    `_zone`), bracket and blanks, glog's and absl's thread id and source line after their time
    (`I0514 16:10:00.123 12345 train.py:42] `: `_GLOG_SOURCE`), and the launcher's prefixes
    after it (`2025-05-14 16:10:00
    [rank3]: `, srun --label's `… 0: `)."""
    if not message or not (message[0].isdigit() or message[0] in "[IWEF"):
        return 0
    m = _ISO.match(message) or _GLOG.match(message) or _HMS.match(message)
    if m is None:
        return 0
    zone_end = _zone(message, m.end())[1]
    closed = _TIME_CLOSE.match(message, zone_end)
    end = closed.end() if closed is not None else zone_end
    if m.re is _GLOG and m.group(1) is not None and (
            source := _GLOG_SOURCE.match(message, zone_end)) is not None:
        end = source.end()  # glog's, absl's: its thread's id and source line after the time
    rest = message[end:]
    after = LINE_PREFIXES.match(rest) if rest[:1] in PREFIX_STARTS else None
    return end + after.end() if after is not None else end


def clean_line(line: str) -> str:
    """The message of a line as a reader sees it (`split_line`)."""
    return split_line(line)[1]
