#!/usr/bin/env bash
# Brings up trainbot's dev cluster on this machine (Debian 12, as root, no systemd needed):
# munge, MariaDB + slurmdbd, slurmctld + one slurmd (cgroup-free) in the default partition and
# a second one in its own network/UTS/mount namespace (partition `pair` only), an sshd on
# 127.0.0.1:2222 with key-only auth for the unprivileged users slurmci (login shell bash) and
# slurmtcsh (login shell tcsh), and a PostgreSQL on
# 127.0.0.1:5432 for the store's tests (role and database `trainbot`). Installs the Debian
# packages if missing. Writes $DEV_CLUSTER_DIR/connection.json (default /tmp/dev-cluster).
# Idempotent: re-running starts only the daemons that are not running (or whose config changed).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$HERE/lib.sh"

# python3-psutil: for `python -m bot.probes.sampler` inside jobs (slurmci cannot run the root-owned venv).
# tcsh csh zsh: login shells the command transport is tested under (tests/integration/test_shells.py).
# iproute2: the second node's network namespace and veth pair.
PACKAGES=(munge slurmctld slurmd slurm-client slurmdbd mariadb-server openssh-server
    openssh-client shellcheck gcc python3-psutil postgresql tcsh csh zsh iproute2)
DB_PASS=slurmdevpw
PG_PASS=trainbotdevpw
SMOKE_TIMEOUT=${DEV_CLUSTER_SMOKE_TIMEOUT:-180}

[[ $EUID -eq 0 ]] || { echo "dev-cluster: up.sh must run as root" >&2; exit 2; }

trap 'on_error $LINENO' ERR

take_lock
install -d -m 755 "$DIR/ssh" "$DIR/run" "$DIR/log"

# ---------------------------------------------------------------- packages
missing=()
for p in "${PACKAGES[@]}"; do
    [[ $(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null) == installed ]] || missing+=("$p")
