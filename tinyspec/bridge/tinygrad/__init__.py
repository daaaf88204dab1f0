"""The bridge to tinygrad (0.14.0, and the repository at commit a9069c17; others are tried): capture a tinygrad
program's graph at every stage, translate each stage to tinyspec UOps, and check them against tinyspec's spec and
evaluator.

    from tinyspec.bridge.tinygrad import capture, translate
    cap = capture(program)                 # program() returns the tensor(s) to realize
    tr = translate(cap)                    # tinyspec graphs per stage (raises Untranslatable on a form with no tinyspec form)
    tr = translate(cap, strict=False)      # records untranslatable nodes instead; tr.coverage() per stage

The bridge wraps private functions of tinygrad, which change between versions: what differs is in compat.py, decided
by what the imported tinygrad has. Importing the bridge with no tinygrad raises TinygradMissingError; with a tinygrad
that is none of the versions it is tested on, it warns once (TinygradVersionWarning, one line) and runs.
"""
from tinyspec.bridge.tinygrad.compat import TinygradMissingError, TinygradVersionWarning, identity, imported, warn_if_unknown

imported()
warn_if_unknown()

from tinyspec.bridge.tinygrad.capture import Capture, capture  # noqa: E402
from tinyspec.bridge.tinygrad.table import RULES, rules_markdown  # noqa: E402
from tinyspec.bridge.tinygrad.translate import translate  # noqa: E402
from tinyspec.bridge.tinygrad.translator import Translation  # noqa: E402
from tinyspec.bridge.tinygrad.untranslatable import Untranslatable  # noqa: E402

__all__ = ["TinygradMissingError", "TinygradVersionWarning", "identity", "Capture", "capture", "RULES", "rules_markdown", "Translation",
           "Untranslatable", "translate"]
