"""argv builders for sbatch/squeue/sacct/scontrol/scancel, and SlurmClient over a fake runner.

The fake runner answers with text captured from the real dev cluster where it matters, so
these check the client's decisions (one squeue + one sacct, errors), not Slurm itself; the
real thing is tests/integration/test_slurm.py.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from fakes import FakeRunner, present

from bot.cluster.errors import (
    ChannelClosed,
    ClusterUnavailable,
    CommandFailed,
    CommandTimedOut,
    OutcomeUnknown,
    ReadCutOff,
)
from bot.cluster.slurm import SlurmClient
from bot.cluster.ssh import CommandResult
from bot.core.slurm.errors import SlurmParseError
from bot.core.slurm.records import JobRecord
from bot.core.slurm.sacct import SACCT_FIELDS, sacct_argv
from bot.core.slurm.sbatch import (
    SubmitSpec,
    check_env,
    options_not_applied,
    parse_sbatch_output,
    sbatch_argv,
    sbatch_input_env,
    sbatch_refused_for_now,
)
from bot.core.slurm.scancel import scancel_argv
from bot.core.slurm.scontrol import scontrol_argv
from bot.core.slurm.squeue import SQUEUE_FIELDS, squeue_argv
from bot.core.takeover import RemoteDeadlines

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "slurm"
HOSTILE = ["a'; touch /tmp/pwned #", "$(id)", "x\ny", "--wrap=rm -rf ~", "`id`", "a b|c;d"]


# ---- sbatch --------------------------------------------------------------------------------


GIB = 1024**3


def test_sbatch_input_env_names_each_option_and_refuses_a_second_line() -> None:
    assert sbatch_input_env({"partition": "debug", "mem": "400G", "time": "90",
                             "qos": None}) == {
        "SBATCH_PARTITION": "debug", "SBATCH_MEM_PER_NODE": "400G", "SBATCH_TIMELIMIT": "90"}
    with pytest.raises(ValueError, match="SBATCH_ACCOUNT"):
        sbatch_input_env({"account": "a\nb"})


@pytest.mark.parametrize(("requested", "job", "differ"), [
    ({"partition": "debug"}, {"partition": "debug"}, {}),
    ({"partition": "debug,gpu"}, {"partition": "gpu"}, {}),  # Slurm picked one of the list
    ({"partition": "debug"}, {"partition": "gpu"}, {"partition": "gpu"}),
    ({"account": "Team-B", "qos": "high"}, {"account": "team-b", "qos": "high"}, {}),
    ({"qos": "high"}, {"qos": "normal"}, {"qos": "normal"}),
    ({"mem": "400G"}, {"mem_limit_bytes": 400 * GIB}, {}),
    ({"mem": "409600M"}, {"mem_limit_bytes": 400 * GIB}, {}),
    ({"mem": "400G"}, {"mem_limit_bytes": 950 * GIB}, {"mem": "950G"}),
    ({"time": "90"}, {"time_limit_s": 5400.0}, {}),  # a bare number is minutes
    ({"time": "1:30"}, {"time_limit_s": 120.0}, {}),  # M:S, rounded up to minutes
    ({"time": "2-00:00:00"}, {"time_limit_s": 3600.0}, {"time": "01:00:00"}),
    ({"time": "UNLIMITED"}, {"time_limit_s": 3600.0}, {}),
    ({"gres": "gpu:2"}, {}, {}),  # not in the job's record: cannot be compared
    ({"mem": "400G", "partition": "debug"}, {}, {}),  # the record lacks them
    # mem 0 is all of each node's memory (Slurm records the node's size, 21694M on the dev
    # cluster), time 0 no limit (Slurm records the partition's maximum): both applied
    ({"mem": "0", "time": "0"}, {"mem_limit_bytes": 21694 * 1024**2,
                                 "time_limit_s": 365 * 86400.0}, {}),
    ({"mem": "0G", "time": "00:00:00"}, {"mem_limit_bytes": 400 * GIB,
                                         "time_limit_s": 3600.0}, {}),
])
def test_options_not_applied_compares_what_the_job_shows(requested, job, differ) -> None:
    assert options_not_applied(requested, JobRecord(job_id=777, **job)) == differ


@pytest.mark.parametrize("value", HOSTILE)
def test_sbatch_keeps_each_hostile_value_in_one_argv_word(value):
    name = value.replace("\n", " ")  # a job name has no control character (check_job_name)
    argv = sbatch_argv(SubmitSpec(job_name=name, script_path="train.sh", args=(value, "plain")))
    assert f"--job-name={name}" in argv
    # the script's arguments follow the script path, verbatim and in order
    assert argv[-3:] == ["train.sh", value, "plain"]
    # and survive the runner's quoting as the same words
    assert shlex.split(shlex.join(argv)) == argv


def test_sbatch_options_are_glued_so_a_value_cannot_become_an_option():
    argv = sbatch_argv(
        SubmitSpec(
            job_name="j",
            script_path="s.sh",
            partition="--wrap=id",
            mem="100M",
            time="1",
            gres="gpu:4",
            account="team-b",
            qos="high",
            output="%x-%j.out",
            workdir="/scratch/run",
        )
    )
    assert "--partition=--wrap=id" in argv
    assert {"--mem=100M", "--time=1", "--gres=gpu:4", "--account=team-b", "--qos=high",
            "--output=%x-%j.out", "--chdir=/scratch/run"} <= set(argv)
    assert argv[:3] == ["sbatch", "--parsable", "--job-name=j"]


def test_sbatch_writes_every_option_of_the_spec_in_one_fixed_order():
    spec = SubmitSpec(job_name="j", script_path="s.sh", args=("a",), partition="p", account="acc",
                      qos="q", gres="gpu:4", mem="100M", time="1", output="o", error="e",
                      workdir="/w", begin="now", env={"K": "v"}, hold=True, extra=("--requeue",))
    assert sbatch_argv(spec) == [
        "sbatch", "--parsable", "--job-name=j", "--partition=p", "--account=acc",
        "--qos=q", "--gres=gpu:4", "--mem=100M", "--time=1", "--output=o", "--error=e",
        "--chdir=/w", "--begin=now", "--export=ALL", "--hold", "--requeue", "s.sh", "a",
    ]


def test_sbatch_with_inline_script_and_args_reads_the_script_from_stdin():
    assert sbatch_argv(SubmitSpec(job_name="j"))[-1] == "--job-name=j"  # no script path: stdin
    argv = sbatch_argv(SubmitSpec(job_name="j", args=("--lr", "3e-4")))
    assert argv[-3:] == ["/dev/stdin", "--lr", "3e-4"]


def test_sbatch_hold_and_extra_options():
    argv = sbatch_argv(
        SubmitSpec(job_name="j", hold=True, extra=("--begin=now+1hour", "--requeue"))
    )
    assert "--hold" in argv and "--begin=now+1hour" in argv and "--requeue" in argv


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"script_path": "-x.sh"}, "must not be empty or start with '-'"),
        ({"extra": ["rm"]}, "must start with '-'"),
        ({"partition": "a\nb"}, "--partition"),
        ({"job_name": ""}, "job name '' must be non-empty"),
        ({"job_name": "wm,mix"}, "without commas or control characters"),  # squeue --name=
        ({"job_name": "wm\nmix"}, "without commas or control characters"),
    ],
)
def test_sbatch_rejects_unsafe_shapes_with_a_clear_message(kwargs, message):
    kwargs = {"job_name": "j", **kwargs}
    with pytest.raises(ValueError, match=message):
        sbatch_argv(SubmitSpec(**kwargs))


def test_env_values_stay_off_the_argv_and_the_job_inherits_them():
    argv = sbatch_argv(SubmitSpec(job_name="j", script_path="s.sh",
                       env={"CC": "gcc", "HF_TOKEN": "hf_secret,b'c\nd $(id)"}))
    assert argv[0] == "sbatch" and "--export=ALL" in argv
    assert not [word for word in argv if "gcc" in word or "hf_secret" in word]


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("1BAD", "not valid"),
        ("A,B", "not valid"),
        ("A=B", "not valid"),
        ("MY VAR", "not valid"),
        ("SBATCH_PARTITION", "change how sbatch runs"),
        ("SLURM_CONF", "change how sbatch runs"),
        ("PATH", "change how sbatch runs"),
        ("LD_PRELOAD", "change how sbatch runs"),
    ],
)
def test_env_rejects_bad_or_dangerous_keys_naming_them(key, message):
    with pytest.raises(ValueError, match=message) as info:
        check_env({key: "x"})
    assert repr(key) in str(info.value)


def test_parse_sbatch_output():
    assert parse_sbatch_output("123\n") == 123
    assert parse_sbatch_output("123;devcluster\n") == 123
    with pytest.raises(SlurmParseError, match="no job id"):
        parse_sbatch_output("sbatch: error: Batch job submission failed\n")


# ---- squeue / sacct / scontrol / scancel ----------------------------------------------------


def test_squeue_json_has_no_filters_because_squeue_ignores_them():
    # 22.05 ignores them all; --states=all because 24.11 honours the default state filter,
    # which leaves finished jobs out.
    assert squeue_argv(json=True, job_ids=[5], user="bob") == [
        "squeue", "--all", "--states=all", "--json"]


def test_squeue_parsable_lists_ids_once_and_never_cuts_columns():
    argv = squeue_argv(json=False, job_ids=[7, 3, 7])
    assert argv[:2] == ["env", "SLURM_TIME_FORMAT=%s"]
    assert "--jobs=3,7" in argv and "--states=all" in argv
    fmt = next(a for a in argv if a.startswith("--Format="))
    assert fmt.endswith("Name:0|")
    assert fmt.count(":0|") == len(SQUEUE_FIELDS)


def test_squeue_parsable_competitor_filters():
    argv = squeue_argv(json=False, user="bob", account="team-b", partition="gpu", qos="high",
                       states="PENDING")
    assert {"--user=bob", "--account=team-b", "--partition=gpu", "--qos=high",
            "--states=PENDING"} <= set(argv)
    assert not any(a.startswith("--jobs") for a in argv)


def test_sacct_asks_for_all_ids_with_requeue_history_and_name_last():
    argv = sacct_argv([12, 10, 11, 10])
    assert "--jobs=10,11,12" in argv and "--duplicates" in argv and "--parsable2" in argv
    assert argv[-1] == "--format=" + ",".join(SACCT_FIELDS)
    assert SACCT_FIELDS[-1] == "JobName"
    assert sacct_argv([1], json=True) == ["sacct", "--json", "--duplicates", "--jobs=1"]


@pytest.mark.parametrize("bad", [0, -1, "5", True, 1.5, "5;id"])
def test_job_ids_must_be_positive_ints(bad):
    with pytest.raises(ValueError, match="positive integer"):
        sacct_argv([bad])
    with pytest.raises(ValueError, match="positive integer"):
        scancel_argv(bad)


def test_sacct_without_ids_is_refused():
    with pytest.raises(ValueError, match="no job ids"):
        sacct_argv([])


def test_scontrol_and_scancel():
    assert scontrol_argv("hold", 5) == ["scontrol", "hold", "5"]
    assert scontrol_argv("release", 5) == ["scontrol", "release", "5"]
    assert scontrol_argv("requeue", 5) == ["scontrol", "requeue", "5"]
    with pytest.raises(ValueError, match="not one of"):
        scontrol_argv("delete", 5)
    assert scancel_argv(9) == ["scancel", "9"]
    assert scancel_argv(9, signal="USR1") == ["scancel", "--signal=USR1", "9"]
    with pytest.raises(ValueError, match="signal"):
        scancel_argv(9, signal="TERM; id")
    assert scancel_argv(9, limits=(55.0, 5.0)) == ["timeout", "-k", "5", "55", *REPORTING,
                                                   "scancel", "9"]
    with pytest.raises(ValueError, match="positive"):
        scancel_argv(9, limits=(0.0, 5.0))  # `timeout 0` would not bound it at all


# the shell a bounded scancel runs in, which reports scancel's own exit status
REPORTING = ["/bin/sh", "-c",
             'trap "exit 143" TERM; scancel "$@"; s=$?; echo "scancel exited $s"; exit $s']


class _TimeoutsSeen(FakeRunner):
    """A FakeRunner that also keeps the timeout each run was given."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.timeouts: list[float | None] = []

    def run(self, argv: Sequence[str], **kwargs: Any) -> CommandResult:
        self.timeouts.append(kwargs.get("timeout"))
        return super().run(argv, **kwargs)


