#!/usr/bin/env bash
# Stops trainbot's dev cluster. With no argument: cancels every job, kills job processes left
# behind (they outlive slurmd), then stops postgres, sshd, slurmd2 (the second node), slurmd,
# slurmctld, slurmdbd, mariadbd, munged. The second node's network namespace stays (up.sh reuses
# it).
# With arguments (e.g. `down.sh slurmctld`) stops only those daemons; `up.sh` brings them back.
# Daemons are stopped by their pid files, never by name. Idempotent.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$HERE/lib.sh"

[[ $EUID -eq 0 ]] || { echo "dev-cluster: down.sh must run as root" >&2; exit 2; }

for d in "$@"; do
    is_daemon "$d" || {
        echo "dev-cluster: unknown daemon '$d' (known: ${DAEMONS[*]})" >&2
        exit 2
    }
done

take_lock

# job_pids [NSENTER...]: pids of job processes a slurmd knows about (first column of `scontrol
# listpids`); the second node's, asked inside its namespaces (its own spool dir).
job_pids() {
    { "$@" scontrol listpids 2>/dev/null || true; } |
        awk 'NR > 1 && $1 ~ /^[0-9]+$/ && $1 > 1 {print $1}'
}

if (($# == 0)); then
    if live_pid slurmctld >/dev/null; then
        jobs=$(squeue -h -o %A 2>/dev/null | tr '\n' ' ') || jobs=""
        if [[ -n ${jobs// /} ]]; then
            # shellcheck disable=SC2086  # a list of numeric job ids
            scancel $jobs 2>/dev/null || true
            log "cancelled jobs: $jobs"
        fi
    fi
    for d in slurmd slurmd2; do
        pid=$(live_pid "$d") || continue
        enter=()
        [[ $d == slurmd2 ]] && enter=(nsenter -t "$pid" -m -u -n)
        for ((i = 0; i < 70; i++)); do # up to KillWait (5 s) + a margin
            [[ -z $(job_pids "${enter[@]}") ]] && break
            sleep 0.1
        done
        left=$(job_pids "${enter[@]}" | tr '\n' ' ')
        if [[ -n ${left// /} ]]; then
            # shellcheck disable=SC2086  # a list of numeric pids
            kill -KILL $left 2>/dev/null || true
            log "killed leftover job processes of $d: $left"
        fi
    done
    set -- postgres sshd slurmd2 slurmd slurmctld slurmdbd mariadbd munged
fi

for ((k = ${#DAEMONS[@]} - 1; k >= 0; k--)); do # always reverse start order
    d=${DAEMONS[k]}
    for want in "$@"; do
        if [[ $want == "$d" ]]; then stop_daemon "$d"; fi
    done
done
log "down: $*"
