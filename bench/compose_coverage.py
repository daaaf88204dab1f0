"""Rule coverage with and without the frontend compositions of fuzz.generate.compositions, in one run.

    .venv/bin/python bench/compose_coverage.py [--cases 600] [--seed 0] [--workers 2]

Two reference-backend campaigns on the same seed and case count, one with the weight kind:compose at 0: how many of the
lowering's rules each fires, and which rules only one of them fires. Output also written to bench/compose_coverage.txt.
"""
from __future__ import annotations

import argparse
import io
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fuzz.engine.campaign import run_campaign  # noqa: E402
from fuzz.engine.config import CampaignConfig  # noqa: E402

OUT = Path(__file__).with_suffix(".txt")


def main() -> None:
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--cases", type=int, default=600)
  ap.add_argument("--seed", type=int, default=0)
  ap.add_argument("--workers", type=int, default=2)
  a = ap.parse_args()
  lines = [f"$ .venv/bin/python bench/compose_coverage.py --cases {a.cases} --seed {a.seed} --workers {a.workers}"]
  fired = {}
  for label, w in (("without compositions", {"kind:compose": 0.0}), ("with compositions", {})):
    with tempfile.TemporaryDirectory() as d:
      s = run_campaign(CampaignConfig(seconds=3600, seed=a.seed, workers=a.workers, corpus=d, max_cases=a.cases, weights=w,
                                      backends=("reference",), resume=False), io.StringIO())
    fired[label] = set(s.rules_fired)
    lines.append(f"{label}: {s.cases} cases, {len(s.rules_fired)}/{s.rules_total} rules fired, {len(s.findings)} findings")
    print(lines[-1], flush=True)
  a_, b_ = fired["without compositions"], fired["with compositions"]
  lines.append(f"fired only with compositions ({len(b_ - a_)}): {', '.join(sorted(b_ - a_))}")
  lines.append(f"fired only without ({len(a_ - b_)}): {', '.join(sorted(a_ - b_))}")
  print("\n".join(lines[-2:]))
  OUT.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
  main()
