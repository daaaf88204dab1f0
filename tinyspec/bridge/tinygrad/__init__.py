"""The bridge to tinygrad 0.14.0: capture a tinygrad program's graph at every stage, translate each stage to tinyspec
UOps, and check them against tinyspec's spec and evaluator.

    from tinyspec.bridge.tinygrad import capture, translate
    cap = capture(program)                 # program() returns the tensor(s) to realize
    tr = translate(cap)                    # tinyspec graphs per stage (raises Untranslatable on a form with no tinyspec form)
    tr = translate(cap, strict=False)      # records untranslatable nodes instead; tr.coverage() per stage

The bridge wraps private functions of tinygrad, so it is pinned: importing it with any other tinygrad version (or
none) raises TinygradVersionError with a one-line message naming the found and the required version.
"""
from tinyspec.bridge.tinygrad.version import REQUIRED, TinygradVersionError, require_tinygrad

require_tinygrad()

from tinyspec.bridge.tinygrad.capture import Capture, capture  # noqa: E402
from tinyspec.bridge.tinygrad.table import RULES, rules_markdown  # noqa: E402
from tinyspec.bridge.tinygrad.translate import Translation, Untranslatable, translate  # noqa: E402

__all__ = ["REQUIRED", "TinygradVersionError", "Capture", "capture", "RULES", "rules_markdown", "Translation", "Untranslatable", "translate"]
