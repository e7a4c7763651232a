#!/usr/bin/env python3
"""The search's peers on a recorded polymorph cache, drawing bench processes as `run --simulate` does.

Each evaluation of a configuration costs two bench processes: one recorded sample of the
configuration and one of the task as given (its reference), drawn at random from the cache;
its score is the paired gain, the geometric mean over cases of sample / reference (inverted
for a metric to minimise). What a peer ships after B processes is the configuration with the
best mean score over what it drew by then; its quality is that configuration's true score (the
geometric mean of its case means, over the repeats kept out of the samples where the cache has
them) over the exhaustive best's. A configuration that failed to
build or pass its test when recorded costs no process and is reported to the peer as failed.

Prints one JSON line per peer, seed and budget: {"peer", "seed", "budget", "quality", "pick"}
(pick: the shipped configuration's parameters, for the bench to verify with polymorph's judge).

    python peers.py --cache CACHE --task TASK_DIR [--seeds 20] [--budgets 100,300,1000]
                    [--peers random,optuna-tpe,optuna-gp,kt-bayes_opt,kt-genetic_algorithm,kt-pso,tpe-rule]

optuna-gp (Optuna's Gaussian process with expected improvement) needs PyTorch, which the bench
installs into an environment of its own only when that peer is named.
"""

import argparse
import itertools
import json
import math
import os
import random
import sys
import tempfile
import tomllib
import warnings

PEERS = ["random", "optuna-tpe", "optuna-gp", "kt-bayes_opt", "kt-genetic_algorithm", "kt-pso", "tpe-rule"]

# A peer that proposes only configurations outside the space (constraint-violating ones, free)
# is stopped after this many proposals in a row.
MAX_FREE_PROPOSALS = 10_000


class Landscape:
    """The cache's configurations, their samples and true scores, in the task's declared order."""

    def __init__(self, cache_path, task_dir):
        with open(cache_path) as f:
            cache = json.load(f)
        with open(os.path.join(task_dir, "task.toml"), "rb") as f:
            spec = tomllib.load(f)
        self.maximize = spec["metric"].get("direction", "maximize") == "maximize"
        self.params = {k: v for k, v in spec["params"].items() if isinstance(v, list)}
        self.names = list(self.params)
        self.samples = {}
        self.held_out = {}
        self.failed = set()
        start = None
        for tree in cache["trees"]:
            if tree["label"] == "start":
                start = tree["samples"]
            if tree["label"] != "params":
                continue
            key = tuple(tree["params"][n] for n in self.names)
            if tree.get("failed") or not tree["samples"]:
                self.failed.add(key)
            else:
                self.samples[key] = tree["samples"]
                if tree.get("truth"):
                    self.held_out[key] = tree["truth"]
        if not start:
            sys.exit(f"{cache_path}: no samples of the task as given")
        self.reference = start
        self.valid = set(self.samples) | self.failed
        self.truth = {k: self._true_score(k, s) for k, s in self.samples.items()}
        self.best = max(self.truth.values())

    def _true_score(self, key, samples):
        """The geometric mean over cases of the held-out means where the cache has them (an
        imported recording's other half of the repeats), else of the means of the samples."""
        cases = samples[0]["cases"].keys()
        held = self.held_out.get(key)
        if held:
            logs = [math.log(held[c]) for c in cases]
        else:
            logs = [math.log(sum(s["cases"][c] for s in samples) / len(samples)) for c in cases]
        score = math.exp(sum(logs) / len(logs))
        return score if self.maximize else 1.0 / score

    def draw(self, key, rng):
        """One paired evaluation: the log gain of a drawn sample over a drawn reference."""
        a = rng.choice(self.samples[key])["cases"]
        b = rng.choice(self.reference)["cases"]
        logs = [math.log(a[c] / b[c]) for c in b]
        gain = sum(logs) / len(logs)
        return gain if self.maximize else -gain


