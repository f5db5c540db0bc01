import os
import sys

# `python -m` put the working directory first on sys.path; `python script.py` does not (it puts the
# script's folder there, which the runner does). Without this, a `timeit.py` or `inspect.py` in the
# working directory shadows the standard library module torch imports, and torch fails to import.
if sys.path and not getattr(sys.flags, "safe_path", False) and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from .cli import main  # noqa: E402 - after the sys.path fix

sys.exit(main(sys.argv[1:]))
