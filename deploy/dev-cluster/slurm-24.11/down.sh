#!/usr/bin/env bash
# Stops trainbot's second dev cluster (Slurm 24.11 in the trixie chroot). With no argument:
# cancels every job, kills job processes left behind, stops sshd, slurmd, slurmctld, slurmdbd
# and munged, and unmounts the chroot's mounts. With daemon names stops only those (up.sh brings
# them back). `--purge` also deletes the chroot, so the next up.sh builds it from scratch.
# Daemons are stopped by their pid files, never by name. Idempotent. Never touches the 22.05
# cluster (its daemons, ports, munge or state dir), nor the host's MariaDB beyond this
# cluster's own database on --purge.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$HERE/lib.sh"

[[ $EUID -eq 0 ]] || { echo "dev-cluster-2411: down.sh must run as root" >&2; exit 2; }

purge=0
names=()
for a in "$@"; do
    if [[ $a == --purge ]]; then
        purge=1
    elif is_daemon "$a"; then
        names+=("$a")
    else
        echo "dev-cluster-2411: unknown daemon '$a' (known: ${DAEMONS[*]}; or --purge)" >&2
        exit 2
    fi
done

take_lock

if ((${#names[@]} == 0)); then
    cancel_jobs in_root
    if live_pid slurmd >/dev/null; then
        kill_leftover_jobs slurmd in_root
    fi
    names=("${DAEMONS[@]}")
fi

for ((k = ${#DAEMONS[@]} - 1; k >= 0; k--)); do
    d=${DAEMONS[k]}
    for want in "${names[@]}"; do
        if [[ $want == "$d" ]]; then stop_daemon "$d"; fi
    done
done

if ((${#names[@]} == ${#DAEMONS[@]})); then
    for ((k = ${#MOUNTS[@]} - 1; k >= 0; k--)); do
        m=$ROOT/${MOUNTS[k]}
        if mountpoint -q "$m"; then
            umount "$m" || umount -l "$m"
            log "unmounted $m"
        fi
    done
fi

if ((purge)); then
    for m in "${MOUNTS[@]}"; do
        if mountpoint -q "$ROOT/$m"; then
            echo "dev-cluster-2411: $ROOT/$m is still mounted; not deleting the chroot" >&2
            exit 1
        fi
    done
    # --one-file-system: never descend into a mount, whatever happened above.
    rm -rf --one-file-system "$ROOT" "$ROOT.partial" "$DIR/connection.json"
    if [[ -S /run/mysqld/mysqld.sock ]]; then
        mariadb -e "DROP DATABASE IF EXISTS $DB_NAME" || true
    fi
    log "purged the chroot $ROOT and the database $DB_NAME"
fi
log "down: ${names[*]}${purge:+ }$( ((purge)) && echo '(purged)')"
