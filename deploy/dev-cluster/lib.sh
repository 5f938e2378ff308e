# shellcheck shell=bash disable=SC2034  # variables here are used by the scripts sourcing it
# Shared by up.sh and down.sh (of both clusters: slurm-24.11/lib.sh sources it): where the dev
# cluster keeps things, how a daemon is found and stopped, and how up.sh renders a config file
# and starts a daemon. Daemons are always found through their pid file (checked against /proc),
# never by name.

DIR=${DEV_CLUSTER_DIR:-/tmp/dev-cluster}
case $DIR in
    /*) ;;
    *) echo "dev-cluster: DEV_CLUSTER_DIR must be an absolute path, got '$DIR'" >&2; exit 2 ;;
esac
if [[ $DIR == *[\"\\[:space:]]* ]]; then
    echo "dev-cluster: DEV_CLUSTER_DIR must not contain quotes, backslashes or spaces" >&2
    exit 2
fi

TAG=dev-cluster # what up.sh's errors start with
ROOT="" # the chroot the daemons run in; this cluster's run on the host (slurm-24.11/lib.sh sets one)
TEST_USER=slurmci
# A second user whose login shell is tcsh (many HPC sites' default): sshd runs every command
# through it, so the tests can prove the command transport survives csh quoting.
TCSH_USER=slurmtcsh
TCSH_SHELL=/usr/bin/tcsh
SSH_PORT=2222
CLUSTER_NAME=devcluster
PG_VERSION=15 # Debian 12's; the cluster is Debian's default "$PG_VERSION/main"
PG_PORT=5432

# The second node: a slurmd of its own in a network, UTS and mount namespace (its own address,
# host name, pid file, spool and log), in the extra partition $PAIR_PARTITION only. Its name is
# the host's short name plus $NODE2_SUFFIX (up.sh); the default partition keeps one node.
NODE2_SUFFIX=-n2
PAIR_PARTITION=pair
NETNS=trainbot-dev-n2
VETH_HOST=tbdev-n2-host # the host's end of the veth pair (interface names: <= 15 chars)
VETH_NODE=tbdev-n2-node # its end in $NETNS
NET_HOST_ADDR=10.213.7.1 # slurmctld's address for both nodes (SlurmctldHost)
NET_NODE_ADDR=10.213.7.2 # the second node's NodeAddr
NODE2_DIR=$DIR/node2 # run/ log/ spool/, bind-mounted over /run/slurm, /var/log/slurm and
# /var/lib/slurm/slurmd in the second slurmd's mount namespace

# Start order; down.sh stops them in reverse.
DAEMONS=(munged mariadbd slurmdbd slurmctld slurmd slurmd2 sshd postgres)

declare -A PIDFILE=(
    [munged]=/run/munge/munged.pid
    [mariadbd]=/run/mysqld/mysqld.pid
    [slurmdbd]=/run/slurm/slurmdbd.pid
    [slurmctld]=/run/slurm/slurmctld.pid
    [slurmd]=/run/slurm/slurmd.pid
    [slurmd2]=$NODE2_DIR/run/slurmd.pid
    [sshd]=$DIR/run/sshd.pid
    [postgres]=/run/postgresql/$PG_VERSION-main.pid
)
declare -A LOGFILE=(
    [munged]=/var/log/munge/munged.log
    [mariadbd]=/var/log/mysql/error.log
    [slurmdbd]=/var/log/slurm/slurmdbd.log
    [slurmctld]=/var/log/slurm/slurmctld.log
    [slurmd]=/var/log/slurm/slurmd.log
    [slurmd2]=$NODE2_DIR/log/slurmd.log
    [sshd]=$DIR/log/sshd.log
    [postgres]=/var/log/postgresql/postgresql-$PG_VERSION-main.log
)
# How each daemon is asked to stop (default TERM). PostgreSQL's TERM waits for every client to
# disconnect; INT is its "fast" shutdown: it ends the sessions and checkpoints.
declare -A STOP_SIGNAL=([postgres]=INT)
# The process name of a daemon whose key in DAEMONS is not its name.
declare -A COMM=([slurmd2]=slurmd)

T0=${EPOCHREALTIME/./}

log() {
    local now=${EPOCHREALTIME/./}
    printf 'dev-cluster [%5.1fs] %s\n' "$(( (now - T0) / 100000 ))e-1" "$*"
}

is_daemon() {
    local d
    for d in "${DAEMONS[@]}"; do [[ $d == "$1" ]] && return 0; done
    return 1
}

# pid_alive PID NAME: true if PID is a running (non-zombie) process called NAME. PID 1 here
# reaps orphans late, so a stopped daemon lingers as a zombie for seconds: that counts as dead.
# The name check guards against a stale pid file whose pid was reused by something else.
pid_alive() {
    local pid=$1 name=$2 comm state
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 1
    [[ $comm == "$name" ]] || return 1
    state=$(awk '/^State:/ {print $2; exit}' "/proc/$pid/status" 2>/dev/null) || return 1
    [[ -n $state && $state != Z && $state != X ]]
}

# live_pid NAME: prints the pid of daemon NAME if its pid file names a live process.
live_pid() {
    local f=${PIDFILE[$1]} pid
    [[ -r $f ]] || return 1
    read -r pid <"$f" 2>/dev/null || [[ -n ${pid:-} ]] || return 1
    pid_alive "$pid" "${COMM[$1]:-$1}" || return 1
    echo "$pid"
}

# stop_daemon NAME: its STOP_SIGNAL (TERM) by pid file, wait until gone or a zombie (SIGKILL
# after 30 s).
stop_daemon() {
    local name=$1 sig=${STOP_SIGNAL[$1]:-TERM} comm=${COMM[$1]:-$1} pid i
    if ! pid=$(live_pid "$name"); then
        log "$name: not running"
        return 0
    fi
    kill -"$sig" "$pid" 2>/dev/null || true
    for ((i = 0; i < 300; i++)); do
        pid_alive "$pid" "$comm" || { log "$name: stopped (pid $pid)"; return 0; }
        sleep 0.1
    done
    log "$name: still alive 30 s after SIG$sig, sending SIGKILL to pid $pid"
    kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
        pid_alive "$pid" "$comm" || return 0
        sleep 0.1
    done
    log "$name: pid $pid would not die"
    return 1
}

# show_log NAME: the tail of the daemon's log and of what it printed when started.
show_log() {
    local name=$1 f
    for f in "${LOGFILE[$name]}" "$DIR/log/$name.start.log"; do
        if [[ -s $f ]]; then
            echo "----- last lines of $f -----" >&2
            tail -n 25 "$f" >&2
        fi
    done
}

# detached CMD...: runs CMD (a command or a function) in a subshell with no inherited
# descriptor but stdin/out/err, so a daemon it starts holds no lock open for its whole life:
# neither $DIR/.lock nor the one a caller took (`flock /tmp/trainbot-cluster.lock up.sh`, or a
# test restarting a daemon under that lock, hands its lock fd down).
detached() {
    (
        for fd in "/proc/$BASHPID/fd/"*; do
            fd=${fd##*/}
            if ((fd > 2)); then eval "exec $fd>&-" 2>/dev/null || true; fi
        done
        "$@"
    )
}

