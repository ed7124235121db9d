# Where the search's runs go on the generated family's mode x integer interactions (issue 34
# item 5): for each `interaction` function and seed, one study's first BUDGET runs from
# `family --trace`, and how many of them measured the best word (the optimum's mode) and how
# close the closest came to that word's peak of the main parameter. Totals over the studies:
# how many measured the best word at all, only once (a miss the model cannot see: one run far
# from the word's own peak looks poor), near its peak (within 0.3 in ln of the main
# parameter), and the hits among those. No third-party imports.
#
#   cargo build --release -p webtune-search-bench --example family
#   cargo run --release -p webtune-search-bench --example family -- 50 --json > /tmp/family.json
#   python3 crates/search-bench/examples/family_modes.py /tmp/family.json 30 [--budget 15] [-- FAMILY FLAGS]
#
# FAMILY FLAGS (e.g. `-- --ridge 0`) are passed to every `family --trace` run: a variant's
# runs, seen the same way. Each study is one process (about 50 ms), so 30 seeds take ~15 s.
import json, math, re, subprocess, sys
from collections import Counter

BINARY = "target/release/examples/family"


def trace(name, seed, budget, extra):
    out = subprocess.run(
        [BINARY, "--trace", f"{name}:{seed}", "--budgets", str(budget)] + extra,
        capture_output=True, text=True, check=True,
    ).stdout
    runs = []
    for line in out.splitlines():
        m = re.match(r"\s*(\d+) (\w+): ([\d.]+) (\w+) (\{.*\})", line)
        if m and int(m.group(1)) <= budget:
            runs.append((m.group(2), m.group(5)))
    pick = re.search(r"picks \[([\d.]+)", out)
    return runs, float(pick.group(1)) if pick else 0.0


def main():
    args = sys.argv[1:]
    extra = []
    if "--" in args:
        i = args.index("--")
        args, extra = args[:i], args[i + 1 :]
    budget = 15
    if "--budget" in args:
        i = args.index("--budget")
        budget = int(args[i + 1])
        del args[i : i + 2]
    if len(args) != 2:
        sys.exit("usage: family_modes.py FAMILY.json SEEDS [--budget N] [-- FAMILY FLAGS]")
    defs, seeds = json.load(open(args[0])), int(args[1])
    total = Counter()
    for e in defs:
        if e["shape"] != "interaction":
            continue
        s = e["server"]
        bump = next(t for t in s["throughput"] if t.get("by"))
        mode, main_param, peaks = bump["by"], bump["param"], bump["peaks"]
        best = e["optimum_config"][mode]
        cells = []
        for seed in range(seeds):
            runs, pick = trace(s["name"], seed, budget, extra)
            # The best word's runs, repeats (A/A pair, racing) not counted.
            looks = []
            for why, cfg in runs:
                word = re.search(r'"%s": Word\("([^"]+)"\)' % mode, cfg).group(1)
                x = int(re.search(r'"%s": Int\((-?\d+)\)' % main_param, cfg).group(1))
                if word == best and why not in ("Race", "Baseline"):
                    looks.append((why, abs(math.log(max(x, 1) / peaks[best]))))
            near = min((d for _, d in looks), default=None)
            hit = pick >= 0.95
            total["studies"] += 1
            total["hits"] += hit
            total["best word never measured"] += not looks
            total["best word in the design"] += any(w in ("Seed", "SpaceFilling") for w, _ in looks)
            total["best word measured once"] += len(looks) == 1
            total["best word measured once, hits"] += len(looks) == 1 and hit
            reached = near is not None and near < 0.3
            total["near its peak (< 0.3 ln)"] += reached
            total["near its peak, hits"] += reached and hit
            cells.append(f"s{seed}:{pick:.2f}/{len(looks)}/{'-' if near is None else f'{near:.1f}'}")
        print(f"{s['name']}: best word {best} of {len(peaks)}, peaks {dict((k, round(v)) for k, v in peaks.items())}")
        print("   seed:pick/runs in the best word/closest to its peak (ln)  " + " ".join(cells))
    for k, v in total.items():
        print(f"{k}: {v}")


if __name__ == "__main__":
    main()
