"""bot.core.redact: configured secrets and token-shaped strings never survive redaction."""

from __future__ import annotations

import json
import shlex
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.redact import MARKER, MIN_SECRET_LENGTH, SLACK_TOKEN, Redactor, url_secrets

# Secrets of any characters (newlines, quotes, regex metacharacters, non-ASCII), long enough
# to be redacted; the texts around them of any characters too, often made of the secret's own
# characters and of the marker's, where a wrong replacement would let a secret reappear.
secrets = st.one_of(st.text(min_size=MIN_SECRET_LENGTH, max_size=24),
                    st.text(alphabet="[redacted]Q'\"\\ ", min_size=MIN_SECRET_LENGTH, max_size=8))
pieces = st.one_of(st.text(max_size=12), st.sampled_from([MARKER, "[", "]", "ed]", "[re", "@"]))


@settings(max_examples=500, deadline=None)
@given(data=st.data(), secret_list=st.lists(secrets, min_size=1, max_size=4))
def test_a_secret_embedded_anywhere_never_survives(data, secret_list):
    chosen = data.draw(st.sampled_from(secret_list))
    cut = data.draw(st.integers(0, len(chosen)))
    # the text: the secret among other secrets, pieces of the marker and of the secret itself
    # (a prefix or suffix of it next to a masked copy may spell it again)
    parts = data.draw(st.lists(st.one_of(pieces, st.sampled_from(secret_list),
                                         st.just(chosen[:cut]), st.just(chosen[cut:])),
                               max_size=8))
    position = data.draw(st.integers(0, len(parts)))
    text = "".join([*parts[:position], chosen, *parts[position:]])
    out = Redactor(secret_list).redact(text)
    for secret in secret_list:
        if secret not in MARKER:  # the marker's own letters are no leak
            assert secret not in out, (secret, text, out)


@settings(max_examples=300, deadline=None)
@given(secret_list=st.lists(secrets, max_size=3),
       parts=st.lists(st.one_of(pieces, secrets, st.sampled_from(["HF_TOKEN=", "password: ",
                                                                  "Bearer ", "xoxb-"])),
                      max_size=8))
def test_redacting_twice_changes_nothing(secret_list, parts):
    # several log handlers see one record: each redacts what the one before already did
    redactor = Redactor(secret_list)
    once = redactor.redact("".join(parts + secret_list))
    assert redactor.redact(once) == once


@settings(max_examples=200, deadline=None)
@given(secret=secrets, before=st.text(max_size=20), after=st.text(max_size=20))
def test_the_quoted_and_escaped_forms_of_a_secret_are_masked_too(secret, before, after):
    redactor = Redactor([secret])
    for shown in (shlex.quote(secret), repr(secret), json.dumps(secret)):
        # a secret that is the marker's own text cannot be told from a marker
        assert shown not in redactor.redact(f"{before}env K={shown} sbatch{after}") or \
            shown in MARKER or secret in MARKER


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=60), short=st.lists(st.text(max_size=MIN_SECRET_LENGTH - 1)))
def test_short_or_empty_values_leave_text_alone(text, short):
    # "1", "on", "" as recipe env values: masking them would destroy ordinary text
    assert Redactor(short).redact(text) == Redactor().redact(text)


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.characters(codec="ascii"), max_size=60))
def test_text_without_secrets_or_tokens_is_unchanged(text):
    if any(word in text.lower() for word in ("://", "bearer", "basic", "pass", "secret",
                                             "token", "key", "xox", "xapp", "gh", "hf_",
                                             "akia", "asia", "sk-", "glpat", "wandb",
                                             "passwd")):
        return
    assert Redactor(["correct horse battery"]).redact(text) == text


def test_the_longest_value_is_masked_whole():
    # "abcd" inside "abcdefgh": masking the short one first would leave "efgh" readable
    assert Redactor(["abcd", "abcdefgh"]).redact("x abcdefgh y") == f"x {MARKER} y"


def test_a_marker_next_to_the_rest_of_the_text_cannot_spell_the_secret():
    # masking "ed]Q" in "ed]QQ" once gives "[redacted]Q", which contains "ed]Q" again
    assert Redactor(["ed]Q"]).redact("ed]QQ") == MARKER


