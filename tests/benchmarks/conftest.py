import sys
from pathlib import Path

# bench/ is the repository's, not installed: last on the path (``operator`` is the stdlib's).
ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:
    sys.path.append(ROOT)
