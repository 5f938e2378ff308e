"""How long Slack work may take at its worst, pure arithmetic: one Web API call through the
client bot.slack.retry.make_client builds (its retries included) and one keyed post of
bot.slack.poster.SlackPoster (its attempts included). The adapters' defaults are here, so
the poster's claim of a root (`post_at_most_s`) and the takeover of a post another process
may still be making (bot.core.takeover.post_takeover_s) count one worst case."""

from __future__ import annotations

CALL_TIMEOUT_S = 30  # one request's timeout (the WebClient's `timeout`)
RATE_LIMIT_RETRIES = 5  # a 429's resends (RetryAfterHandler)
RETRY_AFTER_MAX_WAIT_S = 120.0  # the longest Retry-After a 429 is waited out for
SERVER_ERROR_RETRIES = 3  # a 5xx's resends (ServerErrorBackoffHandler)
CONNECTION_DROP_RETRIES = 2  # a dropped connection's resends (ConnectionDropHandler)
BACKOFF_S = 0.5  # a backoff's first delay (doubled each time, BACKOFF_CAP_S at most)
BACKOFF_CAP_S = 30.0
JITTER = 0.25  # a backoff's delay is lengthened by up to this share
POST_ATTEMPTS = 4  # the poster's attempts at one post, each a lookup and a send


def backoff_at_most(attempt: int, base_s: float = BACKOFF_S, cap_s: float = BACKOFF_CAP_S
                    ) -> float:
    """The longest a backoff before retry `attempt + 1` waits: base·2^attempt, capped, its
    jitter at its most."""
    return min(cap_s, base_s * (2**attempt)) * (1.0 + JITTER)


def call_at_most_s(timeout_s: float, retries: int, longest_wait_s: float) -> float:
    """One Web API call at its worst: slack_sdk counts a call's retries across all of its
    handlers (one RetryState), so `retries` at most (the largest handler's count), each
    after the longest wait any handler makes (`longest_wait_s`), and each request at most
    `timeout_s`."""
    return (1 + retries) * timeout_s + retries * longest_wait_s


def post_at_most_s(attempts: int, backoff_s: float, call_s: float) -> float:
    """One keyed post at its worst: `attempts` attempts, each a lookup of an earlier send
    and the send, each call at most `call_s`, with the backoffs between the attempts."""
    backoffs = sum(backoff_at_most(attempt, backoff_s) for attempt in range(attempts - 1))
    return attempts * 2 * call_s + backoffs


def default_post_at_most_s() -> float:
    """`post_at_most_s` of the poster and client as the bot makes them (the defaults above:
    6244 s, 4 attempts of 2 calls of 780 s each, a 429 waited out 5 times for 120 s)."""
    retries = max(RATE_LIMIT_RETRIES, SERVER_ERROR_RETRIES, CONNECTION_DROP_RETRIES)
    longest_wait = max(RETRY_AFTER_MAX_WAIT_S, backoff_at_most(retries - 1))
    return post_at_most_s(POST_ATTEMPTS, BACKOFF_S,
                          call_at_most_s(CALL_TIMEOUT_S, retries, longest_wait))
