#!/usr/bin/env bash
# Measures River (riverqueue/river v0.47 on PostgreSQL, fsync on as the OS
# package ships it) on this machine, to set beside `trellis bench workers`
# run right after it (compare figures from one sitting only: disks differ
# between machines by 10x). Needs PostgreSQL's server binaries (Debian:
# apt-get install -y postgresql) and the Go module proxy. Everything lives
# in a temp dir removed at the end.
#   make bench-river                      # or: bash bench/river/run.sh
#   RIVER_JOBS=40000 RIVER_BENCH=30s make bench-river
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
jobs=${RIVER_JOBS:-20000}
benchfor=${RIVER_BENCH:-20s}
port=${RIVER_PG_PORT:-54329}
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
[ -n "$pgbin" ] || { echo "PostgreSQL server binaries not found: apt-get install -y postgresql" >&2; exit 2; }
t=$(mktemp -d -t trellis-river-XXXX)
chmod 755 "$t"
as_pg() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$*"; else sh -c "$*"; fi; }
mkdir -p "$t/data" "$t/bin"
[ "$(id -u)" = 0 ] && chown postgres "$t/data"
cleanup() { as_pg "$pgbin/pg_ctl -D $t/data -m fast stop" >/dev/null 2>&1 || true; rm -rf "$t"; }
trap cleanup EXIT
as_pg "$pgbin/initdb -D $t/data -A trust -U postgres" >/dev/null
# No TCP listener: the throwaway server trusts whoever connects, so it
# answers only on a Unix socket in its own directory (mode 0700).
as_pg "$pgbin/pg_ctl -D $t/data -w -o \"-p $port -c listen_addresses='' -c max_connections=200 -k $t/data\" -l $t/data/log start" >/dev/null
url="postgres://postgres@/postgres?host=$t/data&port=$port&sslmode=disable"
echo "== building River's CLI and the probe"
(cd "$here" && go build -o "$t/bin/river" github.com/riverqueue/river/cmd/river && go build -o "$t/bin/riverpeer" .)
"$t/bin/river" migrate-up --database-url "$url" >/dev/null
# An empty jobs table makes PostgreSQL plan full scans: warm it first.
"$t/bin/riverpeer" -db "$url" -mode throughput -workers 8 -n "$jobs" -batch 1000 >/dev/null
echo "== River, 8 workers, $jobs no-op jobs inserted with InsertMany in batches of 1,000"
"$t/bin/riverpeer" -db "$url" -mode throughput -workers 8 -n "$jobs" -batch 1000
echo "== River, 8 workers, 1,000 jobs/s offered one insert at a time: pickup latency"
"$t/bin/riverpeer" -db "$url" -mode latency -workers 8 -n 5000 -rate 1000
echo "== river bench (its default 2,000 workers), $benchfor"
"$t/bin/river" bench --database-url "$url" --duration "$benchfor" 2>&1 | tail -1
echo "== now, in the same sitting: trellis bench workers --add-batch 1000"
