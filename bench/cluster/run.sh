#!/usr/bin/env bash
# Starts a 3-node NATS cluster on this machine (nats-server built from the
# version in go.mod, JetStream synced on every write, loopback ports) and
# runs `trellis bench workers` on it with R3 streams, then the same
# benchmark on a fresh embedded single node (R1), so both figures come
# from one sitting. Everything lives in a temp dir removed at the end.
#   make bench-cluster
#   LEVELS=8,128,512 TASKS=40000 make bench-cluster
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
levels=${LEVELS:-8,128}
tasks=${TASKS:-20000}
base=${BENCH_PORT:-14222}
t=$(mktemp -d -t trellis-cluster-XXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$t"
}
trap cleanup EXIT
echo "== building nats-server and trellis"
(cd "$root" && go build -o "$t/" github.com/nats-io/nats-server/v2 ./cmd/trellis)
routes=""
for i in 1 2 3; do routes="$routes${routes:+, }nats-route://127.0.0.1:$((base + 2000 + i))"; done
urls=""
for i in 1 2 3; do
	mkdir -p "$t/n$i"
	cat >"$t/n$i.conf" <<CONF
server_name: n$i
listen: 127.0.0.1:$((base + i))
http: 127.0.0.1:$((base + 1000 + i))
jetstream { store_dir: "$t/n$i", sync_interval: always }
cluster { name: bench, listen: 127.0.0.1:$((base + 2000 + i)), routes: [$routes] }
CONF
	"$t/nats-server" -c "$t/n$i.conf" >"$t/n$i.log" 2>&1 &
	pids+=($!)
	urls="$urls${urls:+,}nats://127.0.0.1:$((base + i))"
done
echo "== waiting for the cluster's JetStream"
for i in 1 2 3; do
	for _ in $(seq 1 120); do
		curl -fs "http://127.0.0.1:$((base + 1000 + i))/healthz?js-enabled-only=true" >/dev/null 2>&1 && break
		sleep 0.5
	done
done
for _ in $(seq 1 120); do
	grep -q "JetStream cluster new metadata leader\|Self is new JetStream cluster metadata leader" "$t"/n*.log && break
	sleep 0.5
done
echo "== trellis bench workers on the 3-node cluster, R3 streams ($urls)"
"$t/trellis" bench workers --nats-url "$urls" --bench-replicas 3 --add-batch 1000 --levels "$levels" --tasks "$tasks"
echo "== trellis bench workers on a fresh embedded single node (R1), same sitting"
"$t/trellis" bench workers --add-batch 1000 --levels "$levels" --tasks "$tasks"