@pytest.mark.parametrize(("text", "shown"), [
    ("env HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123 sbatch a.sh",
     f"env HF_TOKEN={MARKER} sbatch a.sh"),
    ("token xoxb-1234567890-0987654321-AbCdEfGhIjKl leaked", f"token {MARKER} leaked"),
    ("xoxp-1-2-3-abcdefgh, xoxa-2-abcdefgh and xapp-1-A012-3456-abcdef",
     f"{MARKER}, {MARKER} and {MARKER}"),
    ("push with ghp_abcdefghijklmnopqrstuvwxyz0123456789", f"push with {MARKER}"),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnop", MARKER),
    ("aws AKIAIOSFODNN7EXAMPLE denied", f"aws {MARKER} denied"),
    ("Authorization: Bearer eyJhbGciOi.eyJzdWIi.SflKxwRJ", f"Authorization: Bearer {MARKER}"),
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", f"Authorization: Basic {MARKER}"),
    ("cannot connect to postgresql+psycopg://bot:s3cr@t@db:5432/trainbot: refused",
     f"cannot connect to postgresql+psycopg://bot:{MARKER}@db:5432/trainbot: refused"),
    ("https://db/x?user=bot&password=hunter22&ssl=1",
     f"https://db/x?user=bot&password={MARKER}&ssl=1"),
    ("{'WANDB_API_KEY': 'abcdef0123456789'}", f"{{'WANDB_API_KEY': '{MARKER}'}}"),
])
def test_token_shaped_strings_are_masked_without_a_configured_value(text, shown):
    assert Redactor().redact(text) == shown


@pytest.mark.parametrize("text", [
    "export the xoxb- bot token (it is never read from the config file)",
    "sbatch: error: invalid partition specified: gpu-big",
    "sqlite:////home/a@b/trainbot.db",
    "postgresql+psycopg://trainbot@db:5432/trainbot",
    "password authentication failed for user \"trainbot\"",
    "set slack.bot_token_env to the variable's name",
])
def test_ordinary_text_is_left_as_it_is(text):
    assert Redactor(["s3cret-value"]).redact(text) == text


def test_payloads_are_redacted_except_their_identifiers():
    redactor = Redactor(["s3cret-value"])
    blocks: list[dict[str, Any]] = [{"type": "section", "block_id": "s3cret-value",
               "text": {"type": "mrkdwn", "text": "failed: env K=s3cret-value"}},
              {"type": "actions", "elements": [{"type": "button", "action_id": "resubmit",
                                                "value": "s3cret-value-token"}]}]
    out = redactor.redact_data(blocks)
    assert out[0]["text"]["text"] == f"failed: env K={MARKER}"
    assert out[0]["block_id"] == "s3cret-value" and out[1]["elements"][0]["value"] == \
        "s3cret-value-token"
    assert blocks[0]["text"]["text"] == "failed: env K=s3cret-value"  # a copy: input untouched


@pytest.mark.parametrize(("url", "found"), [
    ("postgresql://bob:s3cret@db:abc/trainbot", ["s3cret"]),
    ("bob:s3cret@db/trainbot", ["s3cret"]),
    ("postgresql://bob:s3cr@t@db/trainbot", ["s3cr@t"]),
    ("postgresql://bob:s3/cr?et@db/trainbot", ["s3/cr?et"]),
    ("postgresql://db/trainbot?user=bob&password=s3cret", ["s3cret"]),
    ("sqlite:////home/a@b/x.db", []),
    ("postgresql+psycopg://bob@db:5432/trainbot", []),
])
def test_url_secrets_are_read_from_the_text_even_when_it_does_not_parse(url, found):
    assert url_secrets(url) == found


# Tokens as the services issue them, and ordinary words, some ending in a token's prefix
# letters or a secret's name (a glued token must be masked, such a word must not be).
TOKENS = ["xoxb-1234567890-0987654321-AbCdEfGhIjKl", "xapp-1-A012-3456-abcdef",
          "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "gho_0123456789abcdefghijKLMNOPQRSTUVWXYZ",
          "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
          "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567", "AKIAIOSFODNN7EXAMPLE", "ASIAY34FZKBOKMUTVV7A"]
WORDS = ["laughs", "highs", "sighs", "weighs", "thigh", "ghost", "box", "detox", "toxic",
         "token", "tokens", "secretary", "password", "github", "hf", "asia", "Eurasia",
         "EURASIA", "AKIMBO", "ASIAN", "key", "api", "access", "the", "job", "failed"]
