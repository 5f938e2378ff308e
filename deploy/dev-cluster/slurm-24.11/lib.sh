# shellcheck shell=bash disable=SC2034  # variables here are used by the scripts sourcing it
# Shared by up.sh and down.sh of the second dev cluster: Slurm 24.11 from Debian 13 (trixie) in
# a chroot, on ports of its own, beside the Debian 12 (22.05) one. Its state dir is
# $DEV_CLUSTER_2411_DIR (never $DEV_CLUSTER_DIR, which names the 22.05 cluster's).

DEV_CLUSTER_DIR=${DEV_CLUSTER_2411_DIR:-/tmp/dev-cluster-2411}
# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

TAG=dev-cluster-2411
ROOT=$DIR/root # the trixie chroot
SUITE=trixie
MIRROR=${DEV_CLUSTER_2411_MIRROR:-http://deb.debian.org/debian}
SSH_PORT=2223
CTLD_PORT=6827
SLURMD_PORT=6828
DBD_PORT=6829
CLUSTER_NAME=dev2411
NODE_NAME=dev2411node
TCSH_USER="" # only the 22.05 cluster has the tcsh user
DB_NAME=slurm_acct_db_2411
DB_USER=slurm2411

# Start order; down.sh stops them in reverse. The host's MariaDB (the 22.05 cluster's) serves
# this cluster's slurmdbd too, with a database and a user of its own.
DAEMONS=(munged slurmdbd slurmctld slurmd sshd)
declare -A PIDFILE=(
    [munged]=$ROOT/run/munge/munged.pid
    [slurmdbd]=$ROOT/run/slurm/slurmdbd.pid
    [slurmctld]=$ROOT/run/slurm/slurmctld.pid
    [slurmd]=$ROOT/run/slurm/slurmd.pid
    [sshd]=$ROOT/run/sshd-trainbot.pid
)
declare -A LOGFILE=(
    [munged]=$ROOT/var/log/munge/munged.log
    [slurmdbd]=$ROOT/var/log/slurm/slurmdbd.log
    [slurmctld]=$ROOT/var/log/slurm/slurmctld.log
    [slurmd]=$ROOT/var/log/slurm/slurmd.log
    [sshd]=$DIR/log/sshd.log
)
declare -A STOP_SIGNAL=()
declare -A COMM=()

# The chroot's mounts, in mount order: /proc, /dev and /sys for the daemons, and the host's
# MariaDB socket directory for slurmdbd.
MOUNTS=(proc dev sys run/mysqld)

in_root() { chroot "$ROOT" "$@"; }
# A file in the chroot is chowned by the chroot's users (slurm, munge); any other by the host's.
own() { in_root chown "$1" "${2#"$ROOT"}" 2>/dev/null || chown "$1" "$2"; }
