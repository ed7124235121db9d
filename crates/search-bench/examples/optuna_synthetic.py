# The reference bar on our own benchmark: Optuna's TPE and random samplers on a Python port
# of the synthetic server in crates/search-bench/src/synthetic.rs (same five parameters, SLO, ±8%
# uniform noise, 15 trials, 100 seeds). Not part of the build; needs `pip install optuna`.
# Run: python3 crates/search-bench/examples/optuna_synthetic.py
import math, random, sys, optuna
optuna.logging.set_verbosity(optuna.logging.WARNING)

def truth(w, k, mpm, b, q):
    mult, knee = {"event": (1.0, 24.0), "worker": (0.9, 30.0)}.get(mpm, (0.75, 16.0))
    workers = math.exp(-0.5 * (math.log(w / 24.0) / 1.2) ** 2)
    keep = 0.95 + 0.05 * math.exp(-0.5 * ((math.log(k) - math.log(500)) / 2.0) ** 2)
    buf = 1.0 - 0.03 * ((b - 96.0) / 160.0) ** 2
    back = 0.96 + 0.04 * min(1.0, math.log(q / 16.0) / math.log(16.0))
    return 10000.0 * mult * workers * keep * buf * back, 20.0 * (1.0 + (w / knee) ** 2)

OPT = 10000.0  # the true optimum, as examples/synthetic.rs prints it
def run(seed, sampler_name, enqueue):
    rng = random.Random(seed + 12345)
    sampler = optuna.samplers.TPESampler(seed=seed, constraints_func=lambda t: [t.user_attrs["c"]]) if sampler_name == "tpe" else optuna.samplers.RandomSampler(seed=seed)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    if enqueue:
        study.enqueue_trial({"workers": 4, "keepalive": 100, "mpm": "prefork", "buffer_kb": 8, "backlog": 128})
        study.enqueue_trial({"workers": 16, "keepalive": 100, "mpm": "prefork", "buffer_kb": 8, "backlog": 128})
    def obj(t):
        w = t.suggest_int("workers", 1, 128, log=True)
        k = t.suggest_int("keepalive", 1, 10000, log=True)
        m = t.suggest_categorical("mpm", ["prefork", "worker", "event"])
        b = t.suggest_int("buffer_kb", 4, 256)
        q = t.suggest_int("backlog", 16, 4096, log=True)
        tp, p99 = truth(w, k, m, b, q)
        tp *= 1 + rng.uniform(-0.08, 0.08)
        p99 *= 1 + rng.uniform(-0.08, 0.08)
        t.set_user_attr("c", p99 - 40.0)
        return tp if p99 <= 40.0 else 0.0  # infeasible never wins
    study.optimize(obj, n_trials=15)
    p = study.best_trial.params
    tp, p99 = truth(p["workers"], p["keepalive"], p["mpm"], p["buffer_kb"], p["backlog"])
    return (tp if p99 <= 40.0 else 0.0) / OPT

for name, enq in [("tpe", False), ("tpe", True), ("random", False)]:
    r = [run(s, name, enq) for s in range(100)]
    hits = sum(x >= 0.95 for x in r)
    r.sort()
    print(f"optuna {name}{' +default+seed' if enq else ''}: {hits}/100 within 5%; median {100*r[50]:.1f}%")
