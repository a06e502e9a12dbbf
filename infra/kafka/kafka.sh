#!/usr/bin/env bash
# A single-node KRaft Apache Kafka broker for development and tests, without Docker.
#
#   infra/kafka/kafka.sh fetch    download the broker jars (Maven; cached in ~/.m2)
#   infra/kafka/kafka.sh start    fetch if needed, format storage, start, wait until ready
#   infra/kafka/kafka.sh stop     stop the broker this script started (by its pid file)
#   infra/kafka/kafka.sh status   print the bootstrap address if running, exit 1 otherwise
#   infra/kafka/kafka.sh reset    stop, and delete the broker's data
# A restart (stop, start) keeps the data: that is how tests restart a broker mid-stream.
#
# Environment: TIDEMARK_KAFKA_PORT (default 19092), TIDEMARK_KAFKA_DIR (state: data, pid, log;
# default infra/kafka/.run), TIDEMARK_KAFKA_HEAP (default 512m); for tests of secured listeners,
# TIDEMARK_KAFKA_EXTRA_CONFIG (a properties file appended to the broker's, later keys win) and
# TIDEMARK_KAFKA_FORMAT_ARGS (more arguments to the storage format, e.g. --add-scram …); for a
# node of a multi-node cluster, TIDEMARK_KAFKA_CLUSTER_ID (the id every node is formatted with) and
# an extra config naming its node.id and the controller quorum.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
port=${TIDEMARK_KAFKA_PORT:-19092}
controller_port=$((port + 1))
run_dir=${TIDEMARK_KAFKA_DIR:-$here/.run}
heap=${TIDEMARK_KAFKA_HEAP:-512m}
libs=$here/.libs
pid_file=$run_dir/broker.pid
log_file=$run_dir/broker.log

die() { echo "kafka.sh: $*" >&2; exit 1; }

fetch() {
  if [ -f "$libs/.complete" ]; then return 0; fi
  command -v java >/dev/null || die "java not found: install Java 17 (or set KAFKA_BROKERS, or run Docker)"
  command -v mvn >/dev/null || die "mvn not found: install Maven (or set KAFKA_BROKERS, or run Docker)"
  echo "kafka.sh: fetching broker jars with Maven (cached in ~/.m2)" >&2
  rm -rf "$libs"
  mvn -q -B -f "$here/pom.xml" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$libs" >&2
  touch "$libs/.complete"
}

running_pid() {
  [ -f "$pid_file" ] || return 1
  local pid; pid=$(cat "$pid_file")
  kill -0 "$pid" 2>/dev/null || return 1
  echo "$pid"
}

# A Kafka cluster id: 16 random bytes in URL-safe base64 without padding, as `StorageTool
# random-uuid` prints it — made here instead of by a JVM of its own, whose start could fail under
# load and leave the id empty (`format: argument --cluster-id: expected one argument`, seen in CI).
# Kafka never hands out an id that starts with '-' (it would read as a flag); neither do we.
new_cluster_id() {
  local id
  while :; do
    id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')
    if [ "${#id}" -eq 22 ] && [ "${id:0:1}" != "-" ]; then echo "$id"; return 0; fi
  done
}

start() {
  if pid=$(running_pid); then
    echo "127.0.0.1:$port"; return 0
  fi
  fetch
  mkdir -p "$run_dir/data"
  sed -e "s|@PORT@|$port|g" -e "s|@CONTROLLER_PORT@|$controller_port|g" \
      -e "s|@DATA_DIR@|$run_dir/data|g" "$here/broker.properties.template" > "$run_dir/broker.properties"
  if [ -n "${TIDEMARK_KAFKA_EXTRA_CONFIG:-}" ]; then
    cat "$TIDEMARK_KAFKA_EXTRA_CONFIG" >> "$run_dir/broker.properties"
  fi
  local cp="$libs/*"
  local jvm=(-Xms"$heap" -Xmx"$heap" -XX:+UseG1GC -Djava.awt.headless=true
             -Dlog4j2.configurationFile="$here/log4j2.properties")
  if [ ! -f "$run_dir/data/logs/meta.properties" ]; then
    # A new cluster id for new storage; a restart keeps both.
    local cluster_id
    cluster_id=${TIDEMARK_KAFKA_CLUSTER_ID:-$(new_cluster_id)}
    local format_args
    read -r -a format_args <<< "${TIDEMARK_KAFKA_FORMAT_ARGS:-}"
    java -cp "$cp" "${jvm[@]}" kafka.tools.StorageTool format -t "$cluster_id" \
      -c "$run_dir/broker.properties" "${format_args[@]}" > "$run_dir/format.log" 2>&1 \
      || { grep -vE "^\s" "$run_dir/format.log" | tail -n 20 >&2; die "storage format failed"; }
  fi
  : > "$log_file"
  nohup java -cp "$cp" "${jvm[@]}" kafka.Kafka "$run_dir/broker.properties" >> "$log_file" 2>&1 &
  echo $! > "$pid_file"
  local pid; pid=$(cat "$pid_file")
  for _ in $(seq 1 120); do
    if grep -q "Kafka Server started" "$log_file" 2>/dev/null; then
      echo "127.0.0.1:$port"; return 0
    fi
    kill -0 "$pid" 2>/dev/null || { tail -n 40 "$log_file" >&2; die "broker exited during start"; }
    sleep 0.5
  done
  tail -n 40 "$log_file" >&2
  stop
  die "broker not ready after 60 s (log: $log_file)"
}

stop() {
  local pid
  if pid=$(running_pid); then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$pid_file"
}

reset() {
  stop
  rm -rf "$run_dir/data"
}

status() {
  running_pid >/dev/null || { echo "not running" >&2; return 1; }
  echo "127.0.0.1:$port"
}

case "${1:-}" in
  fetch) fetch ;;
  start) start ;;
  stop) stop ;;
  status) status ;;
  reset) reset ;;
  *) echo "usage: $0 fetch|start|stop|status|reset" >&2; exit 2 ;;
esac
