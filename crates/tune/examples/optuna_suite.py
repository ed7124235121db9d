# Optuna on the sampler benchmark suite (crates/tune/src/suite.rs): the same servers, read
# from the definitions the Rust example prints, with the same noise model (throughput and
# p99 each times 1 + U(-noise, +noise), independently; the random stream differs). Before
# running, every noise-free check point the Rust side printed is recomputed here and must
# agree, so the two sides evaluate the same functions.
#
#   cargo run --release -p webtune-tune --example suite -- --json > /tmp/suite.json
#   python3 crates/tune/examples/optuna_suite.py /tmp/suite.json [SEEDS] [--only NAME] [--samplers tpe,gp,random] [--budgets 10,15,25]
#
# Needs optuna (measured with 5.0.0 in a venv). GPSampler needs torch; it is run when
# torch imports, else skipped with a note. Picks are read at 10, 15 and 25 trials of one
# 25-trial study (a sampler does not know its budget): the best *measured* feasible trial.
# bbo_suite.py (SMAC3, HEBO, GPSampler to 25 trials) imports this file's servers, noise model
# and picks: main() runs only when this file is the script.
import json, math, random, sys, warnings
import optuna

# Optuna 5 deprecates constraints_func (for Trial.set_constraint) but still honours it.
warnings.filterwarnings("ignore", category=FutureWarning)

optuna.logging.set_verbosity(optuna.logging.WARNING)
BUDGETS = [10, 15, 25]
if "--budgets" in sys.argv:
    BUDGETS = [int(b) for b in sys.argv[sys.argv.index("--budgets") + 1].split(",")]


def number(c, name):
    v = c.get(name)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else float("nan")


def word(c, name):
    v = c.get(name)
    return v if isinstance(v, str) else "*"


def keyed(m, by, c):
    return m.get(word(c, by) if by else "*", float("nan"))


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
        elif t["term"] == "cliff":
            m = t["base"] + sum(w * number(c, k) for k, w in t["weights"].items())
            if m > t["limit"]:
                cliff = (t["drop"], t["slow"])
    p99 = s["base_p99_ms"]
    for l in s["p99"]:
        if l["term"] == "knee":
            p99 *= 1 + (number(c, l["param"]) / keyed(l["knees"], l.get("by"), c)) ** l["power"]
        elif l["term"] == "starve":
            p99 *= 1 + l["scale"] / max(number(c, l["param"]), 0.5)
    if cliff:
        tp *= cliff[0]
        p99 *= cliff[1]
    return tp, p99


def true_value(s, c):
    tp, p99 = truth(s, c)
    return tp if p99 <= s["slo_p99_ms"] else 0.0


def check(entry):
    s = entry["server"]
    for ch in entry["checks"]:
        tp, p99 = truth(s, ch["config"])
        assert math.isclose(tp, ch["throughput"], rel_tol=1e-9), (s["name"], ch, tp)
        assert math.isclose(p99, ch["p99_ms"], rel_tol=1e-9), (s["name"], ch, p99)
    assert math.isclose(true_value(s, entry["optimum_config"]), entry["optimum"], rel_tol=1e-9)


def suggest(t, p):
    if p.get("int"):
        lo, hi = p["int"]
        return t.suggest_int(p["name"], lo, hi, log=p.get("log", False))
    return t.suggest_categorical(p["name"], p["choices"])


def make_sampler(name, seed):
    cons = lambda t: [t.user_attrs["margin"]]
    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed, constraints_func=cons)
    if name == "gp":
        return optuna.samplers.GPSampler(seed=seed, constraints_func=cons)
    return optuna.samplers.RandomSampler(seed=seed)


def measure(s, c, rng, measured):
    """One noisy run of configuration c: (throughput, SLO margin); appended to measured as
    (c, throughput, feasible). The margin is (p99 - SLO) / SLO, feasible when <= 0."""
    tp, p99 = truth(s, c)
    tp *= 1 + rng.uniform(-s["noise"], s["noise"])
    p99 *= 1 + rng.uniform(-s["noise"], s["noise"])
    measured.append((c, tp, p99 <= s["slo_p99_ms"]))
    return tp, (p99 - s["slo_p99_ms"]) / s["slo_p99_ms"]


def picks(entry, measured):
    """The pick at each budget: the best measured feasible run's true value / the optimum."""
    s, opt = entry["server"], entry["optimum"]
    out = []
    for b in BUDGETS:
        feas = [(tp, c) for c, tp, ok in measured[:b] if ok]
        out.append(true_value(s, max(feas, key=lambda x: x[0])[1]) / opt if feas else 0.0)
    return out


def run(entry, name, seed):
    s = entry["server"]
    rng = random.Random(seed + 12345)
    study = optuna.create_study(direction="maximize", sampler=make_sampler(name, seed))
    measured = []

    def obj(t):
        c = {p["name"]: suggest(t, p) for p in s["params"]}
        tp, margin = measure(s, c, rng, measured)
        t.set_user_attr("margin", margin)
        return tp

    study.optimize(obj, n_trials=max(BUDGETS))
    return picks(entry, measured)


def row(entry, label, runs, b_index, spent):
    """One markdown row of the suite table for budget BUDGETS[b_index]."""
    b = BUDGETS[b_index]
    r = sorted(x[b_index] for x in runs)
    hits = sum(x >= 0.95 for x in r)
    return (
        f"| {entry['server']['name']} | {label} | {b} | {100 * hits / len(r):.0f}% | "
        f"{100 * r[len(r) // 2]:.1f}% | {100 * r[0]:.1f}% | {spent} |"
    )


def main():
    args = sys.argv[1:]
    entries = json.load(open(args[0]))
    seeds = int(args[1]) if len(args) > 1 and args[1].isdigit() else 100
    only = args[args.index("--only") + 1] if "--only" in args else None
    names = ["tpe", "random"]
    try:
        import torch

        # One thread: the fits are small, and the machine is shared.
        torch.set_num_threads(1)
        names.insert(1, "gp")
    except ImportError:
        print("GPSampler skipped: torch is not installed", file=sys.stderr)
    if "--samplers" in args:
        wanted = args[args.index("--samplers") + 1].split(",")
        names = [n for n in names if n in wanted]
    label = {"tpe": "Optuna TPE", "gp": "Optuna GPSampler", "random": "Optuna random"}
    for e in entries:
        check(e)
    print(f"optuna {optuna.__version__}; {seeds} seeds per row; check points agree with the Rust definitions")
    for e in entries:
        if only and e["server"]["name"] != only:
            continue
        for n in names:
            runs = [run(e, n, seed) for seed in range(seeds)]
            for i, b in enumerate(BUDGETS):
                # TPE and GPSampler draw their first 10 trials at random (n_startup_trials).
                startup = min(b, 10) if n != "random" else b
                print(row(e, label[n], runs, i, f"random {startup}, model {b - startup}"), flush=True)


if __name__ == "__main__":
    main()
