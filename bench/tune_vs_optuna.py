# The Optuna half of bench/tune-vs-optuna.sh, and the analysis of its proof.
#
#   python3 bench/tune_vs_optuna.py search WEBTUNE STACK TRIALS SEED OUT.json SPACE... -- BENCH...
#       Optuna 5.0 TPE (default settings, seeded) over SPACE (`--param` texts as webtune
#       takes them: NAME=LO..HI, NAME=LO..HI:log, NAME=a,b,c), each trial one
#       `webtune lab run STACK --set NAME=VALUE … --json FILE -- BENCH…`, maximizing the
#       successful responses per second (ok / duration_s, as the tuner's objective). Writes
#       the best trial's parameters and every trial to OUT.json.
#   python3 bench/tune_vs_optuna.py sets FILE best
#       The `--set` words of a winner (webtune's report or Optuna's OUT.json), with the
#       dependent limits the tuner fills in.
#   python3 bench/tune_vs_optuna.py prove RUNS.tsv
#       RUNS.tsv: lines "ROUND ARM FILE" of interleaved lab runs (arm "default" and the
#       winners); per winner, the paired log ratio against the default of the same round:
#       its mean with a Student-t 95% interval and the pairs won, as the tuner's proof
#       (crates/search/src/proof.rs) judges them.
import json, math, os, subprocess, sys, tempfile, time


def throughput(path):
    with open(path) as f:
        r = json.load(f)
    return r["ok"] / r["duration_s"] if r.get("duration_s", 0) > 0 else 0.0


def completed(params):
    """`--set` words for a configuration, with the dependent limits the tuner fills in
    (`lab::tuning::complete`): php-fpm's spare and start servers within pm.max_children."""
    params = dict(params)
    for key, value in list(params.items()):
        if key.endswith("pm.max_children"):
            prefix = key[: -len("pm.max_children")]
            for spare, default in (("pm.start_servers", 2), ("pm.min_spare_servers", 1),
                                   ("pm.max_spare_servers", 3)):
                params.setdefault(prefix + spare, min(default, int(value)))
    return [f"--set={k}={v}" for k, v in params.items()]


def parse_space(texts):
    space = []
    for t in texts:
        name, rng = t.split("=", 1)
        log = rng.endswith(":log")
        rng = rng[: -len(":log")] if log else rng
        if ".." in rng:
            lo, hi = rng.split("..")
            space.append((name, "int", (int(lo), int(hi), log)))
        else:
            space.append((name, "choice", rng.split(",")))
    return space


def search(webtune, stack, trials, seed, out, texts, bench):
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    space = parse_space(texts)
    tmp = tempfile.mkdtemp(prefix="optuna-lab-")
    rows = []

    def objective(trial):
        for name, kind, arg in space:
            if kind == "int":
                lo, hi, log = arg
                trial.suggest_int(name, lo, hi, log=log)
            else:
                trial.suggest_categorical(name, arg)
        sets = completed(trial.params)
        path = f"{tmp}/t{trial.number}.json"
        t0 = time.time()
        # LAB_ARGS: flags of `lab run` itself, e.g. "--app forum".
        extra = os.environ.get("LAB_ARGS", "").split()
        cmd = [webtune, "lab", "run", stack, *extra, *sets, "--", "-q", "--json", path, *bench]
        done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            rows.append({"params": trial.params, "value": None, "error": done.stderr.strip()[-300:]})
            print(f"optuna trial {trial.number + 1}/{trials}: failed: {done.stderr.strip()[-200:]}",
                  file=sys.stderr)
            return 0.0
        v = throughput(path)
        rows.append({"params": trial.params, "value": v, "seconds": time.time() - t0})
        print(f"optuna trial {trial.number + 1}/{trials}: {v:.1f} ok/s {trial.params}", file=sys.stderr)
        return v

    t0 = time.time()
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=seed))
    study.optimize(objective, n_trials=trials)
    with open(out, "w") as f:
        json.dump({"best": study.best_trial.params, "best_value": study.best_value,
                   "wall_s": time.time() - t0, "trials": rows, "optuna": optuna.__version__}, f, indent=1)


# Student t 0.975 quantiles, df 1..30.
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def prove(path):
    runs = {}
    for line in open(path):
        rnd, arm, file = line.split()
        runs.setdefault(arm, {})[int(rnd)] = throughput(file)
    default = runs.pop("default")
    print("default: " + ", ".join(f"{default[r]:.1f}" for r in sorted(default)) + " ok/s")
    for arm, vals in runs.items():
        d = [math.log(vals[r] / default[r]) for r in sorted(vals) if r in default
             and vals[r] > 0 and default[r] > 0]
        n = len(d)
        mean = sum(d) / n
        won = sum(1 for x in d if x > 0)
        line = f"{arm}: " + ", ".join(f"{vals[r]:.1f}" for r in sorted(vals)) + " ok/s; "
        if n >= 2:
            sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1))
            half = T975[min(n - 2, 29)] * sd / math.sqrt(n)
            lo, hi = math.exp(mean - half) - 1, math.exp(mean + half) - 1
            verdict = ("better" if lo > 0 else "worse" if hi < 0 else "no significant difference")
            line += (f"vs the default {100 * (math.exp(mean) - 1):+.1f}% "
                     f"(95% CI {100 * lo:+.1f}..{100 * hi:+.1f}%, {won}/{n} pairs won): {verdict}")
        print(line)


if __name__ == "__main__":
    if sys.argv[1] == "sets":
        # sets FILE KEY: the --set words of FILE's KEY (webtune's best.params, Optuna's best).
        best = json.load(open(sys.argv[2])).get(sys.argv[3]) or {}
        print("\n".join(completed(best["params"] if "params" in best else best)))
    elif sys.argv[1] == "search":
        args = sys.argv[2:]
        sep = args.index("--")
        webtune, stack, trials, seed, out = args[:5]
        search(webtune, stack, int(trials), int(seed), out, args[5:sep], args[sep + 1:])
    else:
        prove(sys.argv[2])