WORDS += ["nginxapp", "fluxapp", "detoxoxb", "maxToken", "padToken", "isSecret", "ntoken",
          "hasPassword", "nextPageToken", "AP_ASIAPACIFICSOUTHEAST", "xapp", "xoxb"]
# any letters, small and capital (x, y, z too: `xapp`, `xoxb` end ordinary words)
words = st.one_of(st.sampled_from(WORDS),
                  st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
                          min_size=1, max_size=12))


@pytest.mark.parametrize(("text", "shown"), [
    ("abcxoxb-1234567890-0987654321-AbCdEfGhIjKl leaked", f"abc{MARKER} leaked"),
    ("tokenghp_abcdefghijklmnopqrstuvwxyz0123456789", f"token{MARKER}"),
    ("slackxapp-1-A012-3456-abcdef", f"slack{MARKER}"),
    ("repogithub_pat_11ABCDEFG0123456789_abcdefghijklmnop", f"repo{MARKER}"),
    ("myhf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567 set", f"my{MARKER} set"),
    ("key_AKIAIOSFODNN7EXAMPLE, awsAKIAIOSFODNN7EXAMPLE", f"key_{MARKER}, aws{MARKER}"),
    ("env DBPASSWORD=hunter22 HFTOKEN=abcdef0123", f"env DBPASSWORD={MARKER} HFTOKEN={MARKER}"),
])
def test_a_token_glued_to_a_word_is_masked(text, shown):
    """Before, a token's pattern began at a word boundary: one glued to a letter (or a `_`)
    before it, and a secret's name glued to another word, were left readable."""
    assert Redactor().redact(text) == shown


@settings(max_examples=300, deadline=None)
@given(before=words, token=st.sampled_from(TOKENS), after=st.sampled_from(["", " ", ", ok"]))
def test_a_token_after_any_word_never_survives(before, token, after):
    out = Redactor().redact(f"{before.lower()}{token}{after}")
    assert token not in out and out.startswith(before.lower())


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(words, min_size=1, max_size=10),
       seps=st.lists(st.sampled_from([" ", "_", "-", ".", "/", ", ", "\n"]), min_size=9,
                     max_size=9))
def test_ordinary_words_however_joined_are_left_as_they_are(parts, seps):
    text = "".join(word + sep for word, sep in zip(parts, seps, strict=False)) + parts[-1]
    # a Slack prefix standing alone before a dash and a word (`xoxb-ghost`) is no token: one
    # is a number, `-` and the rest
    assert Redactor().redact(text) == text


@pytest.mark.parametrize("text", [
    "pod nginxapp-7d9f8b6c5-x2x4z restarted", "helm release fluxapp-controller ready",
    "detoxoxb-12345678", "maxToken=4096 padToken: <pad> eosToken: </s>",
    "config: {'isSecret': false, 'hasPassword': true}", "ntoken: 50257",
    "nextPageToken: CiAKGjBpNDd2Nmp", "/scratch/ckpt/highs_0123456789abcdefghijklmno/iter_1000",
    "weights at /data/laughs_abcdefghij0123456789xyz.pt", "REGION=AP_ASIAPACIFICSOUTHEAST",
    "MAXTOKEN=4096 EOSTOKEN=<eos> USEPASSWORD=false HASSECRET=no NTOKEN=12",
])
def test_a_word_ending_in_a_tokens_prefix_or_a_secrets_name_is_not_a_token(text):
    """Glued to a word, a prefix starts a token only in the exact shape its service issues,
    and a name (in capitals only: a variable's) a secret only when its value may be one (not
    a number, a boolean, a placeholder)."""
    assert Redactor().redact(text) == text
    assert SLACK_TOKEN.search(text) is None  # a config file's value is no pasted Slack token


@pytest.mark.parametrize(("text", "shown"), [
    ("PGPASSWORD=hunter22 MYSECRET='s3cr3t-value'",
     f"PGPASSWORD={MARKER} MYSECRET='{MARKER}'"),
    ("abcxoxp-1234-5678-9012-0123456789abcdef", f"abc{MARKER}"),
    ("idghs_0123456789abcdefghijklmnopqrstuvwxyz", f"id{MARKER}"),
    ("REGION_ASIAY34FZKBOKMUTVV7A", f"REGION_{MARKER}"),
])
def test_a_glued_token_of_its_services_shape_is_masked(text, shown):
    assert Redactor().redact(text) == shown


