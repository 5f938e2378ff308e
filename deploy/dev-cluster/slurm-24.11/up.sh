#!/usr/bin/env bash
# Brings up trainbot's second dev cluster: Slurm 24.11 (Debian 13 trixie's slurm-wlm) in a
# chroot under $DEV_CLUSTER_2411_DIR/root (default /tmp/dev-cluster-2411), beside the 22.05
# cluster of ../up.sh and clashing with none of it: its own munge key and socket (inside the
# chroot), state dirs, ports (slurmctld 6827, slurmd 6828, slurmdbd 6829, sshd
# 127.0.0.1:2223), node name and cluster name. slurmdbd stores into the host's MariaDB (run
# ../up.sh first) with a database and a user of its own. Writes $DIR/connection.json.
# Idempotent: the first run builds the chroot (debootstrap, ~1 min); later runs start only the
# daemons that are not running (or whose config changed).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$HERE/lib.sh"

PACKAGES=(munge slurmctld slurmd slurm-client slurmdbd openssh-server python3 procps)
DB_PASS=slurm2411devpw
SMOKE_TIMEOUT=${DEV_CLUSTER_SMOKE_TIMEOUT:-180}

[[ $EUID -eq 0 ]] || { echo "dev-cluster-2411: up.sh must run as root" >&2; exit 2; }

trap 'on_error $LINENO' ERR

take_lock
install -d -m 755 "$DIR/ssh" "$DIR/log"

# ---------------------------------------------------------------- the chroot
if ! command -v debootstrap >/dev/null; then
    log "installing debootstrap on the host"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap \
        >"$DIR/log/apt-host.log" 2>&1 || {
        tail -n 20 "$DIR/log/apt-host.log" >&2
        die "apt-get install debootstrap failed"
    }
fi
if [[ ! -x $ROOT/usr/bin/apt-get ]]; then
    log "debootstrap $SUITE into $ROOT (~30 s)"
    rm -rf --one-file-system "$ROOT.partial"
    debootstrap --variant=minbase "$SUITE" "$ROOT.partial" "$MIRROR" \
        >"$DIR/log/debootstrap.log" 2>&1 || {
        tail -n 20 "$DIR/log/debootstrap.log" >&2
        die "debootstrap failed (mirror $MIRROR; set DEV_CLUSTER_2411_MIRROR for another)"
    }
    mv "$ROOT.partial" "$ROOT"
fi
# Package scripts inside the chroot start no daemon, ever: this script starts them.
printf '#!/bin/sh\nexit 101\n' >"$ROOT/usr/sbin/policy-rc.d"
chmod 755 "$ROOT/usr/sbin/policy-rc.d"

[[ -S /run/mysqld/mysqld.sock ]] ||
    die "the host's MariaDB is not running (/run/mysqld/mysqld.sock): run deploy/dev-cluster/up.sh first"
declare -A MOUNT_SOURCE=([dev]=/dev [sys]=/sys [run/mysqld]=/run/mysqld)
for m in "${MOUNTS[@]}"; do
    install -d -m 755 "$ROOT/$m"
    mountpoint -q "$ROOT/$m" && continue
    if [[ $m == proc ]]; then
        mount -t proc proc "$ROOT/proc"
    else
        mount --bind "${MOUNT_SOURCE[$m]}" "$ROOT/$m"
    fi
done

missing=()
for p in "${PACKAGES[@]}"; do
    # shellcheck disable=SC2016  # dpkg-query's own ${...} format
    [[ $(in_root dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null) == installed ]] ||
        missing+=("$p")
