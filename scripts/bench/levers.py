#!/usr/bin/env python3
"""Ranks every LoCoMo question's drawers under several ranking formulas,
offline, from the signals `locomo_signals` dumped (see BENCHMARKS.md,
"Retrieval levers measured offline"). Needs numpy.

    cargo run --release -p mempalace-eval --example locomo_signals -- \
        ../shared/bench/locomo/locomo-dev.json signals.jsonl "$MEMPALACE_MODEL_DIR"
    python3 scripts/bench/levers.py signals.jsonl

Every formula ranks the whole conversation (the engine ranks its 100
best candidates of each list, which the "engine" row shows is close).
A drawer counts for the turns it holds; @3000c counts the best drawers
that fit in 3,000 characters.
"""
import json
import sys

import numpy as np

BUDGET = 3000


def load(path):
    samples, current = [], None
    for line in open(path, encoding="utf-8"):
        row = json.loads(line)
        if "sample" in row:
            current = {"ids": row["ids"], "sessions": np.array(row["sessions"]),
                       "chars": np.array(row["chars"]), "questions": []}
            samples.append(current)
        else:
            for key in ("cos", "cos_prev", "cos_next", "cos_date", "cos_turn", "bm25"):
                row[key] = np.array(row[key], dtype=float)
            current["questions"].append(row)
    return samples


def lexical(bm25, scale=18.0):
    return 1 - np.exp(-bm25 / scale)


def noisy_or(*pieces):
    rest = np.ones_like(pieces[0])
    for piece in pieces:
        rest = rest * (1 - np.clip(piece, 0, 1))
    return 1 - rest


def neighbours(sample, scores, share):
    """Adds `share` × the better score of the drawers just before and after
    in the same session."""
    sessions = sample["sessions"]
    before = np.r_[0.0, scores[:-1]] * np.r_[False, sessions[1:] == sessions[:-1]]
    after = np.r_[scores[1:], 0.0] * np.r_[sessions[:-1] == sessions[1:], False]
    return scores + share * np.maximum(before, after)


def evaluate(samples, formula):
    totals = {"any@10": 0, "any@5": 0, "all@10": 0, "session@10": 0, "any@3000c": 0}
    categories, count = {}, 0
    for sample in samples:
        ids, chars = sample["ids"], sample["chars"]
        for question in sample["questions"]:
            order = np.argsort(-formula(sample, question), kind="stable")
            gold = set(question["ev"])
            gold_sessions = {e.split(":")[0] for e in gold}

            def turns(n):
                found = set()
                for i in order[:n]:
                    found |= set(ids[i])
                return found

            used = fit = 0
            for i in order:
                if used + chars[i] > BUDGET:
                    break
                used += chars[i]
                fit += 1
            top10 = turns(10)
            hit = bool(top10 & gold)
            totals["any@10"] += hit
            totals["any@5"] += bool(turns(5) & gold)
            totals["all@10"] += gold <= top10
            totals["session@10"] += bool({t.split(":")[0] for t in top10} & gold_sessions)
            totals["any@3000c"] += bool(turns(fit) & gold)
            category = categories.setdefault(question["cat"], [0, 0])
            category[0] += hit
            category[1] += 1
            count += 1
    row = {name: value / count for name, value in totals.items()}
    row["by category"] = " / ".join(f"{h / n:.3f}" for _, (h, n) in sorted(categories.items()))
    return row


def engine(sample, question):
    scores = np.zeros(len(sample["ids"]))
    for rank, index in enumerate(question["engine_top"]):
        scores[index] = 100 - rank
    return scores


FORMULAS = {
    "engine (the real search, top 10)": engine,
    "default: noisy-OR(cos, 1 − e^(−BM25/18))": lambda s, q: noisy_or(q["cos"], lexical(q["bm25"])),
    "cosine only": lambda s, q: q["cos"],
    "vector of previous exchange + exchange": lambda s, q: noisy_or(q["cos_prev"], lexical(q["bm25"])),
    "vector of exchange + next exchange": lambda s, q: noisy_or(q["cos_next"], lexical(q["bm25"])),
    "mean of the three vectors' cosines": lambda s, q: noisy_or(
        (q["cos"] + q["cos_prev"] + q["cos_next"]) / 3, lexical(q["bm25"])),
    "best single turn's cosine": lambda s, q: noisy_or(q["cos_turn"], lexical(q["bm25"])),
    "session date in the embedded text": lambda s, q: noisy_or(q["cos_date"], lexical(q["bm25"])),
    "default + 0.3 × best neighbour": lambda s, q: neighbours(s, noisy_or(q["cos"], lexical(q["bm25"])), 0.3),
    "previous-exchange vector + 0.3 × best neighbour": lambda s, q: neighbours(
        s, noisy_or(q["cos_prev"], lexical(q["bm25"])), 0.3),
    "BM25 scale 12 instead of 18": lambda s, q: noisy_or(q["cos"], lexical(q["bm25"], 12.0)),
    "previous-exchange vector, scale 12, + 0.3 × neighbour": lambda s, q: neighbours(
        s, noisy_or(q["cos_prev"], lexical(q["bm25"], 12.0)), 0.3),
}


def main():
    samples = load(sys.argv[1])
    print("| formula | turn any@10 | any@5 | all@10 | any@3000c | session any@10 | any@10 by category 1–5 |")
    print("|---|---|---|---|---|---|---|")
    for name, formula in FORMULAS.items():
        r = evaluate(samples, formula)
        print(f"| {name} | {r['any@10']:.3f} | {r['any@5']:.3f} | {r['all@10']:.3f} | "
              f"{r['any@3000c']:.3f} | {r['session@10']:.3f} | {r['by category']} |")


if __name__ == "__main__":
    main()
