import sys
from pathlib import Path

# Tests import the package from the source folder when it is not pip-installed, and the
# shared builders from this folder.
ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT / "operator", ROOT / "tests"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
