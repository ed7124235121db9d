# Optuna on the sampler benchmark suite (crates/search-bench/src/suite.rs): the same servers, read
# from the definitions the Rust example prints, with the same noise model (throughput and
# p99 each times 1 + U(-noise, +noise), independently, and noise per start where a server has
# it; the random stream differs). The functions themselves live in suite_eval.py. Before
# running, every noise-free check point the Rust side printed is recomputed here and must
# agree, so the two sides evaluate the same functions.
#
#   cargo run --release -p webtune-search-bench --example suite -- --json > /tmp/suite.json
#   python3 crates/search-bench/examples/optuna_suite.py /tmp/suite.json [SEEDS] [--only NAME] [--samplers tpe,gp,random] [--budgets 10,15,25]
#
# The generated family (crates/search-bench/src/surfaces.rs): hit rates per shape and over the family,
# with the standard error over functions, as examples/family.rs prints them (--raw appends one
# JSON line per study):
#
#   cargo run --release -p webtune-search-bench --example family -- 50 --json > /tmp/family.json
#   python3 crates/search-bench/examples/optuna_suite.py /tmp/family.json 10 --family [--first-seed N] [--samplers tpe,random] [--budgets 15,25] [--raw FILE]
#
# Needs optuna (measured with 5.0.0 in a venv). GPSampler needs torch; it is run when
# torch imports, else skipped with a note. Picks are read at 10, 15 and 25 trials of one
# 25-trial study (a sampler does not know its budget): the best *measured* feasible trial.
# bbo_suite.py (SMAC3, HEBO, GPSampler to 25 trials) imports this file's servers, noise model
# and picks: main() runs only when this file is the script.
import json, math, os, random, sys, warnings
import optuna

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# The servers' functions, the check and the noise model (no optuna there, so CI can check).
from suite_eval import number, word, keyed, truth, true_value, check, measure  # noqa: E402,F401

# Optuna 5 deprecates constraints_func (for Trial.set_constraint) but still honours it.
warnings.filterwarnings("ignore", category=FutureWarning)

optuna.logging.set_verbosity(optuna.logging.WARNING)
BUDGETS = [10, 15, 25]
if "--budgets" in sys.argv:
    BUDGETS = [int(b) for b in sys.argv[sys.argv.index("--budgets") + 1].split(",")]


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
    measured, starts = [], {}

    def obj(t):
        c = {p["name"]: suggest(t, p) for p in s["params"]}
        tp, margin = measure(s, c, rng, measured, starts)
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


def rate(per_function):
    """Mean hit rate over functions and its standard error over functions, in %."""
    n = len(per_function)
    mean = sum(per_function) / n
    var = sum((r - mean) ** 2 for r in per_function) / max(n - 1, 1)
    return 100 * mean, 100 * math.sqrt(var / n)


def family(entries, names, label, seeds, first, raw):
    """The generated family (entries with a "shape"): per shape and over all, the hit rate at
    each budget with its standard error over functions (as examples/family.rs prints)."""
    shapes = ["cliff", "ridge", "interaction", "slo-edge", "infeasible-default"]
    print("| shape | search | trials | functions | studies | hits | ± s.e. |")
    print("|---|---|---|---|---|---|---|")
    for n in names:
        picks = []  # picks[function][seed][budget]
        for e in entries:
            per_seed = []
            for seed in range(first, first + seeds):
                p = run(e, n, seed)
                per_seed.append(p)
                if raw:
                    raw.write(json.dumps({"function": e["server"]["name"], "shape": e["shape"],
                                          "search": label[n], "seed": seed, "budgets": BUDGETS,
                                          "picks": p}) + "\n")
                    raw.flush()
            picks.append(per_seed)
        for bi, b in enumerate(BUDGETS):
            for group in shapes + ["all"]:
                rates = [sum(p[bi] >= 0.95 for p in picks[i]) / seeds
                         for i, e in enumerate(entries) if group in ("all", e["shape"])]
                if not rates:
                    continue
                mean, se = rate(rates)
                print(f"| {group} | {label[n]} | {b} | {len(rates)} | {len(rates) * seeds} | "
                      f"{mean:.1f}% | {se:.1f} |", flush=True)


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
    if "--family" in args:
        first = int(args[args.index("--first-seed") + 1]) if "--first-seed" in args else 0
        raw = open(args[args.index("--raw") + 1], "a") if "--raw" in args else None
        return family(entries, names, label, seeds, first, raw)
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
