# Off-the-shelf Bayesian optimisers on the sampler benchmark suite (crates/search-bench/src/suite.rs):
# SMAC3's HPO facade (random-forest surrogate), HEBO (NeurIPS 2020 black-box challenge
# winner) and Optuna's GPSampler, on the same servers, noise model, check points and picks as
# optuna_suite.py (imported from beside this file: the servers' functions live there only).
#
#   cargo run --release -p webtune-search-bench --example suite -- --json > /tmp/suite.json
#   python3 crates/search-bench/examples/bbo_suite.py /tmp/suite.json [SEEDS] [--first-seed N] [--only A,B] [--samplers smac,smac-det,hebo,gp] [--budgets 10,15,25] [--raw FILE.jsonl]
#   python3 crates/search-bench/examples/bbo_suite.py --table FILE.jsonl...   # rows (stdout) and ± 1 s.e. (stderr) from --raw records
#
# --raw appends one JSON line per study (server, sampler, seed, picks, CPU and wall seconds), so
# seed ranges run apart (--first-seed) merge into one row; --only runs servers in the order given.
# smac-det: SMAC3 told the runs are deterministic (no re-runs). CPU per 25-trial study on the
# shared 2-core machine (2026-11-25): SMAC3 4.4 s, smac-det 6.6 s, GPSampler 5-19 s, HEBO 108 s.
#
# Measured with Python 3.11, optuna 5.0.0, smac 2.4.1 (ConfigSpace 1.2.2; this SMAC's random
# forest is scikit-learn's, no pyrfr/swig), HEBO 0.3.6 (installed with --no-deps beside torch
# 2.x, gpytorch, pandas, pymoo 0.6.0: its numpy<1.25 pin is not needed by its default GP
# model), GPSampler with torch. A sampler whose package does not import is skipped with a note.
#
# One 25-trial study per seed, read at 10, 15 and 25 trials (the best *measured* feasible
# trial, as optuna_suite.py). The SLO: GPSampler takes the SLO margin as its constraint (as in
# optuna_suite.py); SMAC3 and HEBO have no constraint API in their default optimisers, so they
# minimise a penalised cost: -throughput when the run met the SLO, else the margin
# (p99 - SLO) / SLO > 0, so every infeasible run costs more than every feasible one and the
# margin still points back towards the SLO. Each optimiser runs with its default settings:
# SMAC3 is told the run is noisy (deterministic=False: its intensifier re-runs the incumbent,
# and those re-runs count as trials) and n_trials=25 (its Sobol initial design is 25% of that,
# 6 configurations); HEBO draws 1 + (number of parameters) Sobol points, then its GP.
# Prints one markdown row per server, sampler and budget (as optuna_suite.py), and to stderr
# the seconds each study took.
import os, random, sys, tempfile, time, warnings

sys.dont_write_bytecode = True  # no __pycache__ beside the sources
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import optuna_suite as base  # noqa: E402  (the servers, the noise model, the picks)

warnings.filterwarnings("ignore")
for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(v, "1")


def cost(tp, margin):
    return -tp if margin <= 0 else margin


def run_smac(entry, seed, deterministic=False):
    import logging

    from ConfigSpace import Categorical, ConfigurationSpace, Integer
    from smac import HyperparameterOptimizationFacade as HPO, Scenario
    from smac.runhistory.dataclasses import TrialValue

    logging.getLogger("smac").setLevel(logging.ERROR)
    s = entry["server"]
    cs = ConfigurationSpace(seed=seed)
    for p in s["params"]:
        if p.get("int"):
            lo, hi = p["int"]
            cs.add(Integer(p["name"], (lo, hi), log=p.get("log", False)))
        else:
            cs.add(Categorical(p["name"], p["choices"]))
    rng = random.Random(seed + 12345)
    measured, starts = [], {}
    with tempfile.TemporaryDirectory() as out:
        scenario = Scenario(
            cs, deterministic=deterministic, n_trials=max(base.BUDGETS), seed=seed, output_directory=out
        )

        def target(config, seed: int = 0) -> float:  # never called: ask and tell below
            raise AssertionError

        smac = HPO(scenario, target, overwrite=True, logging_level=40)
        for _ in range(max(base.BUDGETS)):
            info = smac.ask()
            c = {p["name"]: (int(info.config[p["name"]]) if p.get("int") else str(info.config[p["name"]])) for p in s["params"]}
            tp, margin = base.measure(s, c, rng, measured, starts)
            smac.tell(info, TrialValue(cost=cost(tp, margin)))
    return base.picks(entry, measured)


def run_hebo(entry, seed):
    import numpy as np
    import torch
    from hebo.design_space.design_space import DesignSpace
    from hebo.optimizers.hebo import HEBO

    torch.set_num_threads(1)
    s = entry["server"]
    spec = []
    for p in s["params"]:
        if p.get("int"):
            lo, hi = p["int"]
            kind = "pow_int" if p.get("log") else "int"
            spec.append({"name": p["name"], "type": kind, "lb": lo, "ub": hi})
        else:
            spec.append({"name": p["name"], "type": "cat", "categories": list(p["choices"])})
    # HEBO draws from numpy's and torch's global generators.
    np.random.seed(seed)
    torch.manual_seed(seed)
    random.seed(seed)
    opt = HEBO(DesignSpace().parse(spec), scramble_seed=seed)
    rng = random.Random(seed + 12345)
    measured, starts = [], {}
    for _ in range(max(base.BUDGETS)):
        rec = opt.suggest(n_suggestions=1)
        row = rec.iloc[0]
        c = {p["name"]: (int(row[p["name"]]) if p.get("int") else str(row[p["name"]])) for p in s["params"]}
        tp, margin = base.measure(s, c, rng, measured, starts)
        opt.observe(rec, np.array([[cost(tp, margin)]]))
    return base.picks(entry, measured)