def test_a_cancels_scancel_is_bounded_on_the_login_node_by_the_run_its_runner_waits_for():
    """`timeout -k 5 55 scancel 5`: the login node stops the scancel at its runner's command
    bound (60 s by default, SIGKILL included), the same number the runner waits for and
    bot.core.takeover counts the scancel at; a client's own timeout replaces it for both.
    Before, a plain `scancel 5` ran there with no bound at all."""
    runner = _TimeoutsSeen({"scancel": (0, "", "")}, deadlines=RemoteDeadlines())
    SlurmClient(runner, use_json=False).cancel(5)
    SlurmClient(runner, use_json=False, timeout=20).cancel(6)
    assert runner.argvs() == [["timeout", "-k", "5", "55", *REPORTING, "scancel", "5"],
                              ["timeout", "-k", "5", "15", *REPORTING, "scancel", "6"]]
    assert runner.timeouts == [60.0, 20]


# as an error's sentence names it (bot.cluster.errors.brief_command: a long argument cut)
SHOWN_BRIEFLY = ("timeout -k 5 55 /bin/sh -c 'trap \"exit 143\" TERM; scancel \"$@\"; s=$?; "
                 "echo \"scancel exited …' scancel 5")


@pytest.mark.parametrize("code", [124, 137])
def test_a_scancel_the_login_node_stopped_may_have_landed_so_it_is_an_outcome_unknown(code):
    """`timeout` stopped the scancel (124: SIGTERM; 137: the SIGKILL after it), and its shell
    with it, which so reported no status of scancel's: it may have reached slurmctld first, so
    the cancel's end was not seen (never a CommandFailed, which would read as "not
    cancelled")."""
    runner = FakeRunner({"scancel": (code, "", "")}, deadlines=RemoteDeadlines())
    with pytest.raises(OutcomeUnknown) as caught:
        SlurmClient(runner, use_json=False).cancel(5)
    assert str(caught.value) == (
        f"`{SHOWN_BRIEFLY}` did not end within its 60 s on the login node, which stopped it "
        f"(exit {code}); it may or may not have taken effect")


