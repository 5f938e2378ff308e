"""A keyed post another process may still be making (a hold prompt's question whose bot died,
bot.services.prompt_follow_up) is taken over only once the poster's own worst case is past,
the client's retries and 429 waits included: one formula (bot.core.slack_bounds) for both."""

from __future__ import annotations

import pytest

from bot.core.slack_bounds import default_post_at_most_s
from bot.core.takeover import post_takeover_s
from bot.slack.poster import SlackPoster
from bot.slack.retry import make_client


def test_a_posts_takeover_waits_out_the_posters_worst_case() -> None:
    """The bot's poster over the bot's client: 4 attempts of a lookup and a send, each call
    up to 6 requests of 30 s with 5 Retry-After waits of 120 s between them. A takeover of its
    post waits at least that long. Before, it waited 180 s (4 calls of 30 s, plus the margin)
    while the poster could still be posting for over an hour and a half."""
    poster = SlackPoster(make_client("xoxb-test"), store=None)
    assert poster.post_at_most_s() == pytest.approx(default_post_at_most_s())
    assert poster.post_at_most_s() == pytest.approx(4 * 2 * (6 * 30 + 5 * 120) + 4.375)
    assert post_takeover_s() >= poster.post_at_most_s()


def test_a_poster_with_more_attempts_counts_them() -> None:
    """A poster given more attempts (or a client a longer timeout) is counted with them: its
    claim of a root and its bound grow with its own settings."""
    client = make_client("xoxb-test", timeout=60)
    assert SlackPoster(client, store=None, max_attempts=6).post_at_most_s() > \
        SlackPoster(make_client("xoxb-test"), store=None).post_at_most_s()