@pytest.mark.parametrize(("text", "shown"), [
    ("cp AKIAIOSFODNN7EXAMPLE_backup", f"cp {MARKER}_backup"),
    ("OPENAI_KEY sk-proj-abcdefghijklmnopqrstuvwxyz0123456789 used",
     f"OPENAI_KEY {MARKER} used"),
    ("key sk-ant-api03-abcdefghijklmnopqrstuvwxyz-AbC_dEf", f"key {MARKER}"),
    ("git clone https://glpat-abcdefghijklmnopqrst@gitlab.example/x",
     f"git clone https://{MARKER}@gitlab.example/x"),
    ("hub hf_oauth_abcdefghijklmnopqrstuvwxyz01", f"hub {MARKER}"),
    ("wandb login 0123456789abcdef0123456789abcdef01234567",
     f"wandb login {MARKER}"),
    ("wandb login --relogin local-0123456789abcdef0123456789abcdef01234567",
     f"wandb login --relogin {MARKER}"),
    ("psql --password hunter22 --host db", f"psql --password {MARKER} --host db"),
    ("run.py --hf-token hf_short --api-key 'a b c'",
     f"run.py --hf-token {MARKER} --api-key {MARKER}"),
    ("password: 'p@ss w0rd'", f"password: '{MARKER}'"),
    ('{"secret": "two words", "user": "bob"}', f'{{"secret": "{MARKER}", "user": "bob"}}'),
])
def test_more_secret_shapes_are_masked(text, shown):
    """Before, these were shown: an AWS key glued to the word after it, OpenAI's and
    Anthropic's keys, GitLab's token, Hugging Face's OAuth token, wandb's key on its login
    line, a password given as a flag's next argument, a quoted password's part after a
    space."""
    assert Redactor().redact(text) == shown


@pytest.mark.parametrize("text", [
    "python train.py --max-new-tokens 512 --pad-token <pad> --eos-token </s> --max-token 4096",
    "--token-budget 100 --use-token true", "pip install sk-learn; task-3 mask-rcnn",
    "wandb login failed: 0123", "psql --password",
])
def test_flags_and_words_near_those_shapes_are_left_alone(text):
    assert Redactor().redact(text) == text


@pytest.mark.parametrize("text", [
    "zone ASIAPACIFICNORTHEASTern", "id_AKIAIOSFODNN7EXAMPLEx1 set",
    "ref ASIAY34FZKBOKMUTVV7Ab", "AKIAIOSFODNN7EXAMPLE2",
])
def test_an_aws_key_shape_running_on_into_a_word_is_not_a_key(text):
    """Before, AKIA/ASIA and 16 capitals or digits were masked with a small letter after
    them, leaving the word's rest shown after the marker (`[redacted]ern`)."""
    assert Redactor().redact(text) == text


@settings(max_examples=200, deadline=None)
@given(before=st.sampled_from(["", " ", "aws", "key_", "=", "'"]),
       key=st.sampled_from(["AKIAIOSFODNN7EXAMPLE", "ASIAY34FZKBOKMUTVV7A"]),
       after=st.sampled_from(["", " ", "_backup", ".", ",", "'", "\n", "/x"]))
def test_an_aws_key_ending_where_its_word_does_is_masked(before, key, after):
    assert Redactor().redact(f"{before}{key}{after}") == f"{before}{MARKER}{after}"


@pytest.mark.parametrize(("text", "shown"), [
    ("키는 AKIAIOSFODNN7EXAMPLE를 썼어요", f"키는 {MARKER}를 썼어요"),
    ("AKIAIOSFODNN7EXAMPLE입니다", f"{MARKER}입니다"),
    ("ASIAY34FZKBOKMUTVV7A가 만료", f"{MARKER}가 만료"),
    ("密钥AKIAIOSFODNN7EXAMPLE已泄露", f"密钥{MARKER}已泄露"),
    ("key AKIAIOSFODNN7EXAMPLEé", f"key {MARKER}é"),
])
def test_an_aws_key_before_a_letter_of_another_script_is_masked(text, shown):
    """Before, any letter of any script after the key's 16 characters kept it shown: a
    Korean particle glued to it (`AKIA…를`) left the whole key readable."""
    assert Redactor().redact(text) == shown


