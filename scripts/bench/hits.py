#!/usr/bin/env python3
"""Studies the ranked hits `mempalace bench locomo --hits FILE` writes.

    target/release/mempalace bench locomo --data ../shared/bench/locomo/locomo-dev.json \
        --k 1,5,10,20,100 --hits hits.jsonl --json locomo.json
    python3 scripts/bench/hits.py hits.jsonl

Prints, from the file alone (no numpy):
- the metrics of the engine's own ranking, recomputed (they must equal the
  report's: a check that the file is what was measured);
- the misses (no evidence turn in the first 10 hits): by category, by the
  rank of the first evidence hit further down, and how many have an
  evidence turn within two turns of one of the first k hits (the
  neighbouring exchange, which the drawer's own score did not bring up);
- neighbour variants re-ranking the hits: a hit's score plus w times the
  score of the exchange before it (`prev`) or after it (`next`) in the same
  session, when that one is among the hits;
- session diversity: the last slots of the first 10 reserved for sessions
  not yet there, or at most so many hits of one session first.

LoCoMo turn ids are `D<session>:<turn>`; a hit's `turns` are its drawer's.
The character budget is the report's: hits are taken while their lengths
fit 3,000 characters.
"""

import argparse
import json
from collections import Counter

BUDGET = 3000


def parse(turn):
    session, number = turn[1:].split(":")
    return int(session), int(number)


def session_of(turn):
    return turn.split(":")[0]


def metrics(questions, ranking):
    """Recall over questions with evidence, the report's definitions."""
    totals = Counter()
    by_category = {}
    asked = 0
    for q in questions:
        evidence = set(q["evidence"])
        if not evidence:
            continue
        asked += 1
        hits = ranking(q)

        def covered(k):
            return {t for h in hits[:k] for t in h["turns"]}

        top10 = covered(10)
        found = bool(evidence & top10)
        totals["turn any@10"] += found
        totals["turn any@5"] += bool(evidence & covered(5))
        totals["turn any@1"] += bool(evidence & covered(1))
        totals["turn all@10"] += evidence <= top10
        used, fit = 0, 0
        for h in hits:
            if used + h["chars"] > BUDGET:
                break
            used += h["chars"]
            fit += 1
        totals["turn any@3000c"] += bool(evidence & covered(fit))
        sessions = {session_of(e) for e in evidence}
        totals["session any@10"] += bool(sessions & {session_of(t) for t in top10})
        cell = by_category.setdefault(q["category"], [0, 0])
        cell[0] += found
        cell[1] += 1
    values = {name: value / asked for name, value in totals.items()}
    categories = " / ".join(f"{by_category[c][0] / by_category[c][1]:.3f}" for c in sorted(by_category))
    return values, categories


def engine(q):
    return q["hits"]


def neighbours(w_prev, w_next):
    """Each hit's score plus w × the score of its neighbouring exchange."""

    def ranking(q):
        ends = {}
        for h in q["hits"]:
            turns = [parse(t) for t in h["turns"]]
            if turns:
                session = turns[0][0]
                ends[(session, "first", min(t for _, t in turns))] = h
                ends[(session, "last", max(t for _, t in turns))] = h
        scored = []
        for h in q["hits"]:
            bonus = 0.0
            turns = [parse(t) for t in h["turns"]]
            if turns:
                session = turns[0][0]
                before = ends.get((session, "last", min(t for _, t in turns) - 1))
                after = ends.get((session, "first", max(t for _, t in turns) + 1))
                bonus = max(w_prev * (before["score"] if before else 0.0), w_next * (after["score"] if after else 0.0))
            scored.append((h["score"] + bonus, h))
        scored.sort(key=lambda pair: -pair[0])
        return [h for _, h in scored]

    return ranking


def session_of_hit(hit):
    return session_of(hit["turns"][0]) if hit["turns"] else None


def reserve(slots):
    """The last `slots` of the first 10 go to the best hits of sessions the
    first 10 − `slots` do not hold (diversity for session recall)."""

    def ranking(q):
        hits = q["hits"]
        kept = hits[: 10 - slots]
        seen = {session_of_hit(h) for h in kept}
        added = []
        for h in hits[10 - slots :]:
            if len(added) < slots and session_of_hit(h) not in seen:
                added.append(h)
                seen.add(session_of_hit(h))
        return kept + added + [h for h in hits[10 - slots :] if not any(h is a for a in added)]

    return ranking


def cap(most):
    """At most `most` hits of one session before every other session's."""

    def ranking(q):
        count, first, later = {}, [], []
        for h in q["hits"]:
            session = session_of_hit(h)
            count[session] = count.get(session, 0) + 1
            (first if count[session] <= most else later).append(h)
        return first + later

    return ranking


def show(label, result):
    values, categories = result
    cells = "  ".join(f"{name} {value:.4f}" for name, value in sorted(values.items()))
    print(f"{label:<24} {cells}  | any@10 by category {categories}")


def misses(questions):
    rows = []
    for q in questions:
        evidence = set(q["evidence"])
        if not evidence or evidence & {t for h in q["hits"][:10] for t in h["turns"]}:
            continue
        rank = next((i for i, h in enumerate(q["hits"]) if evidence & set(h["turns"])), None)
        rows.append((q, rank))
    print(f"\nmisses at 10: {len(rows)}")
    print("  by category:", dict(sorted(Counter(q["category"] for q, _ in rows).items())))
    print("  first evidence hit at rank (0-based; None = not among the hits):",
          dict(sorted(Counter(r for _, r in rows).items(), key=lambda kv: (kv[0] is None, kv[0] or 0))))
    for k in (1, 3, 5, 10):
        near = 0
        for q, _ in rows:
            evidence = [parse(e) for e in q["evidence"] if ":" in e]
            top = [parse(t) for h in q["hits"][:k] for t in h["turns"]]
            near += any(es == s and abs(et - t) <= 2 for es, et in evidence for s, t in top)
        print(f"  an evidence turn within two turns of one of the first {k} hits: {near}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("hits", help="the file `bench locomo --hits` wrote")
    args = parser.parse_args()
    with open(args.hits, encoding="utf-8") as file:
        questions = [json.loads(line) for line in file]
    show("engine", metrics(questions, engine))
    misses(questions)
    print()
    for w_prev, w_next in [(0.1, 0.0), (0.0, 0.05), (0.0, 0.1), (0.0, 0.15), (0.05, 0.1), (0.1, 0.1), (0.2, 0.2)]:
        show(f"prev {w_prev}, next {w_next}", metrics(questions, neighbours(w_prev, w_next)))
    print()
    for slots in (1, 2, 3):
        show(f"reserve {slots} for sessions", metrics(questions, reserve(slots)))
    for most in (3, 4, 5):
        show(f"cap {most} per session", metrics(questions, cap(most)))


if __name__ == "__main__":
    main()