def test_a_scancel_that_failed_on_its_own_stays_a_command_failed():
    runner = FakeRunner({"scancel": (1, "scancel exited 1\n",
                                     "scancel: error: Kill job error on job id 5: "
                                     "Invalid job id specified")},
                        deadlines=RemoteDeadlines())
    with pytest.raises(CommandFailed, match="Invalid job id") as caught:
        SlurmClient(runner, use_json=False).cancel(5)
    assert caught.value.argv == ["timeout", "-k", "5", "55", *REPORTING, "scancel", "5"]


@pytest.mark.parametrize(("code", "error"), [(124, "Job signal failed"),
                                             (137, "Invalid SLUID")])
def test_a_scancel_that_failed_on_its_own_with_a_status_of_timeouts_is_its_failure(code, error):
    """scancel's own exit status is Slurm's error number mod 256: ESLURM_JOB_SIGNAL_FAILED
    (2172) exits 124 and ESLURM_INVALID_SLUID (2185) 137, as `timeout` does when it stops
    it. Its shell reported it, so it is scancel's failure, said as one. Before, it read as a
    scancel the login node stopped: "may or may not have taken effect"."""
    stderr = f"scancel: error: Kill job error on job id 5: {error}"
    runner = FakeRunner({"scancel": (code, f"scancel exited {code}\n", stderr)},
                        deadlines=RemoteDeadlines())
    with pytest.raises(CommandFailed) as caught:
        SlurmClient(runner, use_json=False).cancel(5)
    assert not isinstance(caught.value, OutcomeUnknown)
    assert str(caught.value) == f"`{SHOWN_BRIEFLY}` exited {code}: {stderr}"