# Slack tokens as the public docs show them: the bot token of Slack's OAuth example, a user
# token, an app-level token's shape, a rotating token's access part.
SLACK_DOC_TOKENS = ["xoxb-17653672481-19874698323-pdFZKVeTuE8sk7oOcBrzbqgy",
                    "xoxp-23984754863-2348975623103",
                    "xapp-1-A000000000-0000000000000-notarealapptoken",
                    "xoxa-2-abcdefgh", "xoxe.xoxp-1-Mi0yLTE0NjM0MjM4NzIx",
                    "xoxd-abcdef1234567890abcdef", "xoxd-QWxhZGRpbjpvcGVu%2FIHNlc2FtZQ%3D%3D"]


@settings(max_examples=200, deadline=None)
@given(token=st.sampled_from(SLACK_DOC_TOKENS),
       before=st.sampled_from(["", " ", "token ", "SLACK_BOT_TOKEN=", "'", "(", "\n"]),
       after=st.sampled_from(["", " ", "'", ",", ")", ", next", "\n"]))
def test_slack_tokens_of_the_docs_shapes_are_masked_standing_alone(token, before, after):
    out = Redactor().redact(f"{before}{token}{after}")
    assert token.split(".")[-1] not in out and out.endswith(after)


@pytest.mark.parametrize("text", [
    "xoxo-gossip-girl", "see xoxb-not-a-real-token here", "xapp-config-loader-v2 started",
    "pad_token = <pad>", "tokenizer: {'pad_token': '<pad>', 'eos_token': '</s>'}",
    "cls_token=[CLS] sep_token=[SEP]", "bos_token = 50256", "pad_token: 0",
    "add_eos_token: true", 'unk_token="<unk>"',
])
def test_loose_slack_prefixes_and_tokenizer_settings_are_not_secrets(text):
    """Before, a Slack prefix before any 8 token characters was a token (`xoxo-gossip-girl`),
    and a key named `token` was a secret whatever its value (a tokenizer's `<pad>`, a token
    id)."""
    assert Redactor().redact(text) == text


@pytest.mark.parametrize(("text", "shown"), [
    ("token=hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123", f"token={MARKER}"),
    ("api_token: abcd1234efgh", f"api_token: {MARKER}"),
    ("token = '1234567'", f"token = '{MARKER}'"),
    ("access_token=12345678901234567890", f"access_token={MARKER}"),
    ("password=12345", f"password={MARKER}"),
    ("secret: <x>y", f"secret: {MARKER}"),
])
def test_a_token_named_value_that_may_be_a_secret_is_still_masked(text, shown):
    assert Redactor().redact(text) == shown


@pytest.mark.parametrize(("text", "shown"), [
    ("myToken=abc123XYZ789def", f"myToken={MARKER}"),
    ("apiKey: abc123def456", f"apiKey: {MARKER}"),
    ("clientSecret=hunter22 next", f"clientSecret={MARKER} next"),
    ("openaiApiKey=sk-abc123def456ghi", f"openaiApiKey={MARKER}"),
    ('dbPassword: "p4ss w0rd"', f'dbPassword: "{MARKER}"'),
    ("{'sessionToken': 'AbCdEfGhIjKl'}", f"{{'sessionToken': '{MARKER}'}}"),
    ("idToken=eyJhbGciOiJSUzI1NiIs.eyJzdWIi", f"idToken={MARKER}"),
    ("awsAccessKey=wJalrXUtnFEMI/K7MDENG", f"awsAccessKey={MARKER}"),
])
def test_a_camel_case_secret_name_glued_to_a_word_has_its_value_masked(text, shown):
    """Before, a secret's name in camelCase glued to the word before it was left alone
    whatever its value."""
    assert Redactor().redact(text) == shown


@pytest.mark.parametrize("text", [
    "maxToken=4096", "numTokens=512", "padToken: <pad> eosToken: </s>", "myToken=abcdefghij",
    "nextPageToken: CiAKGjBpNDd2Nmp", "continuationToken=AbC123dEf456gh",
    "{'isSecret': false, 'hasPassword': true}", "clientSecret=", "maxTokens: 2048",
    "bosToken=1 eosToken=2", "hasPassword: none",
])
def test_a_camel_case_setting_near_a_secret_name_is_left_alone(text):
    assert Redactor().redact(text) == text