class Ledger:
    """What one peer drew: processes spent, each configuration's draws, and what it ships."""

    def __init__(self, land, budgets, rng):
        self.land, self.rng = land, rng
        self.budgets = sorted(budgets)
        self.spent = 0
        self.draws = {}
        self.shipped = {}

    def evaluate(self, key):
        """The drawn log gain of `key`, or None when it failed (free) or the budget is spent."""
        if self.done():
            return None
        if key in self.land.failed:
            return None
        gain = self.land.draw(key, self.rng)
        self.charge(key, gain)
        return gain

    def charge(self, key, gain):
        """Records one evaluation of `key` (two processes) and, at each budget it closes, what
        would ship."""
        self.spent += 2
        self.draws.setdefault(key, []).append(gain)
        for b in self.budgets:
            if b not in self.shipped and self.spent + 2 > b:
                self.shipped[b] = self.ship()

    def ship(self):
        return max(self.draws, key=lambda k: sum(self.draws[k]) / len(self.draws[k]))

    def done(self):
        return self.spent + 2 > self.budgets[-1]

    def qualities(self):
        """At each budget: the shipped configuration's quality, and the configuration (a dict of
        its parameters; None before anything was drawn)."""
        out = {}
        for b in self.budgets:
            key = self.shipped.get(b) or (self.ship() if self.draws else None)
            quality = self.land.truth[key] / self.land.best if key else 0.0
            out[b] = (quality, dict(zip(self.land.names, key)) if key else None)
        return out


def run_random(land, ledger, rng):
    """Uniform draws without replacement; once every configuration is drawn, another pass."""
    space = sorted(land.samples)
    while not ledger.done():
        order = space[:]
        rng.shuffle(order)
        for key in order:
            if ledger.evaluate(key) is None:
                return