# ---------------------------------------------------------------- for down.sh
# job_pids [PREFIX...]: pids of job processes a slurmd knows about (first column of `scontrol
# listpids`), asked as `PREFIX... scontrol` (the second node's inside its namespaces, the 24.11
# cluster's in its chroot: each slurmd's own spool dir).
job_pids() {
    { "$@" scontrol listpids 2>/dev/null || true; } |
        awk 'NR > 1 && $1 ~ /^[0-9]+$/ && $1 > 1 {print $1}'
}

# cancel_jobs [PREFIX...]: when slurmctld is up, scancel every job squeue lists (`PREFIX...
# squeue`, `PREFIX... scancel`).
cancel_jobs() {
    local jobs
    live_pid slurmctld >/dev/null || return 0
    jobs=$("$@" squeue -h -o %A 2>/dev/null | tr '\n' ' ') || jobs=""
    if [[ -n ${jobs// /} ]]; then
        # shellcheck disable=SC2086  # a list of numeric job ids
        "$@" scancel $jobs 2>/dev/null || true
        log "cancelled jobs: $jobs"
    fi
}

# kill_leftover_jobs SLURMD [PREFIX...]: waits up to KillWait (5 s) and a margin for the job
# processes daemon SLURMD knows about (job_pids PREFIX...) to end, then SIGKILLs those left:
# they outlive slurmd.
kill_leftover_jobs() {
    local name=$1 left i
    shift
    for ((i = 0; i < 70; i++)); do
        [[ -z $(job_pids "$@") ]] && break
        sleep 0.1
    done
    left=$(job_pids "$@" | tr '\n' ' ')
    if [[ -n ${left// /} ]]; then
        # shellcheck disable=SC2086  # a list of numeric pids
        kill -KILL $left 2>/dev/null || true
        log "killed leftover job processes of $name: $left"
    fi
}

# take_lock: one up.sh/down.sh at a time (tests and engineers share one cluster).
take_lock() {
    install -d -m 755 "$DIR"
    exec 9>"$DIR/.lock"
    if ! flock -w 300 9; then
        echo "dev-cluster: another up.sh/down.sh held $DIR/.lock for 300 s" >&2
        exit 1
    fi
}

# ---------------------------------------------------------------- for up.sh
CURRENT="" # the daemon being brought up; its log is shown if anything fails
declare -A RESTART=() # daemons whose config `render` changed
STARTED=0             # set by `start` when it started a daemon

# on_error LINE (up.sh's ERR trap) / die MESSAGE: say what failed, with $CURRENT's log; exit.
on_error() {
    local rc=$?
    echo "$TAG: FAILED (exit $rc) at line $1${CURRENT:+ while starting $CURRENT}" >&2
    [[ -n $CURRENT ]] && show_log "$CURRENT"
    exit "$rc"
}

die() {
    echo "$TAG: $*" >&2
    [[ -n $CURRENT ]] && show_log "$CURRENT"
    exit 1
}

# own OWNER PATH: chown (slurm-24.11/lib.sh resolves the owner inside its chroot).
own() { chown "$1" "$2"; }

# render PATH OWNER MODE DAEMON...: writes stdin to PATH if it differs; marks DAEMONs to restart.
render() {
    local path=$1 owner=$2 mode=$3 tmp
    shift 3
    tmp=$(mktemp "$path.XXXXXX")
    cat >"$tmp"
    own "$owner" "$tmp"
    chmod "$mode" "$tmp"
    if [[ -f $path ]] && cmp -s "$tmp" "$path"; then
        rm -f "$tmp"
        own "$owner" "$path"
        chmod "$mode" "$path"
        return 0
    fi
    mv -f "$tmp" "$path"
    local d
    for d in "$@"; do RESTART[$d]=1; done
}

# slurm_conf_shared CTLD_PORT SLURMD_PORT DBD_PORT: the slurm.conf lines both clusters share,
# between their ClusterName and SlurmctldHost and their nodes and partitions: munge auth with the
# short credential life a requeue test waits out, the state, pid and log files (as the daemons
# see them: the 24.11 cluster's inside its chroot), cgroup-free accounting that kills a job over
# its --mem, the scheduler's short intervals and the timers the tests rely on (MinJobAge=300).
slurm_conf_shared() {
    cat <<EOF
SlurmUser=slurm
SlurmctldPort=$1
SlurmdPort=$2
AuthType=auth/munge
AuthInfo=cred_expire=10
CredType=cred/munge
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmdSpoolDir=/var/lib/slurm/slurmd
SlurmctldPidFile=${PIDFILE[slurmctld]#"$ROOT"}
SlurmdPidFile=${PIDFILE[slurmd]#"$ROOT"}
SlurmctldLogFile=${LOGFILE[slurmctld]#"$ROOT"}
SlurmdLogFile=${LOGFILE[slurmd]#"$ROOT"}
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=task=1
JobAcctGatherParams=OverMemoryKill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=256
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2,bf_interval=2
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$3
JobCompType=jobcomp/none
ReturnToService=2
SlurmdParameters=config_overrides
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=300
KillWait=5
OverTimeLimit=0
Waittime=0
EOF
}

# sshd_config_shared: the sshd_config lines both clusters' sshd share after their own port,
# host key, pid file and users: key-only logins, no forwarding, no PAM, room for the tests'
# parallel sessions.
sshd_config_shared() {
    cat <<'EOF'
PermitRootLogin no
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
HostbasedAuthentication no
UsePAM no
StrictModes no
Subsystem sftp internal-sftp
X11Forwarding no
AllowTcpForwarding no
AllowAgentForwarding no
PrintMotd no
UseDNS no
MaxStartups 100:30:200
MaxSessions 64
EOF
}

# slurm_accounts [PREFIX...]: waits for slurmdbd, then makes sure it knows the cluster
# $CLUSTER_NAME, the account team-b and $TEST_USER's associations with root (its default) and
# team-b; sacctmgr runs as `PREFIX... sacctmgr` (the 24.11 cluster's: `in_root`). A step that
# fails returns its status: a function does not inherit up.sh's ERR trap (no errtrace), which
# then reports the failure at the call, with $CURRENT's log.
slurm_accounts() {
    local assocs
    wait_for "slurmdbd answering sacctmgr" 30 "$@" sacctmgr -n list cluster
    if ! "$@" sacctmgr -n -P list cluster format=cluster | grep -qx "$CLUSTER_NAME"; then
        "$@" sacctmgr -i add cluster "$CLUSTER_NAME" >/dev/null || return
        log "slurmdbd: registered cluster $CLUSTER_NAME"
    fi
    if ! "$@" sacctmgr -n -P list account format=account | grep -qx team-b; then
        "$@" sacctmgr -i add account team-b description="second account for tests" \
            organization=dev >/dev/null || return
        log "slurmdbd: added account team-b"
    fi
    assocs=$("$@" sacctmgr -n -P list assoc where user="$TEST_USER" cluster="$CLUSTER_NAME" \
        format=account) || return
    if ! grep -qx root <<<"$assocs"; then
        "$@" sacctmgr -i add user "$TEST_USER" account=root defaultaccount=root >/dev/null ||
            return
        log "slurmdbd: added $TEST_USER to account root"
    fi
    if ! grep -qx team-b <<<"$assocs"; then
        "$@" sacctmgr -i add user "$TEST_USER" account=team-b >/dev/null || return
        log "slurmdbd: added $TEST_USER to account team-b"
    fi
}

# wait_for NAME SECONDS CMD...: polls CMD every 0.1 s.
wait_for() {
    local what=$1 secs=$2 i
    shift 2
    for ((i = 0; i < secs * 10; i++)); do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    die "$what: not ready after $secs s"
}

# start NAME CMD...: runs CMD unless NAME is live (restarting it if its config changed), then
# waits for the pid file (daemons write it a moment after forking). Returns 1 if already up.
start() {
    local name=$1
    shift
    CURRENT=$name
    if live_pid "$name" >/dev/null; then
        if [[ -z ${RESTART[$name]:-} ]]; then
            return 1
        fi
        log "$name: config changed, restarting"
        stop_daemon "$name"
    fi
    detached "$@" </dev/null >"$DIR/log/$name.start.log" 2>&1 ||
        die "$name: '$*' exited $?"
    wait_for "$name pid file ${PIDFILE[$name]}" 20 live_pid "$name"
    log "$name: started (pid $(live_pid "$name"))"
    STARTED=1
}