@settings(max_examples=200, deadline=None)
@given(word=st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8),
       name=st.sampled_from(["Token", "Secret", "Password", "ApiKey"]),
       sep=st.sampled_from(["=", ": ", " = ", "':'", '": "']),
       value=st.sampled_from(["hunter22AbC", "s3cr3t-v4lue", "AbCdEfGhIjKl",
                              "abc123def456/+=", "eyJhbGciOi.eyJzdWIi"]))
def test_a_camel_case_name_and_a_secret_shaped_value_is_masked(word, name, sep, value):
    out = Redactor().redact(f"{word}{name}{sep}{value} ok")
    assert value.rstrip("=") not in out and out.startswith(f"{word}{name}")


@settings(max_examples=200, deadline=None)
@given(word=st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8),
       number=st.integers(0, 10**9), sep=st.sampled_from(["=", ": ", " = "]))
def test_a_camel_case_token_setting_of_a_number_is_left_alone(word, number, sep):
    text = f"{word}Token{sep}{number} {word}Tokens{sep}{number}"
    assert Redactor().redact(text) == text


# Secrets made to meet the marker: its ends, its middle, the marker whole with more around it.
MARKER_SECRETS = ["ed]Q", "Q[re", "d]QQ", "QQ[r", "ted]Q[red", "]Q[r", f"Q{MARKER}Q", f"{MARKER}Q",
                  "acted]x", "redact"]
marker_secrets = st.one_of(st.sampled_from(MARKER_SECRETS),
                           st.text(alphabet="[redacted]Qx", min_size=MIN_SECRET_LENGTH,
                                   max_size=12))


@settings(max_examples=400, deadline=None)
@given(secret_list=st.lists(marker_secrets, min_size=1, max_size=4),
       parts=st.lists(st.one_of(st.sampled_from(["Q", "x", "QQ", "[", "]", "ed]", "[re", MARKER,
                                                 " ", "xoxb-", "token=", "AKIA"]),
                                marker_secrets), max_size=12),
       repeat=st.integers(1, 40))
def test_secrets_meeting_the_marker_never_survive_and_redacting_twice_changes_nothing(
        secret_list, parts, repeat):
    """Secrets whose text meets the marker's (a marker and the text after or before it spell
    one again); the texts long runs of the same pieces, where masking one more character at a
    time would take a round per character."""
    redactor = Redactor(secret_list)
    out = redactor.redact("".join(parts) * repeat)
    for secret in secret_list:
        assert secret not in out or secret in MARKER, (secret, out)
    assert redactor.redact(out) == out


@pytest.mark.parametrize(("text", "shown"), [
    ('{"dbPassword": "no pain no gain"}', f'{{"dbPassword": "{MARKER}"}}'),
    ('{"adminPassword": "1 love cats!"}', f'{{"adminPassword": "{MARKER}"}}'),
    ("{'clientSecret': '<3 my cat'}", f"{{'clientSecret': '{MARKER}'}}"),
    ('"apiKey": "0.5 secret words"', f'"apiKey": "{MARKER}"'),
    ('token: "no way it leaks"', f'token: "{MARKER}"'),
    ('auth_token="yes I am the secret"', f'auth_token="{MARKER}"'),
    ('api_token: "123 456 789 secret"', f'api_token: "{MARKER}"'),
    ("HF_TOKEN='true-ly secret value'", f"HF_TOKEN='{MARKER}'"),
    ("pad_token: '<pad> is my secret'", f"pad_token: '{MARKER}'"),
])
def test_a_quoted_value_only_starting_like_a_setting_is_masked_whole(text, shown):
    """Before, a quoted value starting with a number, a boolean's word or `<` was taken for
    one and shown whole: the exemptions hold only for the whole value."""
    assert Redactor().redact(text) == shown


@pytest.mark.parametrize("text", [
    '{"isSecret": "false", "hasPassword": "no"}', "{'padToken': '<pad>'}", 'pad_token: "<pad>"',
    "{'bos_token': '50256', 'add_eos_token': 'true'}", 'eos_token = "</s>"',
])
def test_a_quoted_setting_whole_is_left_alone(text):
    assert Redactor().redact(text) == text