def test_a_scancel_that_ended_as_the_login_node_stopped_its_shell_is_its_own_answer():
    """scancel exited 0 and its shell reported it; `timeout`'s deadline came before the
    shell exited (124): the job was cancelled, and the cancel says so. Failing the same way,
    scancel's own status is the failure's."""
    runner = FakeRunner({"scancel": (124, "scancel exited 0\n", "")},
                        deadlines=RemoteDeadlines())
    SlurmClient(runner, use_json=False).cancel(5)  # no error: cancelled
    runner = FakeRunner({"scancel": (124, "scancel exited 1\n", "scancel: error: Kill job "
                                     "error on job id 5: Invalid job id specified")},
                        deadlines=RemoteDeadlines())
    with pytest.raises(CommandFailed) as caught:
        SlurmClient(runner, use_json=False).cancel(5)
    assert caught.value.exit_code == 1


# ---- SlurmClient over a fake runner --------------------------------------------------------


def _fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def _case_ids() -> dict[str, int]:
    return json.loads(_fixture("cases.json"))["cases"]


@pytest.mark.parametrize("use_json", [True, False])
def test_jobs_makes_one_squeue_and_one_sacct_call_for_many_ids(use_json):
    squeue_out = _fixture("squeue.json" if use_json else "squeue.txt")
    runner = FakeRunner({"squeue": (0, squeue_out, ""), "sacct": (0, _fixture("sacct.txt"), ""),
                         "sinfo": (0, "slurm-wlm 22.05.8\n", "")})
    client = SlurmClient(runner, use_json=use_json)
    ids = list(_case_ids().values())
    records = client.jobs([*ids, 999999])
    client.jobs(ids[:1])
    # the release once per client (it decides sacct's fields), then one squeue + one sacct
    assert runner.commands() == ["squeue", "sinfo", "sacct", "squeue", "sacct"]
    assert set(records) == set(ids)  # the unknown id is absent, not an error
    assert records[_case_ids()["exit3"]].exit_code == 3


