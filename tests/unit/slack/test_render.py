"""render_blocks: escaping, strict templates, site overrides and trimming to Slack's limits."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from slack_standin import MAX_BLOCKS_JSON_CHARS, validate_blocks

from bot.core.incident import ResumePoint, build_incident, build_resolution
from bot.core.models import Action, Diagnosis, DiagnosisMetrics, Evidence
from bot.core.redact import MARKER, Redactor
from bot.core.text import mrkdwn_escape
from bot.services.ports import RenderError
from bot.slack.render import (
    blocks_to_text,
    languages,
    render_blocks,
    templates_root,
    trim_blocks,
)


def incident(evidence_lines: int = 2, text: str = "boom", **kw):
    d = Diagnosis(
        class_id="nccl_timeout", action=Action.RESUBMIT, retryable=True, charges_budget=True,
        hint=kw.pop("hint", "Resume from the last complete checkpoint."), title="NCCL timeout",
        evidence=tuple(Evidence(i + 1, f"{text} {i}") for i in range(evidence_lines)),
        metrics=DiagnosisMetrics(last_iter=3470, target_iter=8000, sec_per_iter=4.5),
    )
    return build_incident(d, recipe=kw.pop("recipe", "mix"), job_id="88154",
                          last_checkpoint_iter=3000, now=0.0, **kw)


def test_one_packaged_template_set_for_every_language():
    names = {p.name for p in templates_root().glob("*.json.j2")}
    assert {"root.json.j2", "incident.json.j2", "warning.json.j2",
            "resolution.json.j2"} <= names
    assert not [p for p in templates_root().iterdir() if p.is_dir() and p.name != "locale"]
    assert languages() == ("en", "ko")


def test_hostile_values_are_escaped_not_interpreted():
    view = incident(text='"}]}, {"type": "divider"} <!channel> & ```',
                    hint="<!here> `rm -rf` & co", recipe='mix"}')
    blocks, text = render_blocks("incident", "en", view)
    assert validate_blocks(blocks) == []
    assert not any(b["type"] == "divider" for b in blocks)  # no JSON injection
    dumped = json.dumps(blocks)
    assert "<!channel>" not in dumped and "<!here>" not in dumped  # no mass mention
    evidence = next(b for b in blocks if b.get("block_id") == "evidence")["text"]["text"]
    assert "&lt;!channel&gt; &amp;" in evidence
    assert evidence.count("```") == 2  # a backtick fence in a log line cannot close the block
    assert 'mix"}' in text


def test_strict_undefined_names_the_missing_value():
    with pytest.raises(RenderError, match="resolution.json.j2"):
        render_blocks("resolution", "en", {"recipe": "mix"})


def test_unknown_language_and_template_are_clear_errors():
    with pytest.raises(RenderError, match="language 'fr'"):
        render_blocks("root", "fr", {})
    with pytest.raises(RenderError, match="no template nope.json.j2"):
        render_blocks("nope", "en", {})


def test_site_override_wins_per_file(tmp_path: Path):
    (tmp_path / "resolution.json.j2").write_text(
        '{"text": {{ ("back: " ~ new_job_id) | tojson }}, "blocks": []}')
    view = build_resolution(recipe="mix", old_job_id="1", new_job_id="2", from_iter=3000)
    assert render_blocks("resolution", "en", view, override_dir=tmp_path) == ([], "back: 2")
    # Files the site did not override still come from the package.
    blocks, _ = render_blocks("incident", "en", incident(), override_dir=tmp_path)
    assert blocks[0]["type"] == "header"


def test_override_that_is_not_json_is_refused(tmp_path: Path):
    (tmp_path / "root.json.j2").write_text("{not json")
    with pytest.raises(RenderError, match="did not produce JSON"):
        render_blocks("root", "en", {}, override_dir=tmp_path)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_5000_evidence_lines_fit_and_say_what_was_cut(lang: str):
    blocks, _ = render_blocks("incident", lang, incident(evidence_lines=5000))
    assert validate_blocks(blocks) == []
    assert len(json.dumps(blocks, ensure_ascii=False)) <= MAX_BLOCKS_JSON_CHARS
    evidence = next(b for b in blocks if b.get("block_id") == "evidence")["text"]["text"]
    assert "boom 4999" in evidence  # the end of the log (where the failure is) survives
    assert "boom 0" in evidence
    assert evidence.endswith("```")
    note = next(b for b in blocks if b.get("block_id") == "trainbot_trimmed")
    assert any(ch.isdigit() for ch in note["elements"][0]["text"])
    # The buttons survive trimming.
    assert blocks[-1]["type"] == "actions"
    assert [e["action_id"] for e in blocks[-1]["elements"]] == ["trainbot_resubmit",
                                                                 "trainbot_dismiss"]


def test_trim_limits_headers_buttons_fields_and_block_count():
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": "H" * 400}}]
    blocks += [{"type": "section", "text": {"type": "mrkdwn", "text": f"s{i}"}}
               for i in range(80)]
    blocks.append({"type": "section", "fields": [{"type": "mrkdwn", "text": "f" * 2500}] * 12})
    blocks.append({"type": "actions", "elements": [
        {"type": "button", "action_id": f"a{i}", "text": {"type": "plain_text", "text": "B" * 90},
         "value": "v"} for i in range(30)] + [
        {"type": "button", "action_id": "big", "text": {"type": "plain_text", "text": "x"},
         "value": "v" * 2500}]})
    dialog = {key: {"type": "plain_text", "text": key[0] * 400}
              for key in ("title", "text", "confirm", "deny")}
    blocks[-1]["elements"][0]["confirm"] = dialog  # a site template's long dialog
    out = trim_blocks(blocks, lang="en")
    assert validate_blocks(out) == []
    assert len(out) <= 50
    assert len(out[0]["text"]["text"]) == 150
    actions = next(b for b in out if b["type"] == "actions")
    assert len(actions["elements"]) == 25
    assert all(len(e["text"]["text"]) <= 75 for e in actions["elements"])
    asked = actions["elements"][0]["confirm"]
    assert [len(asked[k]["text"]) for k in ("title", "text", "confirm", "deny")] == \
        [100, 300, 30, 30]
    note = next(b for b in out if b.get("block_id") == "trainbot_trimmed")["elements"][0]["text"]
    assert "blocks dropped" in note and "buttons dropped" in note and "fields dropped" in note


def test_trim_leaves_a_fitting_message_alone():
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "fine"}}]
    assert trim_blocks(blocks) == blocks


def test_korean_trim_note_is_korean():
    blocks, _ = render_blocks("incident", "ko", incident(evidence_lines=3000))
    note = next(b for b in blocks if b.get("block_id") == "trainbot_trimmed")
    assert "생략" in note["elements"][0]["text"]


def test_text_rendering_shows_buttons_and_unescapes():
    blocks, text = render_blocks("incident", "en", incident(text="a<b"))
    out = blocks_to_text(blocks, text)
    assert "[ Resubmit from iteration 3,000 ]" in out
    assert "a<b 1" in out


_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]),
                min_size=1, max_size=4000)
# mrkdwn as the renderer makes it: any text, escaped (mrkdwn_escape)
_section = st.builds(lambda t: {"type": "section", "text": {
    "type": "mrkdwn", "text": mrkdwn_escape(t)}}, _text)
_code = st.builds(lambda lines: {"type": "section", "text": {
    "type": "mrkdwn", "text": "*Evidence*\n```\n" + mrkdwn_escape("\n".join(lines)) + "\n```"}},
    st.lists(st.text(min_size=1, max_size=400).filter(lambda s: "`" not in s), max_size=300))
_header = st.builds(lambda t: {"type": "header", "text": {"type": "plain_text", "text": t}},
                    _text)
_fields = st.builds(lambda ts: {"type": "section", "fields": [
    {"type": "mrkdwn", "text": mrkdwn_escape(t)} for t in ts]}, st.lists(_text, min_size=1,
                                                                       max_size=14))
_actions = st.builds(lambda n, t: {"type": "actions", "elements": [
    {"type": "button", "action_id": f"a{i}", "value": "v",
     "text": {"type": "plain_text", "text": t}} for i in range(n)]},
    st.integers(1, 30), st.text(min_size=1, max_size=120))


@settings(max_examples=int(os.environ.get("TRIM_EXAMPLES", "60")), deadline=None)
@given(st.lists(st.one_of(_section, _code, _header, _fields, _actions, st.just(
    {"type": "divider"})), min_size=1, max_size=70), st.sampled_from(["en", "ko"]))
def test_trimmed_blocks_always_pass_slack_validation(blocks, lang):
    out = trim_blocks(blocks, lang=lang)
    assert validate_blocks(out) == []
    assert len(json.dumps(out, ensure_ascii=False)) <= MAX_BLOCKS_JSON_CHARS
    n_actions = sum(b["type"] == "actions" for b in blocks)
    if n_actions <= 2:  # buttons are kept (up to 25 each) whenever they can fit at all
        assert sum(b["type"] == "actions" for b in out) == n_actions


@pytest.mark.parametrize("make", [
    lambda i: {"type": "section", "text": {"type": "mrkdwn", "text": f"{i}" * 4000}},
    lambda i: {"type": "section", "fields": [{"type": "mrkdwn", "text": "f" * 3000}] * 14},
    lambda i: {"type": "context", "elements": [{"type": "mrkdwn", "text": "c" * 3000}] * 12},
    lambda i: {"type": "actions", "elements": [
        {"type": "button", "action_id": f"a{k}", "value": "v",
         "text": {"type": "plain_text", "text": "x" * 120}} for k in range(30)]},
], ids=["sections", "fields", "context", "actions"])
def test_extreme_messages_still_fit(make):
    blocks = [{"type": "header", "text": {"type": "plain_text", "text": "h"}}]
    blocks += [json.loads(json.dumps(make(i))) for i in range(70)]
    out = trim_blocks(blocks)
    assert validate_blocks(out) == []
    assert len(json.dumps(out, ensure_ascii=False)) <= MAX_BLOCKS_JSON_CHARS
    assert out[0]["type"] == "header"


def _explanation(blocks: list[dict]) -> str:
    return next(b for b in blocks if b.get("block_id") == "explanation")["text"]["text"]


def test_a_korean_incident_explains_in_korean_unless_the_site_text_is_english_only(
    tmp_path: Path,
) -> None:
    import io

    from bot.core.catalogue import Catalogue
    from bot.core.diagnose import analyze_file
    from bot.core.models import Accounting

    log = (Path(__file__).resolve().parents[2] / "fixtures" / "stories" / "108903.log")
    site = tmp_path / "site.yaml"
    site.write_text('classes:\n  compiler_missing:\n    hint: "Use module load gcc/12 in the '
                    'launcher; ask #hpc-help."\n', encoding="utf-8")
    acct = Accounting(state="FAILED", exit_code=1, signal=0)
    views = {}
    for name, extra in (("shipped", []), ("site", [str(site)])):
        analysis = analyze_file(io.BytesIO(log.read_bytes()), Catalogue.load(extra))
        views[name] = build_incident(analysis.diagnose(acct), recipe="mix", job_id="108903",
                                     last_checkpoint_iter=None, now=0.0)
    korean = _explanation(render_blocks("incident", "ko", views["shipped"])[0])
    assert "워커에서 CC/CXX를 설정하세요" in korean and "gcc_linux-64" in korean
    english = _explanation(render_blocks("incident", "en", views["shipped"])[0])
    assert "Set CC/CXX on the worker" in english and "설정" not in english
    # the site replaced the English hint and gave no Korean one: its English text, not ours
    site_ko = _explanation(render_blocks("incident", "ko", views["site"])[0])
    assert "Use module load gcc/12 in the launcher; ask #hpc-help." in site_ko
    assert "CC/CXX" not in site_ko


@pytest.mark.parametrize(("line", "en", "ko"), [
    ("jaxlib.xla_extension.XlaRuntimeError: NOT_FOUND: Couldn't find a suitable version of "
     "ptxas. The following locations were considered: /usr/local/cuda/bin/ptxas",
     "XLA compiles its GPU kernels with the CUDA toolkit's ptxas",
     "XLA는 GPU 커널을 CUDA 툴킷의 ptxas(으)로 컴파일하는데"),
    ("/bin/sh: 1: gcc: not found", "The compiler not found is gcc. Set CC/CXX on the worker",
     "찾지 못한 컴파일러는 gcc입니다. 워커에서 CC/CXX를 설정하세요"),
])
def test_a_missing_compiler_incident_names_the_missing_tool(line: str, en: str, ko: str) -> None:
    from bot.core.catalogue import Catalogue
    from bot.core.diagnose import LogAnalysis

    analysis = LogAnalysis(Catalogue.load())
    analysis.feed_text("step 10 loss 1.2\n" + line + "\n")
    analysis.finish()
    view = build_incident(analysis.diagnose(None), recipe="mix", job_id="4243",
                          last_checkpoint_iter=None, now=0.0)
    english = _explanation(render_blocks("incident", "en", view)[0])
    assert en in english
    assert ("gcc_linux-64" in english) == ("gcc" in line)
    assert ko in _explanation(render_blocks("incident", "ko", view)[0])


@pytest.mark.parametrize(("line", "en", "ko"), [
    ("RuntimeError: received 0 items of ancdata",
     "Open-file limit reached (too many open files, errno 24)",
     "열린 파일 수 한도 도달(too many open files, errno 24)"),
    ("tensorflow.python.framework.errors_impl.InternalError: libdevice not found at "
     "./libdevice.10.bc [Op:__inference_train_function_1234]",
     "The CUDA toolkit's libdevice is missing on the worker node",
     "워커 노드에 CUDA 툴킷의 libdevice 없음"),
    ("error: command '/usr/local/cuda/bin/nvcc' failed: No such file or directory",
     "No CUDA compiler (nvcc) on the worker node", "워커 노드에 CUDA 컴파일러(nvcc) 없음"),
    ("RuntimeError: Ninja is required to load C++ extensions",
     "No ninja build tool for a C++ extension on the worker node",
     "워커 노드에 C++ 확장을 빌드할 ninja 없음"),
    # a cause the catalogue's title fits keeps it
    ("/bin/sh: 1: gcc: not found", "No C/C++ compiler on the worker node",
     "워커 노드에 C/C++ 컴파일러 없음"),
])
def test_an_incidents_title_follows_the_cause_the_log_names(line: str, en: str, ko: str) -> None:
    from bot.core.catalogue import Catalogue
    from bot.core.diagnose import LogAnalysis

    analysis = LogAnalysis(Catalogue.load())
    analysis.feed_text("step 10 loss 1.2\n" + line + "\n")
    analysis.finish()
    view = build_incident(analysis.diagnose(None), recipe="mix", job_id="4243",
                          last_checkpoint_iter=None, now=0.0)
    for lang, title in (("en", en), ("ko", ko)):
        blocks, text = render_blocks("incident", lang, view)
        assert blocks[0]["text"]["text"].startswith(f"🔴 {title} · ")
        assert _explanation(blocks).startswith(f"*{title}* (`")
        assert text.endswith(f": {title}")
    assert "DataLoader worker process died" not in str(render_blocks("incident", "en", view))


PTXAS = ("jaxlib.xla_extension.XlaRuntimeError: NOT_FOUND: Couldn't find a suitable version of "
         "ptxas. The following locations were considered: /usr/local/cuda/bin/ptxas")


@pytest.mark.parametrize(("site_fields", "en", "ko"), [
    # the site translated the class's title: in that language its title, elsewhere the cause's
    ('title_ko: "컴파일 도구 없음: #hpc-help에 문의"',
     "The CUDA toolkit's ptxas is missing on the worker node",
     "컴파일 도구 없음: #hpc-help에 문의"),
    # the site replaced the English title: its title in every language it gave none for
    ('title: "Build tool missing: ask #hpc-help"',
     "Build tool missing: ask #hpc-help", "Build tool missing: ask #hpc-help"),
    ('title: "Build tool missing: ask #hpc-help"\n    title_ko: "빌드 도구 없음"',
     "Build tool missing: ask #hpc-help", "빌드 도구 없음"),
], ids=["title_ko", "title", "title_and_title_ko"])
def test_a_sites_own_title_wins_over_the_causes_title(tmp_path: Path, site_fields: str,
                                                      en: str, ko: str) -> None:
    from bot.core.catalogue import Catalogue
    from bot.core.diagnose import LogAnalysis
    from bot.slack.render import explain_title

    site = tmp_path / "site.yaml"
    site.write_text(f"classes:\n  compiler_missing:\n    {site_fields}\n", encoding="utf-8")
    analysis = LogAnalysis(Catalogue.load([site]))
    analysis.feed_text("step 10 loss 1.2\n" + PTXAS + "\n")
    analysis.finish()
    d = analysis.diagnose(None)
    assert d.detail == {"kind": "missing_tool", "tool": "ptxas"}
    view = build_incident(d, recipe="mix", job_id="4243", last_checkpoint_iter=None, now=0.0)
    for lang, title in (("en", en), ("ko", ko)):
        blocks, text = render_blocks("incident", lang, view)
        assert blocks[0]["text"]["text"].startswith(f"🔴 {title} · ")
        assert text.endswith(f": {title}")
        assert explain_title(d, lang) == title
        # the explanation still names the tool the log says is missing
        assert "ptxas" in _explanation(blocks)


@pytest.mark.parametrize(("site_class", "line"), [
    ("compiler_missing", PTXAS),
    ("compiler_missing", "error: command '/usr/local/cuda/bin/nvcc' failed: No such file or "
                         "directory"),
    ("dataloader_worker_killed", "RuntimeError: received 0 items of ancdata"),
], ids=["ptxas", "nvcc", "fd_limit"])
@pytest.mark.parametrize(("site_fields", "en", "ko"), [
    ('hint: "Ask #hpc-help for the cluster\'s module."', "Ask #hpc-help for the cluster's module.",
     "Ask #hpc-help for the cluster's module."),
    ('hint_ko: "#hpc-help에 문의하세요."', None, "#hpc-help에 문의하세요."),
], ids=["hint", "hint_ko"])
def test_a_sites_own_hint_follows_the_causes_own_fix(tmp_path: Path, site_class: str, line: str,
                                                     site_fields: str, en: str | None,
                                                     ko: str) -> None:
    """A cause whose own fix replaces the class's packaged hint (a CUDA tool, the open-file
    limit) still states a site catalogue's own hint for the class after it: the site knows its
    cluster (its module, its channel); the packaged hint, which does not fit, stays out."""
    from bot.core.catalogue import Catalogue
    from bot.core.diagnose import LogAnalysis
    from bot.slack.render import explain

    site = tmp_path / "site.yaml"
    site.write_text(f"classes:\n  {site_class}:\n    {site_fields}\n", encoding="utf-8")
    analysis = LogAnalysis(Catalogue.load([site]))
    analysis.feed_text("step 10 loss 1.2\n" + line + "\n")
    analysis.finish()
    d = analysis.diagnose(None)
    assert d.detail and d.detail["kind"] in ("missing_tool", "fd_limit")
    view = build_incident(d, recipe="mix", job_id="4243", last_checkpoint_iter=None, now=0.0)
    for lang, hint in (("en", en), ("ko", ko)):
        for text in (explain(d, lang), _explanation(render_blocks("incident", lang, view)[0])):
            if hint:
                assert text.endswith(" " + hint)
            else:  # no hint of the site's in this language: the cause's fix alone
                assert "#hpc-help" not in text
            assert "gcc_linux-64" not in text and "raise --mem" not in text


def _silent_exit_incident(catalogue, text: str, acct=None, lang: str = "en") -> str:
    from bot.core.diagnose import LogAnalysis

    analysis = LogAnalysis(catalogue)
    analysis.feed_text(text)
    analysis.finish()
    d = analysis.diagnose(acct, target_iter=1000)
    assert d.class_id == "silent_exit"
    view = build_incident(d, recipe="mix", job_id="4242", last_checkpoint_iter=None, now=0.0,
                          state=acct.state if acct else None,
                          exit_code="0:0" if acct else None)
    return _explanation(render_blocks("incident", lang, view)[0])


_START_UP = ("user@host:~/proj$ python train.py\nLoading config base.yaml\n"
             "Building model resnet50\nuser@host:~/proj$ \n")
_PROMPT_AFTER_PROGRESS = ("user@host:~/proj$ python train.py\n"
                          + "".join(f"iter={i}/1000 loss=0.5\n" for i in range(1, 21))
                          + "user@host:~/proj$ \n")


def test_a_silent_exit_incident_says_whether_slurm_or_the_shells_prompt_decided_it() -> None:
    from bot.core.catalogue import Catalogue
    from bot.core.models import Accounting

    cat = Catalogue.load()
    alone = _silent_exit_incident(cat, _START_UP)
    assert ("The log shows the program returned without training: the shell's prompt came back"
            " at line 4 after its start-up output") in alone
    assert "COMPLETED 0:0" not in alone and "Slurm" not in alone
    after = _silent_exit_incident(cat, _PROMPT_AFTER_PROGRESS)
    assert "returned without finishing training: the shell's prompt came back at line 22 " \
           "after iteration 20" in after
    completed = Accounting(state="COMPLETED", exit_code=0, signal=0, elapsed_s=20.0)
    slurm = _silent_exit_incident(cat, _PROMPT_AFTER_PROGRESS, completed)
    assert "COMPLETED 0:0, but it ran for only 20 s" in slurm and "prompt" not in slurm
    korean = _silent_exit_incident(cat, _START_UP, lang="ko")
    assert "로그를 보면 프로그램이 학습하지 않고 종료되었습니다" in korean and "4행" in korean
    assert "COMPLETED" not in korean
    korean_slurm = _silent_exit_incident(cat, _PROMPT_AFTER_PROGRESS, completed, lang="ko")
    assert "Slurm은 COMPLETED 0:0으로 보고했지만" in korean_slurm


@pytest.mark.parametrize(("seconds", "en", "ko"), [
    (8.0, "8 s", "8초"), (95.0, "95 s", "95초"), (119.4, "119 s", "119초"),
    (120.0, "2 min", "2분"), (1800.0, "30 min", "30분"), (7500.0, "2 h 05 min", "2시간 5분"),
    (200_000.0, "2 d 7 h", "2일 7시간"),
])
def test_durations_read_in_seconds_below_two_minutes(seconds, en, ko):
    from bot.slack.render import format_duration, translator
    assert format_duration(seconds) == en
    assert format_duration(seconds, translator("en")) == en
    assert format_duration(seconds, translator("ko")) == ko


@pytest.mark.parametrize(("seconds", "en", "ko"), [
    (8.2, "9 s", "9초"), (119.4, "2 min", "2분"), (1149.0, "20 min", "20분"),
    (4040.0, "1 h 08 min", "1시간 8분"), (200_000.0, "2 d 8 h", "2일 8시간"),
])
def test_a_wait_said_to_a_person_is_rounded_up_never_before_the_real_one(seconds, en, ko):
    """A wait trainbot announces ("looks at the job again in about …": the templates' `wait`
    filter) is rounded up to the last unit shown: a person who acts at the time said never
    acts before trainbot has. Before, 1149 s read "19 min" and 4040 s "1 h 07 min"."""
    from bot.slack.render import format_duration, translator
    assert format_duration(seconds, up=True) == en
    assert format_duration(seconds, translator("ko"), up=True) == ko


@pytest.mark.parametrize(("seconds", "en", "ko"), [
    (8.7, "8 s", "8초"), (119.7, "119 s", "119초"), (1169.0, "19 min", "19분"),
    (4070.0, "1 h 07 min", "1시간 7분"), (201_500.0, "2 d 7 h", "2일 7시간"),
])
def test_a_time_left_said_to_a_person_is_rounded_down_never_after_the_real_one(seconds, en, ko):
    """A time left (an approval's "expires in …") is rounded down to the last unit shown: a
    person who acts at the time said is never too late. Before, 1169 s read "19 min" but
    4070 s "1 h 08 min" and 119.7 s "2 min"."""
    from bot.slack.render import format_duration, translator
    assert format_duration(seconds, down=True) == en
    assert format_duration(seconds, translator("ko"), down=True) == ko


def test_a_short_stall_reads_in_seconds_in_every_text():
    d = Diagnosis(class_id="hang", action=Action.ASK, retryable=True, charges_budget=True,
                  hint="", title="Hang", metrics=DiagnosisMetrics(last_iter=130, stall_seconds=8),
                  detail={"kind": "stall", "last_iter": 130, "stalled_s": 8.0,
                          "threshold_s": 8.0, "open_save_line": None})
    view = build_incident(d, recipe="mix", job_id="73", last_checkpoint_iter=100, now=0.0)
    blocks, _ = render_blocks("incident", "en", view)
    text = json.dumps(blocks)
    assert "for 8 s (threshold 8 s)" in text
    assert "No progress for*\\n8 s" in text
    assert "0 min" not in text


@pytest.mark.parametrize(("lang", "word"), [("en", "resume elsewhere"), ("ko", "노드")])
def test_a_gpu_fault_incident_names_the_node_the_resubmit_excludes(lang: str, word: str):
    d = Diagnosis(class_id="gpu_failure", action=Action.RESUBMIT, retryable=True,
                  charges_budget=False, hint="Resume elsewhere.", node="gpu-b12",
                  title="GPU or GPU driver fault on a node",
                  evidence=(Evidence(7, "RuntimeError: CUDA error: uncorrectable ECC error"),),
                  metrics=DiagnosisMetrics(last_iter=10, target_iter=100))
    view = build_incident(d, recipe="mix", job_id="42", last_checkpoint_iter=5, now=0.0)
    blocks, text = render_blocks("incident", lang, view)
    assert validate_blocks(blocks) == []
    shown = json.dumps(blocks, ensure_ascii=False)
    assert "--exclude=gpu-b12" in shown and word in shown
    assert "🔎" in shown  # and what decided it


_SAVE_INTO_FULL_DISK = (
    "[2026-11-29 10:00:45] iter 1000/8000 loss 0.70 4.5 s/iter\n"
    "[2026-11-29 10:00:46] Saving checkpoint to /ckpt/run/iter_000001000\n"
    "OSError: [Errno 28] No space left on device\n")
_FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "real"


@pytest.mark.parametrize(("lang", "title", "said", "saving"), [
    ("en", "*Disk or quota full (no space left on device)* (`disk_full`)",
     "Free space before you resubmit, which fails again until then: check `df -h` on the "
     "checkpoint directory and `quota -s` (or the site's quota tool), delete old checkpoints "
     "or move them to another filesystem. A checkpoint that was being written when the disk "
     "filled up is incomplete: never resume from it.",
     "💾 It died *while saving a checkpoint*"),
    ("ko", "*디스크 또는 쿼터 가득 참(no space left on device)* (`disk_full`)",
     "다시 제출하기 전에 공간을 비우세요. 그 전에는 또 실패합니다. 체크포인트 디렉터리에서 "
     "`df -h`를, 그리고 `quota -s`(또는 사이트의 쿼터 도구)를 확인하고, 오래된 체크포인트를 "
     "지우거나 다른 파일 시스템으로 옮기세요. 디스크가 찼을 때 쓰고 있던 체크포인트는 "
     "불완전하므로 절대 그 체크포인트에서 재개하지 마세요.",
     "💾 *체크포인트 저장 중에* 종료되었습니다"),
])
def test_a_full_disk_incident_says_to_free_space_and_offers_a_resubmit_only(
        lang: str, title: str, said: str, saving: str):
    from bot.core.catalogue import Catalogue
    from bot.core.diagnose import LogAnalysis
    from bot.core.models import Accounting

    analysis = LogAnalysis(Catalogue.load())
    analysis.feed_text(_SAVE_INTO_FULL_DISK)
    analysis.finish()
    d = analysis.diagnose(Accounting(state="FAILED", exit_code=1, signal=0))
    view = build_incident(d, recipe="mix", job_id="88901", last_checkpoint_iter=None, now=0.0)
    blocks, _ = render_blocks("incident", lang, view)
    assert validate_blocks(blocks) == []
    assert _explanation(blocks) == f"{title}\n{said}"
    shown = json.dumps(blocks, ensure_ascii=False)
    assert saving in shown
    buttons = [e["action_id"] for b in blocks if b["type"] == "actions" for e in b["elements"]]
    assert len(buttons) == 2  # Resubmit (a person's decision) and Dismiss


@pytest.mark.parametrize(("lang", "words"), [
    ("en", "The checkpoint it resumed from is incomplete, often from a save that was killed or "
           "ran out of space: resume from the previous complete checkpoint."),
    ("ko", "재개하려던 체크포인트가 불완전합니다. 강제 종료되었거나 공간이 부족했던 저장에서 흔히 "
           "생깁니다. 이전의 완전한 체크포인트에서 재개하세요."),
])
def test_a_broken_checkpoint_incident_says_to_resume_from_the_previous_one(lang: str,
                                                                          words: str):
    import io

    from bot.core.catalogue import Catalogue
    from bot.core.diagnose import analyze_file

    log = _FIXTURES / "checkpoint_corrupt__dddd-trainer-36.log"
    d = analyze_file(io.BytesIO(log.read_bytes()), Catalogue.load()).diagnose()
    view = build_incident(d, recipe="ocr", job_id="7", last_checkpoint_iter=20, now=0.0)
    blocks, _ = render_blocks("incident", lang, view)
    assert validate_blocks(blocks) == []
    explanation = _explanation(blocks)
    assert "(`checkpoint_corrupt`)" in explanation and words in explanation
    assert "`trainbot checkpoint verify DIR`" in explanation


# --- buttons that cancel a job; long values in plain_text ----------------------------------


def _hang(**kw):
    d = Diagnosis(
        class_id="hang", action=Action.ASK, retryable=True, charges_budget=True,
        hint="Cancel and resume.", title="Training hung", evidence=(),
        metrics=DiagnosisMetrics(last_iter=3470, target_iter=8000, sec_per_iter=4.5))
    return build_incident(d, recipe="mix", job_id="88154",
                          **{"last_checkpoint_iter": 3000, "now": 0.0, **kw})


@pytest.mark.parametrize(("start", "lang", "proposed", "where"), [
    ({}, "en", "resume from iteration 3,000", "from iteration 3,000"),
    ({"last_checkpoint_iter": 0}, "en", "resume from iteration 0", "from iteration 0"),
    ({"last_checkpoint_iter": None, "from_checkpoint": "ckpt-best"}, "en",
     "resume from checkpoint `ckpt-best`", "from checkpoint `ckpt-best`"),
    ({"last_checkpoint_iter": None, "checkpoint_unknown": "not_looked_up"}, "en",
     "resume from the last complete checkpoint, which the bot looks up when it posts this "
     "(`trainbot report` cannot)",
     "from the last complete checkpoint, which the bot looks up when it posts this "
     "(`trainbot report` cannot)"),
    ({"last_checkpoint_iter": None, "checkpoint_unknown": "lookup_failed"}, "en",
     "resume from the last complete checkpoint (unknown: looking it up failed)",
     "from the last complete checkpoint (unknown: looking it up failed)"),
    ({"last_checkpoint_iter": None}, "en", "resume from scratch (no complete checkpoint)",
     "from scratch (no complete checkpoint)"),
    ({"last_checkpoint_iter": None, "from_checkpoint": "final"}, "ko",
     "체크포인트 `final`부터", "체크포인트 `final`부터"),
    ({"last_checkpoint_iter": None, "checkpoint_unknown": "not_looked_up"}, "ko",
     "마지막 완전한 체크포인트부터 (봇이 이 메시지를 올릴 때 체크포인트를 조회합니다. "
     "`trainbot report`는 조회할 수 없습니다)",
     "마지막 완전한 체크포인트부터 (봇이 이 메시지를 올릴 때 체크포인트를 조회합니다. "
     "`trainbot report`는 조회할 수 없습니다)"),
])
def test_a_hang_incidents_cancel_and_resume_dialog_names_the_start_its_proposal_does(
        start, lang: str, proposed: str, where: str):
    """A hang incident (as `trainbot report` writes it, or the watcher's) proposes Cancel and
    resume from its iteration (0 too), a checkpoint known only by name, an unknown one (not
    looked up, its lookup failed) or from scratch; the button's confirm dialog says the same
    start in the same words (bot.core.policy.resume_start), never "its latest checkpoint"."""
    blocks, text = render_blocks("incident", lang, _hang(**start))
    assert validate_blocks(blocks) == []
    assert proposed in json.dumps(blocks, ensure_ascii=False)
    [red] = [b for blk in blocks if blk["type"] == "actions" for b in blk["elements"]
             if b["action_id"] == "trainbot_cancel_resume"]
    ends = {"en": f"scancel stops it, then trainbot resubmits it {where}.",
            "ko": f"scancel로 멈춘 뒤 trainbot이 {where} 다시 제출합니다."}[lang]
    assert red["confirm"]["text"]["text"].endswith(ends)


@pytest.mark.parametrize(("lang", "title", "text"), [
    ("en", "Cancel job 88154?", "Job 88154 is RUNNING. scancel stops it, then trainbot "
                                "resubmits it from iteration 3,000."),
    ("ko", "작업 88154을(를) 취소할까요?",
     "작업 88154은(는) 지금 RUNNING 상태입니다. scancel로 멈춘 뒤 trainbot이 iteration 3,000부터 "
     "다시 제출합니다."),
])
@pytest.mark.parametrize("message", ["warning", "incident"])
def test_cancel_and_resume_on_a_warning_or_incident_asks_first_as_a_prompt_does(
        message, lang, title, text):
    """The stall warning's and a hang incident's "Cancel and resume" (what `trainbot report`
    writes) asks first in the message's language, the dialog a thread prompt's Cancel and
    resume shows (one builder: bot.core.home.prompt_confirm, the template's cancel_confirm)."""
    from bot.core.home import prompt_confirm
    from bot.core.incident import build_warning
    view = (build_warning(kind="stall", recipe="mix", job_id="88154", last_iter=3470,
                          now=900.0, stalled_since=0.0, sec_per_iter=4.5,
                          last_checkpoint_iter=3000)
            if message == "warning" else _hang())
    blocks, _ = render_blocks(message, lang, view)
    assert validate_blocks(blocks) == []  # the stand-in refuses a red button that asks nothing
    [red] = [b for blk in blocks if blk["type"] == "actions" for b in blk["elements"]
             if b["action_id"] == "trainbot_cancel_resume"]
    assert (red["confirm"]["title"]["text"], red["confirm"]["text"]["text"]) == (title, text)
    prompt, _ = render_blocks("approval", lang, {
        "summary": "s", "block_id": "approve:t", "buttons": [
            {"kind": "cancel_resume", "action_id": "trainbot_cancel_resume", "value": "t",
             "style": "danger", "from_iter": 3000, "mem": None, "job_id": "88154",
             **prompt_confirm("cancel_resume", "88154", "RUNNING", 3000)}]})
    assert red["confirm"] == prompt[1]["elements"][0]["confirm"]


def test_a_long_job_name_in_a_header_keeps_its_start_end_id_and_state():
    from bot.core.arrays import ArrayRootView
    name = "sweep-lr0.1-" + "x" * 200 + "-seed3"
    view = ArrayRootView(array_job_id=6100, name=name, cluster="dev", state="RUNNING",
                         counts=(("RUNNING", 2),), rows=(), hidden=(), started=2,
                         waiting=False)
    blocks, _ = render_blocks("array_root", "en", view)
    header = blocks[0]["text"]["text"]
    assert len(header) <= 150 and validate_blocks(blocks) == []
    assert header.startswith("🟢 sweep-lr0.1-xxx")
    assert "…" in header and header.endswith("x-seed3 · array 6100 · RUNNING")


def test_a_long_node_list_on_a_button_keeps_what_the_button_does():
    nodes = "gpu[" + ",".join(f"{i:03d}" for i in range(60)) + "]"
    blocks, _ = render_blocks("approval", "en", {
        "summary": "s", "block_id": "approve:t", "buttons": [
            {"kind": "resubmit", "action_id": "trainbot_resubmit", "value": "t",
             "style": "primary", "from_iter": 123456, "mem": None, "exclude": nodes,
             "job_id": "88154"}]})
    label = blocks[1]["elements"][0]["text"]["text"]
    assert len(label) <= 75 and validate_blocks(blocks) == []
    assert label.startswith("Resubmit without gpu[000,")
    assert label.endswith(",059] from iteration 123,456") and "…" in label


@pytest.mark.parametrize(("from_iter", "checkpoint", "en", "ko"), [
    (3000, "iter_000003000", "Resumed as *2* (was 1) from iteration 3,000.",
     "iteration 3,000부터"),
    # a pointer file naming a checkpoint whose name has no iteration number: it names it
    (None, "final", "Resumed as *2* (was 1) from checkpoint `final`.", "체크포인트 `final`부터"),
    (None, None, "Resumed as *2* (was 1) from scratch (no complete checkpoint).",
     "완전한 체크포인트가 없어 처음부터"),
])
def test_a_resolution_says_where_the_run_resumed(from_iter, checkpoint, en: str, ko: str):
    view = build_resolution(recipe="mix", old_job_id="1", new_job_id="2", from_iter=from_iter,
                            from_checkpoint=checkpoint)
    assert en in json.dumps(render_blocks("resolution", "en", view)[0], ensure_ascii=False)
    assert ko in json.dumps(render_blocks("resolution", "ko", view)[0], ensure_ascii=False)


@pytest.mark.parametrize(("said", "resumed", "lang", "line"), [
    (ResumePoint(3000, None), (2000, None), "en", "The prompt said iteration 3,000: "),
    (ResumePoint(3000, None), (2000, None), "ko",
     "프롬프트는 iteration 3,000부터 재개한다고 했습니다: "),
    (ResumePoint(None, "final"), (4000, None), "ko",
     "프롬프트는 체크포인트 `final`부터 재개한다고 했습니다: "),
])
def test_a_resolution_says_where_the_prompt_said_it_would_resume_as_the_start_phrase_does(
        said: ResumePoint, resumed: tuple, lang: str, line: str):
    """The approved prompt said another checkpoint than the one the run resumed from: the
    resolution names it in the words of the start phrase (Korean: "iteration 3,000부터", as
    "from iteration 3,000" is said everywhere else), never "iter 3,000"."""
    view = build_resolution(recipe="mix", old_job_id="1", new_job_id="2", from_iter=resumed[0],
                            from_checkpoint=resumed[1], prompt=said)
    text = render_blocks("resolution", lang, view)[0][0]["text"]["text"]
    assert line in text and "iter " not in text


@pytest.mark.parametrize(("lang", "proposed", "button"), [
    ("en", "*Proposed:* resume from checkpoint `final`", "Resubmit from checkpoint `final`"),
    ("ko", "*제안:* 체크포인트 `final`부터 재개", "체크포인트 `final`부터 재제출"),
])
def test_an_incident_names_a_checkpoint_without_an_iteration_it_would_resume_from(
        lang: str, proposed: str, button: str):
    """The newest complete checkpoint is `final` (no iteration in its name): the incident's
    Proposed line and its Resubmit button name it, not "from the start"; the work lost since
    it is unknown, so not claimed ("none saved", all 3470 iterations)."""
    d = Diagnosis(class_id="nccl_timeout", action=Action.RESUBMIT, retryable=True,
                  charges_budget=True, hint="h", title="NCCL timeout", evidence=(),
                  metrics=DiagnosisMetrics(last_iter=3470))
    view = build_incident(d, recipe="mix", job_id="88154", last_checkpoint_iter=None, now=0.0,
                          from_checkpoint="final")
    blocks, _ = render_blocks("incident", lang, view)
    said = json.dumps(blocks, ensure_ascii=False)
    assert proposed in said and button in said
    assert "from the start" not in said and "처음부터" not in said
    assert view.lost_iters is None and "work_lost" not in said


def _prompt_labels(lang: str, kind: str, **view) -> list[str]:
    from bot.services.prompts import approval_view
    blocks, _ = render_blocks("approval", lang, approval_view(
        "t", "s", job_id="88154", state="RUNNING", mem=None, choices=[kind], **view))
    assert validate_blocks(blocks) == []
    return [e["text"]["text"] for e in blocks[1]["elements"]]


@pytest.mark.parametrize(("lang", "kind", "view", "label"), [
    ("en", "resubmit", {"resume_iter": None, "resume_checkpoint": "final"},
     "Resubmit from checkpoint `final`"),
    ("en", "cancel_resume", {"resume_iter": None, "resume_checkpoint": "final"},
     "Cancel 88154 and resume from checkpoint `final`"),
    # a GPU or node fault: the resubmit leaves the node out and names the checkpoint too
    ("en", "resubmit", {"resume_iter": None, "resume_checkpoint": "final", "exclude": "gpu-b12"},
     "Resubmit without gpu-b12 from checkpoint `final`"),
    ("ko", "resubmit", {"resume_iter": None, "resume_checkpoint": "final", "exclude": "gpu-b12"},
     "gpu-b12 빼고 체크포인트 `final`부터 재제출"),
    # numbered: the iteration, as before
    ("en", "resubmit", {"resume_iter": 3000, "resume_checkpoint": "iter_0003000",
                        "exclude": "gpu-b12"}, "Resubmit without gpu-b12 from iteration 3,000"),
    # none at all: from scratch, as the prompt and Cancel and resume's dialog say
    ("en", "resubmit", {"resume_iter": None, "exclude": "gpu-b12"},
     "Resubmit without gpu-b12 from scratch"),
    ("en", "resubmit", {"resume_iter": None}, "Resubmit from scratch"),
    ("en", "cancel_resume", {"resume_iter": None}, "Cancel 88154 and resume from scratch"),
    ("ko", "resubmit", {"resume_iter": None}, "처음부터 재제출"),
    ("ko", "cancel_resume", {"resume_iter": None}, "88154 취소 후 처음부터 재개"),
    # a checkpoint at iteration 0 is an iteration, not none
    ("en", "resubmit", {"resume_iter": 0, "resume_checkpoint": "iter_0000000"},
     "Resubmit from iteration 0"),
    ("en", "cancel_resume", {"resume_iter": 0, "resume_checkpoint": "iter_0000000"},
     "Cancel 88154 and resume from iteration 0"),
    # looking the checkpoint up failed: the button says the start is unknown, as its dialog
    ("en", "cancel_resume", {"resume_iter": None, "checkpoint_unknown": "lookup_failed"},
     "Cancel 88154 and resume (checkpoint unknown)"),
    ("en", "resubmit", {"resume_iter": None, "checkpoint_unknown": "lookup_failed"},
     "Resubmit (checkpoint unknown)"),
    ("en", "resubmit", {"resume_iter": None, "checkpoint_unknown": "lookup_failed",
                        "exclude": "gpu-b12"}, "Resubmit without gpu-b12 (checkpoint unknown)"),
    ("ko", "cancel_resume", {"resume_iter": None, "checkpoint_unknown": "lookup_failed"},
     "88154 취소 후 (체크포인트 미확인) 재개"),
])
def test_a_prompts_resume_button_names_the_checkpoint_it_resumes_from(
        lang: str, kind: str, view: dict, label: str):
    assert _prompt_labels(lang, kind, **view) == [label]


def test_a_failed_lookups_cancel_and_resume_prompt_says_the_start_is_unknown_in_its_dialog():
    """The button and its confirm dialog say the same: resumed from the last complete
    checkpoint, which one unknown because looking it up failed."""
    from bot.services.prompts import approval_view
    blocks, _ = render_blocks("approval", "en", approval_view(
        "t", "s", job_id="88154", state="RUNNING", mem=None, choices=["cancel_resume"],
        resume_iter=None, checkpoint_unknown="lookup_failed"))
    [button] = blocks[1]["elements"]
    assert button["text"]["text"] == "Cancel 88154 and resume (checkpoint unknown)"
    assert button["confirm"]["text"]["text"].endswith(
        "resubmits it from the last complete checkpoint (unknown: looking it up failed).")


@pytest.mark.parametrize(("lang", "label", "dialog"), [
    ("en", "Cancel 88154 and resume from scratch",
     "resubmits it from scratch (no complete checkpoint)."),
    ("ko", "88154 취소 후 처음부터 재개",
     "trainbot이 완전한 체크포인트가 없어 처음부터 다시 제출합니다."),
])
def test_a_cancel_and_resume_prompt_with_no_checkpoint_says_from_scratch_as_its_dialog(
        lang: str, label: str, dialog: str):
    """No complete checkpoint: the button says the run starts from scratch, as its confirm
    dialog does (the start phrase, brief on the button), not a bare "and resume"."""
    from bot.services.prompts import approval_view
    blocks, _ = render_blocks("approval", lang, approval_view(
        "t", "s", job_id="88154", state="RUNNING", mem=None, choices=["cancel_resume"],
        resume_iter=None))
    [button] = blocks[1]["elements"]
    assert button["text"]["text"] == label
    assert button["confirm"]["text"]["text"].endswith(dialog)


def test_a_long_job_name_keeps_a_cancel_and_resume_from_scratch_button_within_slacks_limit():
    from bot.services.prompts import approval_view
    blocks, _ = render_blocks("approval", "en", approval_view(
        "t", "s", job_id="9" * 200, state="RUNNING", mem=None, choices=["cancel_resume"],
        resume_iter=None))
    label = blocks[1]["elements"][0]["text"]["text"]
    assert len(label) <= 75 and validate_blocks(blocks) == []
    assert label.startswith("Cancel 999") and label.endswith(" and resume from scratch")


def test_long_job_and_checkpoint_names_keep_a_cancel_and_resume_button_within_slacks_limit():
    [label] = _prompt_labels("en", "cancel_resume", resume_iter=None,
                             resume_checkpoint="final-" + "x" * 200 + "-ema")
    assert len(label) <= 75  # _prompt_labels: the Slack stand-in's checks pass too
    assert label.startswith("Cancel 88154 and resume from checkpoint `final-")
    assert label.endswith("-ema`")


def test_long_node_and_checkpoint_names_keep_the_exclusion_button_within_slacks_limit():
    """Both shortened keep their start and end: the button still says what it does."""
    [label] = _prompt_labels("en", "resubmit", resume_iter=None,
                             resume_checkpoint="final-" + "x" * 200 + "-ema",
                             exclude="gpu[" + ",".join(f"{i:03d}" for i in range(60)) + "]")
    assert len(label) <= 75
    assert label.startswith("Resubmit without gpu[000,") and "059] from checkpoint" in label
    assert "from checkpoint `final-" in label and label.endswith("-ema`")


@pytest.mark.parametrize(("lang", "outcome", "said"), [
    ("en", {"did": "resubmitted", "from_iter": 2000, "prompt_iter": 3000},
     "resubmitted as 88887 from iteration 2,000. The prompt said iteration 3,000: the "
     "newest complete "
     "checkpoint changed since it was posted."),
    ("ko", {"did": "resubmitted", "from_iter": 2000, "prompt_iter": 3000},
     "프롬프트는 iteration 3,000부터 재개한다고 했습니다"),
    ("en", {"did": "resubmitted", "from_checkpoint": "final"},
     "Approved by <@W0LEAD>: resubmitted as 88887 from checkpoint `final`"),
    ("en", {"did": "cancel_resumed", "from_checkpoint": "final"},
     "cancelled job 88154 and resubmitted it as 88887 from checkpoint `final`"),
    ("ko", {"did": "cancel_resumed", "from_checkpoint": "final"}, "체크포인트 `final`부터 재개"),
    # the prompt named a checkpoint without an iteration: by its name
    ("en", {"did": "resubmitted", "from_iter": 4000, "prompt_checkpoint": "final"},
     "resubmitted as 88887 from iteration 4,000. The prompt said checkpoint `final`: the newest "
     "complete checkpoint changed since it was posted."),
    ("ko", {"did": "resubmitted", "from_iter": 4000, "prompt_checkpoint": "final"},
     "프롬프트는 체크포인트 `final`부터 재개한다고 했습니다"),
])
def test_a_decided_prompt_says_where_the_resubmit_resumed_and_that_it_changed(
        lang: str, outcome: dict, said: str):
    """The prompt rewritten after the click says where the job resumed, as the resolution line
    does: a checkpoint without an iteration by its name, and that the newest complete
    checkpoint changed since the prompt when it resumed from another iteration."""
    from bot.services.approval_outcomes import Outcome
    o = Outcome("approved", "W0LEAD", job_id="88154", new_job_id="88887", **outcome)
    blocks, text = render_blocks("decided", lang, {"summary": "s", "outcome": o.to_view()})
    assert said in text and validate_blocks(blocks) == []
    assert "from the start" not in text and "처음부터" not in text


@pytest.mark.parametrize(("lang", "outcome", "said"), [
    ("en", {"did": "cancel_resumed"},
     "cancelled job 88154 and resubmitted it as 88887 from scratch (no complete checkpoint)"),
    ("ko", {"did": "cancel_resumed"},
     "작업 88154을(를) 취소하고 작업 88887(으)로 다시 제출했습니다 "
     "(완전한 체크포인트가 없어 처음부터 재개)"),
    ("en", {"did": "resubmitted", "mem": "1900G"},
     "resubmitted as 88887 from scratch (no complete checkpoint) with --mem=1900G"),
    ("ko", {"did": "cancel_resumed", "from_iter": 3000}, "(iteration 3,000부터 재개)"),
    ("ko", {"did": "resubmitted", "from_iter": 3000, "mem": "1900G"},
     "작업 88887(으)로 재제출했습니다 (iteration 3,000부터 재개, --mem=1900G)"),
])
def test_a_decided_prompt_says_where_the_resume_started_in_the_start_phrase(
        lang: str, outcome: dict, said: str):
    """The prompt rewritten after the click says where the resume started as its buttons,
    their dialog and the resolution line do (bot.core.policy.resume_start): with no complete
    checkpoint "from scratch (no complete checkpoint)", never "from the start" or nothing."""
    from bot.services.approval_outcomes import Outcome
    o = Outcome("approved", "W0LEAD", job_id="88154", new_job_id="88887", **outcome)
    blocks, text = render_blocks("decided", lang, {"summary": "s", "outcome": o.to_view()})
    assert said in text and validate_blocks(blocks) == []
    assert "from the start" not in text and "iter " not in text


def test_a_cut_never_splits_a_redaction_marker() -> None:
    # "password=[redac…" reads as a secret again: redacting the cut text would grow it
    text = "x" * 2981 + "password=" + MARKER + " and the rest of the line"
    [block, _note] = trim_blocks([{"type": "section", "text": {"type": "mrkdwn", "text": text}}])
    cut = block["text"]["text"]
    assert cut == "x" * 2981 + "password=…"
    assert Redactor().redact(cut) == cut