done
if ((${#missing[@]})); then
    log "installing ${missing[*]}"
    guard_created=0
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
        # Keep package scripts from starting sshd on :22, MariaDB, PostgreSQL and munge
        # through init.d.
        printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
        chmod 755 /usr/sbin/policy-rc.d
        guard_created=1
    fi
    apt_log=$DIR/log/apt.log
    export DEBIAN_FRONTEND=noninteractive
    if ! { apt-get update -q && apt-get install -y -q --no-install-recommends "${missing[@]}"; } \
        >"$apt_log" 2>&1; then
        ((guard_created)) && rm -f /usr/sbin/policy-rc.d
        echo "----- last lines of $apt_log -----" >&2
        tail -n 30 "$apt_log" >&2
        die "package install failed"
    fi
    ((guard_created)) && rm -f /usr/sbin/policy-rc.d
    log "packages installed"
fi

NODE=$(hostname -s)
NODE2=$NODE$NODE2_SUFFIX
mem_mib=$(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo)
REAL_MEM=$((mem_mib * 9 / 10)) # what slurmd sees is slightly below MemTotal; never above it
REAL_MEM2=$((REAL_MEM / 4))     # the second node: a smaller share of the same memory

# ---------------------------------------------------------------- the second node's network
# A network namespace joined to the host by a veth pair: the node at $NET_NODE_ADDR, the host
# (slurmctld, for both nodes) at $NET_HOST_ADDR. Idempotent: a missing piece is (re)made.
[[ -e /run/netns/$NETNS ]] || ip netns add "$NETNS"
if ! ip link show "$VETH_HOST" >/dev/null 2>&1; then
    ip -n "$NETNS" link delete "$VETH_NODE" >/dev/null 2>&1 || true
    ip link add "$VETH_HOST" type veth peer name "$VETH_NODE" netns "$NETNS"
    log "network: veth $VETH_HOST <-> $NETNS/$VETH_NODE"
fi
ip addr replace "$NET_HOST_ADDR/30" dev "$VETH_HOST"
ip link set "$VETH_HOST" up
ip -n "$NETNS" addr replace "$NET_NODE_ADDR/30" dev "$VETH_NODE"
ip -n "$NETNS" link set "$VETH_NODE" up
ip -n "$NETNS" link set lo up

# ---------------------------------------------------------------- config files
install -d -m 755 /etc/slurm
install -d -o slurm -g slurm -m 755 /run/slurm /var/log/slurm /var/lib/slurm \
    /var/lib/slurm/slurmctld
install -d -m 755 /var/lib/slurm/slurmd

render /etc/slurm/slurm.conf root:root 644 slurmctld slurmd slurmd2 <<EOF
# Rendered by trainbot deploy/dev-cluster/up.sh; edits are overwritten.
ClusterName=$CLUSTER_NAME
SlurmctldHost=$NODE($NET_HOST_ADDR)
$(slurm_conf_shared 6817 6818 6819)
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=4 Sockets=1 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=$REAL_MEM State=UNKNOWN
NodeName=$NODE2 NodeHostname=$NODE2 NodeAddr=$NET_NODE_ADDR CPUs=4 Sockets=1 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=$REAL_MEM2 State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
PartitionName=$PAIR_PARTITION Nodes=$NODE,$NODE2 MaxTime=INFINITE State=UP
EOF

render /etc/slurm/slurmdbd.conf slurm:slurm 600 slurmdbd <<EOF
# Rendered by trainbot deploy/dev-cluster/up.sh; edits are overwritten.
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=6819
SlurmUser=slurm
LogFile=${LOGFILE[slurmdbd]}
PidFile=${PIDFILE[slurmdbd]}
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StoragePass=$DB_PASS
StorageLoc=slurm_acct_db
EOF

render /etc/mysql/mariadb.conf.d/99-slurm-dev.cnf root:root 644 mariadbd <<EOF
# Rendered by trainbot deploy/dev-cluster/up.sh: socket only, sized for slurmdbd.
[mysqld]
skip-networking
innodb_buffer_pool_size=256M
innodb_lock_wait_timeout=900
EOF

# Debian's postgresql package creates the cluster $PG_VERSION/main (up.sh creates it if gone).
[[ -f /etc/postgresql/$PG_VERSION/main/postgresql.conf ]] ||
    pg_createcluster "$PG_VERSION" main >"$DIR/log/postgres.create.log" 2>&1
render "/etc/postgresql/$PG_VERSION/main/conf.d/99-trainbot-dev.conf" postgres:postgres 644 \
    postgres <<EOF
# Rendered by trainbot deploy/dev-cluster/up.sh: loopback only, for the store's tests.
listen_addresses = '127.0.0.1'
port = $PG_PORT
ssl = off
# A test database is thrown away after the test: no need to wait for each commit's flush.
synchronous_commit = off
EOF

# ---------------------------------------------------------------- keys and sshd config
ssh_dir=$DIR/ssh
[[ -s $ssh_dir/ssh_host_ed25519_key ]] ||
    ssh-keygen -q -t ed25519 -N '' -C "dev-cluster-host" -f "$ssh_dir/ssh_host_ed25519_key"
[[ -s $ssh_dir/id_ed25519 ]] ||
    ssh-keygen -q -t ed25519 -N '' -C "dev-cluster-client" -f "$ssh_dir/id_ed25519"
# The tcsh user has a key of its own: each key opens exactly one account.
tcsh_key=$ssh_dir/id_ed25519_$TCSH_USER
[[ -s $tcsh_key ]] ||
    ssh-keygen -q -t ed25519 -N '' -C "dev-cluster-client-$TCSH_USER" -f "$tcsh_key"
chown root:root "$ssh_dir/ssh_host_ed25519_key" "$ssh_dir/id_ed25519" "$tcsh_key"
chmod 600 "$ssh_dir/ssh_host_ed25519_key" "$ssh_dir/id_ed25519" "$tcsh_key" # tests run as root
render "$ssh_dir/authorized_keys" root:root 644 <"$ssh_dir/id_ed25519.pub"
render "$ssh_dir/authorized_keys.$TCSH_USER" root:root 644 <"$tcsh_key.pub"
render "$ssh_dir/known_hosts" root:root 644 <<EOF
[127.0.0.1]:$SSH_PORT $(cut -d' ' -f1,2 "$ssh_dir/ssh_host_ed25519_key.pub")
EOF
render "$ssh_dir/sshd_config" root:root 644 sshd <<EOF
# Rendered by trainbot deploy/dev-cluster/up.sh: key-only auth for $TEST_USER and $TCSH_USER
# on loopback, each with its own authorized key.
Port $SSH_PORT
ListenAddress 127.0.0.1
HostKey $ssh_dir/ssh_host_ed25519_key
PidFile ${PIDFILE[sshd]}
AuthorizedKeysFile $ssh_dir/authorized_keys
AllowUsers $TEST_USER $TCSH_USER
$(sshd_config_shared)
Match User $TCSH_USER
    AuthorizedKeysFile $ssh_dir/authorized_keys.$TCSH_USER
EOF

# ---------------------------------------------------------------- test users
# ensure_user NAME SHELL: the account exists, with that login shell, unlocked for key auth.
ensure_user() {
    local name=$1 shell=$2
    if ! id -u "$name" >/dev/null 2>&1; then
        useradd -m -s "$shell" "$name"
        log "created user $name (login shell $shell)"
    fi
    # A test may switch the login shell for a while (tests/integration/test_shells.py).
    [[ $(getent passwd "$name" | cut -d: -f7) == "$shell" ]] || usermod -s "$shell" "$name"
    # useradd leaves '!' (locked): with UsePAM no, sshd then refuses even key auth.
    [[ $(getent shadow "$name" | cut -d: -f2) == '*' ]] || usermod -p '*' "$name"
}
ensure_user "$TEST_USER" /bin/bash
ensure_user "$TCSH_USER" "$TCSH_SHELL"
TEST_HOME=$(getent passwd "$TEST_USER" | cut -d: -f6)
TCSH_HOME=$(getent passwd "$TCSH_USER" | cut -d: -f6)

# ---------------------------------------------------------------- daemons
start_mariadbd() {
    install -d -o mysql -g mysql -m 755 /run/mysqld
    install -d -o mysql -g adm -m 2750 /var/log/mysql
    if [[ ! -d /var/lib/mysql/mysql ]]; then
        mariadb-install-db --user=mysql --datadir=/var/lib/mysql >>"$DIR/log/mariadbd.start.log" 2>&1
    fi
    setsid /usr/sbin/mariadbd --user=mysql --pid-file="${PIDFILE[mariadbd]}" \
        --log-error="${LOGFILE[mariadbd]}" </dev/null >/dev/null 2>&1 &
}

# munge
if [[ ! -s /etc/munge/munge.key ]]; then
    mungekey --create --keyfile=/etc/munge/munge.key
    chown munge:munge /etc/munge/munge.key
    chmod 400 /etc/munge/munge.key
fi
install -d -o munge -g munge -m 755 /run/munge
if start munged runuser -u munge -- /usr/sbin/munged --force; then
    wait_for "munge credential round trip" 10 sh -c 'munge -n | unmunge'
fi

# MariaDB, then the slurm database user
if start mariadbd start_mariadbd; then
    wait_for "mariadbd socket" 30 mariadb-admin ping
fi
CURRENT=mariadbd
if ! mariadb -N -e "SELECT 1 FROM mysql.user WHERE user='slurm' AND host='localhost'" |
    grep -q 1; then
    mariadb -e "CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
                GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';"
    log "mariadbd: created database user slurm"
fi

# slurmdbd, then the cluster, accounts and the test user's associations
start slurmdbd /usr/sbin/slurmdbd || true
CURRENT=slurmdbd
# shellcheck disable=SC2119 # no prefix: sacctmgr runs on the host
slurm_accounts
if ! sacctmgr -n -P list assoc where user="$TCSH_USER" cluster="$CLUSTER_NAME" format=account |
    grep -qx root; then
    sacctmgr -i add user "$TCSH_USER" account=root defaultaccount=root >/dev/null
    log "slurmdbd: added $TCSH_USER to account root"
fi

# controller and node
start slurmctld /usr/sbin/slurmctld || true
CURRENT=slurmctld
wait_for "slurmctld answering" 30 scontrol ping
start slurmd /usr/sbin/slurmd -N "$NODE" || true
# The second node: the same slurmd binary and slurm.conf, in the namespace made above, with its
# own host name and, bind-mounted over the paths slurm.conf names, its own pid file, spool
# and log; the filesystem and the munge socket are the host's.
start_slurmd2() {
    install -d -m 755 "$NODE2_DIR/run" "$NODE2_DIR/log" "$NODE2_DIR/spool"
    # nsenter, not `ip netns exec`: that mounts a sysfs of the namespace over /sys, hiding
    # /sys/fs/cgroup, and slurmd will not start without its cgroup plugin.
    # shellcheck disable=SC2016 # expanded by the inner sh
    nsenter --net="/run/netns/$NETNS" unshare --uts --mount --propagation private sh -euc '
        hostname "$1"
        mount --bind "$2/run" /run/slurm
        mount --bind "$2/spool" /var/lib/slurm/slurmd
        mount --bind "$2/log" /var/log/slurm
        exec /usr/sbin/slurmd -N "$1"' sh "$NODE2" "$NODE2_DIR"
}
start slurmd2 start_slurmd2 || true
CURRENT=slurmd
# node_ready NODE: the node answers (idle or busy); a down/drained one is resumed. (sinfo -N
# prints a node once per partition: the first node is in two.)
node_ready() {
    local state
    state=$(sinfo -h -N -n "$1" -o %T 2>/dev/null | head -n 1) || return 1
    case $state in
        idle | mixed | allocated | completing) return 0 ;;
        drain* | down*) scontrol update nodename="$1" state=resume >/dev/null 2>&1 || true ;;
    esac
    return 1
}
wait_for "node $NODE idle" 30 node_ready "$NODE"
CURRENT=slurmd2
wait_for "node $NODE2 idle" 30 node_ready "$NODE2"

# sshd
CURRENT=sshd
install -d -m 755 /run/sshd
/usr/sbin/sshd -t -f "$ssh_dir/sshd_config" || die "sshd: $ssh_dir/sshd_config is invalid"
if ! live_pid sshd >/dev/null && (exec 3<>"/dev/tcp/127.0.0.1/$SSH_PORT") 2>/dev/null; then
    die "sshd: 127.0.0.1:$SSH_PORT is already taken by a process that is not our sshd" \
        "(pid file ${PIDFILE[sshd]}); free the port or stop that process"
fi
start sshd /usr/sbin/sshd -f "$ssh_dir/sshd_config" -E "${LOGFILE[sshd]}" || true

# PostgreSQL, then the tests' role (it may create databases: one per test) and its database
install -d -o postgres -g postgres -m 2775 /run/postgresql
start postgres pg_ctlcluster "$PG_VERSION" main start || true
CURRENT=postgres
psql_admin() { runuser -u postgres -- psql -X -q -t -A -v ON_ERROR_STOP=1 -p "$PG_PORT" "$@"; }
wait_for "postgres accepting connections" 30 pg_isready -q -h 127.0.0.1 -p "$PG_PORT"
if [[ $(psql_admin -c "SELECT 1 FROM pg_roles WHERE rolname = 'trainbot'") != 1 ]]; then
    psql_admin -c "CREATE ROLE trainbot LOGIN CREATEDB PASSWORD '$PG_PASS'"
    log "postgres: created role trainbot"
fi
# a test's database is dropped WITH (FORCE): that ends an autovacuum worker in it too, which
# only a member of pg_signal_backend may do (idempotent)
psql_admin -c "GRANT pg_signal_backend TO trainbot" 2>/dev/null
if [[ $(psql_admin -c "SELECT 1 FROM pg_database WHERE datname = 'trainbot'") != 1 ]]; then
    psql_admin -c "CREATE DATABASE trainbot OWNER trainbot"
    log "postgres: created database trainbot"
fi
log "all daemons up (node $NODE, RealMemory=${REAL_MEM}M, CPUs=4; node $NODE2 in partition" \
    "$PAIR_PARTITION at $NET_NODE_ADDR, RealMemory=${REAL_MEM2}M)"

# ---------------------------------------------------------------- connection settings
render "$DIR/connection.json" root:root 644 <<EOF
{
  "host": "127.0.0.1",
  "port": $SSH_PORT,
  "user": "$TEST_USER",
  "key_file": "$ssh_dir/id_ed25519",
  "known_hosts": "$ssh_dir/known_hosts",
  "partition": "debug",
  "node": "$NODE",
  "pair_partition": "$PAIR_PARTITION",
  "second_node": "$NODE2",
  "cluster_name": "$CLUSTER_NAME",
  "home": "$TEST_HOME",
  "state_dir": "$DIR",
  "accounts": ["root", "team-b"],
  "tcsh_user": {
    "user": "$TCSH_USER",
    "key_file": "$tcsh_key",
    "known_hosts": "$ssh_dir/known_hosts",
    "home": "$TCSH_HOME",
    "shell": "$TCSH_SHELL"
  },
  "postgres_url": "postgresql+psycopg://trainbot:$PG_PASS@127.0.0.1:$PG_PORT/trainbot"
}
EOF

# ---------------------------------------------------------------- smoke test through sshd
CURRENT=sshd
ssh_cmd=(ssh -F /dev/null -p "$SSH_PORT" -i "$ssh_dir/id_ed25519" -o IdentitiesOnly=yes
    -o BatchMode=yes -o StrictHostKeyChecking=yes -o "UserKnownHostsFile=$ssh_dir/known_hosts"
    -o GlobalKnownHostsFile=/dev/null -o ConnectTimeout=10 "$TEST_USER@127.0.0.1")
if ((STARTED)) || ((${#RESTART[@]})); then
    # Something was (re)started: prove the whole path with a real job.
    if ! out=$(timeout "$SMOKE_TIMEOUT" "${ssh_cmd[@]}" \
        "sbatch --wait --parsable -J dev-cluster-smoke -t 1 -c 1 --mem=32M -o /dev/null \
        --wrap 'test \$(id -un) = $TEST_USER'" 2>&1); then
        echo "$out" >&2
        squeue >&2 || true
        die "smoke job through ssh failed (or waited more than $SMOKE_TIMEOUT s for a slot)"
    fi
    log "smoke job $out ran as $TEST_USER through ssh"
    CURRENT=slurmd2
    if ! out=$(timeout "$SMOKE_TIMEOUT" "${ssh_cmd[@]}" \
        "sbatch --wait --parsable -J dev-cluster-smoke-n2 -p $PAIR_PARTITION -w $NODE2 -t 1 \
        -c 1 --mem=32M -o /dev/null --wrap 'test \$(hostname) = $NODE2'" 2>&1); then
        echo "$out" >&2
        squeue >&2 || true
        die "smoke job on $NODE2 (partition $PAIR_PARTITION) failed"
    fi
    log "smoke job $out ran on $NODE2 (host name $NODE2)"
else
    out=$("${ssh_cmd[@]}" "squeue -h -o %i | wc -l" 2>&1) || {
        echo "$out" >&2
        die "ssh $TEST_USER@127.0.0.1 squeue failed"
    }
    log "already up; ssh + squeue ok ($((out)) jobs in the queue)"
fi
# The tcsh user: logs in with its own key, and its commands really run through tcsh.
tcsh_ssh=(ssh -F /dev/null -p "$SSH_PORT" -i "$tcsh_key" -o IdentitiesOnly=yes
    -o BatchMode=yes -o StrictHostKeyChecking=yes -o "UserKnownHostsFile=$ssh_dir/known_hosts"
    -o GlobalKnownHostsFile=/dev/null -o ConnectTimeout=10 "$TCSH_USER@127.0.0.1")
# shellcheck disable=SC2016 # $0 is for the remote login shell
if ! out=$("${tcsh_ssh[@]}" 'echo $0' 2>&1) || [[ $out != *tcsh ]]; then
    echo "$out" >&2
    die "ssh $TCSH_USER@127.0.0.1 did not run its command through tcsh"
fi
log "ssh as $TCSH_USER ok (login shell $out)"
log "ready: $DIR/connection.json"
