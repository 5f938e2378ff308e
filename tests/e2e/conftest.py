"""Fixtures for end-to-end tests against the Slack Web API stand-in (tests/slack_standin/)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes import make_context
from slack_sdk import WebClient
from slack_standin import SlackStandIn
from support.bolt_driver import ResponseUrls
from support.e2e import NOW

from bot.config import Config
from bot.core.slack_bounds import POST_DEADLINE_S
from bot.services.ports import BotContext
from bot.slack.poster import SlackPoster
from bot.slack.retry import make_client
from bot.store import Store


class FakeSleep:
    """Records the waits instead of sleeping, so retry tests are fast and can assert them."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
def slack() -> Iterator[SlackStandIn]:
    with SlackStandIn() as server:
        yield server


@pytest.fixture
def fake_sleep() -> FakeSleep:
    return FakeSleep()


@pytest.fixture
def slack_client(slack: SlackStandIn, fake_sleep: FakeSleep) -> WebClient:
    return make_client(slack.token, base_url=slack.api_url, sleep=fake_sleep, timeout=10)


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'trainbot.db'}"


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    s = Store.open(store_url)
    yield s
    s.close()


@pytest.fixture
def poster(slack_client: WebClient, store: Store, fake_sleep: FakeSleep) -> SlackPoster:
    return SlackPoster(slack_client, store, deadline_s=POST_DEADLINE_S,
                       sleep=fake_sleep, clock=lambda: NOW)


@pytest.fixture
def slack_context(slack_client: WebClient, fake_sleep: FakeSleep) -> Callable[..., BotContext]:
    """`slack_context(store, config, clusters)`: the services of a bot of `config` on `store`
    and `clusters` (tests/fakes.py's FakeClusters) whose threads go to the Slack stand-in
    through a SlackPoster, the clock (its and the poster's) `clock`, else at NOW; charts
    drawn unless `charts=False`; with `home`, the poster publishes Home tabs too."""

    def build(store: Store, config: Config, clusters: Any, *, charts: bool = True,
              home: bool = False, clock: Callable[[], float] = lambda: NOW) -> BotContext:
        poster = SlackPoster(slack_client, store, deadline_s=POST_DEADLINE_S,
                             sleep=fake_sleep, clock=clock)
        return make_context(store, config=config, clusters=clusters, sink=poster,
                            charts=charts, home=poster if home else None, clock=clock)

    return build


@pytest.fixture
def urls() -> Iterator[ResponseUrls]:
    """The response_url endpoints a slash command or click answers to (closed after the test)."""
    r = ResponseUrls()
    yield r
    r.close()
