"""Launch the real language server with the fake engine (tests only).

FAKE_NO_REVIEW=1 simulates an installation without the port review.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

import lsp_fake_engine  # noqa: E402

lsp_fake_engine.install(review=not os.environ.get("FAKE_NO_REVIEW"))

from lsp_server import main  # noqa: E402

raise SystemExit(main())