@pytest.mark.parametrize(("text", "shown"), [
    ("token: 123456", f"token: {MARKER}"),
    ("admin_token=123456 api_token: '42424242'", f"admin_token={MARKER} api_token: '{MARKER}'"),
    ("access_token=[eyJhbGciOiJIUzI1NiJ9.eyJzdWIi.sig]", f"access_token={MARKER}]"),
    ("HF_TOKEN=[abc123secretXYZ]", f"HF_TOKEN={MARKER}]"),
    ("access_token=<hidden>abcdef", f"access_token={MARKER}"),
    ('token="<s3cretvalue>"', f'token="{MARKER}"'),
    ("GITHUB_TOKEN=true HF_TOKEN=none", f"GITHUB_TOKEN={MARKER} HF_TOKEN={MARKER}"),
])
def test_a_token_named_value_only_shaped_near_a_setting_is_masked(text, shown):
    """Before, any value of up to 6 digits, or starting with `[` or `<`, given to a name
    ending in `token` was taken for a tokenizer's setting and shown."""
    assert Redactor().redact(text) == shown


@pytest.mark.parametrize("text", [
    "pad_token=<pad> eos_token: </s> bos_token: '<|endoftext|>' cls_token=[CLS]",
    "bos_token = 50256 PAD_TOKEN=0 max_token: 4096 num_token=512",
    "add_eos_token: true use_auth_token=True", "{'mask_token': '[MASK]', 'unk_token': null}",
])
def test_a_tokenizers_special_tokens_ids_and_switches_are_left_alone(text):
    assert Redactor().redact(text) == text


@pytest.mark.parametrize(("text", "shown"), [
    ("dbPassword=123456", f"dbPassword={MARKER}"),
    ('{"adminPassword": "123456"}', f'{{"adminPassword": "{MARKER}"}}'),
    ("clientSecret=12345678 next", f"clientSecret={MARKER} next"),
    ("DBPASSWORD=123456 MYSECRET=2024.12.07", f"DBPASSWORD={MARKER} MYSECRET={MARKER}"),
    ("psql --db-password 123456 --host db", f"psql --db-password {MARKER} --host db"),
])
def test_a_numeric_password_is_masked_whatever_its_names_form(text, shown):
    """Before, a number given to a password's, a secret's or a key's name was shown unless
    the name stood alone (`password=`): only a name ending in `token` may be given a count."""
    assert Redactor().redact(text) == shown


@pytest.mark.parametrize(("text", "shown"), [
    ('{"clientSecret": "ab\\"cdefgh ijk"}', f'{{"clientSecret": "{MARKER}"}}'),
    ('{"password": "p\\"ss word-xyz", "user": "bob"}',
     f'{{"password": "{MARKER}", "user": "bob"}}'),
    ("{'dbPassword': 'it\\'s a secret'}", f"{{'dbPassword': '{MARKER}'}}"),
    ("{'api_key': 'a b\\\\', 'user': 'bob'}", f"{{'api_key': '{MARKER}', 'user': 'bob'}}"),
])
def test_a_quoted_value_with_an_escaped_quote_is_masked_whole(text, shown):
    """Before, a quoted value ended at its first quote, escaped or not: the rest of a JSON
    text's or a repr's secret after `\\"` was shown."""
    assert Redactor().redact(text) == shown


@pytest.mark.parametrize(("secret_list", "text", "shown"), [
    (["abcd", "cdefghij"], "xx abcdefghij yy", f"xx {MARKER} yy"),
    (["pass", "ssword-hunter2-long"], "password-hunter2-long!", f"{MARKER}!"),
    (["ed]Q", "acte"], "[redacted]Q", MARKER),
    (["abab"], "x abababab y", f"x {MARKER} y"),
])
def test_overlapping_secrets_are_masked_as_their_union(secret_list, text, shown):
    """Before, the secrets were read one match after another: a secret overlapping the end
    of one matched before it was not looked for there, and its rest was shown."""
    assert Redactor(secret_list).redact(text) == shown


@pytest.mark.parametrize(("secret_list", "text", "shown"), [
    (["redacted]", "cetracted]", "ed]t"], "cde[redacted]rx[redacted]t[[xQ",
     f"cde{MARKER}rx{MARKER}[[xQ"),
    (["ed]Q", "acte"], "[redacted]Q", MARKER),
])
def test_a_secret_spelled_at_a_marker_is_masked_when_nothing_else_is_found(
        secret_list, text, shown):
    """Before, a text where every match lay inside a marker already there was returned as it
    was, without reading what the markers and the text beside them spell."""
    redactor = Redactor(secret_list)
    assert redactor.redact(text) == shown and redactor.redact(shown) == shown