@pytest.mark.parametrize(
    "stderr",
    [
        "squeue: error: Unable to contact slurm controller (connect failure)",
        "slurm_load_jobs error: Socket timed out on send/recv operation",
        "sacct: error: Problem talking to the database: Connection refused",
    ],
)
def test_a_silent_controller_raises_cluster_unavailable_not_an_empty_answer(stderr):
    runner = FakeRunner({"squeue": (1, "", stderr), "sacct": (1, "", stderr)})
    with pytest.raises(ClusterUnavailable, match="did not answer"):
        SlurmClient(runner, use_json=False).jobs([5])


def test_sacct_down_while_squeue_answers_still_raises():
    runner = FakeRunner({
        "squeue": (0, "", ""), "sinfo": (0, "slurm 24.11.5\n", ""),
        "sacct": (1, "", "sacct: error: slurm_persist_conn_open_without_init: failed to open "
                         "persistent connection to host:localhost:6819: Connection refused"),
    })
    with pytest.raises(ClusterUnavailable):
        SlurmClient(runner, use_json=False).jobs([5])


def test_a_timed_out_outcome_unknown_is_made_in_one_place_and_advice_keeps_its_type():
    timed_out = CommandTimedOut(["site-submit", "--x"], 5.0)
    made = OutcomeUnknown.timed_out(["site-submit", "--x"], timed_out, advice="Look it up.")
    assert str(made) == ("`site-submit --x` did not finish within 5 s; it may or may not have "
                         "taken effect. Look it up.")
    closed = ChannelClosed(["sbatch"], "login1", connection_lost=False, starting=True)
    advised = closed.advised("Look it up.")
    assert type(advised) is ChannelClosed and advised.starting and not advised.connection_lost
    assert (advised.where, advised.argv, advised.advice) == ("login1", ["sbatch"], "Look it up.")
    assert str(advised) == f"{closed}. Look it up."
    assert str(advised.advised("Again.")).endswith(". Look it up. Again.")


SOCKET_TIMED_OUT = ("sbatch: error: Batch job submission failed: Socket timed out on "
                    "send/recv operation")


def test_an_sbatch_whose_answer_socket_timed_out_is_an_outcome_unknown_saying_to_look_it_up():
    """`Socket timed out on send/recv operation`: the request may have reached slurmctld and
    the job may be queued, so a submit is an OutcomeUnknown (looked up by name before
    submitting again), not a plain ClusterUnavailable."""
    runner = FakeRunner({"sbatch": (1, "", SOCKET_TIMED_OUT)})
    with pytest.raises(OutcomeUnknown) as caught:
        SlurmClient(runner, use_json=False).submit(SubmitSpec(job_name="mix"), script="x")
    assert str(caught.value) == (
        "Slurm did not answer `sbatch --parsable --job-name=mix` in time (exit 1): "
        f"{SOCKET_TIMED_OUT}; it may or may not have taken effect. The job 'mix' may or may "
        "not have been submitted: look for that name in squeue before submitting again.")
    assert caught.value.argv[0] == "sbatch"


@pytest.mark.parametrize(("program", "act"), [
    ("scancel", lambda c: c.cancel(5)), ("scontrol", lambda c: c.hold(5))])
def test_a_command_with_effects_whose_answer_socket_timed_out_is_an_outcome_unknown(program,
                                                                                   act):
    runner = FakeRunner({program: (1, "", f"{program}: error: Socket timed out on send/recv "
                                          "operation")})
    with pytest.raises(OutcomeUnknown, match="it may or may not have taken effect"):
        act(SlurmClient(runner, use_json=False))


def test_a_read_whose_answer_socket_timed_out_stays_unavailable():
    runner = FakeRunner({"squeue": (1, "", "squeue: error: slurm_load_jobs error: Socket timed "
                                           "out on send/recv operation")})
    with pytest.raises(ClusterUnavailable) as caught:
        SlurmClient(runner, use_json=False).jobs([5])
    assert not isinstance(caught.value, OutcomeUnknown)
    assert "nothing was concluded about the jobs" in str(caught.value)


def test_a_timed_out_read_means_unavailable_and_nothing_changed():
    runner = FakeRunner({"squeue": CommandTimedOut(["squeue"], 30.0)})
    with pytest.raises(ClusterUnavailable, match="30 s") as info:
        SlurmClient(runner, use_json=True).jobs([5])
    assert not isinstance(info.value, OutcomeUnknown)
    assert "may or may not" not in str(info.value)


