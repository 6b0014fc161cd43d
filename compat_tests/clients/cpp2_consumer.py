"""cpp2 driver: consume (see cpp_common.py). Run with the cpp2 client's own interpreter."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cpp_common import main  # noqa: E402

if __name__ == "__main__":
    main("consume")
