"""A lease holder is provably dead only to a process on its own host, boot and pid namespace
that finds its pid gone, reused or exited (bot.core.holders); anything else keeps the TTL."""

from __future__ import annotations

import pytest

from bot.core.holders import (
    Death,
    Holder,
    Machine,
    ProcStat,
    format_holder,
    holder_death,
    parse_holder,
    parse_proc_stat,
    pid_to_look_at,
)

BOOT = "1d1a866c-5458-4c1e-82e8-8b3d99d5a26e"
HERE = Machine("vm", BOOT, "4026531836")
OLD = format_holder("vm", 4242, "96e72bf3", HERE, 29026)  # the killed replica
RUNNING = ProcStat("S", 29026)  # what /proc shows of it while it lives


def test_a_holder_id_records_host_pid_random_boot_namespace_and_start() -> None:
    assert OLD == f"vm:4242:96e72bf3:{BOOT}:4026531836:29026"
    assert parse_holder(OLD) == Holder(HERE, 4242, "96e72bf3", 29026)


def test_a_holder_whose_pid_no_process_has_is_dead() -> None:
    assert pid_to_look_at(OLD, HERE) == 4242
    assert holder_death(OLD, HERE, "gone") is Death.GONE


def test_a_recycled_pid_of_a_process_started_at_another_time_is_not_the_holder() -> None:
    assert holder_death(OLD, HERE, ProcStat("S", 31877)) is Death.REUSED
    assert holder_death(OLD, HERE, ProcStat("Z", 31877)) is Death.REUSED


def test_the_holder_exited_and_not_yet_reaped_is_dead() -> None:
    assert holder_death(OLD, HERE, ProcStat("Z", 29026)) is Death.EXITED
    assert holder_death(OLD, HERE, ProcStat("X", 29026)) is Death.EXITED


@pytest.mark.parametrize("state", ["R", "S", "D", "T", "t", "I"])
def test_the_holder_still_running_is_alive(state: str) -> None:
    assert holder_death(OLD, HERE, ProcStat(state, 29026)) is None


@pytest.mark.parametrize("here", [
    Machine("other-host", BOOT, "4026531836"),  # another host: its pids are not ours
    Machine("vm", "0c5e9d2a-95a1-4a55-9a77-3d0b0b1f2e11", "4026531836"),  # rebooted since
    Machine("vm", BOOT, "4026532999"),  # another container's pid namespace, same hostname
])
def test_a_holder_of_another_host_boot_or_pid_namespace_cannot_be_judged(
        here: Machine) -> None:
    assert pid_to_look_at(OLD, here) is None
    for found in ("gone", ProcStat("S", 1), ProcStat("Z", 29026)):
        assert holder_death(OLD, here, found) is None


@pytest.mark.parametrize("holder", [
    "vm:4242:96e72bf3",  # made before this change: host, pid, random
    "A", "", "replica-b",  # names given in tests and tools
    f"vm:4242:96e72bf3:{BOOT}:4026531836",  # a fact short
    f"vm:4242:96e72bf3:{BOOT}:4026531836:29026:extra",
    f"vm:-:96e72bf3:{BOOT}:4026531836:29026",
    f"vm:0:96e72bf3:{BOOT}:4026531836:29026",  # pid 0 would signal our own group
    f"vm:-12:96e72bf3:{BOOT}:4026531836:29026",
    f"vm:4242:96e72bf3:{BOOT}:4026531836:soon",
    f":4242:96e72bf3:{BOOT}:4026531836:29026",
    "vm:4242:96e72bf3:-:-:-",  # this process's facts could not be read
    f"vm:4242:96e72bf3:{BOOT}:4026531836:-",
])
def test_an_old_malformed_or_unreadable_holder_id_keeps_the_ttl(holder: str) -> None:
    assert parse_holder(holder) is None
    assert pid_to_look_at(holder, HERE) is None
    assert holder_death(holder, HERE, "gone") is None


def test_nothing_is_judged_when_this_machine_or_the_pid_could_not_be_read() -> None:
    assert pid_to_look_at(OLD, None) is None
    assert holder_death(OLD, None, "gone") is None
    assert holder_death(OLD, HERE, "unknown") is None  # hidepid, permissions
    assert holder_death(OLD, HERE, None) is None  # not looked at


def test_a_process_whose_facts_could_not_be_read_gets_an_id_never_judged() -> None:
    unreadable = format_holder("vm", 4242, "96e72bf3", None, None)
    assert unreadable == "vm:4242:96e72bf3:-:-:-"
    assert holder_death(unreadable, HERE, "gone") is None
    assert holder_death(format_holder("vm", 4242, "96e72bf3", HERE, None), HERE, "gone") is None


def test_proc_stat_gives_the_state_and_start_time_past_any_command_name() -> None:
    rest = " ".join(str(n) for n in range(4, 22))  # fields 4..21
    assert parse_proc_stat(f"4242 (python3) S {rest} 29026 1 2 3\n") == ProcStat("S", 29026)
    # a command name with spaces and parentheses
    assert parse_proc_stat(f"4242 (a) b (c) Z {rest} 777 1") == ProcStat("Z", 777)
    assert parse_proc_stat("4242 (python3) S 1 2 3") is None
    assert parse_proc_stat("") is None
    assert parse_proc_stat(f"4242 (python3) S {rest} later 1") is None
