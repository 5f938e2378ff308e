"""slack.proxy: the HTTP proxy the bot reaches Slack through, set in the config (an
institution's network; before, only HTTPS_PROXY and its kin set one): the bot's Web API
calls and posts go through it, over the environment's, and Socket Mode's connection takes it
from the app's client (slack_bolt's SocketModeHandler)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest
from slack_bolt import App
from slack_bolt.adapter.socket_mode import SocketModeHandler
from slack_standin import ConnectProxy, SlackStandIn

from bot.app import slack_client
from bot.config import load_config

CONFIG = """\
clusters:
  gpu: {host: login.example.org, user: alice, key_file: ~/.ssh/id_ed25519}
recipes:
  mix: {cluster: gpu, sbatch_script: /home/alice/train.sbatch, owners: [U0123ABCD]}
slack:
  channels: {training: C0123TRAIN}
  api_url: API_URL
  proxy: PROXY_URL
"""


@pytest.fixture
def env_proxy(monkeypatch: pytest.MonkeyPatch) -> Iterator[ConnectProxy]:
    """Another proxy, the one the environment names (HTTPS_PROXY)."""
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY",
                 "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    with ConnectProxy() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        yield proxy


@pytest.mark.parametrize("written", ["{}", "' {} '"], ids=["plain", "quoted with blanks"])
def test_the_bot_reaches_slack_through_the_configured_proxy_socket_mode_too(
        tmp_path: Path, env_proxy: ConnectProxy, written: str) -> None:
    """Blanks around a quoted proxy are no part of it: Socket Mode reads the proxy's port
    (urlparse(proxy).port), which raised on '3128 ' (config accepted, no connection)."""
    with SlackStandIn() as slack, ConnectProxy() as configured:
        path = tmp_path / "trainbot.yaml"
        path.write_text(CONFIG.replace("API_URL", slack.api_url)
                        .replace("PROXY_URL", written.format(configured.url)))
        config = load_config(path, env={"SLACK_BOT_TOKEN": slack.token})
        client = slack_client(config)
        assert client.auth_test()["ok"]
        client.chat_postMessage(channel="C0123TRAIN", text="mix submitted")
        hostport = slack.url.split("://", 1)[1]
        assert configured.routed == [hostport, hostport] and env_proxy.routed == []
        handler = SocketModeHandler(App(client=client, signing_secret="",
                                        token_verification_enabled=False), "xapp-1-test")
        try:
            assert handler.client.proxy == configured.url
            assert urlparse(handler.client.proxy).port == urlparse(configured.url).port
        finally:
            handler.close()
