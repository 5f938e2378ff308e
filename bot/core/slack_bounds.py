"""How long Slack work may take at its worst, pure arithmetic: one keyed post of
bot.slack.poster.SlackPoster, its attempts and its client's (bot.slack.retry.make_client)
retries and waits included. The adapters' defaults are here, so the poster's claim of a root
(`post_at_most_s`) and the takeover of a post another process may still be making
(bot.core.takeover.post_takeover_s) count one worst case.

One post has one overall deadline (the config's `slack.post_deadline_s`, `POST_DEADLINE_S`
by default, after it starts): no wait (the poster's
backoff between attempts, a 429's Retry-After, a retry handler's backoff) is made that would
end at or past it, and no request is started once it has passed; the post then fails as when
its attempts run out. So its last request starts before the deadline and ends within one
request's timeout after it, whatever Slack answers."""

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
# A reconciling lookup reads a run's thread (conversations.replies, oldest first) or, for a
# run's root message, its channel (conversations.history, newest first), back to
# LOOKUP_CLOCK_SKEW_S before its intent, LOOKUP_PAGE messages a page, following its cursor, at
# most LOOKUP_MAX_PAGES pages (10,000 messages): a thread or
# channel not read to its end within them (or within its post's deadline) is not searched
# further, and its post is not sent again (bot.slack.poster)
LOOKUP_PAGE = 200
LOOKUP_MAX_PAGES = 50
LOOKUP_CLOCK_SKEW_S = 300.0
"""How far before a post's intent was recorded (on this host's clock) the lookup of the post,
if its fate is unknown, starts reading its channel (a root: conversations.history `oldest`)
or its thread (a reply: conversations.replies `oldest`). The post is sent only after its
intent is recorded, but Slack stamps its ts with Slack's clock: it
reads older than the intent by as much as this host's clock runs ahead of Slack's, and the
margin must cover that. 5 minutes is far beyond the error of an NTP-kept clock (well under a
second) and still cheap: an app posts about one message a second to a channel (Slack's
chat.postMessage limit), so the margin adds a few pages at most to a lookup, not the
LOOKUP_MAX_PAGES that would refuse it. A root Slack never created is so settled by reading
the channel since the attempt only, however long the channel is."""
# one post's overall deadline by default (the config's slack.post_deadline_s): a post still
# retried later helps no one
POST_DEADLINE_S = 300.0


def post_deadline_refusal(deadline_s: float, call_timeout_s: float) -> str | None:
    """Why a post deadline of `deadline_s` cannot be, its requests taking up to
    `call_timeout_s` each, else None; the one rule the config (slack.post_deadline_s, with
    CALL_TIMEOUT_S) and the poster (its client's timeout: bot.slack.poster.SlackPoster) hold
    it to. It must be positive, and more than two requests: a file or chart upload asks for
    its upload URL and then sends its bytes, and starts each only while it would end before
    the deadline (bot.slack.poster.SlackPoster._no_time_for_a_request); a deadline of two
    requests or less sends no upload at all when its URL request is slow, one of one request
    or less none ever."""
    if not deadline_s > 0:  # NaN too
        return (f"{deadline_s:g} must be a positive number of seconds (one Slack post's "
                f"overall deadline)")
    if not deadline_s > 2 * call_timeout_s:
        return (f"{deadline_s:g} must be more than {2 * call_timeout_s:g} s (2 x a Slack "
                f"request's {call_timeout_s:g} s timeout): a chart or file upload sends its "
                f"upload-URL request and then its bytes, each only while it would end before "
                f"this deadline, so a shorter one fails uploads without sending them")
    return None


def waits_in_time(now: float, wait_s: float, deadline: float) -> bool:
    """Whether a wait of `wait_s` from `now` (0: a request started now) ends before the post's
    `deadline`; one that would not is not made, and the post fails."""
    return now + wait_s < deadline


def post_at_most_s(deadline_s: float, call_timeout_s: float) -> float:
    """One keyed post at its worst: its last request starts before its deadline
    (`deadline_s` after the post started) and ends within `call_timeout_s` after it."""
    return deadline_s + call_timeout_s


def bot_post_at_most_s(deadline_s: float) -> float:
    """`post_at_most_s` of the poster and client as the bot makes them: the configured
    deadline (`deadline_s`, the config's slack.post_deadline_s) and the client's request
    timeout (CALL_TIMEOUT_S); 330 s with the default deadline of 300 s."""
    return post_at_most_s(deadline_s, CALL_TIMEOUT_S)
