# A private single-node Slurm cluster for tests: munged, slurmctld and slurmd from Debian's munge
# and slurm-wlm packages, started as the current user with a generated config under one folder
# and random ports, so nothing on the machine (a system Slurm, /etc/slurm) is touched.
# Source it, then:
#   local_slurm_start DIR   starts the daemons; exports SLURM_CONF; returns 1 (logs printed)
#                           when the node is not idle within 60 s
#   local_slurm_stop DIR    stops them
local_slurm_start() {
  local dir=$1 host user port
  host=$(hostname -s)
  user=$(id -un)
  port=$((20000 + RANDOM % 30000))
  mkdir -p "$dir/state" "$dir/spool"
  head -c 1024 /dev/urandom >"$dir/munge.key"
  chmod 600 "$dir/munge.key"
  munged --force --socket="$dir/munge.socket" --key-file="$dir/munge.key" \
    --log-file="$dir/munged.log" --pid-file="$dir/munged.pid" --seed-file="$dir/munged.seed" ||
    { cat "$dir/munged.log" >&2; return 1; }
  cat >"$dir/slurm.conf" <<CONF
ClusterName=plabtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
AuthInfo=socket=$dir/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MinJobAge=300
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=plab Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF=$dir/slurm.conf
  slurmctld -f "$SLURM_CONF" -i || { cat "$dir/slurmctld.log" >&2; return 1; }
  slurmd -f "$SLURM_CONF" -N "$host" || { cat "$dir/slurmd.log" >&2; return 1; }
  local i
  for i in $(seq 120); do
    [[ $(sinfo --noheader --format=%T 2>/dev/null) == idle ]] && return 0
    sleep 0.5
  done
  echo "local_slurm: the node is not idle after 60 s:" >&2
  sinfo >&2 || true
  tail -n 20 "$dir/slurmctld.log" "$dir/slurmd.log" >&2 || true
  return 1
}

local_slurm_stop() {
  local dir=$1 daemon
  for daemon in slurmd slurmctld; do
    [[ -f "$dir/$daemon.pid" ]] && kill "$(cat "$dir/$daemon.pid")" 2>/dev/null
  done
  [[ -S "$dir/munge.socket" ]] && munged --stop --socket="$dir/munge.socket" >/dev/null 2>&1
  sleep 0.5
  return 0
}