def spent(n, e, b):
    """Where the budget went, as far as the optimiser's settings say."""
    if n == "smac":
        return "Sobol 6, then RF + EI (1 in 5 random); re-runs count"
    if n == "smac-det":
        return "Sobol 6, then RF + EI (1 in 5 random); no re-runs"
    if n == "hebo":
        k = 1 + len(e["server"]["params"])
        return f"Sobol {min(b, k)}, model {b - min(b, k)}"
    return f"random {min(b, 10)}, model {b - min(b, 10)}"


def available(name):
    try:
        if name.startswith("smac"):
            import smac  # noqa: F401
        elif name == "hebo":
            import hebo.optimizers.hebo  # noqa: F401
        elif name == "gp":
            import torch

            torch.set_num_threads(1)
        return True
    except ImportError as e:
        print(f"{name} skipped: {e}", file=sys.stderr)
        return False


def table(paths):
    """The markdown rows (and one standard error of each hit rate) from --raw files."""
    import json

    got = {}
    for path in paths:
        for line in open(path):
            r = json.loads(line)
            got.setdefault((r["server"], r["sampler"]), {})[r["seed"]] = r
    label = {"smac": "SMAC3 HPO", "smac-det": "SMAC3 HPO deterministic", "hebo": "HEBO", "gp": "Optuna GPSampler"}
    for (server, n), by_seed in got.items():
        runs = [r["picks"] for r in by_seed.values()]
        cpu = sum(r["cpu_s"] for r in by_seed.values()) / len(runs)
        e = {"server": {"name": server}}
        for i, b in enumerate(base.BUDGETS):
            p = sum(x[i] >= 0.95 for x in runs) / len(runs)
            se = 100 * (p * (1 - p) / len(runs)) ** 0.5
            shape = {"server": {"params": [None] * by_seed[min(by_seed)].get("nparams", 4)}}
            spent_b = spent(n, shape, b)
            # The suite table's row ("measured a hit" is not recorded for these), then to
            # stderr the hit rate's standard error and the CPU a study took.
            print(f"{base.row(e, f'{label[n]} ({len(runs)} seeds)', runs, i, spent_b)} — |")
            print(f"{server} {n} {b}: {100 * p:.0f}% ± {se:.0f} (1 s.e.), {cpu:.1f} s CPU a study", file=sys.stderr)


def main():
    args = sys.argv[1:]
    if args[0] == "--table":
        return table(args[1:])
    raw = open(args[args.index("--raw") + 1], "a") if "--raw" in args else None
    entries = base.json.load(open(args[0]))
    seeds = int(args[1]) if len(args) > 1 and args[1].isdigit() else 50
    first = int(args[args.index("--first-seed") + 1]) if "--first-seed" in args else 0
    only = args[args.index("--only") + 1] if "--only" in args else None
    names = ["smac", "hebo", "gp"]
    if "--samplers" in args:
        names = args[args.index("--samplers") + 1].split(",")
    names = [n for n in names if available(n)]
    for e in entries:
        base.check(e)
    label = {"smac": f"SMAC3 HPO ({seeds} seeds)", "smac-det": f"SMAC3 HPO deterministic ({seeds} seeds)", "hebo": f"HEBO ({seeds} seeds)", "gp": f"Optuna GPSampler ({seeds} seeds)"}
    runner = {"smac": run_smac, "smac-det": lambda e, seed: run_smac(e, seed, deterministic=True), "hebo": run_hebo, "gp": lambda e, seed: base.run(e, "gp", seed)}
    print(f"seeds {first}..{first + seeds - 1} per row; check points agree with the Rust definitions")
    if only:  # in the order given
        entries = [e for o in only.split(",") for e in entries if e["server"]["name"] == o]
    for e in entries:
        for n in names:
            runs, took = [], []
            for seed in range(first, first + seeds):
                t0, w0 = time.process_time(), time.time()
                runs.append(runner[n](e, seed))
                took.append(time.process_time() - t0)
                if raw:
                    rec = {"server": e["server"]["name"], "sampler": n, "seed": seed, "picks": runs[-1],
                           "cpu_s": took[-1], "wall_s": time.time() - w0, "nparams": len(e["server"]["params"])}
                    raw.write(base.json.dumps(rec) + "\n")
                    raw.flush()
            print(
                f"{e['server']['name']} {n}: {sum(took) / len(took):.1f} s CPU per {max(base.BUDGETS)}-trial study (max {max(took):.1f})",
                file=sys.stderr,
                flush=True,
            )
            for i, b in enumerate(base.BUDGETS):
                print(base.row(e, label[n], runs, i, spent(n, e, b)), flush=True)


if __name__ == "__main__":
    main()