@pytest.mark.parametrize(("program", "act"), [
    ("scancel", lambda c: c.cancel(5)), ("scontrol", lambda c: c.hold(5)),
    ("scontrol", lambda c: c.release(5)), ("scontrol", lambda c: c.requeue(5))])
def test_a_timed_out_command_that_changes_something_is_an_outcome_unknown(program, act):
    runner = FakeRunner({program: CommandTimedOut([program, "5"], 30.0)})
    with pytest.raises(OutcomeUnknown) as info:
        act(SlurmClient(runner, use_json=False))
    assert "did not answer within 30 s" in str(info.value)
    assert "it may or may not have taken effect" in str(info.value)
    assert isinstance(info.value, ClusterUnavailable)


def test_a_timed_out_submit_is_an_outcome_unknown_saying_to_look_the_job_up():
    """sbatch past its timeout may have queued the job, as one whose channel closed may:
    the same OutcomeUnknown, with the same advice (never a plain ClusterUnavailable)."""
    timed_out = CommandTimedOut(["sbatch", "--parsable"], 30.0)
    runner = FakeRunner({"sbatch": timed_out})
    with pytest.raises(OutcomeUnknown) as caught:
        SlurmClient(runner, use_json=False).submit(SubmitSpec(job_name="mix"), script="x")
    assert not isinstance(caught.value, ChannelClosed)
    assert caught.value.argv[0] == "sbatch"
    assert str(caught.value).startswith("`sbatch --parsable")
    assert "did not answer within 30 s" in str(caught.value)
    assert str(caught.value).endswith(
        "The job 'mix' may or may not have been submitted: look for that name in squeue "
        "before submitting again.")
    assert present(caught.value.__cause__).__cause__ is timed_out


def test_squeue_invalid_job_id_means_absent_not_failure():
    runner = FakeRunner({
        "squeue": (1, "", "slurm_load_jobs error: Invalid job id specified"),
        "sacct": (0, "JobIDRaw|State|ExitCode|JobName\n", ""), "sinfo": (0, "slurm 24.11.5\n", ""),
    })
    assert SlurmClient(runner, use_json=False).jobs([424242]) == {}


def test_other_failures_are_command_failed_with_stderr():
    runner = FakeRunner({"scontrol": (1, "", "scontrol: error: Job has already finished")})
    with pytest.raises(CommandFailed, match="already finished"):
        SlurmClient(runner, use_json=False).hold(5)


def test_submit_sends_script_on_stdin_and_returns_the_id():
    runner = FakeRunner({"sbatch": (0, "4242\n", "")})
    job_id = SlurmClient(runner, use_json=False).submit(
        SubmitSpec(job_name="mix"), script="#!/bin/bash\necho hi\n"
    )
    assert job_id == 4242
    argv, stdin = runner.calls[0].argv, runner.calls[0].stdin
    assert stdin == "#!/bin/bash\necho hi\n" and "--job-name=mix" in argv


def test_submit_hands_the_env_to_the_runner_and_a_failure_names_no_value():
    secret = "hf_tok3n-value"
    runner = FakeRunner({"sbatch": (1, "", "sbatch: error: invalid partition specified: nope")})
    with pytest.raises(CommandFailed) as info:
        SlurmClient(runner, use_json=False).submit(
            SubmitSpec(job_name="mix", script_path="/s.sh", partition="nope",
                       env={"HF_TOKEN": secret}))
    assert [call.env for call in runner.calls] == [{"HF_TOKEN": secret}]
    assert secret not in str(info.value) and secret not in " ".join(info.value.argv)
    assert "invalid partition" in str(info.value)


def test_submit_needs_exactly_one_script_source():
    client = SlurmClient(FakeRunner({}), use_json=False)
    with pytest.raises(ValueError, match="exactly one"):
        client.submit(SubmitSpec(job_name="j"))
    with pytest.raises(ValueError, match="exactly one"):
        client.submit(SubmitSpec(job_name="j", script_path="y"), script="x")


def test_submit_when_controller_is_down_says_the_job_may_exist():
    runner = FakeRunner({"sbatch": (1, "", "sbatch: error: Batch job submission failed: "
                                           "Unable to contact slurm controller (connect failure)")})
    with pytest.raises(ClusterUnavailable, match="may or may not have been submitted"):
        SlurmClient(runner, use_json=False).submit(SubmitSpec(job_name="mix"), script="x")


