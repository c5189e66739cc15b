import sys

from pathlib import Path

# The helper modules live next to the tests (no tests/__init__.py packages).
sys.path.insert(0, str(Path(__file__).parent))
