#!/usr/bin/env bash
# A local Redis Cluster for the tests and benches: 3 masters and 3 replicas of
# Debian's redis-server on 127.0.0.1, ports 7100-7105 (override the first with
# RHEO_CLUSTER_PORT), node files in a temporary folder.
#
#   bash scripts/redis-cluster.sh          make sure it is up and healthy
#   bash scripts/redis-cluster.sh stop     shut its nodes down and remove the folder
#
# Idempotent and never destructive: when every node answers and reports
# cluster_state:ok (all 16384 slots, 6 nodes, every replica in sync) it does
# nothing. A node that does not answer is started again from its own folder (a
# killed master comes back and rejoins as a replica). Nodes that were never joined
# into a cluster are joined (`redis-cli --cluster create`). Then it waits for the
# cluster to be healthy, and exits non-zero, saying why, when it does not get there:
# a cluster in some other shape is reported, not wiped (other test processes may be
# using it; `stop` starts over).
set -euo pipefail

first=${RHEO_CLUSTER_PORT:-7100}
ports=()
for i in 0 1 2 3 4 5; do ports+=($((first + i))); done
dir=${RHEO_CLUSTER_DIR:-${TMPDIR:-/tmp}/rheo-redis-cluster-$first}

cli() { redis-cli -h 127.0.0.1 -p "$1" "${@:2}"; }
up() { cli "$1" ping 2>/dev/null | grep -q PONG; }

# Every node answers, and each one sees cluster_state:ok, 16384 slots ok and 6 known
# nodes; every replica has finished its sync (master_link_status:up); 3 masters.
healthy() {
  local p info
  for p in "${ports[@]}"; do
    info=$(cli "$p" cluster info 2>/dev/null) || return 1
    grep -q '^cluster_state:ok' <<<"$info" || return 1
    grep -q '^cluster_slots_ok:16384' <<<"$info" || return 1
    grep -q '^cluster_known_nodes:6' <<<"$info" || return 1
    info=$(cli "$p" info replication 2>/dev/null) || return 1
    if grep -q '^role:slave' <<<"$info"; then grep -q '^master_link_status:up' <<<"$info" || return 1; fi
  done
  [ "$(cli "${ports[0]}" cluster nodes | grep -c 'master')" -eq 3 ] || return 1
}

if [ "${1:-}" = "stop" ]; then
  for p in "${ports[@]}"; do cli "$p" shutdown nosave >/dev/null 2>&1 || true; done
  for _ in $(seq 1 50); do
    still=0
    for p in "${ports[@]}"; do up "$p" && still=1; done
    [ "$still" -eq 0 ] && break
    sleep 0.1
  done
  rm -rf "$dir"
  exit 0
fi

healthy && exit 0

if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools >/dev/null
fi

# Start every node that does not answer, from its own folder (nodes.conf and the
# append-only file survive, so a node that was killed rejoins with its data).
for p in "${ports[@]}"; do
  up "$p" && continue
  mkdir -p "$dir/$p"
  # appendonly yes + noeviction: the settings docs/redis.md asks for, so the backend's
  # durability check stays quiet. node-timeout 2000: a failover takes a few seconds.
  redis-server --port "$p" --bind 127.0.0.1 --daemonize yes \
    --dir "$dir/$p" --logfile "$dir/$p/redis.log" --pidfile "$dir/$p/redis.pid" \
    --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 2000 \
    --appendonly yes --appendfsync everysec --maxmemory-policy noeviction --save ""
done
for p in "${ports[@]}"; do
  for _ in $(seq 1 100); do up "$p" && break; sleep 0.1; done
  up "$p" || {
    echo "redis-cluster: node $p did not start; its log ($dir/$p/redis.log):" >&2
    tail -n 20 "$dir/$p/redis.log" >&2 || true
    exit 1
  }
done

# Nodes that know only themselves were never joined: join them (emptied first, so a
# leftover of an earlier run cannot make --cluster create refuse them).
alone=0
for p in "${ports[@]}"; do
  cli "$p" cluster info | grep -q '^cluster_known_nodes:1\b' && alone=$((alone + 1))
done
if [ "$alone" -eq "${#ports[@]}" ]; then
  for p in "${ports[@]}"; do
    cli "$p" flushall >/dev/null
    cli "$p" cluster reset hard >/dev/null
  done
  hosts=()
  for p in "${ports[@]}"; do hosts+=("127.0.0.1:$p"); done
  redis-cli --cluster create "${hosts[@]}" --cluster-replicas 1 --cluster-yes >"$dir/create.log" 2>&1 || {
    echo "redis-cluster: redis-cli --cluster create failed ($dir/create.log):" >&2
    cat "$dir/create.log" >&2
    exit 1
  }
elif [ "$alone" -gt 0 ]; then
  echo "redis-cluster: $alone of the nodes on ${ports[*]} are not in the cluster the others form;" \
    "run 'bash scripts/redis-cluster.sh stop' and start again" >&2
  exit 1
fi

for _ in $(seq 1 300); do
  healthy && exit 0
  sleep 0.2
done
echo "redis-cluster: the cluster on ${ports[*]} is not healthy after 60 s (want cluster_state:ok on" \
  "every node, 3 masters, replicas in sync); 'bash scripts/redis-cluster.sh stop' starts over:" >&2
cli "${ports[0]}" cluster nodes >&2 || true
for p in "${ports[@]}"; do echo "--- $p: $(cli "$p" cluster info 2>&1 | head -n 1)" >&2; done
exit 1
