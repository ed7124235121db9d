# One markdown table from the per-study records of the generated family (examples/family.rs
# --raw and optuna_suite.py --family --raw): per shape and over the family, each search's hit
# rate (pick truly feasible and within 5% of the optimum) at each budget, ± the standard error
# over functions (a function's hit rate over its seeds is one observation). No third-party
# imports.
#
#   python3 crates/tune/examples/family_table.py /tmp/family_ours.jsonl /tmp/family_optuna.jsonl
import json, math, sys
from collections import defaultdict

SHAPES = ["cliff", "ridge", "interaction", "slo-edge", "infeasible-default"]


def main():
    # hits[search][budget][function] = list of 0/1; shape_of[function]
    hits = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    shape_of = {}
    for path in sys.argv[1:]:
        for line in open(path):
            r = json.loads(line)
            shape_of[r["function"]] = r["shape"]
            for b, p in zip(r["budgets"], r["picks"]):
                hits[r["search"]][b][r["function"]].append(p >= 0.95)
    searches = list(hits)
    budgets = sorted({b for s in hits.values() for b in s})
    print("| shape | trials | " + " | ".join(searches) + " |")
    print("|---|---|" + "---|" * len(searches))
    for group in SHAPES + ["all"]:
        for b in budgets:
            cells = []
            for s in searches:
                rates = [sum(h) / len(h) for f, h in hits[s][b].items() if group in ("all", shape_of[f])]
                if not rates:
                    cells.append("—")
                    continue
                n = len(rates)
                mean = sum(rates) / n
                se = math.sqrt(sum((r - mean) ** 2 for r in rates) / max(n - 1, 1) / n)
                studies = sum(len(h) for f, h in hits[s][b].items() if group in ("all", shape_of[f]))
                cells.append(f"{100 * mean:.1f}% ± {100 * se:.1f} ({studies})")
            label = f"**{group}**" if group == "all" else group
            print(f"| {label} | {b} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
