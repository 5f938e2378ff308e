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

if (($# == 0)); then
    # shellcheck disable=SC2119 # no prefix: squeue and scancel run on the host
    cancel_jobs
    for d in slurmd slurmd2; do
        pid=$(live_pid "$d") || continue
        enter=()
        [[ $d == slurmd2 ]] && enter=(nsenter -t "$pid" -m -u -n)
        kill_leftover_jobs "$d" "${enter[@]}"
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
