"""Pure checkpoint choice: never resume from a partial checkpoint, explain every skip."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pytest
from fakes import present

from bot.core.checkpoints import (
    CHECKPOINT_REQUESTS,
    CompletenessRule,
    LookupBound,
    LookupBoundReached,
    RequestCount,
    choose_checkpoint,
    incomplete_reason,
    iteration_of,
    resolve_pointer,
)
from bot.core.slack_bounds import POST_DEADLINE_S
from bot.core.text import Text, render_text

DCP = CompletenessRule.parse("dcp")


def said(skipped: tuple[Text, ...]) -> tuple[str, ...]:
    """The skip reasons in English."""
    return tuple(str(s) for s in skipped)
ROOT = "/ckpt/mix"

COMPLETE_DCP = {"model/.metadata": 2048, "model/__0_0.distcp": 10**9, "model/__1_0.distcp": 10**9}
PARTIAL_DCP = {"model/__0_0.distcp": 76 * 10**9}  # story 1: 76 GB written, no .metadata


def test_partial_newest_dir_without_pointer_falls_back_to_previous_complete() -> None:
    dirs = {"iter_000001000": COMPLETE_DCP, "iter_000002000": PARTIAL_DCP}
    d = choose_checkpoint(ROOT, dirs, DCP)
    assert d.checkpoint is not None
    assert d.checkpoint.path == "/ckpt/mix/iter_000001000"
    assert d.checkpoint.iteration == 1000
    assert d.checkpoint.source == "scan"
    assert said(d.skipped) == ("iter_000002000: no .metadata",)
    assert d.checkpoint.skipped == d.skipped
    assert d.explain() == "iter_000001000 (skipped iter_000002000: no .metadata)"


def test_only_partial_checkpoint_is_none_not_an_error() -> None:
    d = choose_checkpoint(ROOT, {"iter_000001000": PARTIAL_DCP}, DCP)
    assert d.checkpoint is None
    assert said(d.skipped) == ("iter_000001000: no .metadata",)


def test_no_checkpoint_yet_is_none() -> None:
    d = choose_checkpoint(ROOT, {}, DCP)
    assert d.checkpoint is None and d.skipped == ()
    assert d.explain() == "no complete checkpoint"


def test_pointer_wins_over_newer_complete_scan_candidate() -> None:
    dirs = {"iter_000001000": COMPLETE_DCP, "iter_000002000": COMPLETE_DCP}
    d = choose_checkpoint(ROOT, dirs, DCP, pointer="iter_000001000\n")
    assert d.checkpoint is not None
    assert (d.checkpoint.path, d.checkpoint.source) == ("/ckpt/mix/iter_000001000", "pointer")
    assert d.checkpoint.iteration == 1000


def test_at_most_is_what_a_submit_made_at_that_iteration_chose() -> None:
    """A job resumed from iteration 1000 has saved 2000 and 3000 and moved the pointer since:
    with at_most=1000 the choice is the checkpoint it was given, no newer one, and the
    newer ones are not reported as refused."""
    dirs = {"iter_000001000": COMPLETE_DCP, "iter_000002000": COMPLETE_DCP,
            "iter_000003000": COMPLETE_DCP, "iter_000000500": COMPLETE_DCP}
    d = choose_checkpoint(ROOT, dirs, DCP, pointer="iter_000003000\n", at_most=1000)
    assert d.checkpoint is not None
    assert (d.checkpoint.path, d.checkpoint.iteration) == ("/ckpt/mix/iter_000001000", 1000)
    assert said(d.skipped) == ()
    pointed = choose_checkpoint(ROOT, dirs, DCP, pointer="iter_000001000", at_most=1000)
    assert pointed.checkpoint is not None and pointed.checkpoint.source == "pointer"
    assert present(choose_checkpoint(ROOT, dirs, DCP, pointer="iter_000003000").checkpoint
                   ).iteration == 3000
    assert choose_checkpoint(ROOT, dirs, DCP, at_most=499).checkpoint is None


@pytest.mark.parametrize(
    "content",
    [
        "iter_000002000",
        "./iter_000002000/",
        "/ckpt/mix/iter_000002000",
        "/ckpt/mix/../mix/iter_000002000\n",
        "2000",  # Megatron's latest_checkpointed_iteration.txt holds the iteration number
    ],
)
def test_pointer_content_forms(content: str) -> None:
    dirs = {"iter_000001000": COMPLETE_DCP, "iter_000002000": COMPLETE_DCP}
    d = choose_checkpoint(ROOT, dirs, DCP, pointer=content)
    assert d.checkpoint is not None
    assert d.checkpoint.path == "/ckpt/mix/iter_000002000"
    assert d.checkpoint.source == "pointer"
    assert d.checkpoint.iteration == 2000


def test_pointer_to_partial_checkpoint_is_skipped_with_reason() -> None:
    dirs = {"iter_000001000": COMPLETE_DCP, "iter_000002000": PARTIAL_DCP}
    d = choose_checkpoint(ROOT, dirs, DCP, pointer="iter_000002000")
    assert d.checkpoint is not None and d.checkpoint.name == "iter_000001000"
    assert d.checkpoint.source == "scan"
    assert said(d.skipped) == (
        "latest_checkpoint.txt -> iter_000002000: no .metadata",
        "iter_000002000: no .metadata",
    )


def test_pointer_to_missing_dir_or_empty_pointer_falls_back() -> None:
    dirs = {"iter_000001000": COMPLETE_DCP}
    d = choose_checkpoint(ROOT, dirs, DCP, pointer="iter_000009000")
    assert d.checkpoint is not None and d.checkpoint.name == "iter_000001000"
    assert str(d.skipped[0]) == (
        "latest_checkpoint.txt -> iter_000009000: no such checkpoint directory")
    d = choose_checkpoint(ROOT, dirs, DCP, pointer="  \n")
    assert d.checkpoint is not None and said(d.skipped) == ("latest_checkpoint.txt: empty",)


def test_pointer_outside_root_uses_the_listing_under_its_absolute_path() -> None:
    dirs = {"iter_000001000": COMPLETE_DCP, "/archive/mix/iter_000005000": COMPLETE_DCP}
    d = choose_checkpoint(ROOT, dirs, DCP, pointer="/archive/mix/iter_000005000")
    assert d.checkpoint is not None
    assert d.checkpoint.path == "/archive/mix/iter_000005000"
    assert d.checkpoint.iteration == 5000


def test_newest_is_by_iteration_number_not_by_name() -> None:
    dirs = {"checkpoint_step_900": {"a": 1}, "checkpoint_step_1200": {"a": 1}, "notes": {"x": 1}}
    d = choose_checkpoint(ROOT, dirs, CompletenessRule.parse("any"))
    assert d.checkpoint is not None and d.checkpoint.iteration == 1200


def test_custom_glob_and_unnumbered_candidate() -> None:
    dirs = {"step-0300": {"a": 1}, "step-final": {"a": 1}, "iter_000009000": {"a": 1}}
    d = choose_checkpoint(ROOT, dirs, CompletenessRule.parse("any"), globs=["step-*"])
    assert d.checkpoint is not None and d.checkpoint.name == "step-0300"
    assert said(d.skipped) == ()
    d = choose_checkpoint(
        ROOT, {"step-final": {"a": 1}}, CompletenessRule.parse("any"), globs=["step-*"]
    )
    assert d.checkpoint is None
    assert said(d.skipped) == ("step-final: no iteration number in the name",)


@pytest.mark.parametrize(
    ("files", "rule", "reason"),
    [
        ({".metadata": 10, "__0_0.distcp": 5}, "dcp", None),
        ({"model/.metadata": 10}, "dcp", None),
        ({"model/.metadata": 0}, "dcp", ".metadata is empty"),
        ({"model/__0_0.distcp": 5}, "dcp", "no .metadata"),
        ({}, "dcp", "no .metadata"),
        (None, "dcp", "does not exist"),
        ({"model.pt": 5, "DONE": 0}, "marker:DONE", None),
        ({"model.pt": 5}, "marker:DONE", "no DONE"),
        ({"model/DONE": 0}, "marker:model/DONE", None),
        ({"x": 0}, "any", None),
        ({}, "any", "empty"),
    ],
)
def test_completeness_rules(files: dict[str, int] | None, rule: str, reason: str | None) -> None:
    why = incomplete_reason(files, CompletenessRule.parse(rule))
    assert (None if why is None else str(why)) == reason


def test_bad_rule_names_the_choices() -> None:
    with pytest.raises(ValueError, match="'dcp', 'marker:<file name>', 'any'"):
        CompletenessRule.parse("marker:")
    assert str(CompletenessRule.parse("marker:DONE")) == "marker:DONE"


def test_iteration_and_pointer_parsing() -> None:
    assert iteration_of("iter_000001000") == 1000
    assert iteration_of("checkpoint_step_250") == 250
    assert iteration_of("latest") is None
    assert resolve_pointer("/r", "") is None
    assert resolve_pointer("/r", "1000\n") == 1000
    assert resolve_pointer("/r", "../other/iter_1") == "/other/iter_1"


class CountingListing(Mapping[str, dict[str, int] | None]):
    """Records which directories the decision looked inside."""

    def __init__(self, data: dict[str, dict[str, int] | None]):
        self.data = data
        self.opened: list[str] = []

    def __getitem__(self, key: str) -> dict[str, int] | None:
        self.opened.append(key)
        return self.data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)


def test_only_candidates_down_to_the_first_complete_one_are_listed() -> None:
    data: dict[str, dict[str, int] | None] = {
        f"iter_{i:09d}": dict(COMPLETE_DCP) for i in range(1000, 11000, 1000)}
    data["iter_000010000"] = dict(PARTIAL_DCP)
    listing = CountingListing(data)
    d = choose_checkpoint(ROOT, listing, DCP)
    assert d.checkpoint is not None and d.checkpoint.iteration == 9000
    assert listing.opened == ["iter_000010000", "iter_000009000"]


def _send_listing(requests: RequestCount) -> None:
    """What trainbot's SFTP client sends to list a directory of a few entries: its opendir,
    the readdir answered with them, the one answered "no more" and its close; a readdir
    refused closes the directory first (bot.cluster.sftp.each_request)."""
    requests.send("opendir")
    for _ in range(2):
        try:
            requests.send("readdir")
        except LookupBoundReached:
            requests.send("close")
            raise
    requests.send("close")


class _Listed(Mapping[str, Mapping[str, int]]):
    """Listings looked up once each, their requests sent against the lookup's RequestCount."""

    def __init__(self, dirs: dict[str, Mapping[str, int]], requests: RequestCount) -> None:
        self._dirs, self._requests = dirs, requests
        self.looked_up: list[str] = []

    def __iter__(self) -> Iterator[str]:
        return iter(self._dirs)

    def __len__(self) -> int:
        return len(self._dirs)

    def __getitem__(self, key: str) -> Mapping[str, int]:
        if key not in self.looked_up:
            _send_listing(self._requests)
            self.looked_up.append(key)
        return self._dirs[key]


