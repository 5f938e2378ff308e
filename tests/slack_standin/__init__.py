"""A local stand-in for Slack's Web API that `slack_sdk.WebClient(base_url=...)` talks to.

Modelled on bolt-python's tests/mock_web_api_server, but it *validates* like Slack: bad token,
Block Kit limits, unknown thread_ts / message ts, the three-step files_upload_v2 flow (the
upload URL it hands out points at itself). It records every request for assertions and can be
told to answer 429 (with Retry-After) or 5xx for the next K calls of a method, or to read a
call and close the connection without answering (`drop_next`: the fate a client cannot know).
With `tls=True` it serves HTTPS, as Slack does, under a certificate of its own for 127.0.0.1
that `client_ssl` trusts. `ConnectProxy` is an HTTP proxy in front of it (a CONNECT tunnel for
HTTPS), as on an institution's network.

    with SlackStandIn() as slack:
        client = WebClient(token=slack.token, base_url=slack.api_url)
"""


from slack_standin.net import ConnectProxy
from slack_standin.paging import HISTORY_LIMITS, REPLIES_LIMITS
from slack_standin.server import GRANTED_SCOPES, Recorded, SlackStandIn
from slack_standin.validation import (
    BLOCK_TYPES,
    MAX_BLOCKS,
    MAX_BLOCKS_JSON_CHARS,
    MAX_VIEW_BLOCKS,
    mrkdwn_errors,
    plain_text_errors,
    validate_blocks,
)

__all__ = ["BLOCK_TYPES", "GRANTED_SCOPES", "HISTORY_LIMITS", "MAX_BLOCKS",
           "MAX_BLOCKS_JSON_CHARS", "MAX_VIEW_BLOCKS", "REPLIES_LIMITS", "ConnectProxy",
           "Recorded", "SlackStandIn", "mrkdwn_errors", "plain_text_errors", "validate_blocks"]
