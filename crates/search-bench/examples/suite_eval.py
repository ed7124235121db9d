# The suite's servers evaluated in Python (crates/search-bench/src/suite.rs, and the generated family of
# crates/search-bench/src/surfaces.rs): the noise-free throughput and p99 of a configuration, read from
# the JSON definitions the Rust examples print, and the check that every noise-free check point
# the Rust side printed agrees. No third-party imports, so CI (python3 without optuna) runs the
# check (crates/search-bench/tests/family_python.rs):
#
#   cargo run --release -p webtune-search-bench --example family -- 50 --json > /tmp/family.json
#   python3 crates/search-bench/examples/suite_eval.py /tmp/family.json
#
# optuna_suite.py and bbo_suite.py import these functions.
import json, math, sys


def number(c, name):
    v = c.get(name)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else float("nan")


def word(c, name):
    v = c.get(name)
    return v if isinstance(v, str) else "*"


def keyed(m, by, c):
    return m.get(word(c, by) if by else "*", float("nan"))


def scaled(x, log):
    return math.log(max(x, 0.5)) if log else x


def truth(s, c):
    tp = s["base_throughput"]
    cliff = None
    for t in s["throughput"]:
        if t["term"] == "bump":
            x, p = number(c, t["param"]), keyed(t["peaks"], t.get("by"), c)
            z = (math.log(max(x, 0.5)) - math.log(p)) / t["width"] if t["log"] else (x - p) / t["width"]
            tp *= (1 - t["depth"]) + t["depth"] * math.exp(-0.5 * z * z)
        elif t["term"] == "choice":
            tp *= t["mult"].get(word(c, t["param"]), 0.0)
        elif t["term"] == "ridge":
            total = sum(w * scaled(number(c, k), t["log"]) for k, w in t["weights"].items())
            z = (total - t["peak"]) / t["width"]
            tp *= (1 - t["depth"]) + t["depth"] * math.exp(-0.5 * z * z)
        elif t["term"] == "cliff":
            m = t["base"] + sum(w * number(c, k) for k, w in t["weights"].items())
            if m > t["limit"]:
                cliff = (t["drop"], t["slow"])
        else:
            raise ValueError(f"{s['name']}: unknown throughput term {t['term']}")
    p99 = s["base_p99_ms"]
    for l in s["p99"]:
        if l["term"] == "knee":
            p99 *= 1 + (number(c, l["param"]) / keyed(l["knees"], l.get("by"), c)) ** l["power"]
        elif l["term"] == "starve":
            p99 *= 1 + l["scale"] / max(number(c, l["param"]), 0.5)
        else:
            raise ValueError(f"{s['name']}: unknown p99 term {l['term']}")
    if cliff:
        tp *= cliff[0]
        p99 *= cliff[1]
    return tp, p99


def true_value(s, c):
    tp, p99 = truth(s, c)
    return tp if p99 <= s["slo_p99_ms"] else 0.0


def check(entry):
    """Every check point (and the optimum, where printed) agrees with the Rust evaluation."""
    s = entry["server"]
    for ch in entry["checks"]:
        tp, p99 = truth(s, ch["config"])
        assert math.isclose(tp, ch["throughput"], rel_tol=1e-9), (s["name"], ch, tp)
        assert math.isclose(p99, ch["p99_ms"], rel_tol=1e-9), (s["name"], ch, p99)
    if "optimum" in entry:
        assert math.isclose(true_value(s, entry["optimum_config"]), entry["optimum"], rel_tol=1e-9)


def measure(s, c, rng, measured, starts=None):
    """One noisy run of configuration c: (throughput, SLO margin); appended to measured as
    (c, throughput, feasible). The margin is (p99 - SLO) / SLO, feasible when <= 0. Noise per
    run: throughput and p99 each times 1 + U(-noise, +noise). Noise per start (start_noise):
    a factor 1 + U(-start_noise, +start_noise) drawn when c is first measured in the study and
    kept in `starts` (one dict per study); throughput times it, p99 divided by it."""
    tp, p99 = truth(s, c)
    sn = s.get("start_noise", 0.0)
    if sn > 0:
        if starts is None:
            raise ValueError(f"{s['name']} has noise per start: pass a starts dict per study")
        key = json.dumps(c, sort_keys=True)
        if key not in starts:
            starts[key] = 1 + rng.uniform(-sn, sn)
        tp *= starts[key]
        p99 /= starts[key]
    tp *= 1 + rng.uniform(-s["noise"], s["noise"])
    p99 *= 1 + rng.uniform(-s["noise"], s["noise"])
    measured.append((c, tp, p99 <= s["slo_p99_ms"]))
    return tp, (p99 - s["slo_p99_ms"]) / s["slo_p99_ms"]


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: suite_eval.py DEFINITIONS.json")
    entries = json.load(open(sys.argv[1]))
    for e in entries:
        check(e)
    print(f"{len(entries)} servers, {sum(len(e['checks']) for e in entries)} check points agree")