def test_submit_whose_channel_closed_keeps_channel_closed_and_says_to_look_the_job_up():
    """sbatch may have run: the caller gets the runner's ChannelClosed (what decides to look
    the job up by name before submitting again), with what to do added."""
    closed = ChannelClosed(["sbatch", "--parsable"], "login1", connection_lost=True)
    runner = FakeRunner({"sbatch": closed})
    with pytest.raises(ChannelClosed) as caught:
        SlurmClient(runner, use_json=False).submit(SubmitSpec(job_name="mix"), script="x")
    assert caught.value.connection_lost and caught.value.argv == ["sbatch", "--parsable"]
    assert str(caught.value).startswith("connection to login1 lost while `sbatch --parsable`")
    assert "The job 'mix' may or may not have been submitted" in str(caught.value)
    assert caught.value.__cause__ is closed


@pytest.mark.parametrize("lost", [True, False])
def test_a_read_whose_channel_closed_says_nothing_changed_and_it_is_safe_to_ask_again(lost):
    """squeue's channel closed before its answer: a ReadCutOff (a ClusterUnavailable, so
    nothing is concluded about the jobs) saying it only reads, not the "may or may not have
    run" of a command that changes something."""
    closed = ChannelClosed(["squeue", "--jobs=5"], "login1", connection_lost=lost)
    runner = FakeRunner({"squeue": closed, "sinfo": (0, "slurm 24.11.5\n", "")})
    with pytest.raises(ReadCutOff) as caught:
        SlurmClient(runner, use_json=False).jobs([5])
    assert not isinstance(caught.value, OutcomeUnknown)
    assert isinstance(caught.value, ClusterUnavailable) and caught.value.__cause__ is closed
    assert "may or may not" not in str(caught.value)
    cause = ("the connection to login1 was lost" if lost else
             "its channel on login1 closed before its exit status came")
    assert str(caught.value) == (f"`squeue --jobs=5` was cut off ({cause}): it only reads, so "
                                 "nothing changed and it is safe to ask again")


@pytest.mark.parametrize(("program", "act"), [
    ("scancel", lambda c: c.cancel(5)), ("scontrol", lambda c: c.hold(5)),
    ("scontrol", lambda c: c.release(5)), ("scontrol", lambda c: c.requeue(5))])
def test_a_command_that_changes_something_whose_channel_closed_keeps_the_warning(program, act):
    closed = ChannelClosed([program, "5"], "login1", connection_lost=False)
    runner = FakeRunner({program: closed})
    with pytest.raises(ChannelClosed) as caught:
        act(SlurmClient(runner, use_json=False))
    assert caught.value is closed and "it may or may not have run" in str(caught.value)


def test_probe_runs_once_and_detects_json():
    runner = FakeRunner({"sinfo": (0, "slurm-wlm 22.05.8\n", ""),
                         "squeue": (0, _fixture("squeue.json"), "")})
    client = SlurmClient(runner)
    info = client.probe()
    assert (info.version, info.has_json, info.version_tuple) == ("slurm-wlm 22.05.8", True,
                                                                (22, 5, 8))
    client.probe()
    assert runner.commands() == ["sinfo", "squeue"]


def test_probe_without_json_support_falls_back_to_parsable():
    runner = FakeRunner({"sinfo": (0, "slurm 20.11.9\n", ""),
                         "squeue": (1, "", "squeue: unrecognized option '--json'")})
    assert SlurmClient(runner).probe().has_json is False


def test_pending_competitors_parsable_filters_and_orders():
    # Real -O rows shape; two pending jobs of bob, one of another account, one running.
    rows = [
        "11|11|N/A|PENDING|Priority|bob|team-a|gpu|normal|100|1700000100|N/A|N/A|1:00:00|0:00|"
        "|100G|4|1|cpu=4,mem=100G,node=1|0|0|/w|/w/%x.out|succ|",
        "12|12|N/A|PENDING|JobHeldUser|bob|team-a|gpu|normal|0|1700000000|N/A|N/A|1:00:00|0:00|"
        "|100G|4|1|cpu=4,mem=100G,node=1|0|0|/w|/w/%x.out|held|",
        "13|13|N/A|PENDING|Priority|bob|team-a|gpu|normal|500|1700000200|N/A|N/A|1:00:00|0:00|"
        "|100G|4|1|cpu=4,mem=100G,node=1|0|0|/w|/w/%x.out|urgent|",
        "14|14|N/A|RUNNING|None|bob|team-a|gpu|normal|100|1700000000|1700000001|N/A|1:00:00|"
        "0:10|n1|100G|4|1|cpu=4,mem=100G,node=1|0|0|/w|/w/%x.out|busy|",
    ]
    runner = FakeRunner({"squeue": (0, "\n".join(rows) + "\n", "")})
    found = SlurmClient(runner, use_json=False).pending_competitors(
        user="bob", partition="gpu", exclude=[11])
    assert [r.job_id for r in found] == [13, 12]
    argv = runner.calls[0].argv
    assert "--states=PENDING" in argv and "--user=bob" in argv and "--partition=gpu" in argv


