#!/usr/bin/env python3
"""Closed-loop read-modify-write transactions against etcd 3's v3 JSON gateway.

Each transaction picks OPS distinct keys out of KEYS, reads them all in one etcd
transaction (linearizable reads), then commits in a second one that compares every
key's mod_revision with what it read and puts new values into the written half
(optimistic concurrency: serializable, like the Meridian transaction it is compared
with). A failed compare is an abort; the client then moves on to its next
transaction, as `meridian bench` clients do.

Prints one JSON object: committed, aborted, txn/s, latency p50/p99 (ms) of committed
transactions, and the etcd servers' CPU seconds (from /proc, when --pids is given).

Used by scripts/etcd-compare.sh; Python's standard library only.
"""
import argparse, base64, http.client, json, random, resource, threading, time


def b64(s):
    return base64.b64encode(s.encode()).decode()


def cpu_seconds(pids):
    total = 0
    for p in pids:
        with open(f"/proc/{p}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
        total += int(rest[11]) + int(rest[12])
    return total / 100.0  # USER_HZ


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoints", required=True, help="host:port,... (client URLs)")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--duration", type=float, default=10.0, help="seconds")
    ap.add_argument("--keys", type=int, default=10000)
    ap.add_argument("--ops", type=int, default=4)
    ap.add_argument("--pids", default="", help="etcd server pids, comma-separated")
    a = ap.parse_args()
    eps = a.endpoints.split(",")
    pids = [int(p) for p in a.pids.split(",") if p]
    lock = threading.Lock()
    lat, aborted, errors = [], [0], [0]
    stop = time.monotonic() + a.duration

    def client(i):
        host, port = eps[i % len(eps)].split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        rng = random.Random(i)

        def post(path, body):
            conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
            r = conn.getresponse()
            data = r.read()
            if r.status != 200:
                raise RuntimeError(f"{path}: HTTP {r.status} {data[:200]!r}")
            return json.loads(data)

        while time.monotonic() < stop:
            keys = [f"k{n}" for n in rng.sample(range(a.keys), a.ops)]
            t0 = time.monotonic()
            try:
                reads = post("/v3/kv/txn", {"success": [{"request_range": {"key": b64(k)}} for k in keys]})
                revs = []
                for resp in reads.get("responses", []):
                    kvs = resp.get("response_range", {}).get("kvs", [])
                    revs.append(int(kvs[0].get("mod_revision", 0)) if kvs else 0)
                cmp = [
                    {"key": b64(k), "target": "MOD", "result": "EQUAL", "mod_revision": str(r)}
                    for k, r in zip(keys, revs)
                ]
                puts = [{"request_put": {"key": b64(k), "value": b64(str(rng.random()))}} for k in keys[a.ops // 2:]]
                res = post("/v3/kv/txn", {"compare": cmp, "success": puts})
            except Exception as e:  # a broken connection: count it, reconnect
                with lock:
                    errors[0] += 1
                conn = http.client.HTTPConnection(host, int(port), timeout=30)
                continue
            ms = (time.monotonic() - t0) * 1000.0
            with lock:
                if res.get("succeeded"):
                    lat.append(ms)
                else:
                    aborted[0] += 1

    cpu0 = cpu_seconds(pids) if pids else None
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.monotonic()
    ts = [threading.Thread(target=client, args=(i,)) for i in range(a.clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    el = time.monotonic() - t0
    cpu = cpu_seconds(pids) - cpu0 if pids else None
    ru = resource.getrusage(resource.RUSAGE_SELF)
    client_cpu = (ru.ru_utime - ru0.ru_utime) + (ru.ru_stime - ru0.ru_stime)
    lat.sort()
    pct = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] if lat else float("nan")
    print(json.dumps({
        "committed": len(lat), "aborted": aborted[0], "errors": errors[0],
        "tps": len(lat) / el, "p50_ms": pct(0.5), "p99_ms": pct(0.99),
        "server_cpu_s": cpu,
        "client_cpu_s": client_cpu, "wall_s": el,
        "server_cpu_ms_per_committed": (1000.0 * cpu / len(lat)) if (cpu is not None and lat) else None,
    }))


if __name__ == "__main__":
    main()