def run_optuna(land, ledger, seed, kind):
    """Optuna's TPE or GP sampler (each with its defaults) with the space's constraints as its
    constraints_func: a configuration outside the space (or one that failed) is free, told as
    violating them, so the sampler learns to avoid it."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.simplefilter("ignore")  # constraints_func is marked experimental
    sampler_class = {"tpe": optuna.samplers.TPESampler, "gp": optuna.samplers.GPSampler}[kind]
    sampler = sampler_class(seed=seed, constraints_func=lambda t: (t.user_attrs["violation"],))
    study = optuna.create_study(direction="maximize", sampler=sampler)
    free = 0
    while not ledger.done() and free < MAX_FREE_PROPOSALS:
        trial = study.ask()
        key = tuple(trial.suggest_categorical(n, land.params[n]) for n in land.names)
        gain = ledger.evaluate(key) if key in land.samples else None
        trial.set_user_attr("violation", 0.0 if gain is not None else 1.0)
        if gain is None:
            free += 1
            study.tell(trial, 0.0)
        else:
            free = 0
            study.tell(trial, gain)


def run_tpe_rule(land, ledger, rng):
    """polymorph's `tpe` proposal rule (proposers/src/search/tpe.rs) without its races or judge:
    ten uniform fresh draws, then the fresh assignment with the best l/g among 24 fresh draws
    from l, l and g one categorical density per parameter (counts plus a uniform prior of
    weight 1) over the best min(ceil(n/10), 25) measured and the rest, each measured once with
    one pair (a failure ranked last). It separates what tpe proposes from what judging costs."""
    names = land.names
    values = [land.params[n] for n in names]
    score = {}
    pool = sorted(land.valid)

    def density(keys):
        out = []
        for i, vals in enumerate(values):
            w = [1.0 / len(vals)] * len(vals)
            for k in keys:
                w[vals.index(k[i])] += 1.0
            total = sum(w)
            out.append([x / total for x in w])
        return out

    def log_density(d, key):
        return sum(math.log(d[i][values[i].index(v)]) for i, v in enumerate(key))

    def propose():
        fresh = [k for k in pool if k not in score]
        if not fresh:
            return None
        if len(score) < 10:
            return rng.choice(fresh)
        ranked = sorted(score, key=lambda k: -score[k])
        split = min(math.ceil(len(ranked) / 10), 25)
        good, bad = density(ranked[:split]), density(ranked[split:])
        best, found = None, 0
        for _ in range(2000):
            if found == 24:
                break
            key = tuple(rng.choices(vals, weights=d)[0] for vals, d in zip(values, good))
            if key not in land.valid or key in score:
                continue
            found += 1
            ratio = log_density(good, key) - log_density(bad, key)
            if best is None or ratio > best[0]:
                best = (ratio, key)
        return best[1] if best else rng.choice(fresh)

    while not ledger.done():
        key = propose()
        if key is None:
            return
        gain = ledger.evaluate(key)
        if gain is None and key not in land.failed:
            return
        score[key] = gain if gain is not None else -math.inf


def run_kernel_tuner(land, ledger, strategy, seed, draw_rng):
    """Kernel Tuner's own strategy in its simulation mode, over a cache file holding one drawn
    evaluation per configuration (Kernel Tuner never evaluates a configuration twice)."""
    import numpy as np
    from kernel_tuner import tune_kernel

    random.seed(seed)
    np.random.seed(seed)
    names = land.names
    entries = {}
    for key in itertools.product(*(land.params[n] for n in names)):
        if key not in land.valid:
            continue
        row = dict(zip(names, key))
        if key in land.failed:
            row.update({"score": "InvalidConfig", "compile_time": 0, "verification_time": 0, "benchmark_time": 0})
        else:
            # Drawn now, charged when Kernel Tuner first asks for it (below).
            row.update({"score": land.draw(key, draw_rng), "compile_time": 0, "verification_time": 0,
                        "benchmark_time": 0, "time": 0.0, "times": [0.0]})
        entries[",".join(str(v) for v in key)] = row
    content = {"device_name": "Simulation", "kernel_name": "polymorph", "problem_size": [1],
               "tune_params_keys": names, "tune_params": land.params, "objective": "score", "cache": entries}
    charged = set()

    def observe(params):
        key = tuple(params[n] for n in names)
        if key in charged or key not in land.samples:
            return
        charged.add(key)
        ledger.charge(key, entries[",".join(str(v) for v in key)]["score"])

    # Each strategy's default options; the process budget as its limit on evaluations (the
    # genetic algorithm and the swarm may end sooner, after their default generations).
    options = {"max_fevals": ledger.budgets[-1] // 2}

    def allowed(p):
        # A plain function, not a lambda: Kernel Tuner rewrites lambdas from their source.
        return tuple(p[n] for n in names) in land.valid

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "cache.json")
        with open(path, "w") as f:
            json.dump(content, f)
        with warnings.catch_warnings(), open(os.devnull, "w") as quiet:
            warnings.simplefilter("ignore")
            old = sys.stdout
            sys.stdout = quiet
            try:
                results, _ = tune_kernel(
                    "polymorph", "", 1, [], land.params, lang="C", simulation_mode=True, cache=path,
                    strategy=strategy, objective="score", objective_higher_is_better=True,
                    restrictions=[allowed],
                    strategy_options=options, quiet=True,
                )
            finally:
                sys.stdout = old
    for r in results:
        observe(r)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache", required=True)
    ap.add_argument("--task", required=True)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--budgets", default="100,300,1000")
    ap.add_argument("--peers", default=",".join(PEERS))
    args = ap.parse_args()
    land = Landscape(args.cache, args.task)
    budgets = [int(b) for b in args.budgets.split(",")]
    for peer in args.peers.split(","):
        if peer not in PEERS:
            sys.exit(f"unknown peer {peer!r}; known: {', '.join(PEERS)}")
        for seed in range(args.seeds):
            rng = random.Random(seed * 7919 + 1)
            ledger = Ledger(land, budgets, rng)
            if peer == "random":
                run_random(land, ledger, rng)
            elif peer == "tpe-rule":
                run_tpe_rule(land, ledger, rng)
            elif peer.startswith("optuna-"):
                run_optuna(land, ledger, seed, peer.removeprefix("optuna-"))
            else:
                run_kernel_tuner(land, ledger, peer.removeprefix("kt-"), seed, rng)
            for budget, (quality, pick) in ledger.qualities().items():
                print(json.dumps({"peer": peer, "seed": seed, "budget": budget, "quality": round(quality, 4),
                                  "pick": pick}), flush=True)


if __name__ == "__main__":
    main()