def _partial_newest(n: int) -> dict[str, Mapping[str, int]]:
    """iter 1 complete, iters 2..n+1 incomplete (newer)."""
    return {"iter_000000001": COMPLETE_DCP,
            **{f"iter_{i:09d}": PARTIAL_DCP for i in range(2, n + 2)}}


def test_a_request_is_sent_only_with_room_left_for_a_close() -> None:
    """Every request but a close needs room for one more after it (the close of a handle it
    opens or reads); a close needs room for itself only: the bound is never passed."""
    requests = RequestCount(bound=3)
    requests.send("opendir")
    requests.send("readdir")
    with pytest.raises(LookupBoundReached):
        requests.send("readdir")
    with pytest.raises(LookupBoundReached):
        requests.send("stat")
    requests.send("close")
    assert requests.made == 3
    with pytest.raises(LookupBoundReached):
        requests.send("close")


def test_a_listing_refused_half_way_closes_its_directory_within_the_bound() -> None:
    requests = RequestCount(bound=6)
    _send_listing(requests)
    with pytest.raises(LookupBoundReached):
        _send_listing(requests)  # its opendir, then its close: the readdir had no room
    assert requests.made == 6


def test_lookup_stops_at_its_request_bound_and_decides_nothing() -> None:
    requests = RequestCount(bound=20)
    _send_listing(requests)  # the root's listing
    dirs = _Listed(_partial_newest(8), requests)
    d = choose_checkpoint(ROOT, dirs, DCP, requests=requests)
    assert d.checkpoint is None
    assert dirs.looked_up == [f"iter_{i:09d}" for i in (9, 8, 7, 6)]
    assert d.bound == LookupBound(ROOT, checked=4, unchecked=5, requests=20)
    assert d.requests == 20
    assert d.explain().startswith(
        "no checkpoint decided (/ckpt/mix: stopped after 20 SFTP requests: the 4 newest "
        "candidates checked are incomplete, the 5 older ones were not checked) (skipped "
        "iter_000000009: no .metadata;")