def test_pending_competitors_needs_someone_to_look_for():
    with pytest.raises(ValueError, match="user or an account"):
        SlurmClient(FakeRunner({}), use_json=False).pending_competitors(partition="gpu")


# What `squeue --json` printed (exit 0) on the dev cluster while slurmctld was stopped.
SQUEUE_JSON_CTLD_DOWN = json.dumps({
    "meta": {"plugin": {"type": "openapi/v0.0.38", "name": "Slurm OpenAPI v0.0.38"}},
    "errors": [{"description": "Failed while looking for jobs", "error_number": -1,
                "error": "Unspecified error", "source": "slurm_load_jobs"}],
    "jobs": [],
})


def test_squeue_json_listing_errors_is_unavailable_not_empty():
    runner = FakeRunner({"squeue": (0, SQUEUE_JSON_CTLD_DOWN, ""),
                         "sacct": (0, _fixture("sacct.txt"), "")})
    client = SlurmClient(runner, use_json=True)
    with pytest.raises(ClusterUnavailable, match="Failed while looking for jobs"):
        client.jobs([5])
    with pytest.raises(ClusterUnavailable):
        client.pending_competitors(user="slurmci")


def test_holding_an_array_some_of_whose_tasks_ended_is_no_failure():
    """`scontrol hold 658` of an array whose task 0 had ended answers task by task and exits 1
    (Slurm 22.05, as tests/integration/test_slurm_arrays.py met it): the tasks still there
    were held, so the hold went through. A hold whose every task had ended, or any other
    complaint in the answer, is still a failure."""
    partly = "658_0: Job has already finished\n658_1-3: No error\n"
    runner = FakeRunner({"scontrol": (1, "", partly)})
    SlurmClient(runner, use_json=False).hold(658)
    assert [c.argv[:3] for c in runner.calls] == [["scontrol", "hold", "658"]]
    for stderr in ("658_[0-3]: Job has already finished\n",
                   "658_0: Job has already finished\n658_1-3: Access/permission denied\n",
                   "658_1-3: No error\nscontrol: error: Job has already finished\n"):
        with pytest.raises(CommandFailed):
            SlurmClient(FakeRunner({"scontrol": (1, "", stderr)}), use_json=False).hold(658)


def test_releasing_an_array_some_of_whose_tasks_ended_logs_what_it_did(caplog):
    """`scontrol release 658` of an array whose task 0 had ended exits 1 answering task by task
    ("658_0: Job has already finished", "658_1-3: No error"; Slurm 22.05), having released the
    tasks still there: the log says so, not that job 658 had no hold left to release. A job
    that had ended, whose release has nothing to undo, is still logged as such."""
    import logging

    partly = "658_0: Job has already finished\n658_1-3: No error\n"
    runner = FakeRunner({"scontrol": (1, "", partly)})
    with caplog.at_level(logging.INFO, logger="bot.cluster.slurm"):
        SlurmClient(runner, use_json=False).release(658)
    assert [c.argv[:3] for c in runner.calls] == [["scontrol", "release", "658"]]
    said = [r.getMessage() for r in caplog.records if r.name == "bot.cluster.slurm"]
    assert said == ["array 658: its tasks still there released, those that had ended left as "
                    "they were: 658_0: Job has already finished | 658_1-3: No error"]
    caplog.clear()
    ended = "scontrol: error: Job has already finished for job 659\n"
    with caplog.at_level(logging.INFO, logger="bot.cluster.slurm"):
        SlurmClient(FakeRunner({"scontrol": (1, "", ended)}), use_json=False).release(659)
    assert [r.getMessage() for r in caplog.records if r.name == "bot.cluster.slurm"] == [
        "job 659 had no hold left to release: scontrol: error: Job has already finished for "
        "job 659"]


@pytest.mark.parametrize(("stderr", "for_now"), [
    ("sbatch: error: QOSMaxSubmitJobPerUserLimit\nsbatch: error: Batch job submission failed: "
     "Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)",
     True),
    ("sbatch: error: Batch job submission failed: Job violates accounting/QOS policy (job "
     "submit limit, user's size and/or time limits)", False),
])
def test_only_a_named_submit_limit_refuses_a_job_for_now(stderr, for_now):
    """The accounting refusal's one sentence, said alone, is a size or time over a limit."""
    assert sbatch_refused_for_now(stderr) is for_now
