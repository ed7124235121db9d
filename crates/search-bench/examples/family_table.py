# One markdown table from the per-study records of the generated family (examples/family.rs
# --raw and optuna_suite.py --family --raw): per shape and over the family, each search's hit
# rate (pick truly feasible and within 5% of the optimum) at each budget, ± the standard error
# over functions (a function's hit rate over its seeds is one observation). No third-party
# imports.
#
#   python3 crates/search-bench/examples/family_table.py /tmp/family_ours.jsonl /tmp/family_optuna.jsonl
#   python3 crates/search-bench/examples/family_table.py --paired "webtune GP" FILES...
#
# --defs FAMILY.json (examples/family.rs --json): rows by noise too (per run below 6%, 6-12%,
# 12% and above; with and without noise per start) besides the shapes.
#
# --paired BASE: each other search's difference from BASE in points, ± the paired standard error
# over functions (the same functions and seeds, so the functions' difficulty cancels): how a
# change to the search is judged.
import json, math, sys
from collections import defaultdict

SHAPES = ["cliff", "ridge", "interaction", "slo-edge", "infeasible-default"]


def rate(rates):
    n = len(rates)
    mean = sum(rates) / n
    return 100 * mean, 100 * math.sqrt(sum((r - mean) ** 2 for r in rates) / max(n - 1, 1) / n)


def main():
    args = sys.argv[1:]
    base = None
    if "--paired" in args:
        i = args.index("--paired")
        base = args[i + 1]
        del args[i : i + 2]
    groups_of = None
    if "--defs" in args:
        i = args.index("--defs")
        defs = {e["server"]["name"]: e["server"] for e in json.load(open(args[i + 1]))}
        del args[i : i + 2]

        def groups_of(f):
            s = defs[f]
            band = "noise <6%" if s["noise"] < 0.06 else ("noise 6-12%" if s["noise"] < 0.12 else "noise >=12%")
            return [band, "per start" if s.get("start_noise", 0) > 0 else "no per start"]

    # hits[search][budget][function] = list of 0/1; shape_of[function]
    hits = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    shape_of = {}
    for path in args:
        for line in open(path):
            r = json.loads(line)
            shape_of[r["function"]] = [r["shape"]] + (groups_of(r["function"]) if groups_of else [])
            for b, p in zip(r["budgets"], r["picks"]):
                hits[r["search"]][b][r["function"]].append(p >= 0.95)
    searches = list(hits)
    if base:
        return paired(hits, shape_of, base)
    budgets = sorted({b for s in hits.values() for b in s})
    print("| shape | trials | " + " | ".join(searches) + " |")
    print("|---|---|" + "---|" * len(searches))
    extra = ["noise <6%", "noise 6-12%", "noise >=12%", "per start", "no per start"] if groups_of else []
    for group in SHAPES + extra + ["all"]:
        for b in budgets:
            cells = []
            for s in searches:
                rates = [sum(h) / len(h) for f, h in hits[s][b].items() if (group == "all" or group in shape_of[f])]
                if not rates:
                    cells.append("—")
                    continue
                n = len(rates)
                mean = sum(rates) / n
                se = math.sqrt(sum((r - mean) ** 2 for r in rates) / max(n - 1, 1) / n)
                studies = sum(len(h) for f, h in hits[s][b].items() if (group == "all" or group in shape_of[f]))
                cells.append(f"{100 * mean:.1f}% ± {100 * se:.1f} ({studies})")
            label = f"**{group}**" if group == "all" else group
            print(f"| {label} | {b} | " + " | ".join(cells) + " |")


def paired(hits, shape_of, base):
    budgets = sorted(hits[base])
    others = [s for s in hits if s != base]
    print("| shape | trials | " + " | ".join(f"{s} − {base}" for s in others) + " |")
    print("|---|---|" + "---|" * len(others))
    for group in SHAPES + ["all"]:
        for b in budgets:
            cells = []
            for s in others:
                fs = [f for f in hits[base][b] if f in hits[s][b] and (group == "all" or group in shape_of[f])]
                d = [sum(hits[s][b][f]) / len(hits[s][b][f]) - sum(hits[base][b][f]) / len(hits[base][b][f]) for f in fs]
                mean, se = rate(d) if d else (0.0, 0.0)
                cells.append(f"{mean:+.1f} ± {se:.1f}")
            print(f"| {group} | {b} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