done
if ((${#missing[@]})); then
    log "installing into the chroot: ${missing[*]}"
    if ! in_root sh -c "apt-get update -q && DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends ${missing[*]}" \
        >"$DIR/log/apt.log" 2>&1; then
        tail -n 30 "$DIR/log/apt.log" >&2
        die "package install in the chroot failed"
    fi
    log "packages installed"
fi
# shellcheck disable=SC2016  # dpkg-query's own ${...} format
VERSION=$(in_root dpkg-query -W -f='${Version}' slurm-client) # e.g. 24.11.5-1
VERSION=${VERSION%%-*}
[[ $VERSION == 24.11.* ]] || die "the chroot's slurm-client is $VERSION, not 24.11"

NODE=$(hostname -s)
mem_mib=$(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo)
REAL_MEM=$((mem_mib * 9 / 10))

# ---------------------------------------------------------------- config files
in_root install -d -m 755 /etc/slurm /var/lib/slurm/slurmd
in_root install -d -o slurm -g slurm -m 755 /run/slurm /var/log/slurm /var/lib/slurm \
    /var/lib/slurm/slurmctld

render "$ROOT/etc/slurm/slurm.conf" root:root 644 slurmctld slurmd <<EOF
# Rendered by trainbot deploy/dev-cluster/slurm-24.11/up.sh; edits are overwritten.
ClusterName=$CLUSTER_NAME
SlurmctldHost=$NODE(127.0.0.1)
$(slurm_conf_shared "$CTLD_PORT" "$SLURMD_PORT" "$DBD_PORT")
NodeName=$NODE_NAME NodeHostname=$NODE NodeAddr=127.0.0.1 CPUs=4 Sockets=1 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=$REAL_MEM State=UNKNOWN
PartitionName=debug Nodes=$NODE_NAME Default=YES MaxTime=INFINITE State=UP
EOF

# Cgroup-free like the 22.05 cluster: 24.11's slurmd would otherwise look for cgroups in the
# chroot (and find the host's, which are not its own).
render "$ROOT/etc/slurm/cgroup.conf" root:root 644 slurmd <<EOF
# Rendered by trainbot deploy/dev-cluster/slurm-24.11/up.sh; edits are overwritten.
CgroupPlugin=disabled
EOF

render "$ROOT/etc/slurm/slurmdbd.conf" slurm:slurm 600 slurmdbd <<EOF
# Rendered by trainbot deploy/dev-cluster/slurm-24.11/up.sh; edits are overwritten.
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=slurm
LogFile=/var/log/slurm/slurmdbd.log
PidFile=/run/slurm/slurmdbd.pid
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=$DB_USER
StoragePass=$DB_PASS
StorageLoc=$DB_NAME
EOF

# ---------------------------------------------------------------- keys, sshd, the test user
ssh_dir=$DIR/ssh
[[ -s $ssh_dir/ssh_host_ed25519_key ]] ||
    ssh-keygen -q -t ed25519 -N '' -C "dev-cluster-2411-host" -f "$ssh_dir/ssh_host_ed25519_key"
[[ -s $ssh_dir/id_ed25519 ]] ||
    ssh-keygen -q -t ed25519 -N '' -C "dev-cluster-2411-client" -f "$ssh_dir/id_ed25519"
chmod 600 "$ssh_dir/ssh_host_ed25519_key" "$ssh_dir/id_ed25519"
render "$ssh_dir/known_hosts" root:root 644 <<EOF
[127.0.0.1]:$SSH_PORT $(cut -d' ' -f1,2 "$ssh_dir/ssh_host_ed25519_key.pub")
EOF
# sshd runs inside the chroot: its host key and the authorized key are copied in.
in_root install -d -m 755 /etc/ssh/trainbot /run/sshd
render "$ROOT/etc/ssh/trainbot/ssh_host_ed25519_key" root:root 600 sshd \
    <"$ssh_dir/ssh_host_ed25519_key"
render "$ROOT/etc/ssh/trainbot/authorized_keys" root:root 644 <"$ssh_dir/id_ed25519.pub"
render "$ROOT/etc/ssh/trainbot/sshd_config" root:root 644 sshd <<EOF
# Rendered by trainbot deploy/dev-cluster/slurm-24.11/up.sh: key-only auth for $TEST_USER.
Port $SSH_PORT
ListenAddress 127.0.0.1
HostKey /etc/ssh/trainbot/ssh_host_ed25519_key
PidFile /run/sshd-trainbot.pid
AuthorizedKeysFile /etc/ssh/trainbot/authorized_keys
AllowUsers $TEST_USER
$(sshd_config_shared)
EOF
if ! in_root id -u "$TEST_USER" >/dev/null 2>&1; then
    in_root useradd -m -s /bin/bash "$TEST_USER"
    log "created user $TEST_USER in the chroot"
fi
[[ $(in_root getent shadow "$TEST_USER" | cut -d: -f2) == '*' ]] || in_root usermod -p '*' "$TEST_USER"
TEST_HOME=$(in_root getent passwd "$TEST_USER" | cut -d: -f6)

# ---------------------------------------------------------------- daemons
# munge: the chroot's own key and socket (/run/munge inside the chroot)
if [[ ! -s $ROOT/etc/munge/munge.key ]]; then
    in_root mungekey --create --keyfile=/etc/munge/munge.key
fi
in_root chown munge:munge /etc/munge/munge.key
in_root chmod 400 /etc/munge/munge.key
in_root install -d -o munge -g munge -m 755 /run/munge
if start munged in_root runuser -u munge -- /usr/sbin/munged --force; then
    wait_for "munge credential round trip" 10 in_root sh -c 'munge -n | unmunge'
fi

# the database user and database of this cluster, in the host's MariaDB
CURRENT=slurmdbd
if ! mariadb -N -e "SELECT 1 FROM mysql.user WHERE user='$DB_USER' AND host='localhost'" |
    grep -q 1; then
    mariadb -e "CREATE USER IF NOT EXISTS '$DB_USER'@'localhost' IDENTIFIED BY '$DB_PASS';
                GRANT ALL ON $DB_NAME.* TO '$DB_USER'@'localhost';"
    log "mariadbd: created database user $DB_USER"
fi

start slurmdbd in_root /usr/sbin/slurmdbd || true
CURRENT=slurmdbd
slurm_accounts in_root

start slurmctld in_root /usr/sbin/slurmctld || true
CURRENT=slurmctld
wait_for "slurmctld answering" 30 in_root scontrol ping
start slurmd in_root /usr/sbin/slurmd -N "$NODE_NAME" || true
CURRENT=slurmd
node_ready() {
    local state
    state=$(in_root sinfo -h -N -n "$NODE_NAME" -o %T 2>/dev/null) || return 1
    case $state in
        idle | mixed | allocated | completing) return 0 ;;
        drain* | down*) in_root scontrol update nodename="$NODE_NAME" state=resume \
            >/dev/null 2>&1 || true ;;
    esac
    return 1
}
wait_for "node $NODE_NAME idle" 30 node_ready

CURRENT=sshd
in_root /usr/sbin/sshd -t -f /etc/ssh/trainbot/sshd_config ||
    die "sshd: $ROOT/etc/ssh/trainbot/sshd_config is invalid"
if ! live_pid sshd >/dev/null && (exec 3<>"/dev/tcp/127.0.0.1/$SSH_PORT") 2>/dev/null; then
    die "sshd: 127.0.0.1:$SSH_PORT is already taken by a process that is not our sshd"
fi
start sshd in_root /usr/sbin/sshd -f /etc/ssh/trainbot/sshd_config \
    -E /var/log/sshd-trainbot.log || true
ln -sf "$ROOT/var/log/sshd-trainbot.log" "${LOGFILE[sshd]}"
log "all daemons up (Slurm $VERSION, node $NODE_NAME, RealMemory=${REAL_MEM}M, CPUs=4)"

render "$DIR/connection.json" root:root 644 <<EOF
{
  "host": "127.0.0.1",
  "port": $SSH_PORT,
  "user": "$TEST_USER",
  "key_file": "$ssh_dir/id_ed25519",
  "known_hosts": "$ssh_dir/known_hosts",
  "partition": "debug",
  "cluster_name": "$CLUSTER_NAME",
  "home": "$TEST_HOME",
  "state_dir": "$DIR",
  "accounts": ["root", "team-b"],
  "slurm_version": "$VERSION",
  "node": "$NODE_NAME",
  "scripts": "slurm-24.11"
}
EOF

# ---------------------------------------------------------------- smoke test through sshd
ssh_cmd=(ssh -F /dev/null -p "$SSH_PORT" -i "$ssh_dir/id_ed25519" -o IdentitiesOnly=yes
    -o BatchMode=yes -o StrictHostKeyChecking=yes -o "UserKnownHostsFile=$ssh_dir/known_hosts"
    -o GlobalKnownHostsFile=/dev/null -o ConnectTimeout=10 "$TEST_USER@127.0.0.1")
if ((STARTED)) || ((${#RESTART[@]})); then
    if ! out=$(timeout "$SMOKE_TIMEOUT" "${ssh_cmd[@]}" \
        "sbatch --wait --parsable -J dev-cluster-smoke -t 1 -c 1 --mem=32M -o /dev/null \
        --wrap 'test \$(id -un) = $TEST_USER'" 2>&1); then
        echo "$out" >&2
        in_root squeue >&2 || true
        die "smoke job through ssh failed (or waited more than $SMOKE_TIMEOUT s for a slot)"
    fi
    log "smoke job $out ran as $TEST_USER through ssh"
else
    out=$("${ssh_cmd[@]}" "squeue -h -o %i | wc -l" 2>&1) || {
        echo "$out" >&2
        die "ssh $TEST_USER@127.0.0.1:$SSH_PORT squeue failed"
    }
    log "already up; ssh + squeue ok ($((out)) jobs in the queue)"
fi
log "ready: $DIR/connection.json (Slurm $VERSION)"