def test_complete_checkpoint_within_the_bound_is_chosen() -> None:
    """The root's listing, then 19 candidates' of 4 requests each: 80, the bound."""
    requests = RequestCount(bound=CHECKPOINT_REQUESTS)
    _send_listing(requests)
    d = choose_checkpoint(ROOT, _Listed(_partial_newest((CHECKPOINT_REQUESTS - 4) // 4 - 1),
                                        requests), DCP, requests=requests)
    assert d.bound is None
    assert d.checkpoint is not None and d.checkpoint.iteration == 1
    assert requests.made == d.requests == CHECKPOINT_REQUESTS


def test_pointer_file_and_its_target_count_against_the_bound() -> None:
    # the same listings: found without a pointer, but the pointer's read (4 requests) and its
    # incomplete target's listing leave too few requests to reach the complete one
    without = RequestCount(bound=32)
    _send_listing(without)
    d = choose_checkpoint(ROOT, _Listed(_partial_newest(6), without), DCP, requests=without)
    assert d.checkpoint is not None and d.checkpoint.iteration == 1
    assert d.requests == 32
    with_pointer = RequestCount(bound=32)
    _send_listing(with_pointer)
    for kind in ("open", "read", "read", "close"):  # the read that finds its end is one too
        with_pointer.send(kind)
    d = choose_checkpoint(ROOT, _Listed(_partial_newest(6), with_pointer), DCP,
                          pointer="iter_000000007\n", requests=with_pointer)
    assert d.checkpoint is None
    assert d.bound == LookupBound(ROOT, checked=6, unchecked=1, requests=32)
    assert str(d.skipped[0]) == "latest_checkpoint.txt -> iter_000000007: no .metadata"


def test_takeover_counts_the_lookup_at_its_bound() -> None:
    """settle_takeover_s allows the lookup CHECKPOINT_REQUESTS SFTP deadlines: each of its
    requests, as the client sends them, may take the whole deadline; and the two of opening
    its channel (the subsystem's start, the version exchange)."""
    from bot.core.takeover import LOOKUP_CHANNELS, RemoteDeadlines, settle_takeover_s

    slower = settle_takeover_s(RemoteDeadlines(sftp_s=16.0), post_deadline_s=POST_DEADLINE_S) - \
        settle_takeover_s(RemoteDeadlines(sftp_s=15.0), post_deadline_s=POST_DEADLINE_S)
    assert slower == CHECKPOINT_REQUESTS + 2 * LOOKUP_CHANNELS


def test_skip_reasons_are_said_in_korean() -> None:
    """Each reason a candidate is refused for, as a Korean thread reads it (the resume's
    refusal and preflight list them): the names as they are, the reasons in Korean."""
    from bot.slack.render import translator

    ko = translator("ko").gettext
    dirs = {"iter_000001000": {"model/.metadata": 0}, "iter_000002000": PARTIAL_DCP,
            "iter_000003000": None, "step-final": {"a": 1}}
    d = choose_checkpoint(ROOT, dirs, DCP, pointer="iter_000009000", globs=["iter_*", "step-*"])
    assert [render_text(s, ko) for s in d.skipped] == [
        "latest_checkpoint.txt -> iter_000009000: 그런 체크포인트 디렉터리 없음",
        "iter_000003000: 존재하지 않음",
        "iter_000002000: `.metadata` 없음",
        "iter_000001000: `.metadata`가 비어 있음",
        "step-final: 이름에 iteration 번호 없음",
    ]
    d = choose_checkpoint(ROOT, {"iter_000002000": {}}, CompletenessRule.parse("marker:DONE"),
                          pointer="9000")
    assert [render_text(s, ko) for s in d.skipped] == [
        "latest_checkpoint.txt -> iteration 9000: 그런 체크포인트 디렉터리 없음",
        "iter_000002000: `DONE` 없음",
    ]
    d = choose_checkpoint(ROOT, {"iter_000002000": {}}, CompletenessRule.parse("any"),
                          pointer="\n")
    assert [render_text(s, ko) for s in d.skipped] == [
        "latest_checkpoint.txt: 비어 있음", "iter_000002000: 비어 있음"]
